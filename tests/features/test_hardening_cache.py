"""Feature cache and extraction under damage and bad input: chunk checksums on resume, unreadable manifests,
checksum-verified reuse in `extract`, python-encoder cache keys that follow the source, full disks, and the
named errors (short encoder output, bad --workers, --limit past the dataset, waiting on another writer)."""

from __future__ import annotations

import errno
import json
import os
import re
import socket
import threading
import time
from pathlib import Path

import pytest
import torch

from platobench.cli import main
from platobench.data import get_dataset, ids_hash
from platobench.errors import UserError
from platobench.features import extract as ex
from platobench.features.store import CorruptEntryError, FeatureKey, FeatureStore
from platobench.files.atomic import WriteError
from platobench.zoo import ModelSpec, load_zoo, python_code

IDS = [f"img/{i:03d}" for i in range(23)]
LAYERS = (0, 4, 11)
WIDTHS = (5, 3, 8)
SPEC = load_zoo().get("demo/minilm-l6")  # 6 blocks -> layers 0..6; never loaded here


def key_for(**over) -> FeatureKey:
    fields = {"model": "demo/tiny", "model_revision": "abc", "dtype": "float32", "pooling": "mean",
              "layers": LAYERS, "dataset": "toy", "dataset_revision": "r1", "ids_hash": ids_hash(IDS),
              "prompt": "caption:0", "extractor_version": "1"}
    fields.update(over)
    return FeatureKey(**fields)


def features() -> list[torch.Tensor]:
    """Deterministic per-layer features [23, D_l]."""
    n = len(IDS)
    return [torch.sin(torch.arange(n * w, dtype=torch.float64).reshape(n, w) * (l + 1) / 7).float()
            for l, w in zip(LAYERS, WIDTHS)]


def write_all(store: FeatureStore, chunk: int = 4):
    X = features()
    with store.writer(key_for(), IDS, LAYERS, WIDTHS) as w:
        for a, b in w.pending(chunk):
            w.write_chunk(a, [x[a:b] for x in X])
        return w.finalize()


def layer_bytes(entry) -> list[bytes]:
    return [(entry.path / f["file"]).read_bytes() for f in entry.manifest["files"]]


def flip_last_byte(path: Path) -> None:
    """Flip the file's last byte: tensor data, so size and safetensors header stay valid."""
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x01
    path.write_bytes(bytes(data))


# ---------------------------------------------------------------------------------------------- chunk checksums


def test_flipped_byte_in_a_finished_chunk_is_recomputed_on_resume(tmp_path, capsys):
    clean = write_all(FeatureStore(tmp_path / "clean"))
    store = FeatureStore(tmp_path / "cache")
    X = features()
    with store.writer(key_for(), IDS, LAYERS, WIDTHS) as w:  # an interrupted run: 3 chunks, no finalize
        for a, b in w.pending(4)[:3]:
            w.write_chunk(a, [x[a:b] for x in X])
        partial = w.partial
    [second] = [f for f in partial.iterdir() if f.name.startswith("chunk-000000004-000000008")]
    flip_last_byte(second)
    capsys.readouterr()
    with store.writer(key_for(), IDS, LAYERS, WIDTHS) as w:
        assert w.done_chunks() == [(0, 4), (8, 12)]  # the damaged chunk is dropped, never merged
        for a, b in w.pending(4):
            w.write_chunk(a, [x[a:b] for x in X])
        resumed = w.finalize()
    warnings = [line for line in capsys.readouterr().err.splitlines() if "checksum" in line]
    assert len(warnings) == 1 and "rows [4, 8)" in warnings[0] and "recomputing" in warnings[0]
    assert layer_bytes(resumed) == layer_bytes(clean)


def test_chunk_damaged_before_the_merge_is_refused(tmp_path):
    store = FeatureStore(tmp_path)
    X = features()
    with store.writer(key_for(), IDS, LAYERS, WIDTHS) as w:
        for a, b in w.pending(8):
            w.write_chunk(a, [x[a:b] for x in X])
        [first] = [f for f in w.partial.iterdir() if f.name.startswith("chunk-000000000-")]
        flip_last_byte(first)
        with pytest.raises(CorruptEntryError, match=r"rows \[0, 8\)"):
            w.finalize()
        assert not first.exists() and not (w.dir / "manifest.json").exists()
    with store.writer(key_for(), IDS, LAYERS, WIDTHS) as w:  # the next run recomputes only that chunk
        assert w.pending(8) == [(0, 8)]


def test_layers_sharing_one_tensor_are_written(tmp_path):
    store = FeatureStore(tmp_path)
    same = torch.arange(len(IDS) * 5, dtype=torch.float32).reshape(len(IDS), 5)
    key = key_for(layers=(0, 1))
    with store.writer(key, IDS, (0, 1), (5, 5)) as w:
        w.write_chunk(0, [same, same])  # e.g. an encoder whose two layers are one tensor
        entry = w.finalize()
    assert torch.equal(entry.layers[0], same) and torch.equal(entry.layers[1], same)


# ---------------------------------------------------------------------------------------------- manifests


@pytest.mark.parametrize("manifest", ['{"format": 1, "dig', "[1, 2]", '{"format": 1}', "\udcff"])
def test_cache_verify_reports_an_unreadable_manifest(tmp_path, capsys, manifest):
    store = FeatureStore(tmp_path)
    entry = write_all(store)
    (entry.path / "manifest.json").write_bytes(manifest.encode("utf-8", "surrogateescape"))
    assert store.get(key_for()) is None
    assert main(["cache", "ls", "--root", str(tmp_path)]) == 0
    assert "corrupt" in capsys.readouterr().out
    assert main(["cache", "verify", "--root", str(tmp_path), "--json"]) == 1
    [row] = json.loads(capsys.readouterr().out)
    assert row["digest"] == entry.digest and row["state"] == "bad" and row["problems"]
    assert main(["cache", "verify", "--root", str(tmp_path), "--remove"]) == 0
    assert "1 removed" in capsys.readouterr().out and not entry.path.exists()


def test_manifest_naming_a_file_outside_the_entry_is_refused(tmp_path):
    store = FeatureStore(tmp_path)
    entry = write_all(store)
    outside = tmp_path / "elsewhere.safetensors"
    outside.write_bytes((entry.path / "layer-000.safetensors").read_bytes())
    manifest = json.loads((entry.path / "manifest.json").read_text("utf-8"))
    manifest["files"][0]["file"] = "../../elsewhere.safetensors"
    (entry.path / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    assert store.get(key_for()) is None
    assert any("layer-000.safetensors" in p for p in store.verify(entry.digest))


# ---------------------------------------------------------------------------------------------- extract reuse


class FakeText:
    """Features of a text depend only on its characters (7 layers of width 3)."""

    spec, layer_ids, widths = SPEC, list(range(7)), [3] * 7
    returned = 7

    def token_lengths(self, texts):
        return [max(1, len(t)) for t in texts]

    def tokenize(self, texts):
        return {"codes": torch.tensor([[float(sum(map(ord, t))), float(len(t))] for t in texts])}

    def encode(self, batch):
        c = batch["codes"]
        return [torch.stack([c[:, 0] * (l + 1), c[:, 1], c[:, 0] - l], dim=1) for l in range(self.returned)]


@pytest.fixture(scope="module")
def shared_home(tmp_path_factory) -> Path:
    """One PLATOBENCH_HOME for the tests that build openclipart (its first build scans the images)."""
    return tmp_path_factory.mktemp("home")


@pytest.fixture()
def home(shared_home, monkeypatch) -> Path:
    monkeypatch.setenv("PLATOBENCH_HOME", str(shared_home))
    return shared_home


@pytest.fixture()
def small(home, tmp_path, monkeypatch):
    monkeypatch.setattr(ex, "load_encoder", lambda *a, **k: FakeText())
    return get_dataset("openclipart-1024", limit=20), FeatureStore(tmp_path / "features")


def test_extract_does_not_reuse_an_entry_that_fails_its_checksum(small, capsys):
    ds, store = small
    first, report = ex.extract(SPEC, ds, store=store, chunk_size=8, progress=False)
    clean = layer_bytes(first)
    flip_last_byte(first.path / "layer-003.safetensors")
    capsys.readouterr()
    again, report = ex.extract(SPEC, ds, store=store, chunk_size=8, progress=False)
    assert not report.cached
    assert "layer-003.safetensors" in capsys.readouterr().err
    assert layer_bytes(again) == clean and store.verify(again.digest) == []
    _, report = ex.extract(SPEC, ds, store=store, chunk_size=8, progress=False)
    assert report.cached


# ---------------------------------------------------------------------------------------------- cache keys

PINNED = {
    # changed once when max_tokens (256, sentence-transformers' truncation) entered the key's options
    "demo/minilm-l6": "085f5fa86d4433173a117a818a693648dd143f80cc8894ecb4d536519ceba63a",
    "baseline/random-init-minilm-l6": "c9272084caa6b87f59f95d318e024b448145a498bc79ed2a3e6cf1d1cca8e201",
    "demo/dinov2-s-imgfocus": "548e8b6f459e948214d7fc79e092b454a0475d00b1b838498620ff4a322e4902",
}
HUB = ModelSpec(name="test/hub-encoder", modality="text", kind="text_encoder", loader="hf_text",
                source="org/model", revision="0123abcd", pooling="avg", num_layers=4)


def test_keys_of_other_loaders_are_unchanged(home):
    ds, cpu, zoo = get_dataset("openclipart-1024", limit=20), torch.device("cpu"), load_zoo()
    for name, digest in PINNED.items():
        spec = zoo.get(name)
        prompt = "image" if spec.modality == "vision" else "caption:0"
        assert ex.feature_key(spec, ds, prompt=prompt, device=cpu).digest() == digest, name
    hub = ex.feature_key(HUB, ds, prompt="caption:0", device=cpu).digest()
    # a name that is not built-in has its loader, kind and source in the key (changed once with them)
    assert hub == "9ed19a1462be7e538b17a321c308ad6a1b9b7deda75bd6a6382bc4c9235f886d"


def python_spec(source: str) -> ModelSpec:
    return ModelSpec(name="user/py-encoder", modality="text", kind="text_encoder", loader="python",
                     source=source, pooling="avg", num_layers=2)


def test_python_encoder_key_follows_its_source_without_importing_it(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    marker = tmp_path / "imported"
    (tmp_path / "pb_key_mod.py").write_text(f"open({str(marker)!r}, 'a').write('x')\ndef make(*a, **k): pass\n")
    spec = python_spec("pb_key_mod:make")
    before = ex.model_revision(spec)
    assert before.startswith("python:pb_key_mod:make@sha256:") and ex.model_revision(spec) == before
    assert not marker.exists()  # hashed from its file, not executed
    (tmp_path / "pb_key_mod.py").write_text("def make(*a, **k): return 1\n")
    assert ex.model_revision(spec) != before


def test_python_package_key_covers_the_modules_the_package_imports(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    pkg = tmp_path / "pb_key_pkg"
    (pkg / "nested").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from pb_key_pkg.nested.helper import make\n")
    (pkg / "nested" / "__init__.py").write_text("")
    (pkg / "nested" / "helper.py").write_text("def make(*a, **k): return 1\n")
    spec = python_spec("pb_key_pkg:make")
    before = ex.model_revision(spec)
    (pkg / "nested" / "helper.py").write_text("def make(*a, **k): return 2\n")
    assert ex.model_revision(spec) != before
    with pytest.raises(UserError, match="pb_key_missing"):
        ex.model_revision(python_spec("pb_key_missing:make"))


# ---------------------------------------------------------------------------------------------- full disk


def test_full_disk_is_one_write_error_naming_the_file(tmp_path, monkeypatch):
    store = FeatureStore(tmp_path)

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(WriteError, match=r"cannot write .*partial/plan\.json: No space left on device"):
        write_all(store)
    monkeypatch.undo()
    with store.writer(key_for(), IDS, LAYERS, WIDTHS) as w:
        monkeypatch.setattr(os, "fsync", full)
        with pytest.raises(WriteError, match=r"cannot write .*/chunk-000000000-000000004-.*: No space left"):
            w.write_chunk(0, [x[:4] for x in features()])
        monkeypatch.undo()
    assert not [f for f in tmp_path.rglob("*.tmp")]  # temporary files are removed
    assert write_all(store).manifest["n"] == len(IDS)


# ---------------------------------------------------------------------------------------------- named errors


def test_encoder_returning_fewer_layers_is_a_user_error(small, monkeypatch):
    ds, store = small

    class Short(FakeText):
        returned = 5

    with pytest.raises(UserError, match="returned 5 tensors for 7 layers"):
        ex.encode_texts(Short(), ds.captions(0), batch_size=4)
    monkeypatch.setattr(ex, "load_encoder", lambda *a, **k: Short())
    with pytest.raises(UserError, match=r"demo/minilm-l6.*returned 5 tensors for 7 layers"):
        ex.extract(SPEC, ds, store=store, chunk_size=8, progress=False)


def test_mock_pass_of_an_encoder_returning_fewer_layers_is_a_user_error(home, tmp_path, monkeypatch):
    from platobench.bench.submit import mock_pass

    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "pb_short_enc.py").write_text(
        "import torch\n"
        "from platobench.encoders.base import TextEncoder\n"
        "class Short(TextEncoder):\n"
        "    def __init__(self, spec):\n"
        "        self.spec, self.device = spec, torch.device('cpu')\n"
        "        self.layer_ids = spec.layer_ids(spec.num_layers)\n"
        "        self.widths = [2] * len(self.layer_ids)\n"
        "    def token_lengths(self, texts):\n"
        "        return [max(1, len(t)) for t in texts]\n"
        "    def tokenize(self, texts):\n"
        "        return {'n': torch.tensor([[float(len(t)), float(t.count(' '))] for t in texts])}\n"
        "    def encode(self, batch):\n"
        "        return [batch['n'], batch['n'] + 1]\n"
        "def make(spec, device, dtype, home):\n"
        "    return Short(spec)\n"
    )
    with python_code.allowed(["user/py-encoder"]), pytest.raises(UserError, match="returned 2 tensors for 3 layers"):
        mock_pass(python_spec("pb_short_enc:make"))


@pytest.mark.parametrize("workers", ["-1", "-7"])
def test_negative_workers_is_refused_before_any_work(home, monkeypatch, capsys, workers):

    def forbidden(*a, **k):
        raise AssertionError("no model may load with an invalid --workers")

    monkeypatch.setattr(ex, "load_encoder", forbidden)
    args = ["extract", "--model", "demo/dinov2-s-imgfocus", "--dataset", "openclipart-1024", "--limit", "4"]
    assert main([*args, "--workers", workers]) == 2
    assert f"--workers must be >= 0, got {workers}" in capsys.readouterr().err
    with pytest.raises(UserError, match="--workers"):
        ex.check_extract_options(batch_size=1, chunk_size=1, num_workers=-1)
    ex.check_extract_options(batch_size=1, chunk_size=1, num_workers=0)  # 0: decode in the main process


def test_limit_past_the_dataset_uses_it_whole_and_says_so(home, monkeypatch, capsys):
    monkeypatch.setattr(ex, "load_encoder", lambda *a, **k: FakeText())
    assert main(["extract", "--model", "demo/minilm-l6", "--dataset", "openclipart-1024", "--limit", "5000",
                 "--chunk-size", "512", "--json"]) == 0
    captured = capsys.readouterr()
    note = "--limit 5000 is more than the 1024 samples of openclipart-1024: using all 1024"
    assert captured.err.count(note) == 1 and json.loads(captured.out)["n"] == 1024
    assert main(["extract", "--model", "demo/minilm-l6", "--dataset", "openclipart-1024", "--limit", "1024",
                 "--json"]) == 0
    assert "--limit" not in capsys.readouterr().err


def test_run_and_submit_note_a_limit_past_the_dataset(home, tmp_path, capsys):
    from bench_fixtures import TINY_SETTINGS

    from platobench.bench.runner import job_inputs
    from platobench.bench.settings import Catalog

    (tmp_path / "tiny.yaml").write_text(TINY_SETTINGS)
    settings = Catalog([tmp_path / "tiny.yaml"]).resolve_settings("tiny")
    cache: dict = {}
    for setting in settings:  # both settings share one dataset: one note
        assert len(job_inputs(setting, 3000, cache).dataset) == 1024
    assert capsys.readouterr().err.count("--limit 3000 is more than the 1024 samples of openclipart-1024") == 1


def test_second_writer_says_once_whom_it_waits_for(tmp_path, capsys):
    store = FeatureStore(tmp_path)
    holding = threading.Event()

    def hold() -> None:  # another writer (the lock belongs to the thread that took it)
        first = store.writer(key_for(), IDS, LAYERS, WIDTHS)
        holding.set()
        time.sleep(0.6)
        first.close()

    other = threading.Thread(target=hold)
    other.start()
    assert holding.wait(30)
    started = time.time()
    second = store.writer(key_for(), IDS, LAYERS, WIDTHS, lock_timeout=30)
    second.close()
    other.join()
    assert time.time() - started >= 0.3
    waits = [line for line in capsys.readouterr().err.splitlines() if "waiting" in line]
    assert len(waits) == 1
    assert f"pid {os.getpid()}" in waits[0] and socket.gethostname() in waits[0]
    assert re.search(r"since \d{4}-\d\d-\d\d", waits[0])
    # a writer that may not wait names the holder in its error
    third = store.writer(key_for(), IDS, LAYERS, WIDTHS)
    with pytest.raises(UserError, match=rf"being written by another process \(pid {os.getpid()}"):
        store.writer(key_for(), IDS, LAYERS, WIDTHS, lock_timeout=0)
    third.close()
