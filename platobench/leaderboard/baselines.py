"""Baseline verdicts: does a real pair beat the negative controls it is matched with?

A *baseline record* has a model of the `baseline` family (platobench/encoders/baselines.py) on either side.
Scores are compared by their *excess over the null*, never raw: c = (score - null mean) / (perfect - null
mean), the calibrated score (platobench/metrics/stats.py). A record *exceeds its null* when its calibrated
interval lies above 0 and its permutation p-value is at most `ALPHA`.

**Paired verdicts** (records that state their subset scores and null draws, `ci.draws` / `null.draws`).
A real record r = (x, y) is matched with the baseline records of its board that keep one of its sides:
(x, b) and (b, y) for every baseline model b (same setting, same samples, the other side a control). For
each matched control the difference of excesses c_r - c_b is tested on the same subsets and permutation
draws (platobench/leaderboard/paired.py): Student's t on the subset-wise differences.
- p_beats = the largest one-sided p-value of c_r > c_b over the controls (r must beat every one of them:
  an intersection-union test, level ALPHA without adjustment; Berger 1982);
- p_below = K times the smallest one-sided p-value of c_r < c_b (below at least one of K controls;
  Bonferroni);
- the record's p-value is 2 min(p_beats, p_below), and the p-values of the board's real records are
  adjusted together by Holm's step-down rule (platobench/metrics/resampling.py), so that the chance of
  any wrong verdict on a board is at most ALPHA.
Verdicts: "beats baselines" (adjusted p <= ALPHA in the beats direction, and r exceeds its own null),
"below baseline" (adjusted p <= ALPHA in the below direction), else "no evidence of a difference": the
data do not tell r from its controls, which is not evidence that they are equal. A real record without
a matched control gets "no matched baseline".

**Unpaired records** (written before the draws were stated) are judged as before, by interval overlap
against the board's *strongest baseline* (the baseline record that exceeds its null with the best
calibrated score): "beats baselines" when its calibrated interval lies above the strongest baseline's
(above 0 when no baseline exceeds its null), "below baseline" below it, "within baseline CI" when they
overlap (a weak test: overlap is not equality); without a null or a CI the raw scores are compared and
the verdict says "(no CI)". When no baseline exceeds its null the bar is the record's own null, and the
verdicts say so: "not above its null" (the calibrated interval holds 0) or "below its null".

Baseline records get "strongest baseline", "baseline" or "baseline (at null)" (it does not exceed its
own null); a real record without a finite score gets "no score". A board without any baseline record gets
no verdicts at all.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from platobench.leaderboard.consistency import best_value
from platobench.leaderboard.kinds import record_kind
from platobench.leaderboard.paired import calibrated_difference
from platobench.metrics.resampling import holm
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
NO_DIFFERENCE = "no evidence of a difference"
NO_MATCH = "no matched baseline"
NOT_ABOVE_NULL = "not above its null"  # no baseline exceeds its null either: the record's own null is the bar
BELOW_NULL = "below its null"
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
    perfect = 1.0 if record_kind(record.kind).calibration == "chance" else best_value(record)
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
            return BELOW if strongest is not None else BELOW_NULL
        return WITHIN if strongest is not None else NOT_ABOVE_NULL
    if strongest is None:
        return WITHIN + NO_CI  # no calibrated interval to compare with the null
    higher = record.metric.higher_is_better
    if record.score == strongest.score:
        return TIES_NO_CI
    better = record.score > strongest.score if higher else record.score < strongest.score
    return (BEATS if better else BELOW) + NO_CI


@dataclass(frozen=True)
class PairedVerdict:
    """The paired verdict of one real record (module docstring): `p` its p-value before and `p_holm`
    after Holm's adjustment over the board, `controls` the pair ids of its matched baseline records and
    `binding` the one that decides it (the weakest win, or the strongest loss)."""

    verdict: str
    p: float
    p_holm: float
    controls: tuple[str, ...]
    binding: str


def matched_controls(record: ResultRecord, records: Iterable[ResultRecord]) -> list[ResultRecord]:
    """The baseline records of the board that keep one side of real `record` (its x with a baseline y,
    or a baseline x with its y), in pair-id order."""
    out = [r for r in records if r.pair_id != record.pair_id and _finite(r.score) and (
        (r.x.name == record.x.name and is_baseline(r.y.name) and not is_baseline(r.x.name))
        or (r.y.name == record.y.name and is_baseline(r.x.name) and not is_baseline(r.y.name)))]
    return sorted(out, key=lambda r: r.pair_id)


def paired_verdicts(records: Iterable[ResultRecord]) -> dict[str, PairedVerdict]:
    """pair_id -> PairedVerdict for every real record of ONE board that can be paired with all of its
    matched controls (each states its subset scores and null draws; module docstring). Holm's adjustment
    runs over these records."""
    records = list(records)
    tested: dict[str, tuple[float, bool, tuple[str, ...], str]] = {}
    for r in records:
        if is_baseline_record(r) or not _finite(r.score):
            continue
        controls = matched_controls(r, records)
        diffs = [calibrated_difference(r, c) for c in controls]
        if not controls or any(d is None for d in diffs):
            continue
        weakest = max(range(len(diffs)), key=lambda i: diffs[i].p_greater)
        strongest = min(range(len(diffs)), key=lambda i: diffs[i].p_less)
        p_beats = diffs[weakest].p_greater
        p_below = min(1.0, len(diffs) * diffs[strongest].p_less)
        beats = p_beats <= p_below
        binding = controls[weakest if beats else strongest].pair_id
        tested[r.pair_id] = (min(1.0, 2 * min(p_beats, p_below)), beats, tuple(c.pair_id for c in controls), binding)
    adjusted = dict(zip(tested, holm([t[0] for t in tested.values()])))
    by_id = {r.pair_id: r for r in records}
    out = {}
    for pair_id, (p, beats, controls, binding) in tested.items():
        significant = adjusted[pair_id] <= ALPHA
        if significant and beats and exceeds_null(by_id[pair_id]):
            verdict = BEATS
        elif significant and not beats:
            verdict = BELOW
        else:
            verdict = NO_DIFFERENCE
        out[pair_id] = PairedVerdict(verdict, p, adjusted[pair_id], controls, binding)
    return out


def _states_draws(r: ResultRecord) -> bool:
    return r.ci is not None and r.ci.draws is not None and r.null is not None and r.null.draws is not None


def verdicts(records: Iterable[ResultRecord]) -> dict[str, str]:
    """pair_id -> verdict for every record of ONE board (module docstring); {} when the board has no
    baseline with a finite score."""
    records = list(records)
    if not _has_baselines(records):
        return {}
    strongest = strongest_baseline(records)
    paired = paired_verdicts(records)
    out: dict[str, str] = {}
    for r in records:
        if strongest is not None and r.pair_id == strongest.pair_id:
            out[r.pair_id] = STRONGEST
        elif is_baseline_record(r):
            out[r.pair_id] = BASELINE + (AT_NULL if exceeds_null(r) is False else "")
        elif r.pair_id in paired:
            out[r.pair_id] = paired[r.pair_id].verdict
        elif _finite(r.score) and _states_draws(r) and not matched_controls(r, records):
            out[r.pair_id] = NO_MATCH
        else:
            out[r.pair_id] = verdict(r, strongest)
    return out


def _describe(r: ResultRecord) -> str:
    ci = f" [{r.ci.lo:.3f}, {r.ci.hi:.3f}]" if r.ci is not None else " (no CI)"
    return f"{r.x.name} x {r.y.name}, {r.score:.3f}{ci}"


def board_sentence(records: Iterable[ResultRecord]) -> str:
    """One sentence (or two) for the foot of a board's table: how many real pairs beat their matched
    baselines (paired verdicts), or the strongest baseline (records without subset scores)."""
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
    paired = paired_verdicts(records)
    if paired:
        return _paired_sentence(real, got, paired)
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


def _paired_sentence(real: list[ResultRecord], got: dict[str, str], paired: dict[str, PairedVerdict]) -> str:
    """The board sentence when real pairs have paired verdicts (the others are counted apart)."""
    counts = {v: sum(p.verdict == v for p in paired.values()) for v in (BEATS, BELOW, NO_DIFFERENCE)}
    sentence = (f"{counts[BEATS]} of {len(paired)} real pairs beat every matched baseline, {counts[BELOW]} are below "
                f"one and {counts[NO_DIFFERENCE]} show no evidence of a difference (paired tests of the excess over "
                f"the null on the same subsets and permutations, Holm-adjusted over the {len(paired)} pairs, "
                f"alpha = {ALPHA:g}).")
    rest = [r for r in real if r.pair_id not in paired]
    if rest:
        unmatched = sum(got[r.pair_id] == NO_MATCH for r in rest)
        unpaired = len(rest) - unmatched
        if unmatched:
            sentence += f" {unmatched} real pairs have no matched baseline."
        if unpaired:
            beat = sum(got[r.pair_id].startswith(BEATS) for r in rest if got[r.pair_id] != NO_MATCH)
            sentence += (f" {unpaired} records state no subset scores: judged by interval overlap with the strongest "
                         f"baseline, {beat} of them beat it.")
    return sentence


__all__ = [
    "NO_DIFFERENCE", "NO_MATCH", "PairedVerdict", "matched_controls", "paired_verdicts",
    "board_sentence", "calibrated_interval", "exceeds_null", "is_baseline", "is_baseline_record", "strongest_baseline",
    "verdict", "verdicts",
]
