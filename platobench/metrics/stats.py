"""Statistics of an alignment score: chance level, permutation null, confidence interval.

Permutation null (`permutation_null`): the pairing of samples is shuffled B times (seeded): X is scored
against Y[perm] (row a paired with row perm[a]). A best-of-grid score takes the layer max (min for a
lower-is-better metric) INSIDE each null draw, so the null carries the same selection bias as the
observed score. Per-layer summaries are computed once and permuted through the metric's
`extra["permute"]` hook (kNN lists, Gram matrices, bases); a metric without the hook (the held-out
Procrustes residual, whose split is tied to sample positions) re-summarises Y[perm] for each draw.
  p-value     (1 + #{null >= obs}) / (B + 1), or #{null <= obs} for lower-is-better metrics
              (Phipson & Smyth 2010: never 0, exact for exchangeable draws).
  calibrated  (obs - null mean) / (perfect - null mean), `perfect` the metric's best possible value:
              1 for similarities, which gives (obs - mean) / (1 - mean); 0 for residuals, which gives
              1 - obs / mean, the share of the chance-level residual that the alignment removes.
              0 = chance, 1 = perfect alignment, for both directions.

Held-out layer selection ("heldout", platobench/metrics/heldout.py): the observed score cross-fits two
halves of the samples; the null shuffles the pairing within each half and cross-fits inside every draw;
each interval subset keeps every sample in its half and is cross-fitted the same way (a rate scheme reads
its exponent from the cells of both halves' grids: one cross-fitted value per subset is too few).

Confidence interval (`subsample_ci`): B scores of the selected layer pair on subsets of the samples
(without replacement: the bootstrap duplicates samples, a duplicate is its own exact nearest neighbour in
both models and an identical Gram row, so kNN overlap and CKA would be inflated), the same selection rule
inside each subset, give a standard error s; the interval is obs +- t_{B-1, (1+level)/2} s, clipped to the
metric's range. The metric declares how the subsets are drawn (`Metric.interval`):
  jackknife   a seeded partition of the N samples into B groups; subset b leaves group b out; s^2 =
              (B - 1) / B sum_b (score_b - mean)^2, the grouped (delete-a-group) jackknife (Quenouille
              1956; Efron & Stein 1981; Shao & Tu 1995, sec. 2.3). For smooth statistics of sample moments
              (SVCCA, the in-sample residual).
  subsample   B seeded subsets of m = round(frac N) samples; s = sd(score_b) sqrt(m / (N - m)), the
              delete-d jackknife factor (Shao & Wu 1989, d = N - m; 1 for half-samples). For LCS, CKA and
              every metric declaring the jackknife under held-out selection, where leaving out a few samples
              moves the score by jumps (neighbour lists, which cell wins a half, which of near-tied CKA cells
              is the best: CKA's jackknife had standard error 1.22x and coverage .964-.979 on a flat
              spectrum, half-subsets .943-.957 in every cell): the grouped jackknife overstates their spread
              1.3-3x, Politis & Romano's sqrt(m / N) understates it. This factor overstates it too, less
              (mutual kNN had standard error 1.1-1.3x, coverage .975-.985; the held-out residual 1.2-1.3x,
              .978-.990): never short.
  rate        the B subsets of m of "subsample" and B more of m' = round(m / 2) beside them: the ratio of
              the two sizes' variances, pooled over the grid's cells, gives the rate a in Var ~ N^-a
              (kept in [1, 2]); each size estimates the variance at N as sd(score_b)^2 / ((N / m)^a - 1),
              s^2 their mean (Bertail, Politis & Romano 1999; platobench/metrics/resampling.py). For
              CKNNA, whose variance falls faster than 1 / N near chance, and the held-out residual (a fit
              on half the samples): standard error 1.03-1.11x the score's spread, coverage .937-.967
              (1,000 datasets per cell), where half-subsets gave 1.1-1.4x and .975-1.00.
  arcsine_rate  the rate scheme on arcsin(sqrt(score)), mapped back by the delta method at the score
              (platobench/metrics/resampling.py), the exponent from the pooled ratio times (B - 3) / (B - 1).
              For proportions: mutual kNN (coverage .962-.965, where "rate" gave .928-.960) and cycle kNN,
              which saturates on small subsets (its quarter-subsets vary less than its halves; .941-.967,
              where the jackknife gave .999); docs/statistics.md.
Each choice, and the t quantile in place of B-quantiles of the subset scores (which for B = 20 read the
tails from the two extreme draws and under-covered: CKA .86-.88 at nominal .95), was made by simulation:
platobench/metrics/calibration.py measures the coverage on synthetic populations with known values,
docs/statistics.md gives the figures. The interval is for `Metric.estimand`: the population value (CKA)
or the expected score at this N (kNN metrics, whose chance level k / (N - 1) alone depends on N).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

import numpy as np
import torch
from tqdm.auto import tqdm

from platobench.errors import UserError
from platobench.metrics.api import LayerSummaries, summarize_layers
from platobench.metrics.heldout import HalfSplit, cross_fit_value
from platobench.metrics.preprocess import LayerStack, RowSubset, prepared_layers
from platobench.metrics.registry import INTERVAL_SCHEMES, Metric, get_metric
from platobench.metrics.resampling import (
    RATE_SCHEMES,
    arcsine,
    rate_exponent,
    rate_small_size,
    subset_df,
    subset_se,
    t_quantile,
)
from platobench.metrics.selection import HELDOUT, Selection, reduce_grids, select, select_index
from platobench.metrics.validation import DegenerateFeaturesError, check_fraction, check_int

#: Whether nulls and intervals show a progress bar when not told (`progress=None`); set by `draw_bars`.
_BARS: ContextVar[bool] = ContextVar("platobench_draw_bars", default=False)
T = TypeVar("T")
#: Seconds a null or an interval must run before its bar appears (short ones never show one).
BAR_DELAY_S = 2.0


@contextlib.contextmanager
def draw_bars(enabled: bool) -> Iterator[None]:
    """Within the block, `permutation_null` and `subsample_ci` called without `progress` show a bar
    (after BAR_DELAY_S) when `enabled`: how `platobench run` turns them on for a terminal, not --json."""
    token = _BARS.set(enabled)
    try:
        yield
    finally:
        _BARS.reset(token)


def _draws(items: Iterable[T], total: int, what: str, progress: bool | None) -> Iterator[T]:
    """`items` behind a tqdm bar on stderr when `progress` (None: as `draw_bars` says)."""
    show = _BARS.get() if progress is None else progress
    return iter(tqdm(items, total=total, desc=what, unit="draw", disable=not show, delay=BAR_DELAY_S, leave=False,
                     dynamic_ncols=True))


def chance_level(metric: str, n: int, **params: Any) -> float | None:
    """Expected score of independent inputs with n samples when known in closed form (mutual_knn:
    k / (n - 1); unbiased CKA: 0); None when it is only known through `permutation_null`."""
    m = get_metric(metric)
    return m.chance(check_int(n, "n", 2), m.resolve_params(params))


@dataclass(frozen=True)
class NullResult:
    """Permutation null of one score. values: the B null scores (after selection inside each draw)."""

    metric: str
    observed: float
    mean: float
    std: float
    p_value: float
    calibrated: float | None
    n_perm: int
    seed: int
    selection: Selection
    values: torch.Tensor = field(repr=False)

    def to_record(self) -> dict[str, Any]:
        """JSON-serialisable summary (without the null draws)."""
        return {
            "metric": self.metric,
            "observed": self.observed,
            "null_mean": self.mean,
            "null_std": self.std,
            "p_value": self.p_value,
            "calibrated": self.calibrated,
            "n_perm": self.n_perm,
            "seed": self.seed,
            "selection": self.selection.to_record(),
        }


class Interval(NamedTuple):
    """A confidence interval (lo, hi)."""

    lo: float
    hi: float


def _stack(xs: Any, name: str) -> LayerStack:
    """A model's layers (a [L, N, D] array or a sequence; api.summarize_layers checks them) as one
    LayerStack, shared by every subset or permutation of the call (`RowSubset`): its per-sample prh
    quantiles are computed once."""
    if isinstance(xs, (torch.Tensor, np.ndarray)) and xs.ndim == 3:
        xs = [xs[i] for i in range(xs.shape[0])]
    if not isinstance(xs, Sequence) or isinstance(xs, (str, bytes)) or len(xs) == 0:
        raise UserError(f"{name} must be a non-empty list of [N, D_l] layers or a [L, N, D] tensor")
    return LayerStack(xs, name)


def calibrated_score(metric: Metric, observed: float, null_mean: float) -> float | None:
    """(obs - null mean) / (perfect - null mean); None when the metric has no known best value."""
    if metric.range is None:
        return None
    perfect = metric.range[1] if metric.higher_is_better else metric.range[0]
    if perfect == null_mean:
        return None
    return (observed - null_mean) / (perfect - null_mean)


def _restrict(s: LayerSummaries, index: tuple[int, int] | None) -> LayerSummaries:
    if index is None:
        return s
    return LayerSummaries(s.metric, s.params, s.n, [s.x[index[0]]], [s.y[index[1]]], s.labels)


def _fixed_or_best_null(m: Metric, summaries: LayerSummaries, Ys: Any, selection: str | tuple[int, int],
                        preprocess: str, gen: torch.Generator, draws: Iterator[int], values: torch.Tensor) -> Selection:
    """Fill `values` with the null draws of a "best", "last" or fixed selection; returns the observed one."""
    grid = summaries.grid()
    chosen = select(grid, selection, m.higher_is_better)
    fixed = select_index(tuple(grid.shape), selection)
    base = _restrict(summaries, fixed)
    permute = m.extra.get("permute")
    stack_y = _stack(Ys, "Ys") if permute is None else None
    reduce_as = "best" if fixed is None else (0, 0)
    for b in draws:
        perm = torch.randperm(summaries.n, generator=gen)
        if permute is not None:
            g = base.grid(perm=perm)
        else:
            ys = prepared_layers(LayerStack(RowSubset(stack_y, perm), "Ys"), preprocess,
                                 None if fixed is None else [fixed[1]])
            summarize_y = m.summarize_y or m.summarize_x
            g = LayerSummaries(m, base.params, base.n, base.x, [summarize_y(y, base.params) for y in ys], base.labels).grid()
        values[b] = reduce_grids(g[None], reduce_as, m.higher_is_better)[0]
    return chosen


def permutation_null(
    metric: str,
    Xs: Any,
    Ys: Any,
    *,
    selection: str | tuple[int, int] = "best",
    n_perm: int = 100,
    seed: int = 0,
    preprocess: str = "none",
    summaries: LayerSummaries | None = None,
    split: HalfSplit | None = None,
    progress: bool | None = None,
    **params: Any,
) -> NullResult:
    """Permutation null of the selected score of metric(Xs, Ys) (layer stacks as in `layer_grid`).

    selection: "best" (best pair, taken inside every draw), "heldout" (the pairing shuffled within each
        half of `platobench.metrics.heldout.halves`, cross-fitted inside every draw), "last" or "i,j" / (i, j).
    n_perm: number of shuffles B >= 1; seed: torch.Generator seed of the shuffles.
    summaries: optionally, `summarize_layers(metric, Xs, Ys, preprocess=..., **params)` already
        computed by the caller for the observed grid, so that the per-layer work is not redone.
    split: for "heldout", `HalfSplit.of(metric, stacks, N, seed=seed, ...)` already computed by the caller.
    progress: a progress bar over the draws (None: as `draw_bars` says). Each draw is reduced to its
        selected score at once, so memory does not grow with B x the grid.
    """
    n_perm = check_int(n_perm, "n_perm", 1)
    seed = check_int(seed, "seed", 0)
    if summaries is None:
        summaries = summarize_layers(metric, Xs, Ys, preprocess=preprocess, **params)
    elif summaries.metric.id != metric or summaries.params != summaries.metric.resolve_params(params):
        raise UserError(f"summaries were computed for {summaries.metric.id} {summaries.params}, "
                        f"not for {metric} with parameters {params}")
    m = summaries.metric
    gen = torch.Generator().manual_seed(seed)
    values = torch.empty(n_perm, dtype=torch.float64)
    draws = _draws(range(n_perm), n_perm, f"null {m.id}", progress)
    if selection == HELDOUT:
        split = split or HalfSplit.of(metric, (_stack(Xs, "Xs"), _stack(Ys, "Ys")), summaries.n, seed=seed,
                                      preprocess=preprocess, **params)
        chosen = split.cross_fit().selection()
        for b in draws:
            values[b] = split.permuted_value(gen)
    else:
        chosen = _fixed_or_best_null(m, summaries, Ys, selection, preprocess, gen, draws, values)
    obs = chosen.score
    exceed = (values >= obs) if m.higher_is_better else (values <= obs)
    mean = float(values.mean())
    std = float(values.std(unbiased=True)) if n_perm > 1 else 0.0
    return NullResult(
        metric=m.id,
        observed=obs,
        mean=mean,
        std=std,
        p_value=(1 + int(exceed.sum())) / (n_perm + 1),
        calibrated=calibrated_score(m, obs, mean),
        n_perm=n_perm,
        seed=seed,
        selection=chosen,
        values=values,
    )


def interval_scheme(metric: str, selection: str | tuple[int, int], n: int | None = None, frac: float = 0.5,
                    params: dict[str, Any] | None = None) -> str:
    """How the interval of `metric` under `selection` resamples: the metric's own `Metric.interval`, with
    two exceptions. "subsample" in place of "jackknife" for a held-out selection (whether a cell wins its
    half flips by jumps when a few samples leave, so the grouped jackknife overstates the spread: unbiased
    CKA held out on the flat population, standard error 1.7x the score's sd with the jackknife, 1.1x with
    half-subsets); a rate scheme stays one under held-out selection, its exponent read from both halves'
    grids of every subset (`subset_draws`; mutual kNN held out: coverage .960 and .955 where half-subsets
    gave .990 and .980, docs/statistics.md). And "subsample" in place of a rate scheme when N is given and
    its second subsets (`rate_small_size` of round(frac N), halved again for a held-out selection, which
    scores each half) are too few samples for the metric with `params` (e.g. k >= m' for a kNN metric, as
    in a small `--limit` run): the interval is then the half-subset one, and the record says so."""
    m = get_metric(metric)
    if selection == HELDOUT and m.interval == "jackknife":
        return "subsample"
    if m.interval not in RATE_SCHEMES or n is None:
        return m.interval
    small = rate_small_size(round(frac * n))
    if selection == HELDOUT:
        small //= 2
    if small < 2:
        return "subsample"
    try:
        if m.validate is not None:
            m.validate(small, m.resolve_params(params or {}))
    except UserError:
        return "subsample"
    return m.interval


def interval_method(metric: str, n_sub: int, frac: float, scheme: str | None = None) -> str:
    """How `subsample_ci` resamples for `metric` with these sizes, in words (for result records)."""
    scheme = scheme or get_metric(metric).interval
    if scheme == "jackknife":
        how = f"grouped jackknife: {n_sub} seeded groups, each left out once"
    elif scheme in RATE_SCHEMES:
        how = (f"rate-corrected subsampling without replacement: {n_sub} subsets of {frac:g} N and {n_sub} of "
               f"{frac / 2:g} N, Var ~ N^-a with a in [1, 2] from their variance ratio, variance at N the mean of "
               f"each size's spread^2 / ((N / m)^a - 1)")
        if scheme == "arcsine_rate":
            how += (" on the arcsin(sqrt(score)) scale (the ratio times (B - 3) / (B - 1)), mapped back by the delta "
                    "method at the score")
    else:
        how = f"subsampling without replacement: {n_sub} subsets of {frac:g} N, spread x sqrt(m / (N - m))"
    return f"{how}; t interval ({n_sub - 1} df)"


def _subsets(scheme: str, n: int, n_sub: int, size: int, gen: torch.Generator) -> Iterator[torch.Tensor]:
    """Sorted sample indices of each subset: all but one group of a seeded partition (jackknife), or
    `size` samples drawn without replacement (subsample; rate: then `n_sub` more of `rate_small_size(size)`,
    so that its first `n_sub` subsets are the subsample scheme's)."""
    if scheme == "jackknife":
        groups = torch.tensor_split(torch.randperm(n, generator=gen), n_sub)
        for b in range(n_sub):
            keep = torch.ones(n, dtype=torch.bool)
            keep[groups[b]] = False
            yield keep.nonzero().flatten()
        return
    for _ in range(n_sub):
        yield torch.randperm(n, generator=gen)[:size].sort().values
    if scheme in RATE_SCHEMES:
        for _ in range(n_sub):
            yield torch.randperm(n, generator=gen)[:rate_small_size(size)].sort().values


@dataclass(frozen=True)
class SubsetDraws:
    """The B subset scores of one selected score (`subset_draws`): `scores` [B] in subset order (2B for the
    rate scheme: B of `size` samples, then B of `rate_small_size(size)`), drawn by `scheme` with `size` of
    the `n` samples in each; `observed` the full-sample score; `bounds` the metric's range (None:
    unbounded); `rate` the exponent a of the "rate" scheme (None for the others)."""

    observed: float
    scores: np.ndarray
    scheme: str
    n: int
    size: int
    bounds: tuple[float, float] | None
    rate: float | None = None

    @property
    def se(self) -> float:
        """The standard error (platobench/metrics/resampling.py)."""
        return subset_se(self.scores, self.scheme, self.n, self.size, self.rate,
                         self.observed if self.scheme == "arcsine_rate" else None)

    def interval(self, level: float) -> Interval:
        """observed +- t_{B-1, (1+level)/2} se, clipped to the metric's range."""
        half = t_quantile(level, subset_df(self.scheme, len(self.scores))) * self.se
        lo, hi = self.observed - half, self.observed + half
        if self.bounds is not None:
            lo, hi = max(lo, self.bounds[0]), min(hi, self.bounds[1])
        return Interval(lo, hi)


def subset_draws(
    metric: str,
    Xs: Any,
    Ys: Any,
    *,
    selection: str | tuple[int, int] = "best",
    n_sub: int = 50,
    frac: float = 0.5,
    seed: int = 0,
    preprocess: str = "none",
    summaries: LayerSummaries | None = None,
    split: HalfSplit | None = None,
    progress: bool | None = None,
    scheme: str | None = None,
    **params: Any,
) -> SubsetDraws:
    """The selected score on each of B subsets of the samples, drawn as the metric declares (module
    docstring; arguments as in `subsample_ci`; `split`: for "heldout", the full sample's `HalfSplit`
    when already computed). The subsets depend only on (seed, N, scheme, B, size):
    every pair scored under one setting on one sample set is scored on the same subsets, so their
    subset scores pair (platobench/metrics/resampling.py)."""
    n_sub = check_int(n_sub, "n_sub", 2)
    check_fraction(frac, "frac")
    seed = check_int(seed, "seed", 0)
    full = summaries if summaries is not None else summarize_layers(metric, Xs, Ys, preprocess=preprocess, **params)
    m = full.metric
    n = full.n
    stacks = _stack(Xs, "Xs"), _stack(Ys, "Ys")
    heldout = selection == HELDOUT
    if heldout:
        split = split or HalfSplit.of(metric, stacks, n, seed=seed, preprocess=preprocess, **params)
        obs = split.cross_fit().score
        fixed = None
    else:
        grid = full.grid()
        obs = select(grid, selection, m.higher_is_better).score
        fixed = select_index(tuple(grid.shape), selection)
    only = {} if fixed is None else {"x_layers": [fixed[0]], "y_layers": [fixed[1]]}
    sub_selection = selection if fixed is None else (0, 0)
    scheme = scheme or interval_scheme(metric, selection, n, frac, params)
    subsets = interval_subsets(metric, n, n_sub=n_sub, frac=frac, seed=seed, scheme=scheme)
    size = len(subsets[0])
    grids = []  # each subset's grid (held out: both halves' grids), for the rate schemes' exponent
    scores = []
    for idx in _draws(iter(subsets), len(subsets), f"interval {m.id}", progress):
        try:
            if heldout:  # each subset's samples stay in their halves, cross-fitted as the full sample is
                halves_ab = HalfSplit.of(metric, stacks, n, seed=seed, preprocess=preprocess, within=idx,
                                         **params).summaries
                grid_a, grid_b = (s.grid() for s in halves_ab)
                # the rate schemes read the exponent from every cell of both halves' grids (a held-out score is
                # one value: its own variance ratio alone is too noisy an exponent)
                grids.append(torch.stack([grid_a, grid_b]))
                scores.append(cross_fit_value(grid_a, grid_b, m.higher_is_better))
                continue
            sub = summarize_layers(
                metric, RowSubset(stacks[0], idx), RowSubset(stacks[1], idx), preprocess=preprocess, **only, **params
            )
        except DegenerateFeaturesError as exc:  # the side and layer stay known: a caller may leave it out
            raise DegenerateFeaturesError(f"subsample_ci: subsets of {len(idx)} samples are too small for {metric}: "
                                          f"{exc}", side=exc.side, layer=exc.layer, on_subset=True) from None
        except UserError as exc:
            raise UserError(f"subsample_ci: subsets of {len(idx)} samples are too small for {metric}: {exc}") from None
        grids.append(sub.grid())
        scores.append(select(grids[-1], sub_selection, m.higher_is_better).score)
    rate = None
    if scheme in RATE_SCHEMES:
        rate = _pooled_rate(torch.stack(grids[:n_sub]), torch.stack(grids[n_sub:]), n, size, scheme == "arcsine_rate")
    return SubsetDraws(obs, np.asarray(scores, dtype=np.float64), scheme, n, size, m.range, rate)


def _pooled_rate(larger: torch.Tensor, smaller: torch.Tensor, n: int, size: int, on_arcsine: bool = False) -> float:
    """The rate schemes' exponent from the grids [B, Lx, Ly] of B subsets of `size` and of B of
    `rate_small_size(size)` samples: the ratio of their variances summed over the cells (cells that are not
    finite left out), `rate_exponent`. `on_arcsine` ("arcsine_rate"): of the cells' arcsin(sqrt(score)),
    and the ratio times (B - 3) / (B - 1): a ratio of two sample variances of B - 1 degrees of freedom
    overstates the ratio of the variances by (B - 1) / (B - 3) on average (the mean of an F distribution),
    and an exponent read too high makes the interval short (cycle kNN, flat population, N = 256: coverage
    .919 without the factor, .941 with it; docs/statistics.md)."""
    if on_arcsine:
        larger, smaller = (torch.from_numpy(arcsine(g.double().numpy())) for g in (larger, smaller))
    var_large, var_small = (g.var(0, unbiased=True) for g in (larger.double(), smaller.double()))
    finite = var_large.isfinite() & var_small.isfinite()
    ratio = float(var_small[finite].sum() / var_large[finite].sum()) if finite.any() else math.nan
    if on_arcsine:
        b = larger.shape[0]
        ratio *= max(b - 3, 0) / (b - 1)
    return rate_exponent(ratio, n, size, rate_small_size(size))


def interval_subsets(metric: str, n: int, *, n_sub: int = 50, frac: float = 0.5, seed: int = 0,
                     scheme: str | None = None) -> list[torch.Tensor]:
    """The sorted index tensors of the samples each interval subset keeps, as `subset_draws` scores them
    for the same (metric, N, B, frac, seed, scheme): B of them, 2B for the rate scheme (the B of
    `subset_size` samples, then B of `rate_small_size` of that). `scheme` defaults to the metric's declared
    `interval`."""
    n_sub = check_int(n_sub, "n_sub", 2)
    check_fraction(frac, "frac")
    seed = check_int(seed, "seed", 0)
    scheme = scheme or get_metric(metric).interval
    if scheme not in INTERVAL_SCHEMES:
        raise UserError(f"interval scheme must be one of {INTERVAL_SCHEMES}, got {scheme!r}")
    size = subset_size(scheme, n, n_sub, frac)
    if scheme in RATE_SCHEMES and rate_small_size(size) < 2:
        raise UserError(f"frac={frac} gives subsets of {size} samples out of N={n}: the {scheme} scheme's second "
                        f"size, {rate_small_size(size)}, needs at least 2")
    return list(_subsets(scheme, n, n_sub, size, torch.Generator().manual_seed(seed)))


def subset_size(scheme: str, n: int, n_sub: int, frac: float) -> int:
    """Samples in each subset: N - ceil(N / B) for the jackknife, round(frac N) for subsampling (refused
    when it leaves nothing to resample)."""
    if scheme == "jackknife":
        if n_sub > n:
            raise UserError(f"n_sub={n_sub} jackknife groups out of N={n} samples; expected at most N groups")
        return n - math.ceil(n / n_sub)
    size = round(frac * n)
    if not 2 <= size <= n - 1:
        raise UserError(f"frac={frac} gives subsets of {size} samples out of N={n}; expected 2 <= m <= N - 1")
    return size


def subsample_ci(
    metric: str,
    Xs: Any,
    Ys: Any,
    *,
    selection: str | tuple[int, int] = "best",
    n_sub: int = 50,
    frac: float = 0.5,
    level: float = 0.95,
    seed: int = 0,
    preprocess: str = "none",
    summaries: LayerSummaries | None = None,
    progress: bool | None = None,
    scheme: str | None = None,
    **params: Any,
) -> Interval:
    """Confidence interval of the selected score, resampled as the metric declares (module docstring).

    n_sub: number of subsets B >= 2 (jackknife groups: B <= N); frac: subset size m = round(frac * N),
    2 <= m <= N - 1, of the "subsample" scheme (the jackknife leaves out N / B samples); level: coverage
    in (0, 1); seed: torch.Generator seed of the subsets. summaries: the full-sample summaries when already
    computed; progress: a bar over the subsets (None: as `draw_bars`). Cost: B layer grids for "best";
    for a fixed layer pair ("last", "i,j") each subset summarises only that pair (the rate scheme draws 2B
    subsets). scheme: "jackknife", "subsample" or "rate" in place of the metric's own `Metric.interval` (to compare them; records use the metric's).
    """
    check_fraction(level, "level")
    return subset_draws(metric, Xs, Ys, selection=selection, n_sub=n_sub, frac=frac, seed=seed, preprocess=preprocess,
                        summaries=summaries, progress=progress, scheme=scheme, **params).interval(level)
