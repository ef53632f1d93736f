"""Features store: key, round trip, resume after kill -9, truncation/corruption, locking, pairing check."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from platobench.data import PairedDataset, ids_hash
from platobench.errors import UserError
from platobench.features.store import (
    CorruptEntryError,
    FeatureKey,
    FeatureStore,
    SampleMismatchError,
    check_same_samples,
)

IDS = [f"img/{i:03d}" for i in range(23)]
LAYERS = (0, 4, 11)
WIDTHS = (5, 3, 8)


def key_for(ids=IDS, **over) -> FeatureKey:
    fields = {
        "model": "demo/tiny",
        "model_revision": "abc",
        "dtype": "float32",
        "pooling": "mean",
        "layers": LAYERS,
        "dataset": "toy",
        "dataset_revision": "r1",
        "ids_hash": ids_hash(ids),
        "prompt": "caption:0",
        "extractor_version": "1",
    }
    fields.update(over)
    return FeatureKey(**fields)


def features(n: int = len(IDS)) -> list[torch.Tensor]:
    """Deterministic features per layer, [n, D_l] (the same in every process)."""
    return [
        torch.sin(torch.arange(n * w, dtype=torch.float64).reshape(n, w) * (l + 1) / 7).float()
        for l, w in zip(LAYERS, WIDTHS)
    ]


def write_all(store: FeatureStore, key: FeatureKey, chunk: int = 5):
    X = features()
    with store.writer(key, IDS, LAYERS, WIDTHS) as w:
        for a, b in w.pending(chunk):
            w.write_chunk(a, [x[a:b] for x in X])
        return w.finalize()


def layer_hashes(entry) -> list[str]:
    return [f["sha256"] for f in entry.manifest["files"]]


# ---------------------------------------------------------------------------------------------- key


@pytest.mark.parametrize(
    "field,value",
    [
        ("model", "other"),
        ("model_revision", "def"),
        ("dtype", "bfloat16"),
        ("pooling", "last"),
        ("layers", (0, 4)),
        ("dataset", "toy2"),
        ("dataset_revision", "r2"),
        ("ids_hash", ids_hash(IDS[::-1])),
        ("prompt", "caption:1"),
        ("extractor_version", "2"),
        ("stored_dtype", "float16"),
    ],
)
def test_every_key_field_changes_the_digest(field, value):
    assert key_for().digest() != key_for(**{field: value}).digest()
    assert key_for().digest() == key_for().digest()


def test_key_validation_and_for_dataset():
    with pytest.raises(ValueError, match="stored_dtype"):
        key_for(stored_dtype="int8")
    with pytest.raises(ValueError, match="model"):
        key_for(model="")
    ds = PairedDataset("toy", "r1", IDS, [["c"]] * len(IDS), lambda i: None)
    key = FeatureKey.for_dataset(
        ds,
        model="demo/tiny",
        model_revision="abc",
        dtype="float32",
        pooling="mean",
        layers=list(LAYERS),
        prompt="caption:0",
        extractor_version="1",
    )
    assert key == key_for()


# ---------------------------------------------------------------------------------------------- write/read


def test_round_trip_and_warm_get(tmp_path):
    store = FeatureStore(tmp_path)
    assert store.get(key_for()) is None
    entry = write_all(store, key_for())
    got = store.get(key_for(), deep=True)
    assert got is not None and got.ids == IDS and got.layer_ids == list(LAYERS) and got.widths == list(WIDTHS)
    assert len(got.layers) == 3
    for x, y in zip(got.layers, features()):
        assert x.dtype == torch.float32 and torch.equal(x, y)
    assert torch.equal(got.layers[-1], features()[-1]) and len(got.layers[0:2]) == 2
    assert layer_hashes(entry) == layer_hashes(got)
    assert not (got.path / "partial").exists()
    # a second writer for a complete entry writes nothing and returns the entry
    with store.writer(key_for(), IDS, LAYERS, WIDTHS) as w:
        assert w.done_chunks() == [(0, len(IDS))] and w.pending(4) == []
        assert w.finalize().path == got.path


def test_layer_position_counts_from_the_end_and_refuses_out_of_range(tmp_path):
    entry = write_all(FeatureStore(tmp_path), key_for())
    assert [entry.position(p, "m") for p in (0, 2, -1, -3)] == [0, 2, 2, 0]
    for bad in (3, -4):
        with pytest.raises(UserError, match=f"vision model m layer {bad} does not exist: the entry has 3 layers"):
            entry.position(bad, "vision model m")


@pytest.mark.parametrize("stored", ["float16", "bfloat16"])
def test_half_storage_upcasts_on_read(tmp_path, stored):
    store = FeatureStore(tmp_path)
    key = key_for(stored_dtype=stored)
    X = features()
    with store.writer(key, IDS, LAYERS, WIDTHS) as w:
        w.write_chunk(0, [x.numpy() for x in X])  # numpy input is accepted too
        entry = w.finalize()
    assert entry.dtype == stored and entry.layer(0, upcast=False).dtype == getattr(torch, stored)
    assert entry.layers[0].dtype == torch.float32
    assert torch.equal(entry.layers[0], X[0].to(getattr(torch, stored)).float())
    with pytest.raises(ValueError, match="differs from key.stored_dtype"):
        store.writer(key, IDS, LAYERS, WIDTHS, dtype="float32")


def test_writer_refuses_inconsistent_input(tmp_path):
    store = FeatureStore(tmp_path)
    with pytest.raises(ValueError, match="ids_hash"):
        store.writer(key_for(), IDS[::-1], LAYERS, WIDTHS)
    with pytest.raises(ValueError, match="do not match key.layers"):
        store.writer(key_for(), IDS, (0, 4), WIDTHS[:2])
    X = features()
    with store.writer(key_for(), IDS, LAYERS, WIDTHS) as w:
        w.write_chunk(0, [x[:10] for x in X])
        with pytest.raises(ValueError, match="overlap"):
            w.write_chunk(5, [x[5:12] for x in X])
        with pytest.raises(ValueError, match="width 4, expected 5"):
            w.write_chunk(10, [X[0][10:12, :4], X[1][10:12], X[2][10:12]])
        with pytest.raises(ValueError, match="same number of rows"):
            w.write_chunk(10, [X[0][10:12], X[1][10:13], X[2][10:12]])
        with pytest.raises(ValueError, match="outside"):
            w.write_chunk(20, [x[:5] for x in X])
        with pytest.raises(ValueError, match=r"not written yet"):
            w.finalize()
        assert w.pending(6) == [(10, 16), (16, 22), (22, 23)]


# ---------------------------------------------------------------------------------------------- kill -9

CHILD = textwrap.dedent(
    """
    import os, signal, sys, time
    sys.path.insert(0, {tests!r})
    import test_store_cache as t
    from platobench.features import store as st
    mode, stop_after = sys.argv[1], int(sys.argv[2])
    s = st.FeatureStore(sys.argv[3])
    real_replace, written = os.replace, []
    def replace(src, dst):
        if str(dst).endswith(".safetensors") and "chunk-" in str(dst):
            if mode == "inside" and len(written) == stop_after:
                os.kill(os.getpid(), signal.SIGKILL)   # temp file written, rename not done
            written.append(dst)
        real_replace(src, dst)
    st.os.replace = replace
    X = t.features()
    w = s.writer(t.key_for(), t.IDS, t.LAYERS, t.WIDTHS)
    for a, b in w.pending(4):
        w.write_chunk(a, [x[a:b] for x in X])
        if mode == "outside" and len(written) == stop_after:
            print("READY", flush=True)
            time.sleep(600)                           # killed by the parent
    w.finalize()
    """
)


@pytest.mark.parametrize("mode", ["inside", "outside"])
def test_kill_9_mid_write_then_resume_equals_uninterrupted(tmp_path, mode):
    reference = write_all(FeatureStore(tmp_path / "ref"), key_for(), chunk=4)
    root = tmp_path / "killed"
    code = CHILD.format(tests=str(Path(__file__).resolve().parent))
    proc = subprocess.Popen(
        [sys.executable, "-c", code, mode, "3", str(root)], stdout=subprocess.PIPE, text=True
    )
    if mode == "outside":
        assert proc.stdout.readline().strip() == "READY"
        os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=300) == -signal.SIGKILL
    store = FeatureStore(root)
    assert store.get(key_for()) is None  # no manifest: never taken for complete
    [status] = store.entries()
    assert status.state == "partial" and status.rows_done == 12
    X = features()
    with store.writer(key_for(), IDS, LAYERS, WIDTHS, lock_timeout=60) as w:
        assert w.done_chunks() == [(0, 4), (4, 8), (8, 12)]  # the interrupted chunk's temp file is dropped
        assert not [f for f in w.partial.iterdir() if f.name.endswith(".tmp")]
        for a, b in w.pending(4):
            w.write_chunk(a, [x[a:b] for x in X])
        resumed = w.finalize()
    assert layer_hashes(resumed) == layer_hashes(reference)
    for x, y in zip(resumed.layers, reference.layers):
        assert torch.equal(x, y)


# ---------------------------------------------------------------------------------------------- damage


def test_truncated_file_is_detected_and_never_used(tmp_path, capsys):
    from platobench.cli import main

    store = FeatureStore(tmp_path)
    entry = write_all(store, key_for())
    file = entry.path / entry.manifest["files"][1]["file"]
    file.write_bytes(file.read_bytes()[:-7])
    assert store.get(key_for()) is None  # treated as absent: the extractor recomputes
    assert any("bytes, manifest says" in p for p in store.verify(entry.digest))
    with pytest.raises(CorruptEntryError):
        entry.layers[1]
    assert main(["cache", "verify", "--root", str(tmp_path)]) == 1
    assert "1 checked, 0 ok, 0 partial, 1 bad, 0 removed" in capsys.readouterr().out
    rewritten = write_all(store, key_for())  # the writer replaces the damaged entry
    assert store.get(key_for(), deep=True) is not None and store.verify(rewritten.digest) == []


def test_flipped_byte_is_caught_by_checksum(tmp_path):
    from platobench.cli import main

    store = FeatureStore(tmp_path)
    entry = write_all(store, key_for())
    file = entry.path / entry.manifest["files"][2]["file"]
    data = bytearray(file.read_bytes())
    data[-1] ^= 0xFF
    file.write_bytes(bytes(data))
    assert store.get(key_for()) is not None  # same size and header: only the checksum can tell
    assert store.get(key_for(), deep=True) is None
    with pytest.raises(CorruptEntryError, match="does not match its checksum"):
        store.get(key_for()).layers[2]
    assert store.verify(entry.digest) == ["layer-002.safetensors: sha256 differs from the manifest"]
    assert main(["cache", "verify", "--root", str(tmp_path), "--remove"]) == 0
    assert store.entries() == [] and not entry.path.exists()


def test_torn_manifest_means_absent(tmp_path):
    store = FeatureStore(tmp_path)
    entry = write_all(store, key_for())
    (entry.path / "manifest.json").write_text('{"format": 1, "dig', encoding="utf-8")
    assert store.get(key_for()) is None
    assert store.verify(entry.digest) == ["manifest.json is unreadable"]


# ---------------------------------------------------------------------------------------------- locking

WRITER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {tests!r})
    import test_store_cache as t
    from platobench.features.store import FeatureStore
    s = FeatureStore(sys.argv[1])
    entry = s.get(t.key_for()) or t.write_all(s, t.key_for(), chunk=1)
    print(",".join(t.layer_hashes(entry)))
    """
)


def test_two_processes_writing_the_same_entry_do_not_corrupt_it(tmp_path):
    code = WRITER.format(tests=str(Path(__file__).resolve().parent))
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=300)[0].strip() for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    reference = write_all(FeatureStore(tmp_path / "ref"), key_for())
    assert outs == [",".join(layer_hashes(reference))] * 2
    store = FeatureStore(tmp_path)
    assert store.verify(key_for().digest()) == []
    assert [e.state for e in store.entries()] == ["complete"]


def test_second_writer_waits_for_the_lock(tmp_path):
    store = FeatureStore(tmp_path)
    first = store.writer(key_for(), IDS, LAYERS, WIDTHS)
    with pytest.raises(UserError, match="being written by another process"):
        store.writer(key_for(), IDS, LAYERS, WIDTHS, lock_timeout=0.05)
    first.close()
    store.writer(key_for(), IDS, LAYERS, WIDTHS, lock_timeout=0.05).close()


# ---------------------------------------------------------------------------------------------- pairing


def test_check_same_samples(tmp_path):
    store = FeatureStore(tmp_path)
    a = write_all(store, key_for())
    b = write_all(store, key_for(model="demo/other"))
    check_same_samples(a, b)
    shuffled = IDS[1:] + IDS[:1]
    X = features()
    with store.writer(key_for(shuffled, model="demo/other"), shuffled, LAYERS, WIDTHS) as w:
        w.write_chunk(0, X)
        c = w.finalize()
    with pytest.raises(
        SampleMismatchError, match=r"sample 0 is 'img/000' vs 'img/001' \(same samples, different"
    ):
        check_same_samples(a, c)
    short = IDS[:10]
    with store.writer(key_for(short), short, LAYERS, WIDTHS) as w:
        w.write_chunk(0, [x[:10] for x in X])
        d = w.finalize()
    with pytest.raises(SampleMismatchError, match="23 vs 10 samples"):
        check_same_samples(a, d)


# ---------------------------------------------------------------------------------------------- CLI


def test_cache_cli_ls_verify_rm(tmp_path, capsys):
    from platobench.cli import main  # imported here: the writer subprocesses import this module

    store = FeatureStore(tmp_path)
    a = write_all(store, key_for())
    write_all(store, key_for(model="demo/other"))
    X = features()
    with store.writer(key_for(model="demo/partial"), IDS, LAYERS, WIDTHS) as w:
        w.write_chunk(0, [x[:4] for x in X])
    root = ["--root", str(tmp_path)]
    assert main(["cache", "ls", *root, "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert sorted((e["key"]["model"], e["state"], e["rows_done"]) for e in listed) == [
        ("demo/other", "complete", 23),
        ("demo/partial", "partial", 4),
        ("demo/tiny", "complete", 23),
    ]
    assert main(["cache", "ls", *root, "--model", "demo/t*"]) == 0
    out = capsys.readouterr().out
    assert "demo/tiny" in out and "demo/other" not in out
    assert main(["cache", "verify", *root]) == 0
    assert "3 checked, 2 ok, 1 partial, 0 bad, 0 removed" in capsys.readouterr().out
    assert main(["cache", "rm", *root]) == 2
    assert "name digests" in capsys.readouterr().err
    assert main(["cache", "rm", *root, "zz"]) == 2
    assert main(["cache", "rm", *root, "--partial"]) == 0
    assert main(["cache", "rm", *root, a.digest[:8], "--json"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1]) == {"removed": [a.digest]}
    assert [e.key["model"] for e in store.entries()] == ["demo/other"]
    assert store.get(key_for()) is None


def test_default_root_follows_platobench_home(tmp_path, monkeypatch):
    monkeypatch.setenv("PLATOBENCH_HOME", str(tmp_path))
    assert FeatureStore().root == tmp_path / "features"
