"""Kept for old imports: the leaderboard now lives in `platobench.leaderboard`."""

from __future__ import annotations

from platobench.leaderboard import (
    CSV_COLUMNS,
    MARKER,
    PAPER_VALUES,
    Board,
    BuildSummary,
    Ranked,
    build_boards,
    build_leaderboard,
    csv_row,
    csv_text,
    family,
    finite,
    fmt,
    language_summary,
    load_paper_values,
    overview,
    rank_records,
    readme,
    write_csv,
)
from platobench.leaderboard.commands import register

__all__ = [
    "CSV_COLUMNS",
    "MARKER",
    "PAPER_VALUES",
    "Board",
    "BuildSummary",
    "Ranked",
    "build_boards",
    "build_leaderboard",
    "csv_row",
    "csv_text",
    "family",
    "finite",
    "fmt",
    "language_summary",
    "load_paper_values",
    "overview",
    "rank_records",
    "readme",
    "register",
    "write_csv",
]
