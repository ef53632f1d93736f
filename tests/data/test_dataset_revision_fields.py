"""Every field of a datasets-file entry that changes what a sample is enters the dataset's revision, so that
cached features and records are never reused when it changes; the neutral fields are listed
(`datasets_file.REVISION_NEUTRAL`) and the fields naming files are hashed by their bytes, not their spelling
(`datasets_file.CONTENT_FIELDS`), as tests/features/test_feature_key_fields.py does for the zoo's cache key.

Also the issue's cases end to end (another caption column of a folder manifest, another `.json` field of a
webdataset, another caption column of a parquet folder, another label column of a class folder), and the
path rule of a parquet folder's image structs: no file outside the folder, and the bytes read are hashed."""

from __future__ import annotations

import io
import json
import shutil
import tarfile
from pathlib import Path
from typing import Any

import pytest

from platobench.cli import main
from platobench.data import datasets_file, get_dataset
from platobench.data.datasets_file import FolderEntry, HubEntry, IdsEntry, WebDatasetEntry, using
from platobench.errors import UserError
from platobench.results import load_records

TYPES = {"folder": FolderEntry, "hub": HubEntry, "webdataset": WebDatasetEntry, "ids": IdsEntry}
ENTRIES: dict[str, dict[str, Any]] = {
    "folder": {"type": "folder", "root": "./r", "manifest": "./r/m.jsonl", "licence": "x"},
    "hub": {"type": "hub", "repo": "org/name", "revision": "abc123", "captions": "caption", "licence": "x"},
    "webdataset": {"type": "webdataset", "shards": ["./s/*.tar"], "licence": "x"},
    "ids": {"type": "ids", "ids": "./ids.txt", "licence": "x"},
}
CONTENT = "folder:sha256:0123456789abcdef"

# (entry type, field, another value): each must change the revision
CHANGES = [
    *[(t, "type", "other") for t in TYPES],
    *[(t, "kind", "class") for t in TYPES],
    *[(t, "templates", ["a {}."]) for t in TYPES],
    *[(t, "class_names", ["a", "b"]) for t in TYPES],
    *[(t, "max_caption_chars", 10) for t in ("folder", "hub", "webdataset")],
    ("folder", "id_column", "key"),
    ("folder", "file_column", "path"),
    ("folder", "captions", ["alt"]),
    ("folder", "captions", ["caption", "alt"]),
    ("folder", "label", "cat_b"),
    ("hub", "repo", "org/other"),
    ("hub", "revision", "def456"),
    ("hub", "split", "validation"),
    ("hub", "config", "small"),
    ("hub", "image", "photo"),
    ("hub", "captions", "alt"),
    ("hub", "label", "fine_label"),
    ("hub", "id_column", "cocoid"),
    ("webdataset", "caption", "json:b"),
    ("webdataset", "label", "json:cat"),
    ("ids", "id_column", "key"),
]
NEUTRAL_CHANGES = [(t, f, "edited") for t in TYPES for f in ("licence", "description")]


def _spec(entry_type: str, **update: Any) -> Any:
    return TYPES[entry_type].model_validate(ENTRIES[entry_type]).model_copy(update=update)  # unvalidated: only hashed


def _revision(content: str, spec: Any) -> str:
    return datasets_file.entry_revision(content, spec)


@pytest.mark.parametrize("kind", TYPES)
def test_every_entry_field_is_in_the_revision_or_declared(kind: str) -> None:
    fields = set(TYPES[kind].model_fields)
    changed = {f for t, f, _ in CHANGES if t == kind}
    neutral, content = datasets_file.REVISION_NEUTRAL, datasets_file.CONTENT_FIELDS & fields
    assert fields == changed | content | neutral, (
        f"{kind} fields neither shown to change the revision nor declared neutral or content: "
        f"{fields - changed - content - neutral}")
    assert not neutral & (changed | datasets_file.CONTENT_FIELDS)


@pytest.mark.parametrize(("kind", "field", "value"), CHANGES, ids=[f"{k}:{f}={v}" for k, f, v in CHANGES])
def test_a_sample_field_changes_the_revision(kind: str, field: str, value: Any) -> None:
    assert _revision(CONTENT, _spec(kind, **{field: value})) != _revision(CONTENT, _spec(kind))


@pytest.mark.parametrize(("kind", "field", "value"), NEUTRAL_CHANGES, ids=[f"{k}:{f}" for k, f, _ in NEUTRAL_CHANGES])
def test_a_neutral_field_keeps_the_revision(kind: str, field: str, value: Any) -> None:
    assert _revision(CONTENT, _spec(kind, **{field: value})) == _revision(CONTENT, _spec(kind))


def test_the_content_and_a_local_repo_enter_by_bytes_not_spelling() -> None:
    assert _revision(CONTENT, _spec("folder")) != _revision("folder:sha256:fedcba9876543210", _spec("folder"))
    for kind, field, value in [("folder", "root", "./moved"), ("folder", "manifest", "./moved/m.jsonl"),
                               ("webdataset", "shards", ["./moved/*.tar"]), ("ids", "ids", "./moved.txt"),
                               ("hub", "repo", "./moved")]:
        here = _spec(kind, **({"repo": "./parquet"} if kind == "hub" else {}))
        assert _revision(CONTENT, _spec(kind, **{field: value})) == _revision(CONTENT, here), field
    assert _revision(CONTENT, _spec("folder")).startswith("folder:sha256:")
    assert _revision("abc123", _spec("hub")).startswith("hub@abc123:sha256:")


# --- the cases, end to end ----------------------------------------------------------------------


def _pngs(n: int) -> list[bytes]:
    stamps = get_dataset("tuxpaint", limit=n)
    out = []
    for i in range(n):
        buffer = io.BytesIO()
        stamps.image(i).save(buffer, format="PNG")
        out.append(buffer.getvalue())
    return out


def _captions(n: int) -> tuple[list[str], list[str]]:
    """Two caption columns: the stamps' captions, and the same captions in reverse order."""
    captions = get_dataset("tuxpaint", limit=n).captions(0)
    return captions, captions[::-1]


def _yaml(folder: Path, body: str) -> Path:
    path = folder / "d.yaml"
    path.write_text("version: 1\ndatasets:\n" + body)
    return path


def _folder(tmp_path: Path, n: int = 12) -> Path:
    """A folder of n stamps whose manifest has caption columns `caption` and `alt` and labels `cat_a`,
    `cat_b`."""
    (tmp_path / "img").mkdir(parents=True, exist_ok=True)
    caption, alt = _captions(n)
    rows = []
    for i, png in enumerate(_pngs(n)):
        (tmp_path / "img" / f"{i}.png").write_bytes(png)
        rows.append({"id": f"s{i}", "file": f"{i}.png", "caption": caption[i], "alt": alt[i],
                     "cat_a": ["x", "y"][i % 2], "cat_b": ["x", "y"][i % 3 == 0]})
    (tmp_path / "img" / "m.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path


def _fingerprint(files: list[Path], name: str = "a") -> str:
    with using(files):
        return get_dataset(name).fingerprint


def test_another_caption_column_of_a_folder_is_another_revision(tmp_path: Path) -> None:
    _folder(tmp_path)
    entry = "  a:\n    type: folder\n    root: ./img\n    manifest: ./img/m.jsonl\n    licence: x\n"
    first = _fingerprint([_yaml(tmp_path, entry + "    captions: [caption]\n")])
    assert _fingerprint([_yaml(tmp_path, entry + "    captions: [alt]\n")]) != first
    assert _fingerprint([_yaml(tmp_path, entry + "    captions: [caption]\n    description: edited\n")]) == first


def test_another_label_column_of_a_class_folder_is_another_revision(tmp_path: Path) -> None:
    _folder(tmp_path)
    entry = "  a:\n    type: folder\n    kind: class\n    root: ./img\n    manifest: ./img/m.jsonl\n    licence: x\n"
    assert (_fingerprint([_yaml(tmp_path, entry + "    label: cat_a\n")])
            != _fingerprint([_yaml(tmp_path, entry + "    label: cat_b\n")]))


def test_another_json_field_of_a_webdataset_is_another_revision(tmp_path: Path) -> None:
    caption, alt = _captions(8)
    (tmp_path / "shards").mkdir()
    with tarfile.open(tmp_path / "shards" / "a.tar", "w") as tar:
        for i, png in enumerate(_pngs(8)):
            for ext, data in (("png", png), ("json", json.dumps({"a": caption[i], "b": alt[i]}).encode())):
                info = tarfile.TarInfo(f"k{i}.{ext}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    entry = "  a:\n    type: webdataset\n    shards: [./shards/*.tar]\n    licence: x\n"
    assert (_fingerprint([_yaml(tmp_path, entry + "    caption: json:a\n")])
            != _fingerprint([_yaml(tmp_path, entry + "    caption: json:b\n")]))


def _parquet(folder: Path, images: list[dict[str, Any]], n: int = 8) -> None:
    import pandas as pd

    caption, alt = _captions(n)
    (folder / "parquet").mkdir(exist_ok=True)
    pd.DataFrame({"id": [f"s{i}" for i in range(n)], "image": images, "caption": caption,
                  "alt": alt}).to_parquet(folder / "parquet" / "test.parquet")


HUB = "  a:\n    type: hub\n    repo: ./parquet\n    split: test\n    id_column: id\n    licence: x\n"


def test_another_caption_column_of_a_parquet_folder_is_another_revision(tmp_path: Path) -> None:
    _parquet(tmp_path, [{"bytes": png, "path": None} for png in _pngs(8)])
    assert (_fingerprint([_yaml(tmp_path, HUB + "    captions: caption\n")])
            != _fingerprint([_yaml(tmp_path, HUB + "    captions: alt\n")]))


def test_a_moved_folder_keeps_its_revision(tmp_path: Path) -> None:
    _folder(tmp_path / "one")
    entry = "  a:\n    type: folder\n    root: ./img\n    manifest: ./img/m.jsonl\n    licence: x\n"
    first = _fingerprint([_yaml(tmp_path / "one", entry)])
    shutil.copytree(tmp_path / "one", tmp_path / "two")
    assert _fingerprint([tmp_path / "two" / "d.yaml"]) == first


def test_a_second_run_on_another_caption_column_is_scored_afresh(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's run: captions [caption], then [alt] in the same home and results folder; the second
    record must be the one a fresh home writes, not the first run's."""
    _folder(tmp_path, 16)
    entry = "  a:\n    type: folder\n    root: ./img\n    manifest: ./img/m.jsonl\n    licence: x\n"
    (tmp_path / "s.yaml").write_text("settings:\n  a-mknn:\n    dataset: a\n    metric: mutual_knn\n"
                                     "    params: {k: 3}\n    n_perm: 0\n    n_ci: 0\n")

    def score(home: str, captions: str) -> float:
        monkeypatch.setenv("PLATOBENCH_HOME", str(tmp_path / home))
        files = _yaml(tmp_path, entry + f"    captions: [{captions}]\n")
        args = ["run", "--pairs", "baseline/bag-of-words:baseline/colour-histogram", "--settings", "a-mknn",
                "--settings-file", str(tmp_path / "s.yaml"), "--datasets-file", str(files), "--out",
                str(tmp_path / f"r-{home}"), "--json"]
        assert main(args) == 0
        (record,) = load_records(tmp_path / f"r-{home}")
        return record.score

    first = score("home", "caption")
    again = score("home", "alt")
    fresh = score("fresh", "alt")
    assert again == fresh and again != first


# --- parquet image structs: no file outside the folder ---------------------------------------------------


def test_a_parquet_image_path_outside_the_folder_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pngs = _pngs(8)
    (tmp_path / "outside.png").write_bytes(pngs[0])
    files = [_yaml(tmp_path, HUB + "    captions: caption\n")]
    for path in (str(tmp_path / "outside.png"), "../outside.png"):
        _parquet(tmp_path, [{"bytes": None, "path": path}, *[{"bytes": p, "path": None} for p in pngs[1:]]])
        monkeypatch.chdir(tmp_path / "parquet")  # where the library reads "../outside.png" from
        with using(files), pytest.raises(UserError, match=r"sample 's0'.*outside .*parquet"):
            get_dataset("a")


def test_a_parquet_image_path_inside_the_folder_is_read_from_it_and_hashed(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    pngs = _pngs(8)
    files = [_yaml(tmp_path, HUB + "    captions: caption\n")]
    _parquet(tmp_path, [{"bytes": None, "path": "img/0.png"}, *[{"bytes": p, "path": None} for p in pngs[1:]]])
    (tmp_path / "parquet" / "img").mkdir()
    (tmp_path / "parquet" / "img" / "0.png").write_bytes(pngs[0])
    monkeypatch.chdir(tmp_path)  # relative to the parquet folder, not to the working directory
    with using(files):
        ds = get_dataset("a")
    stamps = get_dataset("tuxpaint", limit=8)
    assert ds.image(0).tobytes() == stamps.image(0).tobytes()
    stamps.image(0).save(tmp_path / "parquet" / "img" / "0.png", compress_level=1)  # other bytes, same pixels
    with using(files):
        assert get_dataset("a").revision != ds.revision


def test_a_second_zero_shot_run_on_another_label_column_is_scored_afresh(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's class case: `label: cat_a`, then `cat_b`, in the same home and results folder."""
    (tmp_path / "img").mkdir()
    rows = []
    for i, png in enumerate(_pngs(16)):
        (tmp_path / "img" / f"{i}.png").write_bytes(png)
        rows.append({"id": f"s{i}", "file": f"{i}.png", "cat_a": ["apple", "bear", "car", "dog"][i % 4],
                     "cat_b": ["apple", "bear", "car", "dog"][i // 4]})
    (tmp_path / "img" / "m.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    entry = "  a:\n    type: folder\n    kind: class\n    root: ./img\n    manifest: ./img/m.jsonl\n    licence: x\n"
    (tmp_path / "s.yaml").write_text("settings:\n  a-zs:\n    kind: zeroshot\n    dataset: a\n"
                                     "    metric: zeroshot_matching\n    selection: last\n    options: {seeds: 3}\n")

    def score(home: str, label: str) -> float:
        monkeypatch.setenv("PLATOBENCH_HOME", str(tmp_path / home))
        files = _yaml(tmp_path, entry + f"    label: {label}\n")
        args = ["run", "--pairs", "baseline/bag-of-words:baseline/colour-histogram", "--settings", "a-zs",
                "--settings-file", str(tmp_path / "s.yaml"), "--datasets-file", str(files), "--out",
                str(tmp_path / f"r-{home}"), "--json", "--yes"]
        assert main(args) == 0
        (record,) = load_records(tmp_path / f"r-{home}")
        return record.score

    first = score("home", "cat_a")
    again = score("home", "cat_b")
    fresh = score("fresh", "cat_b")
    assert again == fresh and again != first


def test_a_label_that_is_no_class_index_is_refused(tmp_path: Path) -> None:
    """Integer labels index class_names; a float (1.7), a bool or a string that is no integer is refused by
    sample, never rounded into a class."""
    from platobench.errors import UserError

    _folder(tmp_path)
    rows = [json.loads(line) for line in (tmp_path / "img" / "m.jsonl").read_text().splitlines()]
    entry = ("  a:\n    type: folder\n    kind: class\n    root: ./img\n    manifest: ./img/m.jsonl\n    licence: x\n"
             "    label: k\n    class_names: [x, y]\n")
    for bad in (1.7, True):
        (tmp_path / "img" / "m.jsonl").write_text("".join(json.dumps({**r, "k": bad if i == 3 else i % 2}) + "\n"
                                                          for i, r in enumerate(rows)))
        with pytest.raises(UserError, match="sample 's3' has label"):
            _fingerprint([_yaml(tmp_path, entry)])
    (tmp_path / "img" / "m.jsonl").write_text("".join(json.dumps({**r, "k": str(i % 2)}) + "\n" for i, r in enumerate(rows)))
    assert _fingerprint([_yaml(tmp_path, entry)])
