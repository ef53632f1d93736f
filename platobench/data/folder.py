"""A dataset in a local folder: image files plus a manifest (JSONL, CSV or parquet) with one row per sample.

Manifest columns (names configurable in the datasets file, `platobench.data.datasets_file`): `id` (unique),
`file` (the image, relative to the folder), caption column(s) (each a string, or a list of strings in
JSONL/parquet; a sample's captions are the columns' in order) and, for a class set, `label` (a class name,
or an integer index into the entry's `class_names`). Samples keep the manifest's order, so `--limit N` is
its first N rows: shuffle the manifest once if the rows are sorted.

The revision is `folder:sha256:<16 hex>` of the manifest's bytes and every listed file's bytes, in order:
editing a caption, replacing an image or reordering rows changes it, hence the dataset fingerprint and
every feature-cache key built on it; renaming the folder does not. Checked when built, each an error naming
the samples: ids that repeat or are empty, files that are missing or escape the folder, empty captions,
two samples with the same caption (`quality.caption_key`: kNN ties decided by rounding) or the same image
file bytes, and labels outside `class_names`.
"""

from __future__ import annotations

import csv
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from platobench.data.base import ClassDataset, FileImageLoader, ImageLoader, PairedDataset
from platobench.data.captions import caption_key
from platobench.data.quality import duplicate_groups
from platobench.errors import UserError
from platobench.files.digest import file_sha256
from platobench.files.ids import shown

MANIFEST_SUFFIXES = (".jsonl", ".csv", ".parquet")


def read_manifest(path: Path) -> list[dict[str, Any]]:
    """The manifest's rows as dicts; UserError naming the file (and the line, for JSONL) when unreadable."""
    if not path.is_file():
        raise UserError(f"manifest {path} not found")
    suffix = path.suffix.lower()
    try:
        if suffix == ".jsonl":
            rows = []
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if line.strip():
                    try:
                        row = json.loads(line)
                    except json.JSONDecodeError as exc:
                        raise UserError(f"{path}:{number}: not a JSON object ({exc.msg})") from exc
                    if not isinstance(row, dict):
                        raise UserError(f"{path}:{number}: expected a JSON object per line, got {type(row).__name__}")
                    rows.append(row)
            return rows
        if suffix == ".csv":
            with path.open(encoding="utf-8", newline="") as f:
                return list(csv.DictReader(f))
        if suffix == ".parquet":
            import pandas as pd

            return pd.read_parquet(path).to_dict(orient="records")
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        if isinstance(exc, UserError):
            raise
        raise UserError(f"manifest {path} cannot be read: {type(exc).__name__}: {exc}") from exc
    raise UserError(f"manifest {path}: expected a {', '.join(MANIFEST_SUFFIXES)} file")


def _column(rows: list[dict[str, Any]], column: str, path: Path) -> list[Any]:
    missing = [i for i, r in enumerate(rows) if column not in r]
    if missing:
        raise UserError(f"manifest {path}: column {column!r} is missing from {len(missing)} row(s) (first: row "
                        f"{missing[0] + 1}; columns there: {', '.join(map(str, rows[missing[0]]))})")
    return [r[column] for r in rows]


def _texts(value: Any) -> list[str]:
    """A caption cell: a string, or a list/array of strings (JSONL, parquet); empty cells give none."""
    if value is None or (isinstance(value, float) and value != value):  # noqa: PLR0124 -- NaN: an empty CSV/parquet cell
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value if isinstance(v, str) and v.strip()]
    return [str(value)]


def refuse_duplicates(name: str, ids: Sequence[str], keys: Sequence[Any], what: str) -> None:
    """UserError naming the first groups of `ids` whose `keys` coincide (`what` they share)."""
    groups = duplicate_groups(ids, keys)
    if groups:
        first = "; ".join(", ".join(shown(i) for i in g[:4]) for g in groups[:3])
        raise UserError(f"dataset {name!r}: {len(groups)} group(s) of samples share {what} (first: {first}); "
                        "remove the repeats from the manifest")


class FolderRows:
    """The checked rows of a folder dataset: ids, image paths, caption views, raw labels and the revision."""

    def __init__(self, name: str, root: Path, manifest: Path, *, id_column: str, file_column: str,
                 caption_columns: Sequence[str], label_column: str | None) -> None:
        rows = read_manifest(manifest)
        if not rows:
            raise UserError(f"dataset {name!r}: manifest {manifest} has no rows")
        self.ids = [str(v).strip() for v in _column(rows, id_column, manifest)]
        empty = [i + 1 for i, v in enumerate(self.ids) if not v]
        if empty:
            raise UserError(f"dataset {name!r}: {len(empty)} row(s) of {manifest} have an empty {id_column!r} (first: row {empty[0]})")
        refuse_duplicates(name, self.ids, self.ids, "an id")
        root = root.resolve()
        self.paths = []
        missing = []
        for sample_id, value in zip(self.ids, _column(rows, file_column, manifest)):
            path = (root / str(value)).resolve()
            if not path.is_relative_to(root):
                raise UserError(f"dataset {name!r}: sample {shown(sample_id)}'s file {shown(value)} is outside {root}")
            if not path.is_file():
                missing.append(sample_id)
            self.paths.append(path)
        if missing:
            raise UserError(f"dataset {name!r}: {len(missing)} image file(s) are missing under {root} (first samples: "
                            f"{', '.join(shown(i) for i in missing[:5])})")
        columns = [_column(rows, c, manifest) for c in caption_columns]
        self.views = [[t for col in columns for t in _texts(col[i])] for i in range(len(rows))]
        self.labels = None if label_column is None else _column(rows, label_column, manifest)
        digest = hashlib.sha256(manifest.read_bytes())
        file_digests = [file_sha256(p) for p in self.paths]
        for d in file_digests:
            digest.update(d.encode())
        refuse_duplicates(name, self.ids, file_digests, "the same image file (identical bytes)")
        self.revision = f"folder:sha256:{digest.hexdigest()[:16]}"

    def loader(self, n: int | None = None) -> FileImageLoader:
        """The image loader of the first `n` samples (None: all)."""
        return FileImageLoader(self.paths[:n])


class Rows(Protocol):
    """Checked samples of a dataset of files (`FolderRows`, `webdataset.ShardRows`): ids, caption views (None
    without captions), raw labels (None without), the content revision and an image loader."""

    ids: list[str]
    views: list[list[str]] | None
    labels: list[Any] | None
    revision: str

    def loader(self, n: int | None = None) -> ImageLoader: ...


def paired(name: str, rows: Rows, *, limit: int | None = None) -> PairedDataset:
    """The paired dataset of `rows` (every sample needs a caption; no caption index may repeat a caption)."""
    assert rows.views is not None
    bare = [sid for sid, v in zip(rows.ids, rows.views) if not v]
    if bare:
        raise UserError(f"dataset {name!r}: {len(bare)} sample(s) have no caption (first: "
                        f"{', '.join(shown(i) for i in bare[:5])})")
    for index in range(min(len(v) for v in rows.views)):
        refuse_duplicates(name, rows.ids, [caption_key(v[index]) for v in rows.views], f"caption {index}")
    n = len(rows.ids) if limit is None else min(limit, len(rows.ids))
    return PairedDataset(name, rows.revision, rows.ids[:n], rows.views[:n], rows.loader(n))


def classes(name: str, rows: Rows, templates: list[str], class_names: list[str] | None) -> ClassDataset:
    """The class dataset of `rows`: labels are names (classes sorted, unless `class_names` orders them) or
    indices into `class_names`."""
    assert rows.labels is not None
    raw = rows.labels
    if all(isinstance(v, str) and not v.strip().lstrip("-").isdigit() for v in raw):
        names = class_names if class_names is not None else sorted({v.strip() for v in raw})
        index = {c: i for i, c in enumerate(names)}
        unknown = [sid for sid, v in zip(rows.ids, raw) if v.strip() not in index]
        if unknown:
            raise UserError(f"dataset {name!r}: {len(unknown)} sample(s) have a label not in class_names "
                            f"(first: {shown(unknown[0])})")
        labels = [index[v.strip()] for v in raw]
    else:
        if class_names is None:
            raise UserError(f"dataset {name!r}: integer labels need class_names in the datasets file")
        try:
            labels = [int(v) for v in raw]
        except (TypeError, ValueError) as exc:
            raise UserError(f"dataset {name!r}: labels must be class names or integers ({exc})") from exc
        bad = [sid for sid, y in zip(rows.ids, labels) if not 0 <= y < len(class_names)]
        if bad:
            raise UserError(f"dataset {name!r}: {len(bad)} label(s) outside 0..{len(class_names) - 1} "
                            f"(first sample: {shown(bad[0])})")
        names = class_names
    return ClassDataset(name, rows.revision, rows.ids, labels, names, templates, rows.loader())
