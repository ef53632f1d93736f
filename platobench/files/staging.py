"""Staging folders named after their owner, so a later run can remove those of killed processes.

A command that builds something in a temporary folder and renames it into place leaves that folder behind
when it is killed (kill -9, a lost terminal, an OOM kill). Every such folder is made by `make`, whose name
records the process that owns it: `.<label>.pb<pid>-<start>-<host>.<random><suffix>`, where `start` is the
process's start time (clock ticks after boot, from /proc; 0 where there is no /proc) and `host` the first
8 hex digits of the sha256 of the host name. `stale` lists the folders whose owner is gone: same host, and
no process with that pid runs, or one runs that started at another time (the pid was reused), or it is a
zombie. A folder of another host, of a live process, or one whose name does not parse is never stale.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path

LABEL_CHARS = 100  # of the label kept in a name: the stamp and the suffix must still fit in 255 bytes
_NAME = re.compile(
    r"\.(?P<label>.+)\.pb(?P<pid>\d+)-(?P<start>\d+)-(?P<host>[0-9a-f]{8})\.[a-z0-9_]+(?P<suffix>(\.[a-z]+)?)")
_PROC = Path("/proc")


@dataclass(frozen=True)
class Owner:
    """Who made a staging folder: process id, its start time (0: unknown) and the host's 8-digit tag."""

    pid: int
    start: int
    host: str


def host_tag() -> str:
    """First 8 hex digits of the sha256 of this host's name."""
    return hashlib.sha256(socket.gethostname().encode("utf-8", "replace")).hexdigest()[:8]


def process_start(pid: int) -> int | None:
    """Start time of process `pid` in clock ticks after boot; 0 when it may run but its start time is
    unknown (no /proc, or /proc unreadable); None when no such process runs or it is a zombie."""
    if not (_PROC / "self" / "stat").is_file():
        if os.name == "nt":  # os.kill would terminate the process: assume it runs
            return 0
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
        return 0
    try:
        text = (_PROC / str(pid) / "stat").read_text()
    except FileNotFoundError:
        return None
    except OSError:  # unreadable (e.g. /proc mounted with hidepid): it may run, so it is never judged gone
        return 0
    try:
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last ")".
        state, *fields = text.rsplit(")", 1)[1].split()
        return None if state in ("Z", "X") else int(fields[18])  # field 22 of proc(5): starttime
    except (IndexError, ValueError):
        return 0


def owner_stamp() -> str:
    """This process's stamp as it appears in a staging folder's name: `pb<pid>-<start>-<host>`."""
    return _stamp_of(os.getpid())


@functools.lru_cache(maxsize=4)
def _stamp_of(pid: int) -> str:
    """`owner_stamp` of process `pid` (cached per pid: a forked child gets its own)."""
    return f"pb{pid}-{process_start(pid) or 0}-{host_tag()}"


def make(parent: Path, label: str, suffix: str = "", *, shared: bool = False) -> Path:
    """Create an empty staging folder in `parent`, named after `label` and this process: mode 0700, or
    with `shared` the mode `mkdir` gives (0777 less the umask), for a folder that is renamed into place.
    `suffix` is "" or a dot and lower-case letters (".new"). OSError when it cannot be created."""
    path = Path(tempfile.mkdtemp(prefix=f".{label[:LABEL_CHARS]}.{owner_stamp()}.", suffix=suffix, dir=parent))
    if shared:
        os.chmod(path, 0o777 & ~current_umask())
    return path


def current_umask() -> int:
    """This process's umask (os.umask can only be read by setting it: set and restored at once)."""
    umask = os.umask(0)
    os.umask(umask)
    return umask


def owner_of(path: Path) -> Owner | None:
    """The owner recorded in a staging folder's name; None when the name was not made by `make`."""
    found = _NAME.fullmatch(path.name)
    if found is None:
        return None
    return Owner(int(found["pid"]), int(found["start"]), found["host"])


def is_dead(owner: Owner) -> bool:
    """True when `owner` ran on this host and has exited (or its pid now belongs to a later process)."""
    if owner.host != host_tag() or owner.pid == os.getpid():
        return False
    start = process_start(owner.pid)
    return start is None or (owner.start != 0 and start != 0 and start != owner.start)


def stale(parent: Path, label: str | None = None, suffix: str | None = None, *, files: bool = False) -> list[Path]:
    """The staging folders (`files`: regular files) directly in `parent`, of `label` and `suffix` when
    given, whose owner is dead."""
    try:
        entries = sorted(parent.iterdir())
    except OSError:
        return []
    found = []
    for entry in entries:
        match = _NAME.fullmatch(entry.name)
        if match is None or entry.is_symlink() or not (entry.is_file() if files else entry.is_dir()):
            continue
        if label is not None and match["label"] != label[:LABEL_CHARS]:
            continue
        if suffix is not None and match["suffix"] != suffix:
            continue
        if is_dead(Owner(int(match["pid"]), int(match["start"]), match["host"])):
            found.append(entry)
    return found


def remove_stale(parent: Path, label: str | None = None, suffix: str | None = None, *,
                 files: bool = False) -> list[Path]:
    """Delete what `stale` lists (best effort: an entry that cannot be removed stays); return those paths."""
    found = stale(parent, label, suffix, files=files)
    for path in found:
        if files:
            path.unlink(missing_ok=True)
        else:
            shutil.rmtree(path, ignore_errors=True)
    return found


def size_of(path: Path) -> int:
    """Bytes of the regular file `path` or of the regular files under the folder `path` (symlinks not
    followed; unreadable entries count 0)."""
    if path.is_file() and not path.is_symlink():
        return path.lstat().st_size
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total
