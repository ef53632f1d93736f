"""Baseline verdicts: does a real pair beat the negative controls of its board?

A *baseline record* has a model of the `baseline` family (platobench/encoders/baselines.py) on either side.
Scores are compared by their *excess over the null*, never raw: a record with a null is judged by its
calibrated score (score - null mean) / (perfect - null mean) and the interval its CI maps to (the same
affine map, platobench/metrics/stats.py). A record *exceeds its null* when that interval lies above 0 and
its permutation p-value is at most `ALPHA`; one that does not is "indistinguishable from null" (a row at
chance, e.g. a degenerate encoder whose raw score is high only because its null is) and never sets the
bar for others.

Over the records of one board (one setting on one sample set), the *strongest baseline* is the baseline
record that exceeds its null with the best calibrated score (ties go to the first pair id). Each real
record with a finite score then gets one verdict:

- "beats baselines": its calibrated interval lies entirely above the strongest baseline's (above 0, the
  null, when no baseline exceeds its null);
- "below baseline": its interval lies entirely below;
- "within baseline CI": the two intervals overlap;
- without a null or a CI on either record the raw scores are compared instead (the metric's direction),
  and the verdict says "(no CI)": "beats baselines (no CI)", "below baseline (no CI)" or "ties baseline
  (no CI)".

Baseline records get "strongest baseline", "baseline" or "baseline (at null)"; a real record without a
finite score gets "no score". A board without any baseline record gets no verdicts at all.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from platobench.leaderboard.consistency import best_value
from platobench.results import ResultRecord

BASELINE_FAMILY = "baseline"
BEATS = "beats baselines"
WITHIN = "within baseline CI"
BELOW = "below baseline"
NO_CI = " (no CI)"
TIES_NO_CI = "ties baseline (no CI)"
STRONGEST = "strongest baseline"
BASELINE = "baseline"
AT_NULL = " (at null)"
NO_SCORE = "no score"
ALPHA = 0.05  # the permutation p-value at most which a record exceeds its null


def is_baseline(model_name: str) -> bool:
    """True for a model of the `baseline` zoo family ("baseline/caption-length")."""
    return model_name.split("/", 1)[0] == BASELINE_FAMILY


def is_baseline_record(record: ResultRecord) -> bool:
    """True when either side of the pair is a baseline."""
    return is_baseline(record.x.name) or is_baseline(record.y.name)


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def calibrated_interval(record: ResultRecord) -> tuple[float, float] | None:
    """(lo, hi) of the record's excess over its null on the calibrated scale — its CI under the map
    x -> (x - null mean) / (perfect - null mean), lo <= hi — or None without a null, a CI or a known best
    value (zero-shot records: perfect 1, null mean = chance)."""
    if record.null is None or record.ci is None or not _finite(record.calibrated):
        return None
    perfect = 1.0 if record.kind == "zeroshot" else best_value(record)
    mean = record.null.mean
    if perfect is None or perfect == mean:
        return None
    a, b = ((record.ci.lo - mean) / (perfect - mean), (record.ci.hi - mean) / (perfect - mean))
    return (min(a, b), max(a, b))


def exceeds_null(record: ResultRecord) -> bool | None:
    """Whether the record's calibrated interval lies above 0 and its p-value is at most ALPHA; None when
    it has no calibrated interval (no null or no CI)."""
    interval = calibrated_interval(record)
    if interval is None:
        return None
    return interval[0] > 0 and record.null is not None and record.null.p_value <= ALPHA


def strongest_baseline(records: Iterable[ResultRecord]) -> ResultRecord | None:
    """The baseline record of one board that sets the bar (None when there is none): among baselines
    with a finite score, those that do not exceed their null never do; of the rest, the best calibrated
    score, or for records without a null the best raw score (the metric's direction)."""
    candidates = sorted((r for r in records if is_baseline_record(r) and _finite(r.score)), key=lambda r: r.pair_id)
    if not candidates:
        return None
    calibrated = [r for r in candidates if exceeds_null(r) is not None]
    if calibrated:
        above = [r for r in calibrated if exceeds_null(r)]
        return max(above, key=lambda r: r.calibrated) if above else None
    higher = candidates[0].metric.higher_is_better
    return (max if higher else min)(candidates, key=lambda r: r.score)


def _has_baselines(records: list[ResultRecord]) -> bool:
    return any(is_baseline_record(r) and _finite(r.score) for r in records)


def verdict(record: ResultRecord, strongest: ResultRecord | None) -> str:
    """The verdict of one real record against the strongest baseline of its board, or against its own
    null when `strongest` is None (no baseline exceeds its null) (rule in the module doc)."""
    if not _finite(record.score):
        return NO_SCORE
    mine = calibrated_interval(record)
    bar = (0.0, 0.0) if strongest is None else calibrated_interval(strongest)
    if mine is not None and bar is not None:
        if mine[0] > bar[1] and (strongest is not None or exceeds_null(record)):
            return BEATS
        if mine[1] < bar[0]:
            return BELOW
        return WITHIN
    if strongest is None:
        return WITHIN + NO_CI  # no calibrated interval to compare with the null
    higher = record.metric.higher_is_better
    if record.score == strongest.score:
        return TIES_NO_CI
    better = record.score > strongest.score if higher else record.score < strongest.score
    return (BEATS if better else BELOW) + NO_CI


def verdicts(records: Iterable[ResultRecord]) -> dict[str, str]:
    """pair_id -> verdict for every record of ONE board; {} when the board has no baseline with a finite
    score."""
    records = list(records)
    if not _has_baselines(records):
        return {}
    strongest = strongest_baseline(records)
    out: dict[str, str] = {}
    for r in records:
        if strongest is not None and r.pair_id == strongest.pair_id:
            out[r.pair_id] = STRONGEST
        elif is_baseline_record(r):
            out[r.pair_id] = BASELINE + (AT_NULL if exceeds_null(r) is False else "")
        else:
            out[r.pair_id] = verdict(r, strongest)
    return out


def _describe(r: ResultRecord) -> str:
    ci = f" [{r.ci.lo:.3f}, {r.ci.hi:.3f}]" if r.ci is not None else " (no CI)"
    return f"{r.x.name} x {r.y.name}, {r.score:.3f}{ci}"


def board_sentence(records: Iterable[ResultRecord]) -> str:
    """One sentence for the foot of a board's table: how many real pairs beat the strongest baseline."""
    records = list(records)
    if not _has_baselines(records):
        return ("No baseline on this board: add the baselines-text / baselines-vision zoo sets to the run "
                "to judge these scores.")
    strongest = strongest_baseline(records)
    real = [r for r in records if not is_baseline_record(r)]
    if not real:
        bar = _describe(strongest) if strongest is not None else "none: no baseline exceeds its own null"
        return f"Only baselines on this board (strongest: {bar})."
    got = verdicts(records)
    beat = [r for r in real if got[r.pair_id].startswith(BEATS)]
    no_ci = sum(got[r.pair_id] == BEATS + NO_CI for r in beat)
    tail = f"; {no_ci} of them compared by score alone, without a CI" if no_ci else ""
    if strongest is None:
        if not beat:
            return "No real pair exceeds its own null on this board, and no baseline exceeds its own null either."
        return (f"No baseline exceeds its own null on this board; {len(beat)} of {len(real)} real pairs exceed "
                f"theirs beyond the confidence intervals{tail}.")
    if not beat:
        return (f"No real model beats the baselines on this board (by excess over the null; strongest baseline: "
                f"{_describe(strongest)}).")
    return (f"{len(beat)} of {len(real)} real pairs beat the strongest baseline ({_describe(strongest)}) by excess "
            f"over the null, beyond the confidence intervals{tail}.")


__all__ = [
    "board_sentence", "calibrated_interval", "exceeds_null", "is_baseline", "is_baseline_record", "strongest_baseline",
    "verdict", "verdicts",
]
