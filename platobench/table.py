"""Plain-text tables for the command line: column widths computed from the content."""

from __future__ import annotations

from collections.abc import Collection, Sequence


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]], right: Collection[int] = (),
                 indent: str = "") -> list[str]:
    """Lines of `header` then `rows` (cells as strings), each column as wide as its widest cell, two spaces
    between columns; columns whose index is in `right` are right-aligned (numbers). No trailing spaces."""
    widths = [max(len(str(h)), *(len(str(row[i])) for row in rows)) for i, h in enumerate(header)]

    def line(cells: Sequence[str]) -> str:
        parts = [str(c).rjust(w) if i in right else str(c).ljust(w) for i, (c, w) in enumerate(zip(cells, widths))]
        return (indent + "  ".join(parts)).rstrip()

    return [line(header), *(line(row) for row in rows)]
