"""CLI of the leaderboard stage: `platobench leaderboard`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from platobench.cli_options import add_json_option
from platobench.leaderboard.build import build_leaderboard
from platobench.leaderboard.safe_text import one_line


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "leaderboard", help="build the leaderboard (README.md, CSV, index.html, plots) from result records",
        description=(
            "Read every result record under RESULTS and write OUT/README.md (ranked tables per setting, per-"
            "language means that show missing pairs as missing, a pair x setting overview, values reported "
            "by papers in a separate table), OUT/leaderboard.csv, OUT/index.html (sortable tables and a model-"
            "family filter; opens offline) and OUT/plots/*.png (layer x layer heatmaps per pair, alignment "
            "against language-model size, LLM versus text JEPA). OUT is replaced whole at the end of a "
            "build, so it must be new, empty or an earlier build. Result files that are not valid records "
            "are left out and listed; the exit code is then 1. Example: platobench leaderboard --results results"
        ),
    )
    p.add_argument("--results", type=Path, default=Path("results"), help="folder of result records (default ./results)")
    p.add_argument("--out", type=Path, default=Path("leaderboard"), help="output folder (default ./leaderboard)")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    add_json_option(p, what="what was written")
    p.set_defaults(func=_leaderboard)


def _leaderboard(args: argparse.Namespace) -> int:
    summary = build_leaderboard(args.results, args.out, with_plots=not args.no_plots)
    if args.json:
        print(json.dumps(summary.as_dict(), indent=1))
    else:
        print(f"{summary.records} records, {len(summary.boards)} boards -> {args.out}")
        for f in summary.files[:3]:
            print(f"  {f}")
        if len(summary.files) > 3:
            print(f"  ... and {len(summary.files) - 3} plots under {Path(args.out) / 'plots'}")
        for note in summary.notes:
            print(f"  note: {one_line(note)}", file=sys.stderr)
    if summary.problems:
        print(f"platobench leaderboard: {len(summary.problems)} result file(s) left out of the board:", file=sys.stderr)
        for problem in summary.problems:
            print(f"  {one_line(problem)}", file=sys.stderr)
    return 1 if summary.problems else 0
