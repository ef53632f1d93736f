"""The per-entry writer lock of the features cache, with a record of who holds it.

`<d[:2]>/<d>.lock` is a `filelock` flock (released by the kernel when its holder dies, kill -9 included);
beside it `<d[:2]>/<d>.lock.owner` records the holder as JSON {pid, host, started (UTC, ISO 8601)}. It
is written right after the lock is taken (best effort: it only informs) and removed right before it is
released, so a process that has to wait can say for whom. After a kill the record stays until the next
holder overwrites it.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path

from filelock import FileLock, Timeout

from platobench.errors import UserError
from platobench.files.atomic import WriteError, atomic_write_json


class EntryLockedError(UserError):
    """Another process holds the entry's lock and the caller would not wait (long enough)."""


class EntryLock:
    """The writer lock of entry `digest` under shard folder `shard` (`<root>/<digest[:2]>`)."""

    def __init__(self, shard: Path, digest: str, label: str = "") -> None:
        self.digest, self.label = digest, label or digest[:12]
        self.path = shard / f"{digest}.lock"
        self.owner_file = shard / f"{digest}.lock.owner"
        self._lock = FileLock(str(self.path))

    @property
    def is_locked(self) -> bool:
        return self._lock.is_locked

    def holder(self) -> str:
        """The recorded holder, e.g. "pid 123 on host-a since 2024-05-01T10:00:00Z" ("" when unknown)."""
        try:
            info = json.loads(self.owner_file.read_text("utf-8"))
            return f"pid {int(info['pid'])} on {str(info['host'])[:64]} since {str(info['started'])[:32]}"
        except (OSError, ValueError, KeyError, TypeError):
            return ""

    def acquire(self, timeout: float = -1) -> None:
        """Take the lock, waiting up to `timeout` seconds (-1: as long as it takes). When it is held by
        another process, one line saying for whom it waits goes to stderr; EntryLockedError on timeout."""
        try:
            self._lock.acquire(timeout=0)
        except Timeout:
            holder = self.holder()
            who = holder or "another process"
            if timeout != 0:
                print(f"cache entry {self.label} is being written by {who}; waiting for it to finish",
                      file=sys.stderr, flush=True)
            try:
                self._lock.acquire(timeout=timeout)
            except Timeout as exc:
                detail = f" ({holder})" if holder else ""
                raise EntryLockedError(
                    f"cache entry {self.label} is being written by another process{detail} (lock {self.path})"
                ) from exc
        owner = {"pid": os.getpid(), "host": socket.gethostname(),
                 "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        try:
            atomic_write_json(self.owner_file, owner)
        except WriteError:  # the record only informs waiters; a full disk fails the real writes next
            self.owner_file.unlink(missing_ok=True)

    def release(self) -> None:
        """Drop the owner record, then the lock (no-op when not held)."""
        if self._lock.is_locked:
            try:
                self.owner_file.unlink(missing_ok=True)
            finally:
                self._lock.release()
