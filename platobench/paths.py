"""Where platobench keeps what it writes: the cache root and its sub-folders.

The root is `$PLATOBENCH_HOME` when set, else `~/.cache/platobench` (docs/offline-demo.md). Nothing here creates
folders; writers create what they need.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ENV_VAR = "PLATOBENCH_HOME"
_override: Path | None = None  # a command's `--home DIR` while it runs (`using_home`)


def home() -> Path:
    """The cache root: the running command's `--home`, else `shell_home()`."""
    return _override if _override is not None else shell_home()


def shell_home() -> Path:
    """The root a command without `--home` uses: `$PLATOBENCH_HOME` (user-expanded) or `~/.cache/platobench`
    (hints that name a command to run add `--home` when the root in use is another)."""
    value = os.environ.get(ENV_VAR)
    return Path(value).expanduser() if value else Path.home() / ".cache" / "platobench"


@contextmanager
def using_home(root: Path | None) -> Iterator[None]:
    """`home()` is `root` (user-expanded) inside the block (None: unchanged)."""
    global _override
    before = _override
    if root is not None:
        _override = root.expanduser()
    try:
        yield
    finally:
        _override = before


def models_dir(root: Path | None = None) -> Path:
    """Folder of prepared offline model weights (`<root>/models`), one sub-folder per packaged asset."""
    return (root if root is not None else home()) / "models"
