"""Datasets from the Hugging Face hub, loaded through the `datasets` library at a pinned revision.

`HF_HUB_OFFLINE=1` is respected (the library then reads only its local cache); a dataset that is not
available gives a UserError naming the hub dataset, revision and split, never an empty dataset. Sample
ids come from the source's own id column where it has one (a string or an integer), else the row number in
the split.

A local folder of parquet files (a `repo` that is a directory, as the library reads it) follows the rules of
a folder dataset (platobench/data/folder.py): an image struct without bytes names a file relative to the
folder, which must be inside it (its bytes are then in the folder's content hash, the revision), and every
image is checked when the dataset is built (`images.check_image`), each an error naming the sample.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image, ImageOps

from platobench.data.base import ClassDataset, PairedDataset
from platobench.data.folder import bounded, refuse_bare, sample_id, texts_of
from platobench.data.images import check_image, open_image
from platobench.errors import UserError
from platobench.files.ids import shown
from platobench.hub import hub_offline, offline_libraries

OFFLINE_FALLBACK = "an offline dataset: openclipart-1024 (paired), openclipart-categories or fashion-mnist (class)"


@dataclass(frozen=True)
class HubSpec:
    """Where a hub dataset lives and which columns hold what. `repo` may also be a local folder of
    parquet files (what the tests use). `where` keeps only rows whose column equals a value (e.g. the
    Karpathy split column of Flickr30k)."""

    repo: str
    revision: str
    split: str
    image: str
    captions: str | None = None
    label: str | None = None
    id_columns: tuple[str, ...] = ()
    where: tuple[str, str] | None = None
    config: str | None = None

    def describe(self) -> str:
        return f"hub dataset {self.repo} (revision {self.revision}, split {self.split})"

    def local_root(self) -> Path | None:
        """The resolved folder when `repo` is a local folder (the library then reads it, not the hub)."""
        path = Path(self.repo)
        return path.resolve() if path.is_dir() else None


def load_split(spec: HubSpec) -> Any:
    """The split as a `datasets.Dataset` (images stay encoded until a row is read)."""
    import datasets

    try:
        with offline_libraries():
            return datasets.load_dataset(spec.repo, spec.config, revision=spec.revision, split=spec.split)
    except Exception as exc:  # the library raises many types (ConnectionError, FileNotFoundError, ...)
        if spec.local_root() is not None:
            raise _local_failure(spec, exc) from exc
        if hub_offline():
            raise UserError(
                f"{spec.describe()} is not in the local cache and HF_HUB_OFFLINE is set: run once with "
                f"network access to download it, or use {OFFLINE_FALLBACK}"
            ) from exc
        raise UserError(
            f"could not load {spec.describe()}: {type(exc).__name__}: {exc}. Without network, set "
            f"HF_HUB_OFFLINE=1 (cache only) or use {OFFLINE_FALLBACK}"
        ) from exc


def _local_failure(spec: HubSpec, exc: Exception) -> UserError:
    """The error of a local parquet folder that did not load: a split it lacks, named with those it has;
    else the library's reason (no network is involved)."""
    import datasets

    try:
        with offline_libraries():
            splits = datasets.get_dataset_split_names(spec.repo, spec.config)
    except Exception:  # noqa: BLE001 -- the folder's own problem is reported below
        splits = None
    if splits is not None and spec.split not in splits:
        return UserError(f"local parquet folder {spec.repo} has no split {spec.split!r} "
                         f"(splits: {', '.join(splits)})")
    return UserError(f"could not load local parquet folder {spec.repo} (split {spec.split}): "
                     f"{type(exc).__name__}: {exc}")


def _column(ds: Any, spec: HubSpec, name: str) -> list[Any]:
    if name not in ds.column_names:
        raise UserError(f"{spec.describe()} has no column {name!r} (columns: {', '.join(ds.column_names)})")
    return list(ds[name])


def _rows_and_ids(ds: Any, spec: HubSpec) -> tuple[list[int], list[str]]:
    rows = list(range(len(ds)))
    if spec.where is not None:
        column, value = spec.where
        keep = _column(ds, spec, column)
        rows = [r for r in rows if str(keep[r]) == value]
    id_column = next((c for c in spec.id_columns if c in ds.column_names), None)
    if id_column is None:
        return rows, [f"{spec.split}/{r:06d}" for r in rows]
    values = _column(ds, spec, id_column)
    return rows, [sample_id(values[r], f"{spec.describe()}: row {r}: {id_column!r}") for r in rows]


class _RowImage:
    """Decodes the image of kept row i on demand (picklable: holds the Arrow-backed dataset)."""

    def __init__(self, ds: Any, column: str, rows: list[int]) -> None:
        self.ds, self.column, self.rows = ds, column, rows

    def __call__(self, i: int) -> Any:
        return self.ds[self.rows[i]][self.column]


def _struct_source(value: Any, root: Path, where: str) -> bytes | Path:
    """An undecoded image struct's bytes, or else its file: `path` relative to `root` (or absolute), which
    must be a file inside `root`; UserError "`where` ..." otherwise."""
    if not isinstance(value, dict) or (value.get("bytes") is None and not value.get("path")):
        raise UserError(f"{where} holds no image bytes or path")
    if value["bytes"] is not None:
        return value["bytes"]
    path = (root / value["path"]).resolve()
    if not path.is_relative_to(root):
        raise UserError(f"{where}'s file {shown(value['path'])} is outside {root}")
    if not path.is_file():
        raise UserError(f"{where}'s file {shown(value['path'])} is missing under {root}")
    return path


class _LocalRowImage:
    """Decodes the image of kept row i of a local parquet folder: its bytes, or its file inside the folder
    (`_struct_source`), as the `datasets` library decodes them (EXIF orientation applied, then the column's
    mode); a UserError names the sample when that fails (picklable)."""

    def __init__(self, ds: Any, column: str, rows: list[int], ids: list[str], root: Path) -> None:
        self.ds, self.column, self.rows, self.ids, self.root = ds, column, rows, ids, root
        self.mode = ds.features[column].mode

    def __call__(self, i: int) -> Image.Image:
        where = f"sample {shown(self.ids[i])}'s image in {self.root}"
        image = ImageOps.exif_transpose(open_image(_struct_source(self.ds[self.rows[i]][self.column], self.root,
                                                                  where), where))
        return image.convert(self.mode) if self.mode and image.mode != self.mode else image


def _check_local_images(name: str, ds: Any, column: str, rows: list[int], ids: list[str], root: Path) -> None:
    """Every kept row's image of a local parquet folder: a file inside the folder, or bytes, of a whole image."""
    for r, sid in zip(rows, ids):
        where = f"dataset {name!r}: sample {shown(sid)}'s image in {root}"
        check_image(_struct_source(ds[r][column], root, where), where)


def _images(name: str, ds: Any, spec: HubSpec, rows: list[int], ids: list[str]) -> Any:
    """The image loader of the kept rows: the library's decoding for a hub dataset; for a local parquet
    folder, `_LocalRowImage` after every row's image is checked."""
    root = spec.local_root()
    if root is None:
        return _RowImage(ds, spec.image, rows)
    _check_local_images(name, ds, spec.image, rows, ids, root)
    return _LocalRowImage(ds, spec.image, rows, ids, root)


def _image_column(ds: Any, spec: HubSpec) -> Any:
    """`ds` with `spec.image` as an image column: a column of {bytes, path} structs (parquet written without
    the `datasets` image feature, e.g. by pandas) is cast to `datasets.Image()`, decoded by the library for a
    hub dataset and left undecoded for a local parquet folder (`_LocalRowImage` decodes it); UserError when
    the column is missing or holds no images."""
    import datasets

    if spec.image not in ds.column_names:
        raise UserError(
            f"{spec.describe()} has no column {spec.image!r} (columns: {', '.join(ds.column_names)})"
        )
    current, decode = ds.features[spec.image], spec.local_root() is None
    if isinstance(current, datasets.Image) and current.decode == decode:
        return ds
    try:
        return ds.cast_column(spec.image, datasets.Image(mode=getattr(current, "mode", None), decode=decode))
    except (TypeError, ValueError) as exc:
        raise UserError(f"{spec.describe()}: column {spec.image!r} holds {ds.features[spec.image]}, not images "
                        "(expected the `datasets` Image feature or {bytes, path} structs)") from exc


def paired(name: str, spec: HubSpec, *, limit: int | None = None, revision: str | None = None,
           max_caption_chars: int | None = None) -> PairedDataset:
    """Paired dataset from `spec` (caption column: a string or a list of strings per row, `folder.texts_of`;
    each caption cut to `max_caption_chars`); `revision`: the dataset's revision when it is not the spec's
    (a local copy's content hash)."""
    assert spec.captions is not None
    ds = load_split(spec)
    ds = _image_column(ds, spec)
    rows, ids = _rows_and_ids(ds, spec)
    rows, ids = rows[:limit], ids[:limit]
    column = _column(ds, spec, spec.captions)
    views = bounded([texts_of(column[r], f"dataset {name!r}: sample {shown(sid)}: {spec.captions!r}")
                     for r, sid in zip(rows, ids)], max_caption_chars)
    refuse_bare(name, ids, views)
    return PairedDataset(name, revision or spec.revision, ids, views, _images(name, ds, spec, rows, ids))


def classes(
    name: str,
    spec: HubSpec,
    templates: list[str],
    *,
    keep_labels: list[int] | None = None,
    class_names: list[str] | None = None,
    class_descriptions: list[str] | None = None,
    limit: int | None = None,
    revision: str | None = None,
) -> ClassDataset:
    """Class dataset from `spec`. `keep_labels` keeps only rows with those source labels, renumbered
    0.. in that order; `class_names` (one per kept label) default to the label column's ClassLabel names."""
    assert spec.label is not None
    ds = load_split(spec)
    ds = _image_column(ds, spec)
    rows, ids = _rows_and_ids(ds, spec)
    labels = _column(ds, spec, spec.label)
    if class_names is None:
        feature = ds.features.get(spec.label)
        if not hasattr(feature, "names"):
            raise UserError(f"{spec.describe()}: column {spec.label!r} carries no class names")
        class_names = (
            [feature.names[i] for i in keep_labels] if keep_labels is not None else list(feature.names)
        )
    if keep_labels is not None:
        remap = {src: dst for dst, src in enumerate(keep_labels)}
        kept = [(r, i) for r, i in zip(rows, ids) if labels[r] in remap]
        rows, ids = [r for r, _ in kept], [i for _, i in kept]
        mapped = [remap[labels[r]] for r in rows]
    else:
        mapped = [int(labels[r]) for r in rows]
    rows, ids, mapped = rows[:limit], ids[:limit], mapped[:limit]
    return ClassDataset(
        name,
        revision or spec.revision,
        ids,
        mapped,
        class_names,
        templates,
        _images(name, ds, spec, rows, ids),
        class_descriptions=class_descriptions,
    )
