"""Where platobench keeps what it writes: the cache root and its sub-folders.

The root is `$PLATOBENCH_HOME` when set, else `~/.cache/platobench` (README: "Offline demo and board"). Nothing here creates
folders; writers create what they need.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "PLATOBENCH_HOME"


def home() -> Path:
    """The cache root: `$PLATOBENCH_HOME` (user-expanded) or `~/.cache/platobench`."""
    value = os.environ.get(ENV_VAR)
    return Path(value).expanduser() if value else Path.home() / ".cache" / "platobench"


def models_dir(root: Path | None = None) -> Path:
    """Folder of prepared offline model weights (`<root>/models`), one sub-folder per packaged asset."""
    return (root if root is not None else home()) / "models"
