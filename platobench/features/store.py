"""The features cache: one entry per model x dataset x extraction config, safetensors only.

Layout under the root (`$PLATOBENCH_HOME/features` by default)::

    <d[:2]>/<d>.lock                    file lock held by the one process writing entry d
    <d[:2]>/<d>/partial/plan.json       what is being written: ids, layer ids, widths, dtype
    <d[:2]>/<d>/partial/chunk-<start>-<stop>.safetensors   rows [start, stop) of every layer
    <d[:2]>/<d>/layer-<i>.safetensors   layer i (position in `layer_ids`) as one [N, D_i] tensor
    <d[:2]>/<d>/manifest.json           written last: the full key, ids, shapes, dtype, sha256 per file

where d = `FeatureKey.digest()`. Every file is written to a temporary name, fsynced and renamed, so a
reader sees a file whole or not at all, and an entry is complete exactly when its manifest exists. A run
killed at any point (kill -9 included) leaves finished chunks that the next writer reuses; the flock is
released by the kernel. Files are read with `safetensors` (never pickle); a layer's sha256 is checked
against the manifest every time it is loaded, so a corrupted file is never used.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import struct
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from filelock import FileLock, Timeout
from safetensors.torch import load as st_load
from safetensors.torch import save as st_save
from typing_extensions import Self

from platobench import __version__, paths
from platobench.data.base import ids_hash
from platobench.errors import UserError

FORMAT_VERSION = 1
DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
}
_ST_DTYPES = {"float32": "F32", "float16": "F16", "bfloat16": "BF16"}
_CHUNK = re.compile(r"^chunk-(\d{9})-(\d{9})\.safetensors$")
ArrayLike = torch.Tensor | np.ndarray


class CorruptEntryError(UserError):
    """A cache file does not match its manifest (truncated, modified): the entry must be recomputed."""


class SampleMismatchError(UserError):
    """Two entries that are scored as pairs do not hold the same samples in the same order."""


@dataclass(frozen=True)
class FeatureKey:
    """Everything that changes the stored features (the cache key). `dtype` is the dtype the model
    ran in, `stored_dtype` the dtype on disk; `layers` the extracted layer ids; `prompt` the caption
    view / prompt template applied to the text (e.g. "caption:0"); `ids_hash` = `data.ids_hash(ids)`."""

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

    def __post_init__(self) -> None:
        object.__setattr__(self, "layers", tuple(int(layer) for layer in self.layers))
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
        if self.stored_dtype not in DTYPES:
            raise ValueError(
                f"FeatureKey.stored_dtype={self.stored_dtype!r}: expected one of {sorted(DTYPES)}"
            )

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["layers"] = list(self.layers)
        return d

    def digest(self) -> str:
        """sha256 (hex) of the canonical JSON of every field."""
        payload = json.dumps(self.as_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    @classmethod
    def for_dataset(cls, dataset: Any, **fields: Any) -> FeatureKey:
        """Key with `dataset`, `dataset_revision` and `ids_hash` taken from a Paired/ClassDataset."""
        return cls(
            dataset=dataset.name, dataset_revision=dataset.revision, ids_hash=ids_hash(dataset.ids), **fields
        )


# ---------------------------------------------------------------------------------------------- files


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_atomic(path: Path, data: bytes) -> None:
    """Write `data` to `path` through a fsynced temporary file in the same folder and a rename."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def _json_bytes(obj: Any) -> bytes:
    return (json.dumps(obj, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def _header(path: Path) -> dict[str, Any] | None:
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
    except (OSError, ValueError):
        return None
    ends = [v["data_offsets"][1] for k, v in header.items() if k != "__metadata__"]
    return header if 8 + n + max(ends, default=0) == size else None


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _as_tensor(array: ArrayLike, dtype: torch.dtype) -> torch.Tensor:
    tensor = torch.from_numpy(np.ascontiguousarray(array)) if isinstance(array, np.ndarray) else array
    return tensor.detach().to(device="cpu", dtype=dtype).contiguous()


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

    def layer(self, index: int, *, upcast: bool = True) -> torch.Tensor:
        """Layer at position `index` ([n, D]); float32 unless `upcast=False` (then the stored dtype).
        Raises CorruptEntryError when the file's sha256 differs from the manifest."""
        info = self.manifest["files"][index]
        file = self.path / info["file"]
        try:
            data = file.read_bytes()
        except OSError as exc:
            raise CorruptEntryError(f"cache entry {self.digest[:12]}: cannot read {file}: {exc}") from exc
        if _sha256(data) != info["sha256"]:
            raise CorruptEntryError(
                f"cache entry {self.digest[:12]} ({self.key['model']} on {self.key['dataset']}): {file.name} does "
                "not match its checksum; run `platobench cache verify --remove` and extract again"
            )
        tensor = st_load(data)["features"]
        return tensor.float() if upcast else tensor

    def verify(self) -> list[str]:
        """Problems found by reading every file and checking its size and sha256 ([] when sound)."""
        problems = []
        for info in self.manifest["files"]:
            file = self.path / info["file"]
            if not file.is_file():
                problems.append(f"{info['file']}: missing")
            elif file.stat().st_size != info["bytes"]:
                problems.append(f"{info['file']}: {file.stat().st_size} bytes, manifest says {info['bytes']}")
            elif _sha256(file.read_bytes()) != info["sha256"]:
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


# ---------------------------------------------------------------------------------------------- writing


class EntryWriter:
    """Writes one entry in chunks of rows; holds the entry's file lock until `finalize()` or `close()`.

    Usage::

        with store.writer(key, ids, layer_ids, widths) as w:
            for start, stop in w.pending(chunk_size=256):
                w.write_chunk(start, [features_of_layer[start:stop] for each layer])
            entry = w.finalize()
    """

    def __init__(
        self,
        store: FeatureStore,
        key: FeatureKey,
        ids: Sequence[str],
        layer_ids: Sequence[int],
        widths: Sequence[int],
        dtype: str | None = None,
        *,
        lock_timeout: float = -1,
    ) -> None:
        dtype = dtype or key.stored_dtype
        if dtype != key.stored_dtype:
            raise ValueError(f"writer dtype {dtype!r} differs from key.stored_dtype {key.stored_dtype!r}")
        if not ids:
            raise ValueError("an entry needs at least one sample")
        if ids_hash(ids) != key.ids_hash:
            raise ValueError("the sample ids given to the writer do not match key.ids_hash")
        if list(layer_ids) != list(key.layers) or len(widths) != len(layer_ids):
            raise ValueError(
                f"layer_ids {list(layer_ids)} / widths {list(widths)} do not match key.layers {key.layers}"
            )
        self.store, self.key = store, key
        self.digest = key.digest()
        self.dir = store.entry_dir(self.digest)
        self.partial = self.dir / "partial"
        self.plan = {
            "format": FORMAT_VERSION,
            "digest": self.digest,
            "key": key.as_dict(),
            "ids": list(ids),
            "layer_ids": [int(x) for x in layer_ids],
            "widths": [int(w) for w in widths],
            "dtype": dtype,
        }
        self.n = len(ids)
        self._torch_dtype = DTYPES[dtype]
        self.dir.parent.mkdir(parents=True, exist_ok=True)
        self._lock = FileLock(str(self.dir.parent / f"{self.digest}.lock"))
        try:
            self._lock.acquire(timeout=lock_timeout)
        except Timeout as exc:
            raise UserError(
                f"cache entry {self.digest[:12]} is being written by another process (lock {self._lock.lock_file})"
            ) from exc
        self._chunks: list[tuple[int, int]] = []
        try:
            self.entry: FeatureEntry | None = store.get(key)
            if self.entry is None:
                self._prepare()
        except BaseException:
            self.close()
            raise

    # setup ------------------------------------------------------------------------------------------
    def _prepare(self) -> None:
        (self.dir / "manifest.json").unlink(missing_ok=True)  # an unusable old entry is rewritten whole
        for old in self.dir.glob("layer-*.safetensors"):
            old.unlink()
        plan_file = self.partial / "plan.json"
        if plan_file.is_file():
            try:
                same = json.loads(plan_file.read_text("utf-8")) == self.plan
            except ValueError:
                same = False
            if not same:
                shutil.rmtree(self.partial)
        self.partial.mkdir(parents=True, exist_ok=True)
        if not plan_file.is_file():
            _write_atomic(plan_file, _json_bytes(self.plan))
        self._chunks = self._scan_chunks()

    def _scan_chunks(self) -> list[tuple[int, int]]:
        """Finished chunks on disk whose header matches the plan; leftovers of a killed write (temp files,
        anything unreadable or overlapping) are deleted."""
        found: list[tuple[int, int]] = []
        for file in sorted(self.partial.iterdir()):
            match = _CHUNK.match(file.name)
            if file.name == "plan.json":
                continue
            if match is None:
                file.unlink()
                continue
            start, stop = int(match.group(1)), int(match.group(2))
            header = _header(file)
            if header is None or not self._chunk_header_ok(header, stop - start) or stop > self.n:
                file.unlink()
                continue
            if any(s < stop and start < e for s, e in found):
                file.unlink()
                continue
            found.append((start, stop))
        return sorted(found)

    def _chunk_header_ok(self, header: dict[str, Any], rows: int) -> bool:
        want = _ST_DTYPES[self.plan["dtype"]]
        for i, width in enumerate(self.plan["widths"]):
            info = header.get(f"layer.{i}")
            if info is None or info["dtype"] != want or info["shape"] != [rows, width]:
                return False
        return len([k for k in header if k != "__metadata__"]) == len(self.plan["widths"])

    # progress ---------------------------------------------------------------------------------------
    def done_chunks(self) -> list[tuple[int, int]]:
        """Finished row ranges [start, stop), sorted (everything when the entry was already complete)."""
        return [(0, self.n)] if self.entry is not None else list(self._chunks)

    def pending(self, chunk_size: int) -> list[tuple[int, int]]:
        """Row ranges still to write, each at most `chunk_size` rows, in order."""
        if chunk_size < 1:
            raise ValueError("chunk_size must be >= 1")
        todo, pos = [], 0
        for start, stop in [*self.done_chunks(), (self.n, self.n)]:
            while pos < start:
                todo.append((pos, min(pos + chunk_size, start)))
                pos = todo[-1][1]
            pos = max(pos, stop)
        return todo

    def write_chunk(self, start: int, per_layer_arrays: Sequence[ArrayLike]) -> None:
        """Store rows [start, start + rows) of every layer (arrays [rows, D_l], any float dtype; cast to the
        stored dtype). Atomic: after a kill the chunk is either finished or absent."""
        if self.entry is not None:
            raise RuntimeError(f"cache entry {self.digest[:12]} is already complete")
        if len(per_layer_arrays) != len(self.plan["widths"]):
            raise ValueError(f"expected {len(self.plan['widths'])} layer arrays, got {len(per_layer_arrays)}")
        tensors = {f"layer.{i}": _as_tensor(a, self._torch_dtype) for i, a in enumerate(per_layer_arrays)}
        rows = {t.shape[0] for t in tensors.values()}
        if len(rows) != 1 or any(t.ndim != 2 for t in tensors.values()):
            raise ValueError("every layer array must be 2-D with the same number of rows")
        stop = start + rows.pop()
        if start < 0 or stop > self.n or stop == start:
            raise ValueError(f"rows [{start}, {stop}) are outside [0, {self.n})")
        for i, width in enumerate(self.plan["widths"]):
            if tensors[f"layer.{i}"].shape[1] != width:
                raise ValueError(
                    f"layer {self.plan['layer_ids'][i]}: width {tensors[f'layer.{i}'].shape[1]}, expected {width}"
                )
        if any(s < stop and start < e for s, e in self._chunks):
            raise ValueError(f"rows [{start}, {stop}) overlap a finished chunk")
        _write_atomic(self.partial / f"chunk-{start:09d}-{stop:09d}.safetensors", st_save(tensors))
        self._chunks = sorted([*self._chunks, (start, stop)])

    def finalize(self) -> FeatureEntry:
        """Join the chunks into one file per layer, write the manifest (the entry is complete from that
        moment), drop the chunks and release the lock."""
        if self.entry is not None:
            self.close()
            return self.entry
        missing = self.pending(self.n or 1)
        if missing:
            raise ValueError(f"cache entry {self.digest[:12]}: rows {missing} are not written yet")
        files = []
        chunk_files = [self.partial / f"chunk-{s:09d}-{e:09d}.safetensors" for s, e in self._chunks]
        chunk_data = [st_load(f.read_bytes()) for f in chunk_files]
        for i in range(len(self.plan["widths"])):
            data = st_save({"features": torch.cat([c[f"layer.{i}"] for c in chunk_data])})
            name = f"layer-{i:03d}.safetensors"
            _write_atomic(self.dir / name, data)
            files.append(
                {
                    "layer": self.plan["layer_ids"][i],
                    "file": name,
                    "bytes": len(data),
                    "sha256": _sha256(data),
                }
            )
        manifest = {
            "format": FORMAT_VERSION,
            "digest": self.digest,
            "key": self.key.as_dict(),
            "n": self.n,
            "ids": self.plan["ids"],
            "ids_hash": self.key.ids_hash,
            "layer_ids": self.plan["layer_ids"],
            "widths": self.plan["widths"],
            "dtype": self.plan["dtype"],
            "files": files,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "platobench_version": __version__,
        }
        _write_atomic(self.dir / "manifest.json", _json_bytes(manifest))
        shutil.rmtree(self.partial, ignore_errors=True)
        self.entry = FeatureEntry(self.dir, manifest)
        self.close()
        return self.entry

    def close(self) -> None:
        """Release the lock (finished chunks stay for a later resume)."""
        if self._lock.is_locked:
            self._lock.release()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ---------------------------------------------------------------------------------------------- store


@dataclass(frozen=True)
class EntryStatus:
    """One folder of the store as `cache ls` shows it: `state` is "complete" or "partial"."""

    digest: str
    state: str
    path: Path
    key: dict[str, Any]
    n: int
    layers: int
    dtype: str
    bytes: int
    rows_done: int

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["path"] = str(self.path)
        return d


class FeatureStore:
    """The cache of feature entries under `root` (default `platobench.paths.home() / "features"`)."""

    def __init__(self, root: Path | str | None = None) -> None:
        self.root = Path(root) if root is not None else paths.home() / "features"

    def entry_dir(self, digest: str) -> Path:
        return self.root / digest[:2] / digest

    def get(self, key: FeatureKey, *, deep: bool = False) -> FeatureEntry | None:
        """The complete entry for `key`, or None. Checked: manifest and key, every file's exact size and
        safetensors header (so a truncated file means "absent", to be recomputed); `deep` also checks
        every sha256 (which loading a layer always does)."""
        digest = key.digest()
        entry = self._load(digest)
        if entry is None or entry.manifest.get("key") != key.as_dict():
            return None
        if deep and entry.verify():
            return None
        return entry

    def _load(self, digest: str) -> FeatureEntry | None:
        path = self.entry_dir(digest)
        try:
            manifest = json.loads((path / "manifest.json").read_text("utf-8"))
        except (OSError, ValueError):
            return None
        try:
            consistent = len(manifest["files"]) == len(manifest["widths"]) == len(manifest["layer_ids"])
        except (KeyError, TypeError):
            return None
        if not consistent or manifest.get("format") != FORMAT_VERSION or manifest.get("digest") != digest:
            return None
        for info, width in zip(manifest["files"], manifest["widths"]):
            header = _header(path / info["file"])
            if header is None or header.get("features", {}).get("shape") != [manifest["n"], width]:
                return None
            if (path / info["file"]).stat().st_size != info["bytes"]:
                return None
        return FeatureEntry(path, manifest)

    def writer(
        self,
        key: FeatureKey,
        ids: Sequence[str],
        layer_ids: Sequence[int],
        widths: Sequence[int],
        dtype: str | None = None,
        *,
        lock_timeout: float = -1,
    ) -> EntryWriter:
        """A writer for `key` (blocks until no other process writes it; `lock_timeout` seconds, -1 = wait)."""
        return EntryWriter(self, key, ids, layer_ids, widths, dtype, lock_timeout=lock_timeout)

    # maintenance -----------------------------------------------------------------------------------
    def _dirs(self) -> Iterator[Path]:
        if not self.root.is_dir():
            return
        for shard in sorted(self.root.iterdir()):
            if shard.is_dir() and len(shard.name) == 2:
                yield from (
                    d for d in sorted(shard.iterdir()) if d.is_dir() and d.name.startswith(shard.name)
                )

    def entries(self) -> list[EntryStatus]:
        """Every complete or partial entry folder (a folder with neither manifest nor plan is skipped)."""
        out = []
        for d in self._dirs():
            size = sum(f.stat().st_size for f in d.rglob("*") if f.is_file())
            try:
                m = json.loads((d / "manifest.json").read_text("utf-8"))
                out.append(
                    EntryStatus(
                        d.name, "complete", d, m["key"], m["n"], len(m["layer_ids"]), m["dtype"], size, m["n"]
                    )
                )
                continue
            except (OSError, ValueError, KeyError):
                pass
            try:
                plan = json.loads((d / "partial" / "plan.json").read_text("utf-8"))
            except (OSError, ValueError):
                continue
            done = sum(
                int(m.group(2)) - int(m.group(1))
                for m in map(_CHUNK.match, (f.name for f in (d / "partial").iterdir()))
                if m
            )
            out.append(
                EntryStatus(
                    d.name,
                    "partial",
                    d,
                    plan.get("key", {}),
                    len(plan["ids"]),
                    len(plan["layer_ids"]),
                    plan["dtype"],
                    size,
                    done,
                )
            )
        return out

    def resolve(self, prefix: str) -> str:
        """The full digest of the one entry folder starting with `prefix` (UserError otherwise)."""
        matches = [d.name for d in self._dirs() if d.name.startswith(prefix)] if len(prefix) >= 4 else []
        if len(matches) != 1:
            found = "no" if not matches else f"{len(matches)}"
            raise UserError(
                f"digest {prefix!r}: {found} cache entries match (give >= 4 leading hex digits of one)"
            )
        return matches[0]

    def verify(self, digest: str) -> list[str]:
        """Problems of entry `digest` after reading every file ([] when sound)."""
        path = self.entry_dir(digest)
        if not (path / "manifest.json").is_file():
            return ["incomplete: no manifest (an interrupted extraction; rerun it to resume)"]
        entry = self._load(digest)
        if entry is None:
            try:
                m = json.loads((path / "manifest.json").read_text("utf-8"))
                return FeatureEntry(path, m).verify() or ["manifest does not match the files (truncated?)"]
            except (ValueError, KeyError, TypeError):
                return ["manifest.json is unreadable"]
        return entry.verify()

    def remove(self, digest: str, *, lock_timeout: float = -1) -> None:
        """Delete entry `digest` (waits for its writer's lock; the folder is renamed away first, so a
        reader never sees half of it). The lock file stays: unlinking a lock others may wait on would
        let two writers hold "the" lock at once."""
        path = self.entry_dir(digest)
        lock = FileLock(str(path.parent / f"{digest}.lock"))
        try:
            with lock.acquire(timeout=lock_timeout):
                if path.exists():
                    trash = path.parent / f".{digest}.removing-{os.getpid()}"
                    os.replace(path, trash)
                    shutil.rmtree(trash)
        except Timeout as exc:
            raise UserError(f"cache entry {digest[:12]} is being written by another process") from exc
