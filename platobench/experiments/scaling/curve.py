"""Alignment curves: a metric on random subsets of N samples, for log-spaced N.

Real features: for each N, `draws` subsets of N samples drawn without replacement from the pool (one
subset at N = the pool size). Synthetic features: fresh samples of a `LatentModel` per draw. A point
holds the mean over draws and the 2.5% and 97.5% quantiles of the draws (linear interpolation): the
spread of the score over which N samples were measured. For subsets of a finite pool that spread
shrinks to 0 as N approaches the pool size (every subset is then nearly the same); synthetic draws
are independent at every N.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import torch

from platobench.api import UserError, chance_level, score
from platobench.experiments.scaling.synthetic import LatentModel, latent_pair

#: Metric parameters of the curves (k of mutual_knn is a command option).
METRIC_PARAMS: dict[str, dict[str, Any]] = {
    "mutual_knn": {"k": 10},
    "cka": {"kernel": "linear", "estimator": "unbiased"},
}
PREPROCESS = "prh"


@dataclass(frozen=True)
class Point:
    """One N of one curve: mean score over `draws`, the 95% range of the draws, the closed-form chance
    level (None when unknown), and the seconds the draws took."""

    source: str  # "real" or "synthetic"
    metric: str
    n: int
    draws: int
    mean: float
    lo: float
    hi: float
    chance: float | None
    seconds: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def doubling_sizes(lo: int, hi: int) -> list[int]:
    """lo, 2 lo, 4 lo, ... below hi, then hi: log-spaced sizes (lo >= 2, hi >= lo)."""
    if lo < 2 or hi < lo:
        raise UserError(f"sizes: expected 2 <= smallest N <= largest N, got {lo} and {hi}")
    out = [lo]
    while out[-1] * 2 < hi:
        out.append(out[-1] * 2)
    return out + ([hi] if out[-1] != hi else [])


def metric_params(metric: str, k: int) -> dict[str, Any]:
    if metric not in METRIC_PARAMS:
        raise UserError(f"scaling-n measures {sorted(METRIC_PARAMS)}, got {metric!r}")
    return {**METRIC_PARAMS[metric], **({"k": k} if metric == "mutual_knn" else {})}


def _point(source: str, metric: str, n: int, scores: list[float], params: dict[str, Any], seconds: float) -> Point:
    s = torch.tensor(scores, dtype=torch.float64)
    lo, hi = torch.quantile(s, torch.tensor([0.025, 0.975], dtype=torch.float64)).tolist()
    return Point(source, metric, n, len(scores), float(s.mean()), lo, hi, chance_level(metric, n, **params), seconds)


def _curve(source: str, sample: Callable[[int, int], tuple[torch.Tensor, torch.Tensor]], sizes: Sequence[int],
           draws: Callable[[int], int], metrics: Sequence[str], k: int,
           log: Callable[[str], None]) -> list[Point]:
    points = []
    for n in sizes:
        scores: dict[str, list[float]] = {m: [] for m in metrics}
        seconds = dict.fromkeys(metrics, 0.0)
        for d in range(draws(n)):
            x, y = sample(n, d)
            for m in metrics:
                t0 = time.perf_counter()
                scores[m].append(score(m, x, y, preprocess=PREPROCESS, **metric_params(m, k)))
                seconds[m] += time.perf_counter() - t0
        for m in metrics:
            points.append(_point(source, m, n, scores[m], metric_params(m, k), seconds[m]))
            log(f"{source} N={n:,}: {m} {points[-1].mean:.4f} [{points[-1].lo:.4f}, {points[-1].hi:.4f}] "
                f"({draws(n)} draw(s), {seconds[m]:.1f} s)")
    return points


def real_curve(x: torch.Tensor, y: torch.Tensor, sizes: Sequence[int], metrics: Sequence[str], *, k: int,
               draws: int, seed: int, log: Callable[[str], None] = lambda s: None) -> list[Point]:
    """Curves of paired features x [P, Dx], y [P, Dy] on random subsets (module docstring)."""
    pool = x.shape[0]
    if y.shape[0] != pool:
        raise UserError(f"x has {pool} samples and y {y.shape[0]}; rows must be paired samples")
    if max(sizes) > pool:
        raise UserError(f"sizes up to {max(sizes):,} but the paired set has {pool:,} samples")

    def sample(n: int, d: int) -> tuple[torch.Tensor, torch.Tensor]:
        g = torch.Generator().manual_seed(seed * 1_000_003 + 7919 * d + n)
        idx = torch.randperm(pool, generator=g)[:n].sort().values
        return x[idx], y[idx]

    return _curve("real", sample, sizes, lambda n: 1 if n == pool else draws, metrics, k, log)


def synthetic_curve(model: LatentModel, sizes: Sequence[int], metrics: Sequence[str], *, k: int, draws: int,
                    log: Callable[[str], None] = lambda s: None) -> list[Point]:
    """Curves of `model`'s synthetic pairs, fresh samples per draw."""
    return _curve("synthetic", lambda n, d: latent_pair(model, n, d), sizes, lambda n: draws, metrics, k, log)
