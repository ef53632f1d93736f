"""How much choosing the layer pair on the scored samples adds to a score, read from committed records.

A held-out record (`selection: heldout`, platobench/metrics/heldout.py) states its halves' in-sample best
(`details.heldout_selection.in_sample`, at the held-out score's N); `in_sample - score` is the optimism the
best-of-grid choice would have added. For each held-out setting this prints, as JSON: the optimism's mean,
median, min and max over the board's records, its mean for small (<= 50 cells) and large (> 200 cells)
grids, how often the two halves choose the same cell, and Spearman's rank correlation between the held-out
scores and the best-of-grid setting's scores of the same pairs (`--against`). No features are read.

Run: `python scripts/selection_optimism.py` (defaults: results/offline, demo-mknn-ho against demo-mknn and
demo-cka-ho against demo-cka); docs/statistics.md holds its figures.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from scipy.stats import spearmanr

from platobench.results import ResultRecord, load_records

SMALL, LARGE = 50, 200  # grid cells


def _cells(record: ResultRecord) -> int:
    return sum(c is not None for row in record.grid or [] for c in row)


def optimism(held: list[ResultRecord], best: list[ResultRecord]) -> dict[str, Any]:
    """The figures of one held-out board against the best-of-grid board of the same pairs."""
    by_pair = {r.pair_id: r for r in best}
    rows = [r for r in held if r.metric.selection == "heldout"]
    sign = [1 if r.metric.higher_is_better else -1 for r in rows]
    gains = [s * (r.details["heldout_selection"]["in_sample"] - r.score) for r, s in zip(rows, sign)]
    small = [g for g, r in zip(gains, rows) if _cells(r) <= SMALL]
    large = [g for g, r in zip(gains, rows) if _cells(r) > LARGE]
    folds = [r.details["heldout_selection"]["folds"] for r in rows]
    paired = [(r.score, by_pair[r.pair_id].score) for r in rows if r.pair_id in by_pair]
    return {
        "records": len(rows),
        "optimism": {"mean": statistics.mean(gains), "median": statistics.median(gains), "min": min(gains),
                     "max": max(gains)},
        f"optimism_mean_grids_le_{SMALL}": {"records": len(small), "mean": statistics.mean(small) if small else None},
        f"optimism_mean_grids_gt_{LARGE}": {"records": len(large), "mean": statistics.mean(large) if large else None},
        "halves_choose_the_same_cell": sum(f[0]["layers"] == f[1]["layers"] for f in folds),
        "spearman_vs_best_of_grid": {"pairs": len(paired),
                                     "rho": float(spearmanr([a for a, _ in paired], [b for _, b in paired]).statistic)},
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", type=Path, default=Path("results/offline"))
    ap.add_argument("--against", nargs="+", default=["demo-mknn-ho:demo-mknn", "demo-cka-ho:demo-cka"],
                    metavar="HELDOUT:BEST", help="held-out setting and its best-of-grid twin")
    args = ap.parse_args(argv)
    records = load_records(args.results)
    out = {}
    for pair in args.against:
        held, best = pair.split(":")
        out[held] = optimism([r for r in records if r.setting == held], [r for r in records if r.setting == best])
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
