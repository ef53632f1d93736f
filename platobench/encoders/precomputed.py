"""`loader: features`: embeddings computed elsewhere, read from a file instead of running a model.

A zoo entry with `loader: features` names a local file (`source`, relative to its zoo YAML) that holds
per-layer features keyed by sample id, for one dataset. Formats, by suffix:

- `.safetensors`: one tensor `layer.<index>` `[N, D_l]` per layer; the N sample ids as a JSON list under
  "ids" in the header's metadata, and optionally the input they embed under "input" ("image",
  "caption:<i>"); what `platobench extract --export FILE` writes.
- `.npy`: `[L, N, D]` (layers 0..L-1) or `[N, D]` (layer 0); the ids one per line in `<file>.ids.txt`
  beside it (for `emb.npy`, `emb.npy.ids.txt`).
- `.parquet`: a string column `id` and one list-of-float column `layer.<index>` per layer.

A file embeds one input of each sample: the one its "input" states, else the image (vision entries) or
caption 0 (text entries); a setting that asks for another (`caption:1`) is refused, not served the
file's rows. The layer indices must be those of the entry (`num_layers`, `layers`), each named once (`layer.1`
and `layer.01` in one file are an error). Values must be floats in every format (an int or bool tensor,
array or list column is refused: such values are ids, labels or masks, not features, and int64 does not
widen to float32 exactly); they are read as float32 (an exact widening for float16 and bfloat16). Rows are
matched to the dataset by id, so the file's row order is free: an id the dataset needs and the file lacks,
an id the file holds twice, and an id the file holds that the dataset does not (unless the dataset is a
`--limit` prefix of the file's rows, in the dataset's order) are each an error naming them. A parquet null
(id or layer value) is an error naming its column. The cache key's revision is the sha256 of the file's bytes
(and of its ids file), so rewriting the file changes the key.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from platobench.encoders.base import EncoderOutputError
from platobench.errors import UserError
from platobench.zoo.spec import ModelSpec

SUFFIXES = (".safetensors", ".npy", ".parquet")
#: The prefix of a layer's tensor (safetensors) or column (parquet) name: "layer.<index>".
LAYER_PREFIX = "layer."
#: How many ids an error message names.
SHOWN_IDS = 5


class EmbeddingFileError(UserError):
    """An embeddings file that cannot be read, or whose ids or layers do not fit its entry or dataset."""


def files_of(path: Path) -> list[Path]:
    """The files an embeddings file consists of: itself, and for `.npy` its ids file."""
    return [path, ids_file(path)] if path.suffix == ".npy" else [path]


def ids_file(path: Path) -> Path:
    """The ids file beside a `.npy` embeddings file: `<file>.ids.txt`."""
    return path.with_name(path.name + ".ids.txt")


def source_path(spec: ModelSpec) -> Path:
    """The embeddings file of `spec`; EmbeddingFileError when it is missing or of an unknown format."""
    path = Path(spec.source).expanduser()
    if path.suffix not in SUFFIXES:
        raise EmbeddingFileError(f"model {spec.name}: embeddings file {path} is not one of {', '.join(SUFFIXES)}")
    for file in files_of(path):
        if not file.is_file():
            raise EmbeddingFileError(f"model {spec.name}: embeddings file {file} does not exist")
    return path


def revision(spec: ModelSpec) -> str:
    """"features:sha256:<16 hex>": the sha256 of the file's bytes (and of its ids file), its cache revision."""
    path = source_path(spec)
    stats = tuple((str(f.resolve()), f.stat().st_size, f.stat().st_mtime_ns) for f in files_of(path))
    return f"features:sha256:{_content_sha256(stats)[:16]}"


@functools.lru_cache(maxsize=64)
def _content_sha256(stats: tuple[tuple[str, int, int], ...]) -> str:
    """sha256 over the files of `stats` ((path, size, mtime_ns) each), each as its size and bytes (names
    left out: a renamed or copied file keeps its key); memoised on the stats, so an unchanged file is
    hashed once per process."""
    h = hashlib.sha256()
    for name, size, _ in stats:
        h.update(f"{size}\n".encode())
        with open(name, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


class EmbeddingFile:
    """The per-layer features of one embeddings file, held as float32 `[N, D_l]` tensors with their ids.

    It stands where an encoder stands in extraction (`spec`, `layer_ids`, `widths`), but reads rows by
    sample id (`rows`) instead of encoding inputs."""

    def __init__(self, spec: ModelSpec, ids: Sequence[str], layers: dict[int, torch.Tensor],
                 input: str | None = None) -> None:
        self.spec = spec
        self.input = input or ("image" if spec.modality == "vision" else "caption:0")
        self.ids = [str(i) for i in ids]
        self.layer_ids = sorted(layers)
        self.layers = [layers[i] for i in self.layer_ids]
        self.widths = [int(x.shape[1]) for x in self.layers]
        self.device = torch.device("cpu")
        name = f"model {spec.name}: embeddings file {spec.source}"
        for index, x in zip(self.layer_ids, self.layers):
            if x.ndim != 2 or x.shape[0] != len(self.ids):
                raise EmbeddingFileError(f"{name}: layer {index} has shape {list(x.shape)}, expected "
                                         f"[{len(self.ids)}, D] (one row per id)")
            if not bool(torch.isfinite(x).all()):
                bad = int((~torch.isfinite(x)).any(dim=1).sum())
                raise EmbeddingFileError(f"{name}: layer {index} has NaN or infinite values in {bad} rows")
        twice = [i for i, count in Counter(self.ids).items() if count > 1]
        if twice:
            raise EmbeddingFileError(f"{name}: {len(twice)} ids appear more than once: {_few(twice)}")
        self._row = {i: r for r, i in enumerate(self.ids)}

    def positions(self, dataset_name: str, ids: Sequence[str], prompt: str, *, sample: bool = False) -> list[int]:
        """The file's row of each of the dataset's `ids`, in the dataset's order, for input `prompt`
        ("image", "caption:<i>"). EmbeddingFileError when the file embeds another input, and naming the ids
        the file lacks, or the ids it holds that the dataset does not (allowed only when the dataset's ids
        are the first rows of the file, as `--limit` selects them, or for a `sample`: a few of the
        dataset's samples, as `submit`'s mock pass reads them)."""
        name = f"model {self.spec.name}: embeddings file {self.spec.source}"
        if prompt != self.input:
            raise EmbeddingFileError(f"{name} embeds {self.input!r}, but {prompt!r} is asked for (a file embeds one "
                                     "input of each sample; export one file per input)")
        missing = [i for i in ids if i not in self._row]
        if missing:
            raise EmbeddingFileError(f"{name} lacks {len(missing)} of the {len(ids)} ids of dataset {dataset_name}: "
                                     f"{_few(missing)}")
        if not sample and len(ids) < len(self.ids) and list(ids) != self.ids[: len(ids)]:
            raise EmbeddingFileError(f"{name} {self._not_a_prefix(dataset_name, ids)}")
        return [self._row[i] for i in ids]

    def _not_a_prefix(self, dataset_name: str, ids: Sequence[str]) -> str:
        """Why the file, holding every one of `ids` and more, cannot serve them: the dataset read here may be
        a `--limit` run of the file's dataset (its first samples), or another dataset; the first row where the
        file and the dataset's order part says which rule is broken."""
        wanted = set(ids)
        extra = [i for i in self.ids if i not in wanted]
        row = next(r for r, (mine, theirs) in enumerate(zip(self.ids, ids)) if mine != theirs)
        return (f"holds {len(self.ids)} ids, {len(extra)} of them beyond the {len(ids)} samples of dataset "
                f"{dataset_name} read here ({_few(extra)}); a file is for one dataset, and a --limit run reads it "
                f"only when its first {len(ids)} rows are those samples in the dataset's order, but row {row} is "
                f"{self.ids[row]!r} where sample {row} is {ids[row]!r}: write the rows in the dataset's order (as "
                "`platobench extract --export` does)")

    def rows(self, positions: Sequence[int]) -> list[torch.Tensor]:
        """One float32 `[len(positions), D_l]` tensor per layer: the file's rows at `positions`."""
        index = torch.as_tensor(list(positions), dtype=torch.long)
        return [x.index_select(0, index).contiguous() for x in self.layers]


def _few(ids: Sequence[str]) -> str:
    shown = ", ".join(repr(i) for i in ids[:SHOWN_IDS])
    return shown + (f" and {len(ids) - SHOWN_IDS} more" if len(ids) > SHOWN_IDS else "")


def _layer_index(spec: ModelSpec, name: str) -> int:
    tail = name[len(LAYER_PREFIX):]
    if not name.startswith(LAYER_PREFIX) or not (tail.isascii() and tail.isdigit()):
        raise EmbeddingFileError(f"model {spec.name}: embeddings file {spec.source} holds {name!r}; "
                                 f"expected only '{LAYER_PREFIX}<index>' layers (and 'id' in parquet)")
    return int(tail)


def _layer_names(spec: ModelSpec, names: Sequence[str]) -> dict[int, str]:
    """Layer index -> the tensor or column name holding it; EmbeddingFileError for a name that is not
    "layer.<index>" and for two names of one index ("layer.1" and "layer.01"), of which one would be lost."""
    found: dict[int, str] = {}
    for name in names:
        index = _layer_index(spec, name)
        if index in found:
            first, second = sorted((found[index], name))
            raise EmbeddingFileError(f"model {spec.name}: embeddings file {spec.source} holds both {first!r} and "
                                     f"{second!r} for layer {index}; name each layer once")
        found[index] = name
    return found


def _floats(spec: ModelSpec, what: str, dtype: Any) -> None:
    """EmbeddingFileError unless `dtype` (numpy or torch) is a floating-point type: `what` ("'layer.0'",
    "column 'layer.0'") names where the values are."""
    floating = dtype.is_floating_point if isinstance(dtype, torch.dtype) else np.issubdtype(dtype, np.floating)
    if not floating:
        shown_dtype = str(dtype).removeprefix("torch.")
        raise EmbeddingFileError(f"model {spec.name}: embeddings file {spec.source}: {what} holds {shown_dtype} "
                                 "values; expected floats (features, not ids, labels or masks)")


def _read_safetensors(spec: ModelSpec, path: Path) -> tuple[list[str], dict[int, torch.Tensor], str | None]:
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), framework="pt") as f:
            metadata = f.metadata() or {}
            layers = {}
            for index, name in _layer_names(spec, list(f.keys())).items():
                tensor = f.get_tensor(name)
                _floats(spec, repr(name), tensor.dtype)
                layers[index] = tensor.to(torch.float32)
    except SafetensorError as exc:
        raise EmbeddingFileError(f"model {spec.name}: {path} is not a readable safetensors file ({exc})") from None
    try:
        ids = json.loads(metadata["ids"])
    except (KeyError, json.JSONDecodeError):
        raise EmbeddingFileError(f"model {spec.name}: {path} has no JSON list of sample ids under 'ids' in its "
                                 "metadata") from None
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise EmbeddingFileError(f"model {spec.name}: {path}: metadata 'ids' must be a list of strings")
    return ids, layers, metadata.get("input")


def _read_npy(spec: ModelSpec, path: Path) -> tuple[list[str], dict[int, torch.Tensor], str | None]:
    try:
        array = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise EmbeddingFileError(f"model {spec.name}: {path} is not a readable .npy array ({exc})") from None
    if not isinstance(array, np.ndarray):  # np.load opens a zip archive (.npz) whatever its name
        names = ", ".join(repr(n) for n in array.files)
        array.close()
        raise EmbeddingFileError(f"model {spec.name}: {path} is an .npz archive (arrays {names}), not one .npy array; "
                                 "save the [L, N, D] array with numpy.save")
    if array.ndim == 2:
        array = array[None]
    if array.ndim != 3 or not np.issubdtype(array.dtype, np.floating):
        raise EmbeddingFileError(f"model {spec.name}: {path} holds a {array.dtype} array of shape {list(array.shape)}; "
                                 "expected floats of shape [L, N, D] or [N, D]")
    ids = ids_file(path).read_text(encoding="utf-8").splitlines()
    return ids, {i: torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32)) for i, a in enumerate(array)}, None


def _read_parquet(spec: ModelSpec, path: Path) -> tuple[list[str], dict[int, torch.Tensor], str | None]:
    import pandas as pd

    try:
        frame = pd.read_parquet(path)
    except (OSError, ValueError) as exc:
        raise EmbeddingFileError(f"model {spec.name}: {path} is not a readable parquet file ({exc})") from None
    if "id" not in frame.columns:
        raise EmbeddingFileError(f"model {spec.name}: {path} has no 'id' column")
    _no_nulls(spec, path, frame, "id")
    layers = {}
    for index, column in _layer_names(spec, [c for c in frame.columns if c != "id"]).items():
        _no_nulls(spec, path, frame, column)
        try:
            values = np.stack(frame[column].tolist())
        except ValueError as exc:
            raise EmbeddingFileError(f"model {spec.name}: {path}: column {column!r} is not one vector of equal width "
                                     f"per row ({exc})") from None
        _floats(spec, f"column {column!r}", values.dtype)
        layers[index] = torch.from_numpy(np.asarray(values, dtype=np.float32))
    return [str(i) for i in frame["id"]], layers, None


def _no_nulls(spec: ModelSpec, path: Path, frame: Any, column: str) -> None:
    """EmbeddingFileError naming `column` of parquet `frame` and how many of its rows are null (None, NaN):
    a null id would become the id "None", a null layer value no vector at all."""
    nulls = int(frame[column].isna().sum())
    if nulls:
        raise EmbeddingFileError(f"model {spec.name}: {path}: column {column!r} is null in {nulls} of {len(frame)} rows")


READERS = {".safetensors": _read_safetensors, ".npy": _read_npy, ".parquet": _read_parquet}


def load(spec: ModelSpec, *, device: Any = None, dtype: str | None = None, home: Path | None = None) -> EmbeddingFile:
    """The embeddings file of `spec`, read whole (the loader protocol of `platobench.encoders`; device,
    dtype and home do not apply: features are float32 CPU tensors). EncoderOutputError when its layers are
    not the entry's."""
    from platobench.encoders import layer_ids_of

    path = source_path(spec)
    ids, layers, input = READERS[path.suffix](spec, path)
    if not layers:
        raise EmbeddingFileError(f"model {spec.name}: embeddings file {path} holds no layers")
    table = EmbeddingFile(spec, ids, layers, input)
    expected = layer_ids_of(spec)
    if table.layer_ids != expected:
        raise EncoderOutputError(f"model {spec.name}: embeddings file {path} holds layers {table.layer_ids}, but the "
                                 f"entry (num_layers={spec.num_layers}, layers={spec.layers}) says {expected}")
    return table


def write_safetensors(path: Path, ids: Sequence[str], layer_ids: Sequence[int], layers: Sequence[torch.Tensor],
                      input: str, metadata: dict[str, str] | None = None) -> None:
    """Write per-layer `[N, D_l]` features, their ids and the input they embed ("image", "caption:<i>") in
    the `.safetensors` format this loader reads."""
    from safetensors.torch import save_file

    tensors = {f"{LAYER_PREFIX}{i}": x.detach().to("cpu").contiguous() for i, x in zip(layer_ids, layers)}
    save_file(tensors, str(path), metadata={**(metadata or {}), "ids": json.dumps(list(ids)), "input": input})
