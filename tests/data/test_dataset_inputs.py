"""Hostile samples in datasets files: unreadable images (0 bytes, cut short, not an image, decompression
bombs) are one-line errors naming the file, at build time where the header shows them (before any model
runs) and when decoded otherwise; captions are bounded (`max_caption_chars`, truncated); CSV and JSONL
manifests with a UTF-8 byte-order mark are read; ids and captions that are not strings are refused by
name; and the smaller cases of a webdataset caption of spaces, an ids entry of kind class and a wrong split
of a local parquet folder."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from platobench.cli import main
from platobench.data import get_dataset
from platobench.data.datasets_file import read_datasets_file, using
from platobench.errors import UserError

N = 6
FOLDER = "  a:\n    type: folder\n    root: ./img\n    manifest: ./img/m.jsonl\n    licence: x\n"
SHARDS = "  a:\n    type: webdataset\n    shards: [./shards/*.tar]\n    licence: x\n"
HUB = ("  a:\n    type: hub\n    repo: ./parquet\n    split: test\n    id_column: id\n    captions: caption\n"
       "    licence: x\n")


def _pngs(n: int = N) -> list[bytes]:
    stamps = get_dataset("tuxpaint", limit=n)
    out = []
    for i in range(n):
        buffer = io.BytesIO()
        stamps.image(i).save(buffer, format="PNG")
        out.append(buffer.getvalue())
    return out


def _captions(n: int = N) -> list[str]:
    return get_dataset("tuxpaint", limit=n).captions(0)


def _yaml(folder: Path, body: str) -> Path:
    path = folder / "d.yaml"
    path.write_text("version: 1\ndatasets:\n" + body)
    return path


def _folder(tmp_path: Path, images: list[bytes] | None = None, rows: list[dict[str, Any]] | None = None,
            extra: str = "") -> Path:
    """A folder dataset of the stamps (or `images`), manifest `rows` (default: id, file, caption)."""
    (tmp_path / "img").mkdir(exist_ok=True)
    images = images or _pngs()
    for i, data in enumerate(images):
        (tmp_path / "img" / f"{i}.png").write_bytes(data)
    rows = rows or [{"id": f"s{i}", "file": f"{i}.png", "caption": c} for i, c in enumerate(_captions(len(images)))]
    (tmp_path / "img" / "m.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return _yaml(tmp_path, FOLDER + extra)


def _shard(tmp_path: Path, members: list[tuple[str, str, bytes]]) -> Path:
    """./shards/a.tar of (key, extension, bytes) members, and its datasets file."""
    (tmp_path / "shards").mkdir(exist_ok=True)
    with tarfile.open(tmp_path / "shards" / "a.tar", "w") as tar:
        for key, ext, data in members:
            info = tarfile.TarInfo(f"{key}.{ext}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return _yaml(tmp_path, SHARDS)


def _samples(captions: list[bytes], ext: str = "txt",
             images: list[bytes] | None = None) -> list[tuple[str, str, bytes]]:
    """(key, extension, bytes) members: each stamp (or `images`) with its caption member."""
    images = images or _pngs(len(captions))
    return [m for i, (png, c) in enumerate(zip(images, captions)) for m in ((f"k{i}", "png", png), (f"k{i}", ext, c))]


def _parquet(tmp_path: Path, images: list[Any] | None = None, **columns: list[Any]) -> Path:
    import pandas as pd

    images = images or [{"bytes": p, "path": None} for p in _pngs()]
    (tmp_path / "parquet").mkdir(exist_ok=True)
    table = {"id": [f"s{i}" for i in range(len(images))], "image": images, "caption": _captions(len(images)), **columns}
    pd.DataFrame(table).to_parquet(tmp_path / "parquet" / "test.parquet")
    return _yaml(tmp_path, HUB)


def _build(files: Path, limit: int | None = None) -> Any:
    with using([files]):
        return get_dataset("a", limit=limit)


# --- item 5: unreadable images -----------------------------------------------------------------------------


def _bomb(size: tuple[int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.new("1", size).save(buffer, format="PNG")
    return buffer.getvalue()


def _over_the_bound() -> tuple[int, int]:
    """A size one row of pixels over `images.MAX_PIXELS` (under Pillow's own error threshold)."""
    from platobench.data.images import MAX_PIXELS

    return MAX_PIXELS // 9_000 + 1, 9_000


def _jpeg() -> bytes:
    buffer = io.BytesIO()
    get_dataset("tuxpaint", limit=1).image(0).save(buffer, format="JPEG", quality=90)
    return buffer.getvalue()


BAD = {
    "empty": lambda: b"",
    "not-an-image": lambda: b"caption text, not a picture\n",
    "cut-png": lambda: _pngs(1)[0][: len(_pngs(1)[0]) // 2],
    "bomb": lambda: _bomb((20_000, 20_000)),
    "over-the-bound": lambda: _bomb(_over_the_bound()),
}


@pytest.mark.parametrize("bad", BAD)
def test_an_unreadable_image_is_named_when_the_folder_is_built(tmp_path: Path, bad: str,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    images = _pngs()
    images[2] = BAD[bad]()
    files = _folder(tmp_path, images)
    with pytest.raises(UserError, match=r"dataset 'a': sample 's2'.*2\.png.* is not a readable image"):
        _build(files, limit=1)  # whatever the limit: the revision, and the check, cover every file
    for flag in ([], ["--no-image-check"]):
        assert main(["data", "show", "a", "--datasets-file", str(files), *flag]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "2.png" in err and "Traceback" not in err


@pytest.mark.parametrize("cut", [400, 2, 1])
def test_a_jpeg_cut_short_is_named_when_the_folder_is_built(tmp_path: Path, cut: int) -> None:
    """A JPEG's header does not show that it is cut short: its segments are walked to the end-of-image marker."""
    images = _pngs()
    images[3] = _jpeg()[:-cut]
    with pytest.raises(UserError, match=r"sample 's3'.*3\.png is not a readable image \(cut short"):
        _build(_folder(tmp_path, images))
    images[3] = _jpeg() + b"trailing bytes after the end-of-image marker"
    assert _build(_folder(tmp_path, images)).image(3).size == get_dataset("tuxpaint", limit=1).image(0).size


@pytest.mark.parametrize("fmt", ["GIF", "BMP", "TIFF", "WEBP"])
def test_an_image_of_another_format_cut_short_is_named(tmp_path: Path, fmt: str) -> None:
    buffer = io.BytesIO()
    get_dataset("tuxpaint", limit=1).image(0).save(buffer, format=fmt)
    images = _pngs()
    images[3] = buffer.getvalue()[: len(buffer.getvalue()) * 2 // 3]
    with pytest.raises(UserError, match=r"sample 's3'.*3\.png is not a readable image"):
        _build(_folder(tmp_path, images))


def test_an_image_replaced_after_the_build_is_named_when_decoded(tmp_path: Path) -> None:
    ds = _build(_folder(tmp_path))
    (tmp_path / "img" / "3.png").write_bytes(b"")
    with pytest.raises(UserError, match=r"image file .*3\.png is not a readable image"):
        ds.image(3)


@pytest.mark.parametrize("bad", ["empty", "cut-png", "bomb"])
def test_an_unreadable_image_member_or_parquet_image_is_named(tmp_path: Path, bad: str) -> None:
    images = _pngs()
    images[1] = BAD[bad]()
    files = _shard(tmp_path, _samples([c.encode() for c in _captions()], images=images))
    with pytest.raises(UserError, match=r"sample 'k1'.*a\.tar.* is not a readable image"):
        _build(files)
    files = _parquet(tmp_path, [{"bytes": p, "path": None} for p in images])
    with pytest.raises(UserError, match=r"sample 's1'.* is not a readable image"):
        _build(files)


@pytest.mark.parametrize("bad", ["empty", "cut-jpeg"])
def test_run_refuses_an_unreadable_image_before_any_model_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str], bad: str) -> None:
    monkeypatch.setenv("PLATOBENCH_HOME", str(tmp_path / "home"))
    images = _pngs()
    images[4] = b"" if bad == "empty" else _jpeg()[:-400]
    files = _folder(tmp_path, images)
    (tmp_path / "s.yaml").write_text("settings:\n  a-mknn:\n    dataset: a\n    metric: mutual_knn\n"
                                     "    params: {k: 2}\n    n_perm: 0\n    n_ci: 0\n")
    args = ["run", "--pairs", "baseline/bag-of-words:baseline/colour-histogram", "--settings", "a-mknn",
            "--settings-file", str(tmp_path / "s.yaml"), "--datasets-file", str(files), "--out", str(tmp_path / "r")]
    assert main(args) != 0
    out = capsys.readouterr()
    assert "4.png" in out.out + out.err and "Traceback" not in out.out + out.err
    assert not list((tmp_path / "home").rglob("*.safetensors"))  # no features extracted


# --- item 6: caption length ---------------------------------------------------------------------------------


def _long_caption_rows(length: int) -> list[dict[str, Any]]:
    captions = _captions()
    captions[1] = " ".join(f"word{i}" for i in range(length // 8))[:length]
    return [{"id": f"s{i}", "file": f"{i}.png", "caption": c} for i, c in enumerate(captions)]


def test_a_long_caption_is_truncated_to_the_bound(tmp_path: Path) -> None:
    rows = _long_caption_rows(10_000_000)
    ds = _build(_folder(tmp_path, rows=rows))
    assert len(ds.captions(0)[1]) == 2_000 and rows[1]["caption"].startswith(ds.captions(0)[1])
    assert ds.captions(0)[0] == rows[0]["caption"]
    small = _build(_folder(tmp_path, rows=rows, extra="    max_caption_chars: 50\n"))
    assert len(small.captions(0)[1]) == 50 and small.revision != ds.revision
    files = _shard(tmp_path, _samples([r["caption"].encode() for r in rows]))
    assert len(_build(files).captions(0)[1]) == 2_000
    files = _parquet(tmp_path, caption=[r["caption"] for r in rows])
    assert len(_build(files).captions(0)[1]) == 2_000
    with pytest.raises(UserError, match="max_caption_chars"):
        read_datasets_file(_yaml(tmp_path, FOLDER + "    max_caption_chars: 0\n"))


# --- item 7: byte-order marks, ids and captions that are not strings ---------------------------------------


def test_manifests_and_ids_files_with_a_byte_order_mark_are_read(tmp_path: Path) -> None:
    _folder(tmp_path)
    captions = _captions()
    lines = ["id,file,caption", *[f"s{i},{i}.png,\"{c}\"" for i, c in enumerate(captions)]]
    (tmp_path / "img" / "m.csv").write_text("\n".join(lines) + "\n", encoding="utf-8-sig")
    ds = _build(_yaml(tmp_path, FOLDER.replace("m.jsonl", "m.csv")))
    assert ds.ids == [f"s{i}" for i in range(N)] and ds.captions(0) == captions
    text = (tmp_path / "img" / "m.jsonl").read_text()
    (tmp_path / "img" / "m.jsonl").write_text(text, encoding="utf-8-sig")
    assert _build(_yaml(tmp_path, FOLDER)).ids == ds.ids
    (tmp_path / "ids.txt").write_text("g1\ng2\n", encoding="utf-8-sig")
    assert _build(_yaml(tmp_path, "  a:\n    type: ids\n    ids: ./ids.txt\n    licence: x\n")).ids == ["g1", "g2"]


@pytest.mark.parametrize("value", [None, [1, 2], {"a": 1}, True, 1.5])
def test_an_id_that_is_not_a_string_is_refused(tmp_path: Path, value: Any) -> None:
    rows = [{"id": f"s{i}", "file": f"{i}.png", "caption": c} for i, c in enumerate(_captions())]
    rows[2]["id"] = value
    with pytest.raises(UserError, match=r"dataset 'a': row 3 of .*m\.jsonl: 'id' must be a string or an integer"):
        _build(_folder(tmp_path, rows=rows))
    (tmp_path / "ids.jsonl").write_text("".join(json.dumps({"id": r["id"]}) + "\n" for r in rows))
    with pytest.raises(UserError, match=r"row 3 of .*ids\.jsonl: 'id' must be a string or an integer"):
        _build(_yaml(tmp_path, "  a:\n    type: ids\n    ids: ./ids.jsonl\n    licence: x\n"))


def test_integer_ids_are_kept(tmp_path: Path) -> None:
    rows = [{"id": 10 + i, "file": f"{i}.png", "caption": c} for i, c in enumerate(_captions())]
    assert _build(_folder(tmp_path, rows=rows)).ids == [str(10 + i) for i in range(N)]


@pytest.mark.parametrize("value", [{"text": "a cat"}, 7, ["a cat", {"text": "a dog"}], False])
def test_a_caption_that_is_not_a_string_is_refused(tmp_path: Path, value: Any) -> None:
    rows = [{"id": f"s{i}", "file": f"{i}.png", "caption": c} for i, c in enumerate(_captions())]
    rows[2]["caption"] = value
    with pytest.raises(UserError, match=r"dataset 'a': sample 's2'.*'caption' .*not a string"):
        _build(_folder(tmp_path, rows=rows))
    captions = [json.dumps({"c": r["caption"]}).encode() for r in rows]
    files = _shard(tmp_path, _samples(captions, ext="json"))
    (tmp_path / "d.yaml").write_text((tmp_path / "d.yaml").read_text() + "    caption: json:c\n")
    with pytest.raises(UserError, match=r"dataset 'a': sample 'k2'.*'c' .*not a string"):
        _build(files)


def test_a_caption_null_is_no_caption_in_both_loaders(tmp_path: Path) -> None:
    """JSON null is an empty cell (as a blank CSV cell): the sample has no caption, never the caption "None"."""
    rows = [{"id": f"s{i}", "file": f"{i}.png", "caption": c} for i, c in enumerate(_captions())]
    rows[0]["caption"] = None
    with pytest.raises(UserError, match=r"dataset 'a': 1 sample\(s\) have no caption \(first: 's0'\)"):
        _build(_folder(tmp_path, rows=rows))
    captions = [json.dumps({"c": r["caption"]}).encode() for r in rows]
    files = _shard(tmp_path, _samples(captions, ext="json"))
    (tmp_path / "d.yaml").write_text((tmp_path / "d.yaml").read_text() + "    caption: json:c\n")
    with pytest.raises(UserError, match=r"dataset 'a': 1 sample\(s\) have no caption \(first: 'k0'\)"):
        _build(files)


# --- item 8: the dataset parts -------------------------------------------------------------------------------


def test_a_webdataset_caption_of_spaces_is_named_as_the_folder_one_is(tmp_path: Path) -> None:
    captions = [c.encode() for c in _captions()]
    captions[3] = b"   \n "
    with pytest.raises(UserError, match=r"dataset 'a': 1 sample\(s\) have no caption \(first: 'k3'\)"):
        _build(_shard(tmp_path, _samples(captions)))
    captions[3] = json.dumps({"c": ["  ", ""]}).encode()
    json_captions = [json.dumps({"c": c}).encode() for c in _captions()]
    json_captions[3] = captions[3]
    files = _shard(tmp_path, _samples(json_captions, ext="json"))
    (tmp_path / "d.yaml").write_text((tmp_path / "d.yaml").read_text() + "    caption: json:c\n")
    with pytest.raises(UserError, match=r"have no caption \(first: 'k3'\)"):
        _build(files)


def test_an_ids_entry_of_kind_class_is_named(tmp_path: Path) -> None:
    (tmp_path / "ids.txt").write_text("g1\ng2\n")
    with pytest.raises(UserError, match=r"datasets\['a'\]: field 'kind': an ids dataset has no labels"):
        read_datasets_file(_yaml(tmp_path, "  a:\n    type: ids\n    kind: class\n    ids: ./ids.txt\n"
                                           "    licence: x\n"))


def test_a_wrong_split_of_a_local_parquet_folder_names_the_split(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    files = _parquet(tmp_path)
    (tmp_path / "d.yaml").write_text((tmp_path / "d.yaml").read_text().replace("split: test", "split: tset"))
    with pytest.raises(UserError, match=r"local parquet folder .*parquet has no split 'tset'") as got:
        _build(files)
    assert "network" not in str(got.value)
