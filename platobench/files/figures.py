"""Saving a matplotlib figure: rendered in memory, then written atomically (a reader never sees half a PNG)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING

from platobench.files.atomic import atomic_write_bytes

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def save_figure(fig: Figure, path: str | Path, dpi: int = 100) -> Path:
    """Render `fig` at `dpi` in the format its suffix names (PNG when it has none) and write it
    atomically to `path`; returns the path."""
    path = Path(path)
    buffer = io.BytesIO()
    fig.savefig(buffer, dpi=dpi, format=path.suffix.lstrip(".") or "png")
    return atomic_write_bytes(path, buffer.getvalue())
