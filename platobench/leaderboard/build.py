"""Building the leaderboard (`platobench leaderboard`): README.md, leaderboard.csv, a static index.html
and PNG plots, from result records only.

A build is written into a staging folder and swapped in whole (platobench/leaderboard/folder.py), so a
failed build leaves the previous one untouched; the swap replaces OUT, so OUT must be new, empty or an
earlier build.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from platobench.errors import UserError
from platobench.leaderboard import html_page
from platobench.leaderboard.boards import build_boards
from platobench.leaderboard.consistency import consistent_records
from platobench.leaderboard.csv_table import csv_text
from platobench.leaderboard.folder import MARKER, MARKER_TEXT, check_out_dir, staged_build, write_file
from platobench.leaderboard.markdown import readme
from platobench.leaderboard.paper import load_paper_values
from platobench.results import load_records_checked


@dataclass
class BuildSummary:
    """What a build wrote; `problems` has one line per result file left out (invalid or duplicated)."""

    records: int
    boards: list[str]
    files: list[str]
    notes: list[str]
    problems: list[str]

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def build_leaderboard(results_dir: Path, out_dir: Path, *, with_plots: bool = True) -> BuildSummary:
    """Read every valid record under `results_dir` and replace `out_dir` whole with README.md,
    leaderboard.csv, index.html, the marker file and (unless `with_plots` is False) plots/*.png; the
    previous build stays as it was when anything fails. Files that are not valid records, and records that
    contradict themselves (platobench/leaderboard/consistency.py), are left out and listed in the summary's
    `problems`. UserError when no valid record remains or `out_dir` may not
    be replaced (platobench/leaderboard/folder.py); WriteError naming the path when a write fails."""
    results_dir, out_dir = Path(results_dir), Path(out_dir)
    if not results_dir.is_dir():
        raise UserError(f"--results: {results_dir} is not a folder of result records")
    target = check_out_dir(out_dir, results_dir)
    records, problems = load_records_checked(results_dir)
    records, contradictions = consistent_records(records)
    problems += contradictions
    if not records:
        if problems:
            raise UserError(f"--results: no valid result record under {results_dir}: {len(problems)} problem(s), "
                            f"e.g. {problems[0]}")
        raise UserError(f"--results: no result records (*.json) under {results_dir}; run `platobench run` first")
    boards = build_boards(records)
    paper = load_paper_values()
    plotted: dict[str, Any] = {"files": [], "notes": []}
    with staged_build(target) as staging:
        if with_plots:
            from platobench.leaderboard import plots  # matplotlib, and the metric descriptors (torch)

            plotted = plots.plot_all(boards, staging)
        write_file(staging, out_dir, MARKER, MARKER_TEXT)
        write_file(staging, out_dir, "README.md", readme(boards, records, paper, plotted))
        write_file(staging, out_dir, "leaderboard.csv", csv_text(boards))
        write_file(staging, out_dir, "index.html", html_page.render(boards, records, paper, plotted))
    files = ["README.md", "leaderboard.csv", "index.html", *plotted["files"]]
    return BuildSummary(len(records), [b.key for b in boards], [str(out_dir / f) for f in files], plotted["notes"],
                        problems)
