"""Datasets from the Hugging Face hub, loaded through the `datasets` library at a pinned revision.

`HF_HUB_OFFLINE=1` is respected (the library then reads only its local cache); a dataset that is not
available gives a UserError naming the hub dataset, revision and split, never an empty dataset. Sample
ids come from the source's own id column where it has one, else the row number in the split.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from platobench.data.base import ClassDataset, PairedDataset
from platobench.errors import UserError
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


def load_split(spec: HubSpec) -> Any:
    """The split as a `datasets.Dataset` (images stay encoded until a row is read)."""
    import datasets

    try:
        with offline_libraries():
            return datasets.load_dataset(spec.repo, spec.config, revision=spec.revision, split=spec.split)
    except Exception as exc:  # the library raises many types (ConnectionError, FileNotFoundError, ...)
        if hub_offline():
            raise UserError(
                f"{spec.describe()} is not in the local cache and HF_HUB_OFFLINE is set: run once with "
                f"network access to download it, or use {OFFLINE_FALLBACK}"
            ) from exc
        raise UserError(
            f"could not load {spec.describe()}: {type(exc).__name__}: {exc}. Without network, set "
            f"HF_HUB_OFFLINE=1 (cache only) or use {OFFLINE_FALLBACK}"
        ) from exc


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
    return rows, [str(values[r]) for r in rows]


class _RowImage:
    """Decodes the image of kept row i on demand (picklable: holds the Arrow-backed dataset)."""

    def __init__(self, ds: Any, column: str, rows: list[int]) -> None:
        self.ds, self.column, self.rows = ds, column, rows

    def __call__(self, i: int) -> Any:
        return self.ds[self.rows[i]][self.column]


def _image_column(ds: Any, spec: HubSpec) -> Any:
    """`ds` with `spec.image` as a decoded image column: a column of {bytes, path} structs (parquet written
    without the `datasets` image feature, e.g. by pandas) is cast to `datasets.Image()`; UserError when the
    column is missing or holds no images."""
    import datasets

    if spec.image not in ds.column_names:
        raise UserError(
            f"{spec.describe()} has no column {spec.image!r} (columns: {', '.join(ds.column_names)})"
        )
    if isinstance(ds.features[spec.image], datasets.Image):
        return ds
    try:
        return ds.cast_column(spec.image, datasets.Image())
    except (TypeError, ValueError) as exc:
        raise UserError(f"{spec.describe()}: column {spec.image!r} holds {ds.features[spec.image]}, not images "
                        "(expected the `datasets` Image feature or {bytes, path} structs)") from exc


def paired(name: str, spec: HubSpec, *, limit: int | None = None, revision: str | None = None) -> PairedDataset:
    """Paired dataset from `spec` (caption column: a string or a list of strings per row); `revision`: the
    dataset's revision when it is not the spec's (a local copy's content hash)."""
    assert spec.captions is not None
    ds = load_split(spec)
    ds = _image_column(ds, spec)
    rows, ids = _rows_and_ids(ds, spec)
    rows, ids = rows[:limit], ids[:limit]
    column = _column(ds, spec, spec.captions)
    views = []
    for r in rows:
        value = column[r]
        views.append([str(c) for c in value] if isinstance(value, (list, tuple)) else [str(value)])
    return PairedDataset(name, revision or spec.revision, ids, views, _RowImage(ds, spec.image, rows))


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
        _RowImage(ds, spec.image, rows),
        class_descriptions=class_descriptions,
    )
