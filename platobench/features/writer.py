"""The chunked, resumable writer of one features-cache entry (the layout is described in `store`).

A chunk holds rows [start, stop) of every layer; its file name carries the sha256 of its bytes
(`chunk-<start>-<stop>-<sha256>.safetensors`), so the checksum exists exactly when the chunk does (one
atomic rename). Before a chunk is reused on resume, and again before it is merged into the layer files,
its bytes are checked against that name: a chunk that fails is dropped with a one-line warning and
recomputed, never merged.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Self

import numpy as np
import torch
from safetensors.torch import load as st_load
from safetensors.torch import save as st_save

from platobench.data.base import ids_hash
from platobench.dtypes import SAFETENSORS_CODES, torch_dtype
from platobench.features.entry import (
    CHUNK_NAME,
    FORMAT_VERSION,
    CorruptEntryError,
    FeatureEntry,
    FeatureKey,
    json_bytes,
    safetensors_header,
    sha256_hex,
)
from platobench.features.entry_lock import EntryLock
from platobench.files.atomic import atomic_write_bytes
from platobench.version import __version__

if TYPE_CHECKING:
    from platobench.features.store import FeatureStore

ArrayLike = torch.Tensor | np.ndarray


def _as_tensor(array: ArrayLike, dtype: torch.dtype) -> torch.Tensor:
    tensor = torch.from_numpy(np.ascontiguousarray(array)) if isinstance(array, np.ndarray) else array
    return tensor.detach().to(device="cpu", dtype=dtype).contiguous()


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
        self.label = f"{self.digest[:12]} ({key.model} on {key.dataset})"
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
        self._torch_dtype = torch_dtype(dtype)
        store.refuse_links(self.digest)  # again under the lock, by `store.get`
        self.dir.parent.mkdir(parents=True, exist_ok=True)
        self._lock = EntryLock(self.dir.parent, self.digest, self.label)
        self._lock.acquire(lock_timeout)
        self._chunks: dict[tuple[int, int], str] = {}  # finished row range -> file name
        try:
            # Checksums too: a complete entry is only reused when every layer file is intact.
            self.entry: FeatureEntry | None = store.get(key, deep=True)
            if self.entry is None:
                self._prepare()
        except BaseException:
            self.close()
            raise

    # setup ------------------------------------------------------------------------------------------
    def _prepare(self) -> None:
        if (self.dir / "manifest.json").exists():  # an unusable old entry is rewritten whole
            _, why = self.store.read_manifest(self.digest)
            if why is not None:
                print(f"cache entry {self.label}: {why}; recomputing it", file=sys.stderr, flush=True)
            (self.dir / "manifest.json").unlink(missing_ok=True)
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
            atomic_write_bytes(plan_file, json_bytes(self.plan))
        self._chunks = self._scan_chunks()

    def _scan_chunks(self) -> dict[tuple[int, int], str]:
        """Finished chunks on disk whose header matches the plan and whose bytes match the sha256 in their
        name; leftovers of a killed write (temp files, anything unreadable, damaged or overlapping) are
        deleted."""
        found: dict[tuple[int, int], str] = {}
        for file in sorted(self.partial.iterdir()):
            if file.name == "plan.json":
                continue
            match = CHUNK_NAME.match(file.name)
            if match is None:
                file.unlink()
                continue
            start, stop = int(match.group(1)), int(match.group(2))
            header = safetensors_header(file)
            if header is None or not self._chunk_header_ok(header, stop - start) or stop > self.n:
                file.unlink()
                continue
            if any(s < stop and start < e for s, e in found):
                file.unlink()
                continue
            if sha256_hex(file.read_bytes()) != match.group(3):
                self._warn_damaged(start, stop)
                file.unlink()
                continue
            found[(start, stop)] = file.name
        return dict(sorted(found.items()))

    def _warn_damaged(self, start: int, stop: int) -> None:
        print(f"cache entry {self.label}: chunk rows [{start}, {stop}) does not match its checksum; "
              "recomputing it", file=sys.stderr, flush=True)

    def _chunk_header_ok(self, header: dict[str, Any], rows: int) -> bool:
        want = SAFETENSORS_CODES[self.plan["dtype"]]
        for i, width in enumerate(self.plan["widths"]):
            info = header.get(f"layer.{i}")
            if not isinstance(info, dict) or info.get("dtype") != want or info.get("shape") != [rows, width]:
                return False
        return len([k for k in header if k != "__metadata__"]) == len(self.plan["widths"])

    # progress ---------------------------------------------------------------------------------------
    def done_chunks(self) -> list[tuple[int, int]]:
        """Finished row ranges [start, stop), sorted (everything when the entry was already complete)."""
        return [(0, self.n)] if self.entry is not None else sorted(self._chunks)

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
        stored dtype). Atomic: after a kill the chunk is either finished (with its checksum) or absent."""
        if self.entry is not None:
            raise RuntimeError(f"cache entry {self.digest[:12]} is already complete")
        if len(per_layer_arrays) != len(self.plan["widths"]):
            raise ValueError(f"expected {len(self.plan['widths'])} layer arrays, got {len(per_layer_arrays)}")
        tensors, storages = {}, set()
        for i, array in enumerate(per_layer_arrays):
            tensor = _as_tensor(array, self._torch_dtype)
            if tensor.untyped_storage().data_ptr() in storages:  # safetensors refuses shared memory
                tensor = tensor.clone()
            storages.add(tensor.untyped_storage().data_ptr())
            tensors[f"layer.{i}"] = tensor
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
        data = st_save(tensors)
        name = f"chunk-{start:09d}-{stop:09d}-{sha256_hex(data)}.safetensors"
        atomic_write_bytes(self.partial / name, data)
        self._chunks = dict(sorted({**self._chunks, (start, stop): name}.items()))

    def _read_chunk(self, start: int, stop: int) -> dict[str, torch.Tensor]:
        """The tensors of a finished chunk, after checking its bytes against the sha256 in its name; a
        damaged chunk is deleted (the next run recomputes it) and CorruptEntryError is raised."""
        name = self._chunks[(start, stop)]
        file = self.partial / name
        try:
            data = file.read_bytes()
        except OSError as exc:
            raise CorruptEntryError(f"cache entry {self.label}: cannot read chunk {file}: {exc}") from exc
        if sha256_hex(data) != CHUNK_NAME.match(name).group(3):
            file.unlink(missing_ok=True)
            del self._chunks[(start, stop)]
            raise CorruptEntryError(
                f"cache entry {self.label}: chunk rows [{start}, {stop}) changed on disk after it was written; "
                "it was deleted, run the extraction again to recompute it"
            )
        return st_load(data)

    def finalize(self, *, sliced_from: str | None = None) -> FeatureEntry:
        """Join the chunks into one file per layer, write the manifest (the entry is complete from that
        moment), drop the chunks and release the lock. `sliced_from`: the digest of the entry whose first
        rows these are (recorded in the manifest; an entry that was already complete is returned as is)."""
        if self.entry is not None:
            self.close()
            return self.entry
        missing = self.pending(self.n or 1)
        if missing:
            raise ValueError(f"cache entry {self.digest[:12]}: rows {missing} are not written yet")
        chunk_data = [self._read_chunk(s, e) for s, e in list(self._chunks)]
        files = []
        for i in range(len(self.plan["widths"])):
            data = st_save({"features": torch.cat([c[f"layer.{i}"] for c in chunk_data])})
            name = f"layer-{i:03d}.safetensors"
            atomic_write_bytes(self.dir / name, data)
            files.append({"layer": self.plan["layer_ids"][i], "file": name, "bytes": len(data),
                          "sha256": sha256_hex(data)})
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
        if sliced_from is not None:
            manifest["sliced_from"] = sliced_from
        atomic_write_bytes(self.dir / "manifest.json", json_bytes(manifest))
        shutil.rmtree(self.partial, ignore_errors=True)
        self.entry = FeatureEntry(self.dir, manifest)
        self.close()
        return self.entry

    def close(self) -> None:
        """Release the lock (finished chunks stay for a later resume)."""
        self._lock.release()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
