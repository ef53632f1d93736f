"""The features cache: one entry per model x dataset x extraction config, safetensors only.

Layout under the root (`$PLATOBENCH_HOME/features` by default)::

    <d[:2]>/<d>.lock                    file lock held by the one process writing entry d
    <d[:2]>/<d>.lock.owner              who holds that lock: pid, host, start time (see `entry_lock`)
    <d[:2]>/<d>/partial/plan.json       what is being written: ids, layer ids, widths, dtype
    <d[:2]>/<d>/partial/chunk-<start>-<stop>-<sha256>.safetensors   rows [start, stop) of every layer
    <d[:2]>/<d>/layer-<i>.safetensors   layer i (position in `layer_ids`) as one [N, D_i] tensor
    <d[:2]>/<d>/manifest.json           written last: the full key, ids, shapes, dtype, sha256 per file
    <d[:2]>/<d>/statistics/             statistics of the layers, computed once (`features.statistics`)

where d = `FeatureKey.digest()`. Every file is written to a temporary name, fsynced and renamed, so a
reader sees a file whole or not at all, and an entry is complete exactly when its manifest exists. A run
killed at any point (kill -9 included) leaves finished chunks that the next writer reuses once their
bytes match the sha256 in their names (`writer.EntryWriter`); the flock is released by the kernel.
Files are read with `safetensors` (never pickle); a layer's sha256 is checked against the manifest
every time it is loaded, so a corrupted file is never used. A manifest is only sound when its ids hash
to the key's `ids_hash` and its key to the digest, so reordered ids make a corrupt entry, not a pairing
error later.

The store never reads, writes or deletes through a symbolic link below its root: a shard folder, lock
file, entry folder or anything in an entry that is a link makes reading and writing that entry fail with
`CacheLinkError` naming the link (`cache list` shows it corrupt, `cache verify` says why, `cache rm`
deletes an entry folder's link, never what it points to). The root itself may be a link (a cache moved
to another disk). The checks are made before each use, not held across it (no protection against a
process swapping in a link meanwhile).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from safetensors.torch import load as st_load

from platobench import paths
from platobench.data.base import ids_hash
from platobench.dtypes import DTYPE_NAMES
from platobench.errors import UserError
from platobench.features.entry_lock import EntryLock
from platobench.files import staging
from platobench.files.digest import file_sha256
from platobench.metrics.cached_layers import CachedLayers

if TYPE_CHECKING:
    from platobench.features.writer import EntryWriter

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


# ---------------------------------------------------------------------------------------------- store


@dataclass(frozen=True)
class EntryStatus:
    """One folder of the store as `cache ls` shows it: `state` is "complete", "partial" or "corrupt" (a
    manifest that cannot be read or is invalid, or a symbolic link in the entry; key, n, layers and
    rows_done are then empty/0)."""

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
        every sha256 (which loading a layer always does). CacheLinkError when the entry has a link."""
        digest = key.digest()
        self.refuse_links(digest)
        entry = self._load(digest)
        if entry is None or entry.manifest.get("key") != key.as_dict():
            return None
        if deep and entry.verify():
            return None
        return entry

    def links(self, digest: str) -> list[Path]:
        """The symbolic links among what the store uses of entry `digest` (lstat, never followed): its
        shard folder, lock files and entry folder, else everything in the entry folder and its partial/."""
        shard, entry = self.root / digest[:2], self.entry_dir(digest)
        outer = [shard] if shard.is_symlink() else [
            p for p in (shard / f"{digest}.lock", shard / f"{digest}.lock.owner", entry) if p.is_symlink()
        ]
        if outer or not entry.is_dir():
            return outer
        inner = sorted(entry.iterdir())
        if (entry / "partial") in inner and not (entry / "partial").is_symlink():
            inner += sorted((entry / "partial").iterdir())
        return [p for p in inner if p.is_symlink()]

    def _link_problem(self, link: Path, digest: str) -> str:
        entry = self.entry_dir(digest)
        fix = (f"`platobench cache rm {digest[:12]}` deletes the link, never what it points to"
               if link == entry or entry in link.parents else f"delete the link itself (rm {link})")
        return (f"features cache: {link} is a symbolic link, which the cache never follows (it would read "
                f"or overwrite what the link points to); {fix}")

    def refuse_links(self, digest: str) -> None:
        """CacheLinkError naming the first symbolic link of entry `digest` (`links`), if it has one."""
        links = self.links(digest)
        if links:
            raise CacheLinkError(self._link_problem(links[0], digest))

    def read_manifest(self, digest: str) -> tuple[dict[str, Any] | None, str | None]:
        """(manifest, None) when entry `digest` has a structurally sound manifest and no symbolic link,
        else (None, why)."""
        links = self.links(digest)
        if links:
            return None, self._link_problem(links[0], digest)
        try:
            manifest = json.loads((self.entry_dir(digest) / "manifest.json").read_text("utf-8"))
        except FileNotFoundError:
            return None, "incomplete: no manifest (an interrupted extraction; rerun it to resume)"
        except (OSError, ValueError):
            return None, "manifest.json is unreadable"
        problem = manifest_problem(manifest, digest)
        return (manifest, None) if problem is None else (None, f"manifest.json is invalid: {problem}")

    def _load(self, digest: str) -> FeatureEntry | None:
        """The entry when its manifest is sound and every layer file has the recorded size and a
        safetensors header of shape [n, width] (cheap: no checksum), else None."""
        path = self.entry_dir(digest)
        manifest, _ = self.read_manifest(digest)
        if manifest is None:
            return None
        for info, width in zip(manifest["files"], manifest["widths"]):
            header = safetensors_header(path / info["file"])
            if header is None or not isinstance(header.get("features"), dict):
                return None
            if header["features"].get("shape") != [manifest["n"], width]:
                return None
            if (path / info["file"]).stat().st_size != info["bytes"]:
                return None
        return FeatureEntry(path, manifest)

    def find(self, match: Callable[[dict[str, Any]], bool]) -> list[FeatureEntry]:
        """Complete entries whose sound manifest satisfies `match` and whose files pass `get`'s cheap checks."""
        manifests = ((d.name, self.read_manifest(d.name)[0]) for d in self._dirs())
        loaded = (self._load(digest) for digest, m in manifests if m is not None and match(m))
        return [e for e in loaded if e is not None]

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
        from platobench.features.writer import EntryWriter  # the writer module builds on this one

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
        """Every complete, corrupt (unusable manifest) or partial entry folder; a folder with neither a
        manifest nor a readable plan is skipped."""
        out = []
        for d in self._dirs():
            if self.links(d.name):  # nothing is read through a link
                out.append(EntryStatus(d.name, "corrupt", d, {}, 0, 0, "?", 0, 0))
                continue
            size = sum(f.stat().st_size for f in d.rglob("*") if f.is_file())
            if (d / "manifest.json").exists():
                m, _ = self.read_manifest(d.name)
                if m is None:
                    out.append(EntryStatus(d.name, "corrupt", d, {}, 0, 0, "?", size, 0))
                else:
                    out.append(EntryStatus(d.name, "complete", d, m["key"], m["n"], len(m["layer_ids"]),
                                           m["dtype"], size, m["n"]))
                continue
            try:
                plan = json.loads((d / "partial" / "plan.json").read_text("utf-8"))
                key, n, layers, dtype = dict(plan["key"]), len(plan["ids"]), len(plan["layer_ids"]), plan["dtype"]
            except (OSError, ValueError, KeyError, TypeError):
                continue
            names = (f.name for f in (d / "partial").iterdir())
            done = sum(int(m.group(2)) - int(m.group(1)) for m in map(CHUNK_NAME.match, names) if m)
            out.append(EntryStatus(d.name, "partial", d, key, n, layers, str(dtype), size, done))
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
        manifest, why = self.read_manifest(digest)
        if manifest is None:
            return [str(why)]
        problems = FeatureEntry(self.entry_dir(digest), manifest).verify()
        if not problems and self._load(digest) is None:
            problems = ["manifest does not match the files (truncated?)"]
        return problems

    def remove(self, digest: str, *, lock_timeout: float = -1) -> None:
        """Delete entry `digest` (waits for its writer's lock; the folder is renamed away first, so a
        reader never sees half of it). The lock file stays: unlinking a lock others may wait on would
        let two writers hold "the" lock at once. An entry folder that is a symbolic link loses the link
        alone (links inside the folder too); CacheLinkError when the shard folder or a lock file is one."""
        path = self.entry_dir(digest)
        outside = [p for p in self.links(digest) if p != path and path not in p.parents]
        if outside:
            raise CacheLinkError(self._link_problem(outside[0], digest))
        lock = EntryLock(path.parent, digest)
        lock.acquire(lock_timeout)
        try:
            staging.remove_stale(path.parent, f"{digest}.removing")  # of a killed removal of this entry
            if path.is_symlink():
                path.unlink()
            elif path.exists():
                trash = staging.make(path.parent, f"{digest}.removing")  # named after this process
                os.replace(path, trash)  # onto the empty folder
                shutil.rmtree(trash)
        finally:
            lock.release()

    def stale_staging(self) -> list[Path]:
        """Folders and temporary files under the cache left by killed processes (an entry's removal,
        an atomic write): their owner, named in them, has exited on this host. Links are not followed."""
        found: list[Path] = []
        for folder, _dirs, _files in os.walk(self.root):  # os.walk never descends into a linked folder
            found += staging.stale(Path(folder)) + staging.stale(Path(folder), files=True)
        return sorted(found)
