"""Atomic writes: a reader sees the old file or the new one, never a prefix of either.

Every writer goes through a temporary file in the target's folder, `fsync`, `os.replace` and an fsync
of the folder; a failed write removes its temporary file, and a temporary file left by a killed writer
(its name records its process, `platobench.files.staging`) is removed by the next write of that file. A new file gets the mode the umask allows (0644
under umask 022, as `open` gives it) and an overwritten file keeps its mode, so results and caches can be
shared (temporaries come from `new_temp`, not tempfile's private 0600 / 0700 ones; `atomic_write_with`
gives that mode to a library's writer's file too). A folder is replaced
whole by building it in a sibling staging folder and swapping it in (`atomic_dir`). An `OSError` (a full
disk, a read-only folder) becomes one `WriteError` that names the path.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import shutil
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from platobench.errors import UserError
from platobench.files import staging as stamped


class WriteError(UserError):
    """A file or folder could not be written (full disk, permissions); the message names the path."""


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # folders cannot be opened on some platforms; the rename is still atomic
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def new_temp(parent: Path, name: str, suffix: str) -> Path:
    """Create and return the empty file `parent/.<name>.<owner stamp>.<random><suffix>` (the stamp of
    `platobench.files.staging`, so a later write can tell a killed writer's file from a live one's), made
    as `open` makes it (0666 less the umask), unlike tempfile's private mkstemp."""
    for _ in range(100):
        path = parent / f".{name[:stamped.LABEL_CHARS]}.{stamped.owner_stamp()}.{secrets.token_hex(6)}{suffix}"
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o666))
        except FileExistsError:
            continue
        return path
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(parent / f".{name}.*{suffix}"))


def _kept_mode(path: Path) -> int | None:
    """The permission bits of the regular file `path` (what an overwrite keeps), None when it is absent."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    return stat.S_IMODE(info.st_mode) if stat.S_ISREG(info.st_mode) else None


def atomic_write_with(path: str | Path, write: Callable[[Path], object]) -> Path:
    """Write `path` (parents created) through `write(temporary path)`, a writer that takes a file name
    (e.g. safetensors' `save_file`), then fsync and rename; the new file gets the umask's mode, an existing
    one keeps its own, whatever mode the writer gave its file (safetensors writes a private 0600 one)."""
    path = Path(path)
    tmp: Path | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = new_temp(path.parent, path.name, ".tmp")
        kept = _kept_mode(path)
        mode = stat.S_IMODE(os.lstat(tmp).st_mode) if kept is None else kept  # new_temp's: the umask's
        write(tmp)
        _settle(tmp, mode)
        os.replace(tmp, path)
        tmp = None
        stamped.remove_stale(path.parent, path.name, ".tmp", files=True)  # of killed writes of this file
    except OSError as exc:
        raise WriteError(f"cannot write {path}: {exc.strerror or exc}") from exc
    finally:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
    _fsync_dir(path.parent)
    return path


def _settle(path: Path, mode: int) -> None:
    """Give the written file `path` the permission bits `mode` and flush it to disk."""
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    try:
        os.fchmod(fd, mode)
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_data(path: Path, data: bytes) -> None:
    """`data` into the existing empty file `path`, never through a symbolic link."""
    with os.fdopen(os.open(path, os.O_WRONLY | _NOFOLLOW), "wb") as fh:
        fh.write(data)


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Write `data` to `path` (parents created) through a fsynced temporary file and a rename; a new file
    gets the umask's mode, an existing one keeps its own."""
    return atomic_write_with(path, lambda tmp: _write_data(tmp, data))


def atomic_write_text(path: str | Path, text: str) -> Path:
    """`atomic_write_bytes` of `text` encoded as UTF-8."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | Path, obj: Any, *, indent: int | None = 1) -> Path:
    """`obj` as JSON (UTF-8, a trailing newline), written atomically."""
    return atomic_write_text(path, json.dumps(obj, indent=indent, ensure_ascii=False) + "\n")


def _folder_mode(target: Path) -> int:
    """Permission bits for a folder replacing `target`: those of `target`, else what the umask allows."""
    if target.is_dir():
        return stat.S_IMODE(target.stat().st_mode)
    return 0o777 & ~stamped.current_umask()


def umask_modes(folder: Path) -> None:
    """Give every file under `folder` the mode the umask allows for a new file (0644 under umask 022) and
    every folder (itself included) the mode for a new folder: what libraries write privately (safetensors'
    0600) becomes shareable like every other file of the cache."""
    umask = stamped.current_umask()
    for path in [folder, *folder.rglob("*")]:
        if not path.is_symlink():
            path.chmod((0o777 if path.is_dir() else 0o666) & ~umask)


def _clear_killed(target: Path) -> None:
    """Remove the staging folders of `target` left by killed processes (live ones stay). A process killed
    between the two renames of the swap left `target` absent and the previous folder in its `.old`
    staging: that folder is put back first, so `target` is the old build until a new one swaps in."""
    for old in stamped.stale(target.parent, target.name, ".old"):
        if not target.exists() and (old / "previous").is_dir():
            os.replace(old / "previous", target)
    stamped.remove_stale(target.parent, target.name)


@contextmanager
def atomic_dir(target: str | Path) -> Iterator[Path]:
    """Yield an empty staging folder beside `target`; on success it replaces `target` whole.

    The new folder keeps `target`'s permission bits (or the umask's default for a new one). On an
    exception the staging folder is removed and `target` is untouched. The swap is two renames
    (old out of the way, new in); between them `target` is briefly absent, never half-written.
    Staging left beside `target` by a killed process is cleared first (`_clear_killed`).
    """
    target = Path(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        _clear_killed(target)
        staging = stamped.make(target.parent, target.name, ".new")
    except OSError as exc:
        raise WriteError(f"cannot write {target}: {exc.strerror or exc}") from exc
    try:
        mode = _folder_mode(target)
        yield staging
        os.chmod(staging, mode)  # mkdtemp makes a private (0700) folder; the result is not private
        old = None
        if target.exists():
            old = stamped.make(target.parent, target.name, ".old")
            os.replace(target, old / "previous")
        os.replace(staging, target)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        _fsync_dir(target.parent)
    except OSError as exc:
        raise WriteError(f"cannot write {target}: {exc.strerror or exc}") from exc
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
