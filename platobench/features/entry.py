"""One entry of the features cache: its key (`FeatureKey`, whose digest names the entry), its on-disk
format (the manifest and the safetensors layer files, `manifest_problem`) and the reader of a complete
entry (`FeatureEntry`, every layer's sha256 checked on load). `features.store` finds and manages entries,
`features.writer` writes them; both build on this module.
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load as st_load

from platobench.data.base import ids_hash
from platobench.dtypes import DTYPE_NAMES
from platobench.errors import UserError
from platobench.files.digest import file_sha256
from platobench.metrics.cached_layers import CachedLayers

FORMAT_VERSION = 1
CHUNK_NAME = re.compile(r"^chunk-(\d{9})-(\d{9})-([0-9a-f]{64})\.safetensors$")


class CorruptEntryError(UserError):
    """A cache file does not match its manifest (truncated, modified): the entry must be recomputed."""


class CacheLinkError(UserError):
    """A path inside the features cache is a symbolic link, which the cache never follows."""


class SampleMismatchError(UserError):
    """Two entries that are scored as pairs do not hold the same samples in the same order."""


@dataclass(frozen=True)
class FeatureKey:
    """Everything that changes the stored features (the cache key). `dtype` is the dtype the model
    ran in, `stored_dtype` the dtype on disk; `layers` the extracted layer ids; `prompt` the caption
    view / prompt template applied to the text (e.g. "caption:0"); `ids_hash` = `data.ids_hash(ids)`;
    `options`: (name, value) pairs of the zoo entry's other feature-changing fields (image size,
    quantisation, truncation, ...: `features.extract.spec_options`), left out of the key's JSON, and so of
    its digest, when there are none: an entry that sets none keeps the digest it had before they existed."""

    model: str
    model_revision: str
    dtype: str
    pooling: str
    layers: tuple[int, ...]
    dataset: str
    dataset_revision: str
    ids_hash: str
    prompt: str = ""
    extractor_version: str = ""
    stored_dtype: str = "float32"
    options: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "layers", tuple(int(layer) for layer in self.layers))
        pairs = self.options.items() if isinstance(self.options, dict) else self.options
        object.__setattr__(self, "options", tuple(sorted((str(k), v) for k, v in pairs)))
        for name in (
            "model",
            "model_revision",
            "dtype",
            "pooling",
            "dataset",
            "dataset_revision",
            "ids_hash",
        ):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise ValueError(f"FeatureKey.{name} must be a non-empty string")
        if not self.layers:
            raise ValueError("FeatureKey.layers must name at least one layer")
        if self.stored_dtype not in DTYPE_NAMES:
            raise ValueError(
                f"FeatureKey.stored_dtype={self.stored_dtype!r}: expected one of {sorted(DTYPE_NAMES)}"
            )

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["layers"] = list(self.layers)
        if self.options:
            d["options"] = dict(self.options)
        else:
            del d["options"]
        return d

    def digest(self) -> str:
        """sha256 (hex) of the canonical JSON of every field."""
        return _key_digest(self.as_dict())

    @classmethod
    def for_dataset(cls, dataset: Any, **fields: Any) -> FeatureKey:
        """Key with `dataset`, `dataset_revision` and `ids_hash` taken from a Paired/ClassDataset."""
        return cls(
            dataset=dataset.name, dataset_revision=dataset.revision, ids_hash=ids_hash(dataset.ids), **fields
        )


# ---------------------------------------------------------------------------------------------- files


def json_bytes(obj: Any) -> bytes:
    """`obj` as indented UTF-8 JSON with a trailing newline."""
    return (json.dumps(obj, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def safetensors_header(path: Path) -> dict[str, Any] | None:
    """The safetensors header of `path` when the file is exactly as long as the header says, else None."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            raw = fh.read(8)
            if len(raw) != 8:
                return None
            (n,) = struct.unpack("<Q", raw)
            if n > size - 8:
                return None
            header = json.loads(fh.read(n))
        ends = [v["data_offsets"][1] for k, v in header.items() if k != "__metadata__"]
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
        return None
    return header if all(isinstance(e, int) for e in ends) and 8 + n + max(ends, default=0) == size else None


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _key_digest(key: dict[str, Any]) -> str:
    """`FeatureKey.digest()` of a key as stored (`FeatureKey.as_dict()`)."""
    payload = json.dumps(key, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def manifest_problem(manifest: Any, digest: str) -> str | None:
    """What makes `manifest` unusable for entry `digest` (None when its structure is sound): it must be
    this format and digest, hold n >= 1 ids that hash to its key's `ids_hash`, a key that hashes to the
    digest, one width and one file record per layer id, and name the layer files `layer-<i>.safetensors`
    of its own folder."""
    if not isinstance(manifest, dict):
        return "not a JSON object"
    if manifest.get("format") != FORMAT_VERSION or manifest.get("digest") != digest:
        return f"format or digest differs from {FORMAT_VERSION} / {digest[:12]}"
    try:
        n, ids, files = manifest["n"], manifest["ids"], manifest["files"]
        layer_ids, widths = manifest["layer_ids"], manifest["widths"]
        if not isinstance(manifest["key"], dict) or manifest["dtype"] not in DTYPE_NAMES:
            return "key or dtype is invalid"
    except (KeyError, TypeError):
        return "a field is missing (n, ids, files, layer_ids, widths, key or dtype)"
    if not isinstance(n, int) or n < 1 or not isinstance(ids, list) or len(ids) != n:
        return "n and ids disagree"
    if not all(isinstance(x, str) for x in ids) or ids_hash(ids) != manifest["key"].get("ids_hash"):
        return "the ids do not match the key's ids_hash (reordered or edited)"
    if _key_digest(manifest["key"]) != digest:
        return "the key does not hash to the digest (edited)"
    if not all(isinstance(x, list) for x in (files, layer_ids, widths)) or not (
        len(files) == len(layer_ids) == len(widths) > 0
    ):
        return "files, layer_ids and widths disagree"
    for i, info in enumerate(files):
        if not isinstance(info, dict) or info.get("file") != f"layer-{i:03d}.safetensors":
            return f"file record {i} does not name layer-{i:03d}.safetensors"
        if not isinstance(info.get("bytes"), int) or not isinstance(info.get("sha256"), str):
            return f"file record {i} lacks bytes or sha256"
    return None


# ---------------------------------------------------------------------------------------------- reading


class LazyLayers(Sequence):
    """The entry's layers as a Sequence of float32 [N, D_l] tensors, each read (and its sha256 checked)
    when indexed; nothing is kept in memory."""

    def __init__(self, entry: FeatureEntry) -> None:
        self._entry = entry

    def __len__(self) -> int:
        return len(self._entry.layer_ids)

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return self._entry.layer(index)


@dataclass
class FeatureEntry:
    """A complete entry. `layers[i]` is layer `layer_ids[i]` as float32 [n, widths[i]]."""

    path: Path
    manifest: dict[str, Any] = field(repr=False)
    layers: LazyLayers = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.layers = LazyLayers(self)

    @property
    def digest(self) -> str:
        return str(self.manifest["digest"])

    @property
    def key(self) -> dict[str, Any]:
        return dict(self.manifest["key"])

    @property
    def ids(self) -> list[str]:
        return list(self.manifest["ids"])

    @property
    def layer_ids(self) -> list[int]:
        return list(self.manifest["layer_ids"])

    @property
    def widths(self) -> list[int]:
        return list(self.manifest["widths"])

    @property
    def dtype(self) -> str:
        return str(self.manifest["dtype"])

    def __len__(self) -> int:
        return int(self.manifest["n"])

    def position(self, position: int, what: str) -> int:
        """The non-negative layer position of `position` (negative counts from the last layer);
        UserError naming `what` when the entry has no such layer."""
        n = len(self.manifest["layer_ids"])
        if not -n <= position < n:
            raise UserError(f"{what} layer {position} does not exist: the entry has {n} layers (use -{n}..{n - 1})")
        return position % n

    def layer(self, index: int, *, upcast: bool = True) -> torch.Tensor:
        """Layer at position `index` ([n, D]); float32 unless `upcast=False` (then the stored dtype).
        Raises CorruptEntryError when the file's sha256 differs from the manifest."""
        info = self.manifest["files"][index]
        file = self.path / info["file"]
        try:
            data = file.read_bytes()
        except OSError as exc:
            raise CorruptEntryError(f"cache entry {self.digest[:12]}: cannot read {file}: {exc}") from exc
        if sha256_hex(data) != info["sha256"]:
            raise CorruptEntryError(
                f"cache entry {self.digest[:12]} ({self.key['model']} on {self.key['dataset']}): {file.name} does "
                "not match its checksum; run `platobench cache verify --remove` and extract again"
            )
        tensor = st_load(data)["features"]
        return tensor.float() if upcast else tensor

    def cached_layers(self) -> CachedLayers:
        """Every layer (float32 [n, D_l], read now and checked) as `CachedLayers` whose statistics (the
        per-sample prh quantiles) are saved beside the entry (`platobench.features.statistics`)."""
        from platobench.features.statistics import EntryStatistics

        return CachedLayers(list(self.layers), EntryStatistics(self))

    def verify(self) -> list[str]:
        """Problems found by reading every file and checking its size and sha256 ([] when sound)."""
        problems = []
        for info in self.manifest["files"]:
            file = self.path / info["file"]
            if not file.is_file():
                problems.append(f"{info['file']}: missing")
            elif file.stat().st_size != info["bytes"]:
                problems.append(f"{info['file']}: {file.stat().st_size} bytes, manifest says {info['bytes']}")
            elif file_sha256(file) != info["sha256"]:
                problems.append(f"{info['file']}: sha256 differs from the manifest")
        return problems


def check_same_samples(a: FeatureEntry, b: FeatureEntry) -> None:
    """Refuse to pair two entries unless they hold the same sample ids in the same order."""
    ids_a, ids_b = a.ids, b.ids
    if ids_a == ids_b:
        return
    name_a = f"{a.key['model']} on {a.key['dataset']}@{a.key['dataset_revision']}"
    name_b = f"{b.key['model']} on {b.key['dataset']}@{b.key['dataset_revision']}"
    if len(ids_a) != len(ids_b):
        detail = f"{len(ids_a)} vs {len(ids_b)} samples"
    else:
        first = next(i for i, (x, y) in enumerate(zip(ids_a, ids_b)) if x != y)
        detail = f"sample {first} is {ids_a[first]!r} vs {ids_b[first]!r}"
        if sorted(ids_a) == sorted(ids_b):
            detail += " (same samples, different order)"
    raise SampleMismatchError(f"features of {name_a} and {name_b} are not paired row by row: {detail}")
