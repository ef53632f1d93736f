"""Negative controls: which records are baselines, which of them are a pair's matched controls, and whether
a record exceeds its own null. The verdict rule that reads them is platobench/leaderboard/verdicts.py.

A *baseline record* has a model of the `baseline` family (platobench/encoders/baselines.py; the family is
reserved to the built-in `loader: baseline` entries, so a user's zoo file cannot add one) on either side.
The *matched controls* of a real record (x, y) are the baseline records of its board (same setting, sample
set, n and modality pair) that keep one of its sides: (x, b) and (b, y) for every baseline model b. They are
fixed by the pair and the setting: no other real model's record is ever one of them.

Scores are compared by their *excess over the null*, never raw: c = (score - null mean) / (perfect - null
mean), the calibrated score (platobench/metrics/stats.py). A record *exceeds its null* when its calibrated
interval lies above 0 and its permutation p-value is at most `ALPHA`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from platobench.leaderboard.consistency import best_value
from platobench.leaderboard.kinds import record_kind
from platobench.results import ResultRecord

BASELINE_FAMILY = "baseline"
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


def board_of(record: ResultRecord) -> tuple[str, str, int, tuple[str, str]]:
    """What a board shares: setting, dataset fingerprint, n and modality pair."""
    return record.setting, record.dataset.fingerprint, record.dataset.n, record.modalities


def matched_controls(record: ResultRecord, pool: Iterable[ResultRecord]) -> list[ResultRecord]:
    """The matched controls of real `record` among `pool` (module docstring): the baseline records with a
    finite score on its board that keep one of its sides (its x with a baseline y, or a baseline x with its
    y), in pair-id order."""
    board = board_of(record)
    out = [r for r in pool if r.pair_id != record.pair_id and _finite(r.score) and board_of(r) == board and (
        (r.x.name == record.x.name and is_baseline(r.y.name) and not is_baseline(r.x.name))
        or (r.y.name == record.y.name and is_baseline(r.x.name) and not is_baseline(r.y.name)))]
    return sorted(out, key=lambda r: r.pair_id)


__all__ = ["ALPHA", "BASELINE_FAMILY", "board_of", "calibrated_interval", "exceeds_null", "is_baseline",
           "is_baseline_record", "matched_controls", "strongest_baseline"]


