"""The leaderboard, built from result records only (`platobench leaderboard`): boards and ranks
(`boards`, `order`, `ranks`, `baselines`, `notes`), the renderers of README.md (`markdown`), leaderboard.csv
(`csv_table`), index.html (`html_page`, with `static/`) and PNG plots (`plots`, imported on demand: it
loads matplotlib and torch), and the build into a whole output folder (`build`, `folder`).

It reads records through `platobench.results` and never imports `platobench.bench`.
"""

from __future__ import annotations

from platobench.leaderboard.boards import (
    Board,
    Ranked,
    build_boards,
    family,
    finite,
    fmt,
    overview,
    rank_records,
    x_summary,
)
from platobench.leaderboard.build import BuildSummary, build_leaderboard
from platobench.leaderboard.csv_table import CSV_COLUMNS, csv_row, csv_text, write_csv
from platobench.leaderboard.folder import MARKER
from platobench.leaderboard.markdown import readme
from platobench.leaderboard.paper import PAPER_VALUES, load_paper_values

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
    "x_summary",
    "load_paper_values",
    "overview",
    "rank_records",
    "readme",
    "write_csv",
]
