"""Paired comparisons of two records of one board, from the subset scores and null draws they state.

Every paired record of one setting on one sample set is scored on the same seeded subsets (its interval's
`ci.draws`) and against the same seeded permutations (`null.draws`): platobench/metrics/stats.py draws
both from (seed, N) alone. Two such records therefore pair subset by subset, and their difference has the
standard error of the subset-wise differences (platobench/metrics/resampling.py), which is what the
board's verdicts and ranks use instead of asking whether two intervals overlap (an overlap test has a
level far below its nominal one and little power when the two scores are correlated, as scores of pairs
that share a model or the samples are).

- `raw_difference(a, b)`: score_a - score_b, on the subset scores; for ranks (same metric, same samples).
- `calibrated_difference(a, b)`: the difference of the excesses over each record's own null,
  c = (score - null mean) / (perfect - null mean), subset by subset with each record's null mean; the
  null means are estimates from B permutations, so the variance of (g_a mean_a - g_b mean_b) over the
  shared draws, g = dc/dmean = (score - perfect) / (perfect - mean)^2, is added (delta method). For
  verdicts against baselines: a baseline with one layer and a pair with a 36-cell grid have different
  nulls under best-of-grid selection, and only the excess over the null compares them.

Both are None when the two records cannot be paired (`unpaired_reason` says why): one lacks the draws
(a record written before they were stated), or they were not drawn alike (another setting
configuration, sample set, scheme, subset size or count, or permutation seed).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from platobench.leaderboard.consistency import best_value
from platobench.leaderboard.kinds import record_kind
from platobench.leaderboard.ranks import tie_ranks
from platobench.metrics.resampling import PairedDifference, linearised, paired_difference
from platobench.results import ResultRecord

ALPHA = 0.05  # the level of every paired test on the board (after Holm's adjustment for verdicts)


def _config(record: ResultRecord) -> object:
    cfg = record.provenance.setting_config
    return {k: v for k, v in cfg.items() if k != "description"} if isinstance(cfg, dict) else None


def unpaired_reason(a: ResultRecord, b: ResultRecord, *, null: bool = False) -> str | None:
    """Why records `a` and `b` cannot be compared draw by draw (None when they can); `null`: their null
    draws are needed too."""
    for r in (a, b):
        if not record_kind(r.kind).paired_draws or r.ci is None or r.ci.draws is None:
            return f"{r.pair_id} states no subset scores"
        if null and (r.null is None or r.null.draws is None):
            return f"{r.pair_id} states no null draws"
    if (a.setting, a.dataset.fingerprint, a.dataset.n) != (b.setting, b.dataset.fingerprint, b.dataset.n):
        return "not one setting on one sample set"
    if _config(a) is None or _config(a) != _config(b):
        return "scored under different setting configurations"
    ca, cb = a.ci, b.ci
    if (ca.scheme, ca.subset_size, len(ca.draws)) != (cb.scheme, cb.subset_size, len(cb.draws)):
        return "their subsets were drawn differently"
    if null and (a.null.seed, len(a.null.draws)) != (b.null.seed, len(b.null.draws)):
        return "their permutations were drawn differently"
    return None


def raw_difference(a: ResultRecord, b: ResultRecord) -> PairedDifference | None:
    """score_a - score_b with its paired standard error, or None (`unpaired_reason`)."""
    if unpaired_reason(a, b) is not None:
        return None
    return paired_difference((a.score, b.score), (a.ci.draws, b.ci.draws), a.ci.scheme, a.dataset.n,
                             a.ci.subset_size, rates=_rates(a, b))


def _rates(a: ResultRecord, b: ResultRecord) -> tuple[float, float] | None:
    """The two records' rate exponents under the rate schemes (None under the others)."""
    return None if a.ci.rate is None else (a.ci.rate, b.ci.rate)


def _calibrated_draws(r: ResultRecord, perfect: float) -> tuple[float, np.ndarray, np.ndarray] | None:
    mean = r.null.mean
    if perfect == mean:
        return None
    scale = perfect - mean
    cal = (r.score - mean) / scale
    subsets = (linearised(r.ci.draws, r.ci.scheme, r.score)[0] - mean) / scale  # the arcsine scheme's first
    gradient = (r.score - perfect) / scale**2
    return cal, subsets, gradient * np.asarray(r.null.draws, dtype=np.float64)


def calibrated_difference(a: ResultRecord, b: ResultRecord) -> PairedDifference | None:
    """c_a - c_b of the two records' excesses over their nulls (module docstring), or None (unpaired, or a
    metric without a best value, or a null mean at the best value)."""
    if unpaired_reason(a, b, null=True) is not None:
        return None
    perfect = best_value(a)
    if perfect is None or best_value(b) != perfect:
        return None
    da, db = _calibrated_draws(a, perfect), _calibrated_draws(b, perfect)
    if da is None or db is None:
        return None
    means = da[2] - db[2]
    extra = float(means.var(ddof=1)) / means.size if means.size > 1 else 0.0
    scheme = "rate" if a.ci.scheme == "arcsine_rate" else a.ci.scheme  # its draws are linearised already
    return paired_difference((da[0], db[0]), (da[1], db[1]), scheme, a.dataset.n, a.ci.subset_size,
                             extra_var=extra, rates=_rates(a, b))


def separated(a: ResultRecord, b: ResultRecord, alpha: float = ALPHA) -> bool | None:
    """Whether the scores of `a` and `b` differ at two-sided level `alpha` by their paired difference;
    None when they cannot be paired."""
    d = raw_difference(a, b)
    return None if d is None else 2 * min(d.p_greater, d.p_less) <= alpha


def record_ranks(records: Sequence[ResultRecord]) -> list[int]:
    """Ranks of records sorted best first (platobench/leaderboard/ranks.py): a record ties its group's
    leader unless their paired difference separates them (`separated`); records that cannot be paired
    with the leader tie it when their intervals overlap."""
    if not records:
        return []
    cis = [None if r.ci is None else (r.ci.lo, r.ci.hi) for r in records]
    return tie_ranks([r.score for r in records], cis, records[0].metric.higher_is_better,
                     separated=lambda i, j: separated(records[i], records[j]))


__all__ = ["ALPHA", "calibrated_difference", "raw_difference", "record_ranks", "separated", "unpaired_reason"]
