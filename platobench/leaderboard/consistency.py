"""What a record's own numbers must agree on, before anything ranks it.

A record is a file anyone can edit. These rules need no features and no recomputation, only the record:
- the score is the grid cell at the chosen layers (cells are stored rounded to 8 decimals); for a held-out
  selection (platobench/metrics/heldout.py) the mean of its two folds' held-out scores, and its in-sample
  scores those its folds and grid state;
- the interval contains the score (lo <= score <= hi) and its level lies in (0, 1);
- the calibrated score follows from the score and the null: paired records (score - null mean) /
  (perfect - null mean), `perfect` the metric's best value (platobench.metrics.stats.calibrated_score);
  zero-shot records (score - chance) / (1 - chance); absent exactly when it cannot be computed;
- the null's p-value lies in [1 / (B + 1), 1] for B > 0 permutation draws, its std is >= 0;
- where a record states its draws (paired records since paired verdicts): the interval is the score
  +- t times the standard error of its subset scores `ci.draws`, clipped to the metric's range
  (platobench/metrics/resampling.py), and the null's mean, std, count and p-value are those of its
  `null.draws`; the paired verdicts read these draws, so they must say what the interval and null say;
  and the interval's scheme is the one this version draws for the metric and selection (`INTERVALS` of
  platobench/metrics/best_values.py; half-subsets in place of the jackknife under held-out selection and
  as the rate schemes' fallback): the same draws read by another scheme give another width, so the scheme
  is not the record's choice.

- each side's modality is its model's: the modality of the kind the side states
  (`zoo.support.MODALITY_OF_KIND`), and, for a model of the built-in zoo, that entry's modality; a record
  whose sides were relabelled (a vision x vision record edited into text x vision) would otherwise be ranked
  on another modality pair's board.

The leaderboard (and `submit`'s board) refuses a record that breaks one (`consistent_records` names it,
as conflicting duplicates are named); `platobench check` reports it as invalid. Recomputing (`platobench
check`) is still what shows that the numbers are right; this only shows that they are not contradictory.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from platobench.leaderboard.kinds import record_kind
from platobench.metrics.best_values import BEST_VALUES, INTERVALS, RANGES
from platobench.metrics.resampling import RATE_SCHEMES, subset_df, subset_se, t_quantile
from platobench.results.schema import ResultRecord

GRID_ROUNDING = 1e-8  # grid cells are stored rounded to 8 decimals: |cell - score| <= 5e-9 for the chosen cell
CALIBRATED_TOL = 1e-9  # calibrated scores are written from the same floats: only printing may round them
DRAWS_TOL = 1e-9  # intervals and null summaries are computed from the very draws the record states


def best_value(record: ResultRecord) -> float | None:
    """The metric's best possible value (platobench/metrics/best_values.py, no torch), None for a metric
    without one or not registered."""
    return BEST_VALUES.get(record.metric.id)


def _expected_calibrated(record: ResultRecord) -> float | None:
    """The calibrated score the record's score and null (or chance) imply; None where none is defined."""
    if record.null is None:
        return None
    if record_kind(record.kind).calibration == "chance":
        chance = record.chance
        return None if chance is None or chance == 1 else (record.score - chance) / (1 - chance)
    perfect = best_value(record)
    if perfect is None or perfect == record.null.mean:
        return None
    return (record.score - record.null.mean) / (perfect - record.null.mean)


def inconsistencies(record: ResultRecord) -> list[str]:
    """The rules of this module that `record` breaks, one short phrase each (empty when it keeps them all)."""
    problems = []
    if not math.isfinite(record.score):
        problems.append(f"score {record.score} is not a finite number")
        return problems
    if record.metric.selection == "heldout":  # platobench.metrics.selection.HELDOUT (which imports torch)
        problems += _heldout_problems(record)
    elif record.grid is not None and record.layers is not None:
        i, j = record.layers
        cell = record.grid[i][j]
        if cell is None or abs(cell - record.score) > GRID_ROUNDING:
            problems.append(f"score {record.score:.8g} is not the grid cell at the chosen layers {tuple(record.layers)} "
                            f"({cell})")
    if record.ci is not None:
        lo, hi, level = record.ci.lo, record.ci.hi, record.ci.level
        if not (lo <= record.score <= hi):
            problems.append(f"the interval [{lo:.6g}, {hi:.6g}] does not contain the score {record.score:.6g}")
        if not (0 < level < 1):
            problems.append(f"interval level {level} is not in (0, 1)")
    if record.null is not None:
        null = record.null
        floor = 1 / (null.n_perm + 1) if null.n_perm > 0 else 0.0
        if not (floor - 1e-12 <= null.p_value <= 1):
            problems.append(f"null p-value {null.p_value} is not in [{floor:.3g}, 1] for {null.n_perm} draws")
        if not null.std >= 0:
            problems.append(f"null std {null.std} is negative")
    problems += _draws_problems(record)
    problems += _modality_problems(record)
    if record_kind(record.kind).calibration != "none":
        expected = _expected_calibrated(record)
        stated = record.calibrated
        if (stated is None) != (expected is None) or (
                stated is not None and expected is not None and abs(stated - expected) > CALIBRATED_TOL):
            problems.append(f"calibrated score {stated} does not follow from the score and the null (expected {expected})")
    return problems


@functools.cache
def _builtin_modalities() -> dict[str, str]:
    """name -> modality of every model of the built-in zoo (read once)."""
    from platobench.zoo import load_zoo

    return {spec.name: spec.modality for spec in load_zoo(())}


def _modality_problems(record: ResultRecord) -> list[str]:
    """A side whose stated modality is not its kind's, or not its built-in zoo entry's."""
    from platobench.zoo.support import MODALITY_OF_KIND

    problems = []
    for name, side in (("x", record.x), ("y", record.y)):
        kind = MODALITY_OF_KIND.get(side.kind or "")
        if kind is not None and kind != side.modality:
            problems.append(f"side {name} ({side.name}) is stated {side.modality} but its kind {side.kind} is a {kind} model")
        builtin = _builtin_modalities().get(side.name)
        if builtin is not None and builtin != side.modality:
            problems.append(f"side {name} ({side.name}) is stated {side.modality} but that model of the built-in zoo "
                            f"is a {builtin} model")
    return problems


def _heldout_problems(record: ResultRecord) -> list[str]:
    """A held-out selection's record (platobench/metrics/heldout.py): its score is the mean of its two folds'
    held-out scores, its layers are those of the first fold, and the in-sample scores are the mean of the
    folds' (`in_sample`) and the full grid's cell at `full_grid_best.layers`."""
    details = record.details.get("heldout_selection")
    try:
        folds = details["folds"]
        scores = [float(f["score"]) for f in folds]
        inside = [float(f["in_sample"]) for f in folds]
        first = [int(v) for v in folds[0]["layers"]]
        in_sample = float(details["in_sample"])
        best = details["full_grid_best"]
        best_score, (bi, bj) = float(best["score"]), (int(v) for v in best["layers"])
    except (KeyError, TypeError, ValueError, IndexError):
        return ["a held-out selection record needs details.heldout_selection with two folds (layers, score, "
                "in_sample), in_sample and full_grid_best (score, layers)"]
    problems = []
    if len(folds) != 2 or abs(sum(scores) / 2 - record.score) > DRAWS_TOL:
        problems.append(f"score {record.score:.8g} is not the mean of its held-out folds' scores {scores}")
    if len(folds) == 2 and abs(sum(inside) / 2 - in_sample) > DRAWS_TOL:
        problems.append(f"in_sample {in_sample:.8g} is not the mean of its folds' in-sample scores {inside}")
    if record.layers is None or list(record.layers) != first:
        problems.append(f"layers {record.layers} are not the first fold's layers {first}")
    if record.grid is not None:
        cell = record.grid[bi][bj] if 0 <= bi < len(record.grid) and 0 <= bj < len(record.grid[bi]) else None
        if cell is None or abs(cell - best_score) > GRID_ROUNDING:
            problems.append(f"full_grid_best {best_score:.8g} is not the grid cell at its layers ({bi}, {bj}): {cell}")
    return problems


def _schemes(record: ResultRecord) -> tuple[str, ...] | None:
    """The interval schemes this version draws for the record's metric and selection (`stats.interval_scheme`):
    the metric's own, half-subsets in place of the jackknife under held-out selection, and half-subsets as
    the rate schemes' fallback when their quarter-subsets are too small. None for a metric this version does
    not know."""
    declared = INTERVALS.get(record.metric.id)
    if declared is None:
        return None
    if record.metric.selection == "heldout" and declared == "jackknife":
        return ("subsample",)
    return (declared, "subsample") if declared in RATE_SCHEMES else (declared,)


def _draws_problems(record: ResultRecord) -> list[str]:
    """Where the record states draws: whether its interval and null summary follow from them."""
    problems = []
    ci, null = record.ci, record.null
    if ci is not None and ci.draws is not None:
        allowed = _schemes(record)
        if allowed is not None and ci.scheme not in allowed:
            return [f"the interval states scheme {ci.scheme!r}; {record.metric.id} under selection "
                    f"{record.metric.selection!r} is resampled by {' or '.join(allowed)} (a scheme is not a "
                    f"record's choice: another one would give another width)"]
        try:
            se = subset_se(ci.draws, ci.scheme, record.dataset.n, ci.subset_size, ci.rate,
                           record.score if ci.scheme == "arcsine_rate" else None)
        except ValueError as exc:
            return [f"the interval's subset scores cannot give a standard error: {exc}"]
        half = t_quantile(ci.level, subset_df(ci.scheme, len(ci.draws))) * se if 0 < ci.level < 1 else math.nan
        lo, hi = record.score - half, record.score + half
        bounds = RANGES.get(record.metric.id)
        if bounds is not None:
            lo, hi = max(lo, bounds[0]), min(hi, bounds[1])
        if not (abs(lo - ci.lo) <= DRAWS_TOL and abs(hi - ci.hi) <= DRAWS_TOL):
            problems.append(f"the interval [{ci.lo:.6g}, {ci.hi:.6g}] is not the score +- t x the standard error of "
                            f"its {len(ci.draws)} subset scores ([{lo:.6g}, {hi:.6g}])")
    if null is not None and null.draws is not None:
        v = np.asarray(null.draws, dtype=np.float64)
        exceed = (v >= record.score) if record.metric.higher_is_better else (v <= record.score)
        p = (1 + int(exceed.sum())) / (v.size + 1)
        std = float(v.std(ddof=1)) if v.size > 1 else 0.0
        if v.size != null.n_perm or abs(float(v.mean()) - null.mean) > DRAWS_TOL or abs(std - null.std) > DRAWS_TOL \
                or abs(p - null.p_value) > DRAWS_TOL:
            problems.append(f"the null (mean {null.mean:.6g}, std {null.std:.6g}, p {null.p_value:.4g}, {null.n_perm} "
                            f"draws) is not that of its {v.size} stated draws (mean {float(v.mean()):.6g}, "
                            f"std {std:.6g}, p {p:.4g})")
    return problems


def consistent_records(records: list[ResultRecord]) -> tuple[list[ResultRecord], list[str]]:
    """(the records that keep every rule, one line per record that does not, naming it and the rules)."""
    kept, problems = [], []
    for record in records:
        broken = inconsistencies(record)
        if broken:
            problems.append(f"result record of setting {record.setting} for {record.pair_id} contradicts itself: "
                            f"{'; '.join(broken)} (not used)")
        else:
            kept.append(record)
    return kept, problems


__all__ = ["best_value", "consistent_records", "inconsistencies"]
