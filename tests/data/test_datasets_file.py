"""Datasets as data (`--datasets-file`): a local folder with a JSONL manifest and a local parquet copy in a
hub dataset's layout, both written from installed Tux Paint stamps by examples/own_data/make_folder.py, run
end to end, and WebDataset tar shards of the same stamps; the revision follows the content (a manifest edit or a replaced image changes the fingerprint
and the cache key); every malformed entry or sample is an error naming it."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest
import torch

import platobench
from platobench.cli import main
from platobench.data import get_dataset, list_datasets
from platobench.data.datasets_file import read_datasets_file, using
from platobench.errors import UserError
from platobench.features.extract import feature_key
from platobench.results import load_records
from platobench.zoo import load_zoo

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "own_data"
N = 24
SETTINGS = "settings:\n" + "".join(
    f"  {sid}:\n    dataset: {ds}\n    metric: mutual_knn\n    params: {{k: 5}}\n    preprocess: prh\n"
    "    selection: best\n    n_perm: 5\n    n_ci: 3\n"
    for sid, ds in (("own-mknn", "my-stamps"), ("own-parquet-mknn", "my-stamps-parquet")))


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """examples/own_data written with N stamps into a temporary folder (with its datasets.yaml)."""
    spec = importlib.util.spec_from_file_location("make_folder", EXAMPLE / "make_folder.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = tmp_path_factory.mktemp("own")
    module.write_folder(out, N)
    shutil.copy(EXAMPLE / "datasets.yaml", out / "datasets.yaml")
    (out / "settings.yaml").write_text(SETTINGS)
    return out


@pytest.fixture
def copy(written: Path, tmp_path: Path) -> Path:
    """A private copy of the written folder, to edit."""
    shutil.copytree(written, tmp_path / "own")
    return tmp_path / "own"


def test_folder_and_parquet_hold_the_installed_samples(written: Path) -> None:
    stamps = get_dataset("tuxpaint", limit=N)
    with using([written / "datasets.yaml"]) as names:
        assert names == ["my-stamps", "my-stamps-parquet"]
        assert {"my-stamps", "my-stamps-parquet"} <= {i.name for i in list_datasets()}
        folder, parquet = get_dataset("my-stamps"), get_dataset("my-stamps-parquet")
        limited = get_dataset("my-stamps", limit=5)
    for ds in (folder, parquet):
        assert ds.ids == stamps.ids and ds.captions(0) == stamps.captions(0)
        assert ds.image(3).tobytes() == stamps.image(3).tobytes()
    assert folder.revision.startswith("folder:sha256:") and parquet.revision.startswith("parquet:sha256:")
    assert limited.ids == folder.ids[:5] and limited.revision == folder.revision
    with pytest.raises(UserError, match="--datasets-file"):  # outside the block the names are unknown
        get_dataset("my-stamps")


def _key_digest(ds) -> str:  # noqa: ANN001
    spec = load_zoo().get("demo/dinov2-s-imgfocus")
    return feature_key(spec, ds, prompt="image", device=torch.device("cpu")).digest()


def test_content_edits_change_the_fingerprint_and_the_cache_key(copy: Path) -> None:
    files = [copy / "datasets.yaml"]
    with using(files):
        before = get_dataset("my-stamps")
    manifest = copy / "photos" / "manifest.jsonl"
    rows = [json.loads(line) for line in manifest.read_text().splitlines()]
    rows[2]["caption"] = "An edited caption."
    manifest.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with using(files):
        edited = get_dataset("my-stamps")
    assert edited.captions(0)[2] == "An edited caption." and edited.ids == before.ids
    assert edited.revision != before.revision and edited.fingerprint != before.fingerprint
    assert _key_digest(edited) != _key_digest(before)
    shutil.copy(copy / "photos" / "0001.png", copy / "photos" / "0000.png.new")
    (copy / "photos" / "0000.png.new").replace(copy / "photos" / "0000.png")  # same bytes as 0001: refused
    with using(files), pytest.raises(UserError, match="same image file"):
        get_dataset("my-stamps")
    parquet = copy / "parquet" / "test.parquet"
    with using(files):
        old = get_dataset("my-stamps-parquet").revision
    import pandas as pd

    table = pd.read_parquet(parquet)
    table.loc[0, "caption"] = "Another caption."
    table.to_parquet(parquet)
    with using(files):
        changed = get_dataset("my-stamps-parquet")
    assert changed.captions(0)[0] == "Another caption." and changed.revision != old


def test_runs_end_to_end_on_both(written: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLATOBENCH_HOME", str(tmp_path / "home"))
    pair = "baseline/bag-of-words:baseline/colour-histogram"
    args = ["run", "--pairs", pair, "--settings", "own-mknn,own-parquet-mknn", "--settings-file",
            str(written / "settings.yaml"), "--datasets-file", str(written / "datasets.yaml"), "--out",
            str(tmp_path / "r"), "--json"]
    assert main(args) == 0
    records = {r.setting: r for r in load_records(tmp_path / "r")}
    assert set(records) == {"own-mknn", "own-parquet-mknn"}
    folder, parquet = records["own-mknn"], records["own-parquet-mknn"]
    assert folder.dataset.n == N and folder.dataset.name == "my-stamps"
    assert folder.score == parquet.score and folder.dataset.fingerprint != parquet.dataset.fingerprint
    again = platobench.evaluate(pair, "own-mknn", settings_files=[written / "settings.yaml"],
                                datasets_files=[written / "datasets.yaml"], progress=False)
    assert again.records[0].score == folder.score
    assert main(["check", "--results", str(tmp_path / "r"), "--datasets-file", str(written / "datasets.yaml"),
                 "--tol", "1e-9", "--json"]) == 0  # check rebuilds the user's datasets by name and reproduces both records
    assert main(["check", "--results", str(tmp_path / "r"), "--json"]) != 0  # without the file: named, not empty


def test_data_show_names_the_licence(written: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "show", "my-stamps", "--datasets-file", str(written / "datasets.yaml"), "--json",
                 "--no-image-check"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["licence"] == "GPL-2 (Tux Paint stamps)" and shown["n"] == N and shown["source"].startswith("folder:")


def _write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "d.yaml"
    path.write_text("version: 1\ndatasets:\n" + body)
    return path


@pytest.mark.parametrize(("body", "match"), [
    ("  a:\n    type: folder\n    root: .\n    manifest: m.jsonl\n    licence: x\n    captoins: [c]\n",
     r"d.yaml:4: datasets\['a'\]: unknown key 'captoins' \(did you mean 'captions'\?\)"),
    ("  a:\n    type: folder\n    root: .\n    manifest: m.jsonl\n", r"field 'licence': required field is missing"),
    ("  tuxpaint:\n    type: folder\n    root: .\n    manifest: m.jsonl\n    licence: x\n", "built-in dataset"),
    ("  a:\n    type: hub\n    repo: org/name\n    captions: c\n    licence: x\n", "pinned revision"),
    ("  a:\n    type: hub\n    repo: ./p\n    licence: x\n", "caption column"),
    ("  a:\n    type: folder\n    kind: class\n    root: .\n    manifest: m.jsonl\n    licence: x\n", "label column"),
    ("  a:\n    type: tfrecord\n    licence: x\n", "expected one of folder, hub, webdataset"),
    ("  Bad Name:\n    type: folder\n", "a dataset name is"),
])
def test_malformed_entries_are_named(tmp_path: Path, body: str, match: str) -> None:
    with pytest.raises(UserError, match=match):
        read_datasets_file(_write(tmp_path, body))


def test_a_name_in_two_files_is_refused(written: Path) -> None:
    with pytest.raises(UserError, match="two datasets files"):
        with using([written / "datasets.yaml", written / "datasets.yaml"]):
            pass


def _folder(tmp_path: Path, rows: list[dict], **extra: str) -> Path:
    stamps = get_dataset("tuxpaint", limit=4)
    (tmp_path / "img").mkdir(exist_ok=True)
    for i in range(4):
        stamps.image(i).save(tmp_path / "img" / f"{i}.png")
    (tmp_path / "img" / "m.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    more = "".join(f"    {k}: {v}\n" for k, v in extra.items())
    return _write(tmp_path, f"  a:\n    type: folder\n    root: ./img\n    manifest: ./img/m.jsonl\n    licence: x\n{more}")


@pytest.mark.parametrize(("rows", "match"), [
    ([{"id": "x", "file": "0.png", "caption": "one"}, {"id": "x", "file": "1.png", "caption": "two"}], "share an id"),
    ([{"id": "x", "file": "0.png", "caption": "one"}, {"id": "y", "file": "9.png", "caption": "two"}], "missing"),
    ([{"id": "x", "file": "0.png", "caption": "One."}, {"id": "y", "file": "1.png", "caption": "one"}], "share caption 0"),
    ([{"id": "x", "file": "0.png", "caption": "one"}, {"id": "y", "file": "../d.yaml", "caption": "two"}], "outside"),
    ([{"id": "x", "file": "0.png", "caption": "one"}, {"id": "y", "file": "1.png", "caption": " "}], "no caption"),
    ([{"id": "x", "file": "0.png"}], "column 'caption' is missing"),
    ([], "has no rows"),
])
def test_bad_samples_are_named(tmp_path: Path, rows: list[dict], match: str) -> None:
    with using([_folder(tmp_path, rows)]), pytest.raises(UserError, match=match):
        get_dataset("a")


def test_a_class_folder(tmp_path: Path) -> None:
    rows = [{"id": f"s{i}", "file": f"{i}.png", "label": ["zebra", "apple"][i % 2]} for i in range(4)]
    with using([_folder(tmp_path, rows, kind="class", label="label", templates='["a drawing of a {}."]')]):
        ds = get_dataset("a")
    assert ds.class_names == ["apple", "zebra"] and ds.labels == [1, 0, 1, 0]
    assert ds.templates == ["a drawing of a {}."]
    numbered = [{"id": f"s{i}", "file": f"{i}.png", "label": i % 2} for i in range(4)]
    with using([_folder(tmp_path, numbered, kind="class", label="label")]), pytest.raises(UserError, match="class_names"):
        get_dataset("a")


def _shard(path: Path, samples: list[tuple[str, bytes | None, str | None]]) -> None:
    """A tar shard of (key, PNG bytes or None, caption or None) samples."""
    import io
    import tarfile

    with tarfile.open(path, "w") as tar:
        for key, png, caption in samples:
            for ext, data in (("png", png), ("txt", None if caption is None else caption.encode())):
                if data is not None:
                    info = tarfile.TarInfo(f"{key}.{ext}")
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))


def _stamp_samples(n: int) -> list[tuple[str, bytes | None, str | None]]:
    import io

    stamps = get_dataset("tuxpaint", limit=n)
    out = []
    for i, caption in enumerate(stamps.captions(0)):
        buffer = io.BytesIO()
        stamps.image(i).save(buffer, format="PNG")
        out.append((f"part/{i:04d}", buffer.getvalue(), caption))
    return out


def test_webdataset_shards(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLATOBENCH_HOME", str(tmp_path / "home"))
    samples = _stamp_samples(8)
    (tmp_path / "shards").mkdir()
    _shard(tmp_path / "shards" / "a-000.tar", samples[:5])
    _shard(tmp_path / "shards" / "a-001.tar", samples[5:])
    files = [_write(tmp_path, "  w:\n    type: webdataset\n    shards: [./shards/a-*.tar]\n    licence: GPL-2\n")]
    stamps = get_dataset("tuxpaint", limit=8)
    with using(files):
        ds, first = get_dataset("w"), get_dataset("w", limit=3)
    assert ds.ids == [k for k, _, _ in samples] and ds.captions(0) == stamps.captions(0)
    assert ds.image(6).tobytes() == stamps.image(6).tobytes() and ds.revision.startswith("webdataset:sha256:")
    assert first.ids == ds.ids[:3] and first.image(2).tobytes() == stamps.image(2).tobytes()
    settings = tmp_path / "w.yaml"
    settings.write_text("settings:\n  w-mknn:\n    dataset: w\n    metric: mutual_knn\n    params: {k: 3}\n"
                        "    n_perm: 0\n    n_ci: 0\n")
    with using(files):  # extraction reads the images in DataLoader workers: the loader is picklable
        got = platobench.evaluate("baseline/bag-of-words:baseline/colour-histogram", "w-mknn",
                                  settings_files=[settings], progress=False, workers=2)
    assert not got.failed and got.records[0].dataset.n == 8
    _shard(tmp_path / "shards" / "a-001.tar", [*samples[5:7], (samples[7][0], samples[7][1], "Edited.")])
    with using(files):
        assert get_dataset("w").revision != ds.revision
    _shard(tmp_path / "shards" / "a-001.tar", [samples[0]])  # a key of shard 0 again
    with using(files), pytest.raises(UserError, match="in two shards"):
        get_dataset("w")
    _shard(tmp_path / "shards" / "a-001.tar", [("part/x", None, "A caption without its image.")])
    with using(files), pytest.raises(UserError, match="no image member"):
        get_dataset("w")
    _shard(tmp_path / "shards" / "a-001.tar", [("part/y", samples[0][1], None)])
    with using(files), pytest.raises(UserError, match=r"no \.txt member"):
        get_dataset("w")
    (tmp_path / "shards" / "a-001.tar").write_bytes(b"not a tar")
    with using(files), pytest.raises(UserError, match="not a readable tar"):
        get_dataset("w")
    bad = [_write(tmp_path, "  w:\n    type: webdataset\n    shards: [./none-*.tar]\n    licence: x\n")]
    with using(bad), pytest.raises(UserError, match="match no tar file"):
        get_dataset("w")
    with pytest.raises(UserError, match="caption"):
        read_datasets_file(_write(tmp_path, "  w:\n    type: webdataset\n    shards: [a.tar]\n    caption: csv\n    licence: x\n"))
