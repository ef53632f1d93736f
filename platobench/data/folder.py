"""A dataset in a local folder: image files plus a manifest (JSONL, CSV or parquet) with one row per sample.

Manifest columns (names configurable in the datasets file, `platobench.data.datasets_file`): `id` (unique; a
string or an integer), `file` (the image, relative to the folder), caption column(s) (each a string, or a
list of strings in JSONL/parquet; a sample's captions are the columns' in order) and, for a class set,
`label` (a class name, or an integer index into the entry's `class_names`). A UTF-8 byte-order mark at the
start of a CSV or JSONL manifest is dropped. Samples keep the manifest's order, so `--limit N` is its first N
rows: shuffle the manifest once if the rows are sorted.

The content revision is `folder:sha256:<16 hex>` of the manifest's bytes and every listed file's bytes, in
order (the datasets file then hashes the entry's columns into it: `datasets_file.entry_revision`): editing a
caption, replacing an image or reordering rows changes it, hence the dataset fingerprint and every
feature-cache key built on it; renaming the folder does not. Checked when built, each an error naming the
samples: ids that repeat, are empty or are not strings or integers (JSON null, a list), captions that are
not strings (an object, a number), files that are missing, escape the folder or are not whole images of at
most `images.MAX_PIXELS` (`images.check_image`), empty captions, two samples with the same caption
(`quality.caption_key`: kNN ties decided by rounding) or the same image file bytes, and labels outside
`class_names`.
"""

from __future__ import annotations

import csv
import hashlib
import json
from collections.abc import Sequence
from numbers import Integral
from pathlib import Path
from typing import Any, Protocol

from PIL import Image

from platobench.data.base import ClassDataset, ImageLoader, PairedDataset
from platobench.data.captions import caption_key
from platobench.data.images import check_image, open_image
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
            for number, line in enumerate(path.read_text(encoding="utf-8-sig").splitlines(), 1):
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
            with path.open(encoding="utf-8-sig", newline="") as f:
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


def sample_id(value: Any, where: str) -> str:
    """An id cell as the sample's id: a string (stripped) or an integer; UserError "`where`: ..." for
    anything else (JSON null, a list, a bool, a float: "None", "[1, 2]", "True" or "1.0" are no ids)."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, Integral) and not isinstance(value, bool):
        return str(int(value))
    raise UserError(f"{where} must be a string or an integer (got {type(value).__name__} {shown(value)})")


def texts_of(value: Any, where: str) -> list[str]:
    """A caption cell's captions: a string, or a list/array of strings (JSONL, parquet, a webdataset's
    .json); blank strings and empty cells (null, NaN) give none. UserError "`where` holds ..." for anything
    else (an object, a number, a bool, a list holding one), which is no caption."""
    if value is None or (isinstance(value, float) and value != value):  # noqa: PLR0124 -- NaN: an empty CSV/parquet cell
        return []
    items = value.tolist() if hasattr(value, "tolist") else value
    items = [items] if isinstance(items, str) else items
    if not isinstance(items, (list, tuple)) or not all(isinstance(v, str) for v in items):
        raise UserError(f"{where} holds {type(value).__name__} {shown(value)}: not a string or a list of strings")
    return [v for v in items if v.strip()]


def bounded(views: Sequence[Sequence[str]], max_chars: int | None) -> list[list[str]]:
    """Every caption cut to its first `max_chars` characters (None: kept whole); one left blank is dropped."""
    return [[c[:max_chars] for c in v if c[:max_chars].strip()] for v in views]


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
        self.ids = [sample_id(v, f"dataset {name!r}: row {i + 1} of {manifest}: {id_column!r}")
                    for i, v in enumerate(_column(rows, id_column, manifest))]
        empty = [i + 1 for i, v in enumerate(self.ids) if not v]
        if empty:
            raise UserError(f"dataset {name!r}: {len(empty)} row(s) of {manifest} have an empty {id_column!r} (first: row {empty[0]})")
        refuse_duplicates(name, self.ids, self.ids, "an id")
        root = root.resolve()
        self.paths = []
        missing = []
        for sid, value in zip(self.ids, _column(rows, file_column, manifest)):
            path = (root / str(value)).resolve()
            if not path.is_relative_to(root):
                raise UserError(f"dataset {name!r}: sample {shown(sid)}'s file {shown(value)} is outside {root}")
            if not path.is_file():
                missing.append(sid)
            self.paths.append(path)
        if missing:
            raise UserError(f"dataset {name!r}: {len(missing)} image file(s) are missing under {root} (first samples: "
                            f"{', '.join(shown(i) for i in missing[:5])})")
        columns = {c: _column(rows, c, manifest) for c in caption_columns}
        self.views = [[t for c, col in columns.items() for t in texts_of(col[i], f"dataset {name!r}: sample "
                                                                         f"{shown(sid)}: {c!r}")]
                      for i, sid in enumerate(self.ids)]
        self.labels = None if label_column is None else _column(rows, label_column, manifest)
        digest = hashlib.sha256(manifest.read_bytes())
        file_digests = [file_sha256(p) for p in self.paths]
        for d in file_digests:
            digest.update(d.encode())
        refuse_duplicates(name, self.ids, file_digests, "the same image file (identical bytes)")
        for sid, path in zip(self.ids, self.paths):
            check_image(path, f"dataset {name!r}: sample {shown(sid)}'s file {path}")
        self.revision = f"folder:sha256:{digest.hexdigest()[:16]}"

    def loader(self, n: int | None = None) -> CheckedImageLoader:
        """The image loader of the first `n` samples (None: all)."""
        return CheckedImageLoader(self.paths[:n])


class CheckedImageLoader:
    """Opens image i of a list of files through `images.open_image`: a file that cannot be decoded, or
    is over `images.MAX_PIXELS`, is a UserError naming it (picklable, for DataLoader workers)."""

    def __init__(self, paths: Sequence[Path]) -> None:
        self.paths = list(paths)

    def __call__(self, i: int) -> Image.Image:
        return open_image(self.paths[i], f"image file {self.paths[i]}")


class Rows(Protocol):
    """Checked samples of a dataset of files (`FolderRows`, `webdataset.ShardRows`): ids, caption views (None
    without captions), raw labels (None without), the content revision and an image loader."""

    ids: list[str]
    views: list[list[str]] | None
    labels: list[Any] | None
    revision: str

    def loader(self, n: int | None = None) -> ImageLoader: ...


def refuse_bare(name: str, ids: Sequence[str], views: Sequence[Sequence[str]]) -> None:
    """UserError naming the first samples without a caption."""
    bare = [sid for sid, v in zip(ids, views) if not v]
    if bare:
        raise UserError(f"dataset {name!r}: {len(bare)} sample(s) have no caption (first: "
                        f"{', '.join(shown(i) for i in bare[:5])})")


def paired(name: str, rows: Rows, *, limit: int | None = None, max_caption_chars: int | None = None) -> PairedDataset:
    """The paired dataset of `rows`, each caption cut to `max_caption_chars` (every sample needs a caption;
    no caption index may repeat a caption)."""
    assert rows.views is not None
    views = bounded(rows.views, max_caption_chars)
    refuse_bare(name, rows.ids, views)
    for index in range(min(len(v) for v in views)):
        refuse_duplicates(name, rows.ids, [caption_key(v[index]) for v in views], f"caption {index}")
    n = len(rows.ids) if limit is None else min(limit, len(rows.ids))
    return PairedDataset(name, rows.revision, rows.ids[:n], views[:n], rows.loader(n))


def _label_index(name: str, sample: str, value: Any) -> int:
    """An integer label (a JSON integer, or a string of digits): never a float, a bool or anything
    `int()` would round or read (1.7 is no class index)."""
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise UserError(f"dataset {name!r}: sample {shown(sample)} has label {shown(value)}: labels must be class "
                    "names or integer indices into class_names")


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
        labels = [_label_index(name, sid, v) for sid, v in zip(rows.ids, raw)]
        bad = [sid for sid, y in zip(rows.ids, labels) if not 0 <= y < len(class_names)]
        if bad:
            raise UserError(f"dataset {name!r}: {len(bad)} label(s) outside 0..{len(class_names) - 1} "
                            f"(first sample: {shown(bad[0])})")
        names = class_names
    return ClassDataset(name, rows.revision, rows.ids, labels, names, templates, rows.loader())
