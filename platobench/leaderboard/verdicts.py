"""The verdict of one pair against its matched controls: the one function every view of a record calls.

`judge(record, pool)` is what `run`'s board, `submit`, `evaluate().to_pandas()`, the leaderboard (Markdown,
CSV, HTML), the reports and `check` print; `verdicts(records, pool)` applies it to each record. A verdict is
a statement about one pair, so it reads nothing but the record and its own matched controls:

- **Matched controls** (`baselines.matched_controls`): the records of `pool` on the record's board (same
  setting, sample set and modality pair) that keep one of its sides and put a negative control on the other,
  (x, b) and (b, y) for every built-in baseline model b (zoo family `baseline/`, closed to user zoo files).
  Records of other real models never enter, so adding submissions to a board changes no verdict; a
  control that was not run is simply not among them (the verdict names the controls it used).
- **Paired rule** (every control states the same subset and permutation draws as the record,
  platobench/leaderboard/paired.py): for each control the difference of excesses over each record's own null,
  c_r - c_b, by Student's t on the subset-wise differences. p_beats is the largest one-sided p-value of
  c_r > c_b over the K controls (r must beat every one: an intersection-union test, level alpha without
  adjustment; Berger 1982); p_below is K times the smallest one-sided p-value of c_r < c_b (below at least one,
  Bonferroni). The pair's p-value is 2 min(p_beats, p_below) and its family is its own K controls: no
  adjustment across the board, whose membership is open. Each verdict is a level-alpha test of its pair;
  over a board of m real pairs the expected number of wrong verdicts is at most alpha m (a reader who tests
  a set of pairs chosen in advance as one family adjusts their `verdict_p` values, e.g. by Holm).
  "beats baselines" (p <= alpha in the beats direction, and the pair exceeds its own null), "below baseline"
  (p <= alpha in the below direction), else "no evidence of a difference": the data do not tell the pair
  from its controls, which is not evidence that they are equal.
- **Overlap rule** (a record or a control without draws: zero-shot records, records written before the
  draws were stated): the record's calibrated interval against that of the strongest of its own matched
  controls (the one exceeding its null with the best calibrated score): "beats baselines" above it, "below
  baseline" below it, "within baseline CI" when they overlap (a weak test: overlap is not equality).
  Without a calibrated interval the raw scores are compared and the verdict says "(no CI)". When none of its
  controls exceeds its null, the bar is the pair's own null: "not above its null" or "below its null".

Baseline records get "baseline" or "baseline (at null)" (it does not exceed its own null); a real record
without a finite score gets "no score", one without any matched control "no matched baseline". A record of a
kind that is not judged against baselines (a stitch record: its controls are its own map variants,
platobench/leaderboard/kinds.py) gets no verdict (empty text).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from platobench.leaderboard.baselines import (
    ALPHA,
    calibrated_interval,
    exceeds_null,
    is_baseline_record,
    matched_controls,
    strongest_baseline,
)
from platobench.leaderboard.kinds import record_kind
from platobench.leaderboard.paired import calibrated_difference
from platobench.results import ResultRecord

BEATS = "beats baselines"
WITHIN = "within baseline CI"
BELOW = "below baseline"
NO_CI = " (no CI)"
TIES_NO_CI = "ties baseline (no CI)"
BASELINE = "baseline"
AT_NULL = " (at null)"
NO_SCORE = "no score"
NO_DIFFERENCE = "no evidence of a difference"
NO_MATCH = "no matched baseline"
NOT_ABOVE_NULL = "not above its null"  # none of its controls exceeds its null: the record's own null is the bar
BELOW_NULL = "below its null"
PAIRED, OVERLAP = "paired", "overlap"  # the rule a verdict came from


@dataclass(frozen=True)
class Verdict:
    """The verdict of one record (module docstring). `text`: the verdict; `rule`: PAIRED, OVERLAP or "" (a
    baseline row, no score, no control); `p`: the pair's two-sided p-value against its controls (paired rule
    only); `controls`: the pair ids of its matched controls; `binding`: the control that decides it (the
    weakest win or the strongest loss under the paired rule, the strongest control under the overlap rule)."""

    text: str
    rule: str = ""
    p: float | None = None
    controls: tuple[str, ...] = ()
    binding: str | None = None


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def judge(record: ResultRecord, pool: Iterable[ResultRecord]) -> Verdict:
    """The verdict of `record` against its matched controls among `pool` (module docstring); `pool` may hold
    any records (other boards, the record itself): only the record's own controls are read."""
    if not record_kind(record.kind).verdicts:
        return Verdict("")
    if is_baseline_record(record):
        return Verdict(BASELINE + (AT_NULL if exceeds_null(record) is False else ""))
    if not _finite(record.score):
        return Verdict(NO_SCORE)
    controls = matched_controls(record, pool)
    if not controls:
        return Verdict(NO_MATCH)
    ids = tuple(c.pair_id for c in controls)
    diffs = [calibrated_difference(record, c) for c in controls]
    if any(d is None for d in diffs):
        return _overlap(record, controls, ids)
    weakest = max(range(len(diffs)), key=lambda i: diffs[i].p_greater)
    strongest = min(range(len(diffs)), key=lambda i: diffs[i].p_less)
    p_beats = diffs[weakest].p_greater
    p_below = min(1.0, len(diffs) * diffs[strongest].p_less)
    beats = p_beats <= p_below
    p = min(1.0, 2 * min(p_beats, p_below))
    if p <= ALPHA and beats and exceeds_null(record):
        text = BEATS
    elif p <= ALPHA and not beats:
        text = BELOW
    else:
        text = NO_DIFFERENCE
    return Verdict(text, PAIRED, p, ids, ids[weakest if beats else strongest])


def _overlap(record: ResultRecord, controls: list[ResultRecord], ids: tuple[str, ...]) -> Verdict:
    """The overlap rule (module docstring) against the strongest of `controls`, or the record's own null."""
    strongest = strongest_baseline(controls)
    binding = None if strongest is None else strongest.pair_id
    mine = calibrated_interval(record)
    bar = (0.0, 0.0) if strongest is None else calibrated_interval(strongest)
    if mine is not None and bar is not None:
        if mine[0] > bar[1] and (strongest is not None or exceeds_null(record)):
            text = BEATS
        elif mine[1] < bar[0]:
            text = BELOW if strongest is not None else BELOW_NULL
        else:
            text = WITHIN if strongest is not None else NOT_ABOVE_NULL
    elif strongest is None:
        text = WITHIN + NO_CI  # no calibrated interval to compare with the null
    elif record.score == strongest.score:
        text = TIES_NO_CI
    else:
        higher = record.metric.higher_is_better
        better = record.score > strongest.score if higher else record.score < strongest.score
        text = (BEATS if better else BELOW) + NO_CI
    return Verdict(text, OVERLAP, None, ids, binding)


def verdicts(records: Iterable[ResultRecord], pool: Iterable[ResultRecord] | None = None) -> dict[str, Verdict]:
    """pair_id -> `judge(record, pool)` for every record of `records` (`pool` defaults to `records`)."""
    records = list(records)
    pool = records if pool is None else list(pool)
    return {r.pair_id: judge(r, pool) for r in records}


def _describe(r: ResultRecord) -> str:
    ci = f" [{r.ci.lo:.3f}, {r.ci.hi:.3f}]" if r.ci is not None else " (no CI)"
    return f"{r.x.name} x {r.y.name}, {r.score:.3f}{ci}"


def board_sentence(records: Iterable[ResultRecord], pool: Iterable[ResultRecord] | None = None) -> str:
    """One sentence (or two) for the foot of a board's table: how the board's real pairs fare against their
    matched controls, counted by verdict and by the rule that gave it."""
    records = list(records)
    real = [r for r in records if not is_baseline_record(r) and record_kind(r.kind).verdicts]
    if not any(record_kind(r.kind).verdicts for r in records):
        return ""
    if not real:
        strongest = strongest_baseline(records)
        bar = _describe(strongest) if strongest is not None else "none: no baseline exceeds its own null"
        return f"Only baselines on this board (strongest: {bar})." if records else ""
    got = verdicts(real, records if pool is None else pool)
    if all(got[r.pair_id].text == NO_MATCH for r in real):
        return ("No real pair on this board has a matched baseline: add the baselines-text / baselines-vision zoo "
                "sets to the run to judge these scores.")
    paired = [v for v in got.values() if v.rule == PAIRED]
    parts = []
    if paired:
        counts = {t: sum(v.text == t for v in paired) for t in (BEATS, BELOW, NO_DIFFERENCE)}
        parts.append(f"{counts[BEATS]} of {len(paired)} real pairs beat every matched baseline, {counts[BELOW]} are "
                     f"below one and {counts[NO_DIFFERENCE]} show no evidence of a difference (paired tests of the "
                     f"excess over the null on the same subsets and permutations, each pair against its own matched "
                     f"controls at alpha = {ALPHA:g}, not adjusted across the board).")
    overlap = [v for v in got.values() if v.rule == OVERLAP]
    if overlap:
        beat = sum(v.text.startswith(BEATS) for v in overlap)
        no_ci = sum(v.text == BEATS + NO_CI for v in overlap)
        tail = f"; {no_ci} of them by score alone, without a CI" if no_ci else ""
        own = sum(v.binding is None for v in overlap)
        null = f" ({own} against their own null: none of their controls exceeds its null)" if own else ""
        parts.append(f"{beat} of {len(overlap)} real pairs judged by interval overlap with their strongest matched "
                     f"control beat it{null}{tail}.")
    unmatched = sum(v.text == NO_MATCH for v in got.values())
    if unmatched:
        parts.append(f"{unmatched} real pairs have no matched baseline.")
    return " ".join(parts)


__all__ = [
    "AT_NULL", "BASELINE", "BEATS", "BELOW", "BELOW_NULL", "NOT_ABOVE_NULL", "NO_CI", "NO_DIFFERENCE", "NO_MATCH",
    "NO_SCORE", "OVERLAP", "PAIRED", "TIES_NO_CI", "Verdict", "WITHIN", "board_sentence", "judge", "verdicts",
]
