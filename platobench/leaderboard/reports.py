"""`platobench reports`: rebuild the reports under reports/ from the committed data they summarise, in one
command, so a report never drifts from its data (`tests/committed/test_reports_rebuild.py` rebuilds them and
compares).

`REPORTS` (a `platobench.registry.Registry`) maps a report's name to its rebuilder, a "module:function"
target called as `rebuild(results, reports, out) -> [paths written]`: the experiments name their own
(`stitch`, `jepa-compare`, `jepa-scaling` and `jepa-curve` from their committed records, `scaling-n` from its committed points,
the tables of `offline-board.md` from the offline board's records) and a plugin adds its reports there. The
reports whose data are not committed are listed in `NOT_REBUILDABLE`, with why, and never silently skipped.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from platobench.cli_options import add_json_option
from platobench.errors import UserError
from platobench.registry import Registry

Rebuilder = Callable[[Path, Path, Path], list[str]]
REPORTS: Registry[Rebuilder] = Registry("report")
REPORTS.register_lazy("stitch", "platobench.experiments.stitch.report:rebuild")
REPORTS.register_lazy("scaling-n", "platobench.experiments.scaling.report:rebuild")
REPORTS.register_lazy("jepa-compare", "platobench.experiments.jepa.compare_report:rebuild")
REPORTS.register_lazy("jepa-scaling", "platobench.experiments.jepa.scaling:rebuild")
REPORTS.register_lazy("jepa-curve", "platobench.experiments.jepa.curve:rebuild")
REPORTS.register_lazy("offline-board.md", "platobench.leaderboard.board_summary:rebuild")

#: Committed reports that cannot be rebuilt from committed data yet, and why.
NOT_REBUILDABLE = {
    "leaderboard-walkthrough": "screenshots of the leaderboard page taken with chromium",
}


def rebuild_reports(results: Path, reports: Path, out: Path, names: list[str] | None = None) -> dict[str, list[str]]:
    """Rebuild the reports `names` (every registered one when None) under `out`; name -> paths written."""
    chosen = names if names is not None else REPORTS.names()
    return {name: REPORTS.get(name)(results, reports, out) for name in chosen}


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "reports", help="rebuild the reports under reports/ from the committed records and data",
        description=(
            "Rebuild every report that committed data determine, in place by default: stitch (from the stitch "
            "records under RESULTS), scaling-n (from its committed points under REPORTS), jepa-compare, "
            "jepa-scaling and jepa-curve (from the records committed beside them under REPORTS), and the tables of "
            "offline-board.md (from the records under RESULTS/offline; its prose is kept). The reports whose data are not "
            "committed are listed. Example: platobench reports --results results --out reports"
        ),
    )
    p.add_argument("--results", type=Path, default=Path("results"), help="folder of result records (default ./results)")
    p.add_argument("--reports", type=Path, default=Path("reports"),
                   help="the committed reports folder, which holds the data of reports without records (default ./reports)")
    p.add_argument("--out", type=Path, default=None, help="where to write them (default: --reports, in place)")
    p.add_argument("--only", default=None, metavar="NAME[,NAME]", help="rebuild these reports only")
    add_json_option(p, what="what was written")
    p.set_defaults(func=_reports)


def _reports(args: argparse.Namespace) -> int:
    names = None if args.only is None else [n.strip() for n in args.only.split(",") if n.strip()]
    if names == []:
        raise UserError("--only: name at least one report")
    written = rebuild_reports(args.results, args.reports, args.out or args.reports, names)
    if args.json:
        print(json.dumps({"written": written, "not_rebuildable": NOT_REBUILDABLE}, indent=1))
        return 0
    for name, paths in written.items():
        print(f"{name}: {', '.join(paths)}")
    for name, why in NOT_REBUILDABLE.items():
        print(f"{name}: not rebuilt: {why}", file=sys.stderr)
    return 0
