"""Registry of alignment metrics: each metric is a `Metric` descriptor.

A metric is computed in two steps so that a whole layer grid costs one pass per layer:
  summarize(X, params) -> S        per-layer work on X [N, D] (kNN sets, centred Gram matrices, bases)
  combine(SX, SY, params) -> G     G [Lx, Ly] float64 from lists of per-layer summaries, with batched
                                   products (no Python loop over layer pairs)
`score(X, Y)` is `combine([summarize(X)], [summarize(Y)])[0, 0]`, so a grid entry equals the pairwise
score by construction (up to float rounding of batched products, < 1e-6).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from platobench.errors import UserError
from platobench.metrics.resampling import SCHEMES
from platobench.registry import Registry, did_you_mean

Summary = Any
SummarizeFn = Callable[[torch.Tensor, dict[str, Any]], Summary]
CombineFn = Callable[[list[Summary], list[Summary], dict[str, Any]], torch.Tensor]
ChanceFn = Callable[[int, dict[str, Any]], "float | None"]

#: A sample count so large that `Metric.validate` can only reject parameters, not N: what
#: `Metric.checked_params` passes before any data exists (e.g. when a settings file is loaded).
ANY_N = 2**62


#: Resampling schemes of confidence intervals (`Metric.interval`, platobench.metrics.stats).
INTERVAL_SCHEMES = SCHEMES
#: What a confidence interval covers (`Metric.estimand`), in words for records and docs.
ESTIMANDS = {
    "population": "the population value of the selected layer pair's score (independent of N)",
    "expected_at_n": "the expected score of N samples drawn from the population, the same layer selection "
                     "applied (the score depends on N)",
}

#: Invariance names a `Metric` may declare (see `Metric.invariances`).
INVARIANCES = ("rotation", "isotropic_scaling", "translation", "sample_permutation_joint")


@dataclass(frozen=True)
class Metric:
    """Descriptor of one metric.

    id: stable metric id used in records (e.g. "mutual_knn").
    params: parameter names with their defaults; any other keyword is rejected.
    higher_is_better: direction of the score.
    symmetric: score(X, Y) == score(Y, X) (to float rounding) for every valid pair.
    invariances: transforms that leave the score unchanged (to float rounding) under preprocess "none",
        from `INVARIANCES`: "rotation" (X -> X Q, Q an orthogonal [D, D] matrix, on either side),
        "isotropic_scaling" (X -> c X, c > 0, either side), "translation" (X -> X + v, v a [D] vector,
        either side), "sample_permutation_joint" (the same reordering of the rows of X and Y). Only what
        holds for every parameter value is declared; a metric that declares none says why in its module
        docstring. tests/metrics/test_metric_contracts.py checks every declaration on random inputs.
    chance: chance(n, params) -> expected score of independent inputs, or None when it is only known
        through the permutation null (platobench.metrics.stats).
    summarize_x / summarize_y: per-layer work for the X and Y sides (the same function unless the
        metric is asymmetric).
    combine: per-layer summaries of both sides -> [Lx, Ly] float64 tensor.
    validate: optional check of (n, params) that raises UserError (e.g. k < n).
    range: (lo, hi), the closed interval every finite score lies in (combiners clamp float rounding
        back into it; the best value is hi for higher-is-better metrics, lo otherwise, see
        `stats.calibrated_score`); None only when the score is unbounded (cknna), said in `description`.
        kNN overlaps and SVCCA [0, 1], CKA [-1, 1], rotation_residual [0, 2], held-out residual [0, 4].
    identity_score: score(X, T(X)) for every valid X and every T composed of the declared invariances
        (T the identity included): the best value of `range` where the metric reaches it on equal
        inputs (1 for similarities, 0 for residuals), also for cknna (1, unbounded range); None when
        score(X, X) depends on X (cycle_knn: a sample's neighbours need not have it as a neighbour).
    interval: how `stats.subsample_ci` resamples for its confidence interval, from `INTERVAL_SCHEMES`:
        "jackknife" (grouped delete-d jackknife, for scores that are smooth functions of sample moments:
        SVCCA, the in-sample rotation residual) or
        "subsample" (half-subsets, the delete-d jackknife factor, for scores built on neighbour sets or a
        sample split, LCS, and for CKA, whose best of a grid of near-tied cells is not smooth) or "rate"
        (half-subsets with the variance's rate in N read from quarter-subsets beside them: CKNNA, the
        held-out residual) or "arcsine_rate" (the same on the arcsin(sqrt(score))
        scale of a proportion: mutual kNN, and cycle kNN, whose rate saturates on small subsets; only with
        range (0, 1)); each chosen by simulation
        (platobench/metrics/calibration.py, docs/statistics.md).
    estimand: what that interval is an interval for, from `ESTIMANDS`: "population" (a value of the
        population independent of N, e.g. its CKA) or "expected_at_n" (the expected score of N samples
        drawn from the population: kNN scores depend on N, chance k / (N - 1); the held-out residual on
        how many samples fit the rotation); or a function of the resolved parameters that returns one
        (CKA: "population" for the unbiased estimator, "expected_at_n" for the biased one, whose bias is
        O(1 / N)). `estimand_for(params)` resolves it.
    neighbour_sets: the score is built on discrete neighbour sets (the kNN family), so a near tie between
        two neighbours is decided by float rounding, which differs between CPUs: `run` measures how far
        rounding-sized noise moves such a record and widens `check`'s tolerance to it
        (`bench.scoring.rounding_sensitivity`). Continuous scores (CKA, SVCCA, residuals) leave it False.
    extra: optional hooks. extra["permute"](summary, perm) -> the summary of Y[perm] (row a of Y[perm]
        is row perm[a] of Y) computed from the summary of Y without redoing per-layer work; permutation
        nulls use it through `LayerSummaries.grid(perm=...)` (platobench.metrics.api).
    """

    id: str
    params: dict[str, Any]
    higher_is_better: bool
    symmetric: bool
    invariances: tuple[str, ...]
    chance: ChanceFn
    summarize_x: SummarizeFn
    combine: CombineFn
    summarize_y: SummarizeFn | None = None
    validate: Callable[[int, dict[str, Any]], None] | None = None
    description: str = ""
    range: tuple[float, float] | None = None
    identity_score: float | None = None
    interval: str = "jackknife"
    estimand: str | Callable[[dict[str, Any]], str] = "population"
    neighbour_sets: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = sorted(set(self.invariances) - set(INVARIANCES))
        if unknown:
            raise ValueError(f"metric {self.id!r} declares unknown invariance(s) {unknown}; expected {INVARIANCES}")
        if self.interval not in INTERVAL_SCHEMES:
            raise ValueError(f"metric {self.id!r}: interval {self.interval!r} is not one of {INTERVAL_SCHEMES}")
        if self.interval == "arcsine_rate" and self.range != (0.0, 1.0):
            raise ValueError(f"metric {self.id!r}: the arcsine_rate interval is for proportions, scores in [0, 1]; "
                             f"its range is {self.range}")
        if not callable(self.estimand) and self.estimand not in ESTIMANDS:
            raise ValueError(f"metric {self.id!r}: estimand {self.estimand!r} is not one of {sorted(ESTIMANDS)}")

    def estimand_for(self, params: dict[str, Any], selection: str | tuple[int, int] | None = None) -> str:
        """What the interval of the score with these resolved parameters is for (a key of `ESTIMANDS`). A
        held-out selection's score (`selection` "heldout") is the mean of cells chosen on random halves, scored
        on halves: its interval is for its expected value at this N whatever the metric's own estimand."""
        if selection == "heldout":
            return "expected_at_n"
        value = self.estimand(params) if callable(self.estimand) else self.estimand
        if value not in ESTIMANDS:
            raise ValueError(f"metric {self.id!r}: estimand {value!r} is not one of {sorted(ESTIMANDS)}")
        return value

    def resolve_params(self, given: dict[str, Any]) -> dict[str, Any]:
        """Defaults overlaid with `given`; unknown names raise UserError."""
        unknown = sorted(set(given) - set(self.params))
        if unknown:
            raise UserError(
                f"metric {self.id!r} got unknown parameter(s) {unknown}{did_you_mean(unknown[0], self.params)}; "
                f"expected a subset of {sorted(self.params)}"
            )
        return {**self.params, **given}

    def checked_params(self, given: dict[str, Any]) -> dict[str, Any]:
        """`resolve_params(given)` with each value checked by `validate` (at `ANY_N` samples, so only the
        checks that do not depend on N apply); UserError otherwise."""
        resolved = self.resolve_params(given)
        if self.validate is not None:
            self.validate(ANY_N, resolved)
        return resolved

    def describe(self) -> dict[str, Any]:
        """JSON-serialisable summary (used by `platobench metrics --json` and result records)."""
        return {
            "id": self.id,
            "params": dict(self.params),
            "higher_is_better": self.higher_is_better,
            "symmetric": self.symmetric,
            "invariances": list(self.invariances),
            "range": list(self.range) if self.range else None,
            "identity_score": self.identity_score,
            "interval": self.interval,
            "neighbour_sets": self.neighbour_sets,
            "estimand": self.estimand_for(self.params),
            "description": self.description,
        }


#: Modules of platobench.metrics whose import registers the built-in metrics; imported by the first lookup.
BUILTIN_MODULES = ("cca", "kernel", "knn", "procrustes")

#: Every metric by id: the built-ins, and those plugins register (`platobench.registry`).
METRICS: Registry[Metric] = Registry("metric", builtins=[f"platobench.metrics.{name}" for name in BUILTIN_MODULES])


def register(metric: Metric) -> Metric:
    return METRICS.register(metric.id, metric)


def get_metric(metric_id: str) -> Metric:
    return METRICS.get(metric_id)


def list_metrics(pattern: str = "*") -> list[Metric]:
    """Metric descriptors whose id matches the glob `pattern`, sorted by id."""
    return [m for _, m in sorted(METRICS.items(pattern), key=lambda item: item[0])]
