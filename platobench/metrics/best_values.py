"""Each registered metric's range, best possible value and interval scheme, importable without torch (the
leaderboard's calibrated intervals, paired verdicts and record consistency rules need them while building a
board without plots).

The numbers restate the `range` of each `Metric` descriptor (RANGES; BEST_VALUES the best end in the
metric's direction) and its `interval` (INTERVALS);
tests/metrics/test_metric_contracts.py checks that they agree with the registry, so a metric added there without
an entry here fails the tests. None: the metric has no known best value (CKNNA's range is unbounded).
"""

from __future__ import annotations

BEST_VALUES: dict[str, float | None] = {
    "cka": 1.0,
    "cknna": None,
    "cycle_knn": 1.0,
    "lcs_knn": 1.0,
    "mutual_knn": 1.0,
    "rotation_residual": 0.0,
    "rotation_residual_heldout": 0.0,
    "svcca": 1.0,
}

RANGES: dict[str, tuple[float, float] | None] = {
    "cka": (-1.0, 1.0),
    "cknna": None,
    "cycle_knn": (0.0, 1.0),
    "lcs_knn": (0.0, 1.0),
    "mutual_knn": (0.0, 1.0),
    "rotation_residual": (0.0, 2.0),
    "rotation_residual_heldout": (0.0, 4.0),
    "svcca": (0.0, 1.0),
}

INTERVALS: dict[str, str] = {
    "cka": "subsample",
    "cknna": "rate",
    "cycle_knn": "arcsine_rate",
    "lcs_knn": "subsample",
    "mutual_knn": "arcsine_rate",
    "rotation_residual": "jackknife",
    "rotation_residual_heldout": "rate",
    "svcca": "jackknife",
}

__all__ = ["BEST_VALUES", "INTERVALS", "RANGES"]
