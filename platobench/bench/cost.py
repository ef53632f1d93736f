"""How long the statistics of a run will take, estimated before any model runs, and the gate on it.

The work of a job is counted in metric evaluations (one layer-pair score) and turned into seconds with
per-evaluation times measured roughly on 2 CPU cores and fitted to the runtimes of the committed
`results/offline` records (the whole board's total within 1.2x, each setting's within 0.8-2.6x: some records
were written on a loaded machine, and the zero-shot ones pay setup the model leaves out):

  paired      cells x (1 + n_perm + n_ci) evaluations, cells = Lx x Ly for "best" (1 for a fixed pair);
              one evaluation on N samples takes EVAL_S + PAIR_S N^2 s (kNN lists and Gram products),
              times SLOW_METRICS[metric] for metrics whose null re-summarises or re-orthogonalises; each
              interval subset of m samples (ci_fraction N, or N - N / n_ci for a jackknife) also re-summarises its layers (Lx + Ly, or 2)
              of width D (the zoo entry's, DEFAULT_WIDTH when unknown), SUMMARY_S + SUMMARY_CELL_S m D s each.
  zero-shot   cells x seeds x (restarts + 1) matching solves of C classes, FAQ_S + FAQ_CUBE_S C^3 s each
              (C! / 10^6 s for the brute-force solver), cells as above (2 when the last pair is also scored).

`check_cost` refuses a run whose estimate exceeds `CONFIRM_S` unless confirmed (`run --yes`), and any run
over `MAX_S` (docs/settings-and-results.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from platobench.errors import UserError

EVAL_S = 1e-5
PAIR_S = 3.6e-10
SUMMARY_S = 1e-4
SUMMARY_CELL_S = 2.5e-8
DEFAULT_WIDTH = 1024
#: Multipliers of the per-evaluation time: rotation_residual_heldout re-fits its map for every draw (fitted
#: to demo-rotation's records as written for the rate scheme, 1,682 s for 42 pairs; 1,400 before, fitted to
#: half-subsets, read 296 s), svcca's permutation re-orthogonalises the permuted bases (no offline setting to fit it
#: to: kept at the seconds per evaluation on 644 samples it had before the refit of 2026-12).
SLOW_METRICS = {"rotation_residual_heldout": 8000.0, "svcca": 1600.0}
FAQ_S = 1e-3
FAQ_CUBE_S = 1.5e-7
#: Estimated seconds of statistics above which `run` asks for --yes (2 hours: the committed offline
#: board, 42 pairs x 7 settings from an empty results folder, is estimated at ~45 min and its records'
#: runtimes add up to ~51 min).
CONFIRM_S = 7200.0
#: Estimated seconds no run may exceed, even with --yes (7 days).
MAX_S = 7 * 86400.0


@dataclass(frozen=True)
class JobCost:
    """The estimate of one job: `evaluations` (layer-pair scores or matching solves) and `seconds`."""

    label: str
    evaluations: float
    seconds: float


def paired_cost(label: str, metric: str, n: int, cells: int, layers: int, width: int | None, n_perm: int,
                n_ci: int, ci_fraction: float, scheme: str = "subsample") -> JobCost:
    """Cost of a paired job: N samples, `cells` scored layer pairs of `layers` summarised layers of `width`
    features (None: unknown), n_perm null draws, n_ci interval subsets: of ci_fraction N samples for the
    "subsample" scheme, of N - ceil(N / n_ci) for the "jackknife" one, and n_ci more of half that for the
    rate ones (`Metric.interval`)."""
    from platobench.metrics.resampling import RATE_SCHEMES, rate_small_size

    slow = SLOW_METRICS.get(metric, 1.0)
    m = n - math.ceil(n / max(n_ci, 1)) if scheme == "jackknife" else round(ci_fraction * n)

    def per_subset(m: int) -> float:
        return cells * (EVAL_S + PAIR_S * m * m) * slow + layers * (SUMMARY_S + SUMMARY_CELL_S * m * (width or DEFAULT_WIDTH))

    per_draw = cells * (EVAL_S + PAIR_S * n * n) * slow
    subsets = n_ci * (per_subset(m) + (per_subset(rate_small_size(m)) if scheme in RATE_SCHEMES else 0.0))
    evaluations = float(cells) * (1 + n_perm + n_ci * (2 if scheme in RATE_SCHEMES else 1))
    return JobCost(label, evaluations, (1 + n_perm) * per_draw + subsets)


def zeroshot_cost(label: str, solver: str, classes: int, cells: int, seeds: int, restarts: int) -> JobCost:
    """Cost of a zero-shot job: `cells` layer pairs, each matched over `seeds` seeds with 1 + restarts starts."""
    if solver == "brute":
        solves, per = float(cells) * seeds, math.factorial(min(classes, 20)) * 1e-6
    else:
        solves, per = float(cells) * seeds * (restarts + 1), FAQ_S + FAQ_CUBE_S * classes**3
    return JobCost(label, solves, solves * per)


def duration(seconds: float) -> str:
    """'42 s', '17 min', '3.2 h', '12 days'."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.0f} days"


def check_cost(costs: list[JobCost], confirmed: bool) -> float:
    """The estimated total seconds of `costs`; UserError over `MAX_S`, or over `CONFIRM_S` unless
    `confirmed`. The message names the costliest job and what to change."""
    total = sum(c.seconds for c in costs)
    if total <= CONFIRM_S:
        return total
    worst = max(costs, key=lambda c: c.seconds)
    what = (f"the statistics of this run (permutation nulls, intervals, matching restarts) are estimated at "
            f"~{duration(total)} on 2 CPU cores; the costliest job is {worst.label} (~{duration(worst.seconds)}, "
            f"{worst.evaluations:.3g} metric evaluations)")
    if total > MAX_S:
        raise UserError(f"{what}, over the limit of {duration(MAX_S)}: lower n_perm, n_ci or restarts, or --limit")
    if not confirmed:
        raise UserError(f"{what}: pass --yes to run it anyway, or lower n_perm, n_ci or restarts")
    return total
