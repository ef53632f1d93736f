"""Plain-text tables for the command line: column widths computed from the content."""

from __future__ import annotations

from collections.abc import Collection, Sequence


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]], right: Collection[int] = (),
                 indent: str = "", rule: bool = False) -> list[str]:
    """Lines of `header` then `rows` (cells as strings), each column as wide as its widest cell, two spaces
    between columns; columns whose index is in `right` are right-aligned (numbers); with `rule`, a line of
    dashes under the header. No trailing spaces."""
    widths = [max(len(str(h)), *(len(str(row[i])) for row in rows)) for i, h in enumerate(header)]

    def line(cells: Sequence[str]) -> str:
        parts = [str(c).rjust(w) if i in right else str(c).ljust(w) for i, (c, w) in enumerate(zip(cells, widths))]
        return (indent + "  ".join(parts)).rstrip()

    dashes = [line(["-" * w for w in widths])] if rule else []
    return [line(header), *dashes, *(line(row) for row in rows)]
