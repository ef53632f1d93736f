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

import json
import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from platobench import paths
from platobench.errors import UserError
from platobench.features.entry import (
    CHUNK_NAME,
    CacheLinkError,
    CorruptEntryError,
    FeatureEntry,
    FeatureKey,
    SampleMismatchError,
    check_same_samples,
    manifest_problem,
    safetensors_header,
)
from platobench.features.entry_lock import EntryLock
from platobench.features.writer import EntryWriter
from platobench.files import staging

# the entry's key, format and reader live in `features.entry`; importers of the store find them here too
__all__ = ["CacheLinkError", "CorruptEntryError", "EntryStatus", "FeatureEntry", "FeatureKey", "FeatureStore",
           "SampleMismatchError", "check_same_samples"]

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

    def by_digest(self, digest: str) -> FeatureEntry | None:
        """The complete entry `digest` (a record's `provenance.inputs` names its two), checked as `get`
        checks one, or None."""
        self.refuse_links(digest)
        return self._load(digest)

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
