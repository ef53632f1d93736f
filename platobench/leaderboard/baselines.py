"""Baseline verdicts: does a real pair beat the negative controls of its board?

A *baseline record* has a model of the `baseline` family (platobench/encoders/baselines.py) on either side.
Over the records of one board (one setting on one sample set), the *strongest baseline* is the baseline
record with the best finite score (the metric's direction; ties go to the first pair id). Each real record
with a finite score then gets one verdict:

- "beats baselines": its CI lies entirely on the better side of the strongest baseline's CI
  (higher is better: lo > baseline hi; lower is better: hi < baseline lo);
- "below baseline": its CI lies entirely on the worse side;
- "within baseline CI": the two intervals overlap;
- without a CI on either record the scores are compared instead, and the verdict says "(no CI)":
  "beats baselines (no CI)", "below baseline (no CI)" or "ties baseline (no CI)".

Baseline records get "strongest baseline" or "baseline"; a real record without a finite score gets
"no score". A board without any baseline record gets no verdicts at all.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from platobench.results import ResultRecord

BASELINE_FAMILY = "baseline"
BEATS = "beats baselines"
WITHIN = "within baseline CI"
BELOW = "below baseline"
NO_CI = " (no CI)"
TIES_NO_CI = "ties baseline (no CI)"
STRONGEST = "strongest baseline"
BASELINE = "baseline"
NO_SCORE = "no score"


def is_baseline(model_name: str) -> bool:
    """True for a model of the `baseline` zoo family ("baseline/caption-length")."""
    return model_name.split("/", 1)[0] == BASELINE_FAMILY


def is_baseline_record(record: ResultRecord) -> bool:
    """True when either side of the pair is a baseline."""
    return is_baseline(record.language.name) or is_baseline(record.vision.name)


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def strongest_baseline(records: Iterable[ResultRecord]) -> ResultRecord | None:
    """The baseline record with the best finite score of one board (None when there is none)."""
    candidates = sorted((r for r in records if is_baseline_record(r) and _finite(r.score)), key=lambda r: r.pair_id)
    if not candidates:
        return None
    higher = candidates[0].metric.higher_is_better
    return (max if higher else min)(candidates, key=lambda r: r.score)


def verdict(record: ResultRecord, strongest: ResultRecord) -> str:
    """The verdict of one real record against the strongest baseline of its board (rule in the module doc)."""
    if not _finite(record.score):
        return NO_SCORE
    higher = record.metric.higher_is_better
    a, b = record.ci, strongest.ci
    if a is None or b is None:
        if record.score == strongest.score:
            return TIES_NO_CI
        better = record.score > strongest.score if higher else record.score < strongest.score
        return (BEATS if better else BELOW) + NO_CI
    if (a.lo > b.hi) if higher else (a.hi < b.lo):
        return BEATS
    if (a.hi < b.lo) if higher else (a.lo > b.hi):
        return BELOW
    return WITHIN


def verdicts(records: Iterable[ResultRecord]) -> dict[str, str]:
    """pair_id -> verdict for every record of ONE board; {} when the board has no finite baseline score."""
    records = list(records)
    strongest = strongest_baseline(records)
    if strongest is None:
        return {}
    out: dict[str, str] = {}
    for r in records:
        if r.pair_id == strongest.pair_id:
            out[r.pair_id] = STRONGEST
        elif is_baseline_record(r):
            out[r.pair_id] = BASELINE
        else:
            out[r.pair_id] = verdict(r, strongest)
    return out


def _describe(r: ResultRecord) -> str:
    ci = f" [{r.ci.lo:.3f}, {r.ci.hi:.3f}]" if r.ci is not None else " (no CI)"
    return f"{r.language.name} x {r.vision.name}, {r.score:.3f}{ci}"


def board_sentence(records: Iterable[ResultRecord]) -> str:
    """One sentence for the foot of a board's table: how many real pairs beat the strongest baseline."""
    records = list(records)
    strongest = strongest_baseline(records)
    if strongest is None:
        return ("No baseline on this board: add the baselines-text / baselines-vision zoo sets to the run "
                "to judge these scores.")
    real = [r for r in records if not is_baseline_record(r)]
    if not real:
        return f"Only baselines on this board (strongest: {_describe(strongest)})."
    got = verdicts(records)
    beat = [r for r in real if got[r.pair_id].startswith(BEATS)]
    if not beat:
        return f"No real model beats the baselines on this board (strongest baseline: {_describe(strongest)})."
    no_ci = sum(got[r.pair_id] == BEATS + NO_CI for r in beat)
    tail = f"; {no_ci} of them compared by score alone, without a CI" if no_ci else ""
    return (f"{len(beat)} of {len(real)} real pairs beat the strongest baseline ({_describe(strongest)}) "
            f"beyond its confidence interval{tail}.")


__all__ = ["board_sentence", "is_baseline", "is_baseline_record", "strongest_baseline", "verdict", "verdicts"]
