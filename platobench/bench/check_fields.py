"""The fields of a result record that `platobench check` verifies: every field the leaderboard shows.

Values that are measured (score, last-layer score, chance, calibrated score, null mean/std/p-value, CI
bounds, level and rate exponent, grid cells, a held-out selection's in-sample and fold scores) are recomputed
and compared within a tolerance (`compare` -> `Diff`). The subset scores and null draws a record states are
not compared one by one: a single draw may move by more than any score's tolerance when a near tie re-selects
another layer pair inside it (cross-fitted re-selection is discontinuous) while everything the record
asserts stays put. What the draws assert is compared instead: the interval and null they give (the record's
own consistency ties those to its draws, platobench/leaderboard/consistency.py) and the verdict the paired
tests read from them (`platobench check` recomputes each record's verdict against its recomputed controls).
Everything else is stated, not measured, and must equal exactly what would be run (`mismatches` ->
`Mismatch`): the setting id and kind, the metric (id, resolved params, preprocessing, selection,
direction), each model's name, revision, size, kind, loader and disclosures (`trained_on`, `fitted_on_eval`), the dataset's name, revision, n and fingerprint,
the null's draws and seed, the interval's method and estimand, the layers left out of the grid and the held-out
halves' sizes, and the chosen layers (`chosen_layers`, which allows only a near tie).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from platobench.bench.settings import Setting
from platobench.results import ResultRecord

SCORE_FIELDS = ("score", "last_layer_score", "chance")
STAT_FIELDS = ("calibrated", "null.mean", "ci.lo", "ci.hi")
# compared only where both sides have a null / an interval: an absent one already moves null.mean / ci.lo
STAT_DETAIL_FIELDS = ("null.std", "null.p_value", "ci.level", "ci.rate")
EXACT_FIELDS = (
    "setting", "kind", "metric.id", "metric.params", "metric.preprocess", "metric.selection",
    "metric.higher_is_better", "x.name", "x.revision", "x.params_m", "x.kind", "x.modality", "x.input",
    "x.loader", "x.trained_on", "x.fitted_on_eval", "y.name", "y.revision", "y.params_m", "y.kind", "y.modality",
    "y.input", "y.loader", "y.trained_on", "y.fitted_on_eval", "dataset.name", "dataset.revision",
    "dataset.n", "dataset.fingerprint",
)
# compared where both sides have a null / an interval: how the interval was made and what it is for are
# stated by the record and must be what the metric declares (an edited estimand would change its reading)
EXACT_STAT_FIELDS = ("null.n_perm", "null.seed", "ci.method", "ci.estimand", "ci.scheme", "ci.subset_size")
STATED_SINCE_DRAWS = frozenset({"ci.scheme", "ci.subset_size"})  # absent from records written before the draws
# a held-out record's measured values besides its score (details.heldout_selection), compared as scores are
HELDOUT_FIELDS = ("in_sample", "full_grid_best.score")
# measured values of a paired record's details that a board reads (its flags), compared as scores are
DETAIL_FIELDS = ("copy_cka",)
# what a record states of its own grid and halves: which layers were left out, how the held-out halves split
# the samples (their sizes); each must be exactly what the recomputation left out and split
DETAIL_EXACT_FIELDS = ("details.excluded_layers.x", "details.excluded_layers.y", "details.heldout_selection.halves")
SETTING_IGNORED = frozenset({"description"})  # a setting's fields that are not part of the protocol


@dataclass
class Diff:
    """One compared value: recorded, recomputed and |difference| (None when one side is absent)."""

    field: str
    recorded: float | None
    recomputed: float | None
    delta: float | None
    reshaped: bool = False  # the layer grid changed shape: always a move

    def moved(self, tol: float) -> bool:
        if self.reshaped:
            return True
        if self.recorded is None and self.recomputed is None:
            return False
        if self.delta is None or math.isnan(self.delta):
            return True
        return self.delta > tol


@dataclass
class Mismatch:
    """A stated field that differs from what would be run (compared exactly; JSON values)."""

    field: str
    stated: Any
    expected: Any


def _get(record: ResultRecord, path: str) -> Any:
    obj: Any = record
    for part in path.split("."):
        obj = getattr(obj, part, None) if obj is not None else None
    return obj


def _number(record: ResultRecord, path: str) -> float | None:
    value = _get(record, path)
    return None if value is None else float(value)


def _diff(name: str, a: float | None, b: float | None) -> Diff:
    return Diff(name, a, b, None if a is None or b is None else abs(a - b))


def _both(old: ResultRecord, new: ResultRecord, path: str) -> bool:
    """Whether the parent object of `path` ("null" of "null.std") is present in both records."""
    parent = path.rpartition(".")[0]
    return _get(old, parent) is not None and _get(new, parent) is not None


def compare(old: ResultRecord, new: ResultRecord, *, statistics: bool = True, perturbed: bool = False) -> list[Diff]:
    """Differences between a recorded and a recomputed record: the scores and chance, (with `statistics`)
    the calibrated score, null mean/std/p-value and CI bounds/level, and the largest cell difference of
    the layer grid. A value absent on both sides is equal and left out. `perturbed` (features under
    `--perturb` noise): the shares of tied neighbour lists are not compared, since the noise breaks the exact
    ties (of duplicate rows) that every CPU keeps."""
    fields = [*SCORE_FIELDS]
    if statistics:
        fields += [*STAT_FIELDS, *(f for f in STAT_DETAIL_FIELDS if _both(old, new, f))]
    diffs = [_diff(f, _number(old, f), _number(new, f)) for f in fields]
    diffs = [d for d in diffs if d.recorded is not None or d.recomputed is not None]
    diffs += _heldout_diffs(old, new) + ([] if perturbed else _tie_diffs(old, new)) + _detail_diffs(old, new)
    if old.grid is not None or new.grid is not None:
        if old.grid is None or new.grid is None or [len(r) for r in old.grid] != [len(r) for r in new.grid]:
            shape = lambda g: None if g is None else f"{len(g)}x{len(g[0])}"
            diffs.append(Diff(f"grid shape {shape(old.grid)} -> {shape(new.grid)}", None, None, None, reshaped=True))
        else:
            # a cell is null where a layer was excluded as constant; null on one side only is a move
            cells = [(0.0 if a is None and b is None else math.inf if a is None or b is None else abs(a - b), i, j)
                     for i, (ra, rb) in enumerate(zip(old.grid, new.grid)) for j, (a, b) in enumerate(zip(ra, rb))]
            worst, i, j = max(cells, key=lambda c: (math.isnan(c[0]), c[0]))
            diffs.append(Diff(f"grid[{i}][{j}] (largest cell change)", old.grid[i][j], new.grid[i][j], worst))
    return diffs


def _heldout_diffs(old: ResultRecord, new: ResultRecord) -> list[Diff]:
    """The held-out selection's stated scores (`details.heldout_selection`: the halves' and the full grid's
    in-sample best, each fold's scores), where either record has them."""
    a, b = (r.details.get("heldout_selection") for r in (old, new))
    if a is None and b is None:
        return []
    paths = [*HELDOUT_FIELDS, *(f"folds.{i}.{k}" for i in range(2) for k in ("score", "in_sample"))]
    return [_diff(f"details.heldout_selection.{p}", _heldout_number(a, p), _heldout_number(b, p)) for p in paths]


def _detail_diffs(old: ResultRecord, new: ResultRecord) -> list[Diff]:
    """`DETAIL_FIELDS` where either record states them (a record that does not state what the other does
    has moved: its flag would be missing)."""
    out = [_diff(f"details.{f}", _heldout_number(old.details, f), _heldout_number(new.details, f)) for f in DETAIL_FIELDS]
    return [d for d in out if d.recorded is not None or d.recomputed is not None]


def _tie_diffs(old: ResultRecord, new: ResultRecord) -> list[Diff]:
    """The stated share of tied neighbour lists of every layer (`details.tie_share`, which flags a row), where
    either record states it; a missing one on either side is a move."""
    a, b = (r.details.get("tie_share") for r in (old, new))
    if a is None and b is None:
        return []
    out = []
    for side in ("x", "y"):
        va = a.get(side) if isinstance(a, dict) else None
        vb = b.get(side) if isinstance(b, dict) else None
        size = max(len(v) if isinstance(v, list) else 0 for v in (va, vb))
        out += [_diff(f"details.tie_share.{side}.{i}", _heldout_number(a, f"{side}.{i}"),
                      _heldout_number(b, f"{side}.{i}")) for i in range(size)]
    return [d for d in out if d.recorded is not None or d.recomputed is not None]


def _heldout_number(details: dict[str, Any] | None, path: str) -> float | None:
    obj: Any = details
    for part in path.split("."):
        if isinstance(obj, list):
            obj = obj[int(part)] if part.isdigit() and int(part) < len(obj) else None
        else:
            obj = obj.get(part) if isinstance(obj, dict) else None
    return None if obj is None or isinstance(obj, bool) or not isinstance(obj, (int, float)) else float(obj)


def _json_at(dump: dict[str, Any], path: str) -> Any:
    obj: Any = dump
    for part in path.split("."):
        obj = obj.get(part) if isinstance(obj, dict) else None
    return obj


def mismatches(old: ResultRecord, new: ResultRecord, *, statistics: bool = True) -> list[Mismatch]:
    """The stated fields of `old` that differ from `new`, the record of what would be run (exact; the
    null's n_perm and seed and the interval's method and estimand with `statistics`, where both records
    have a null / an interval)."""
    a, b = old.model_dump(mode="json"), new.model_dump(mode="json")
    fields = [*EXACT_FIELDS, *(f for f in DETAIL_EXACT_FIELDS if _json_at(a, f) is not None or _json_at(b, f) is not None)]
    if statistics:
        fields += [f for f in EXACT_STAT_FIELDS if _both(old, new, f)
                   and (f not in STATED_SINCE_DRAWS or _json_at(a, f) is not None)]
    return [Mismatch(f, _json_at(a, f), _json_at(b, f)) for f in fields if _json_at(a, f) != _json_at(b, f)]


def setting_mismatches(own: Setting, expected: Setting) -> list[Mismatch]:
    """Fields of a record's `setting_config` that differ from the setting that would be run."""
    a = own.model_dump(mode="json", exclude=set(SETTING_IGNORED))
    b = expected.model_dump(mode="json", exclude=set(SETTING_IGNORED))
    return [Mismatch(f"setting_config.{k}", a.get(k), b.get(k)) for k in sorted(a.keys() | b.keys())
            if a.get(k) != b.get(k)]


def chosen_layers(old: ResultRecord, new: ResultRecord, tol: float) -> tuple[Mismatch | None, str | None]:
    """(mismatch, note) of the chosen (x, y) layers. Different layers are a mismatch unless
    the recomputed grid's cell at the recorded layers is within `tol` of the recomputed score: a near tie
    that float rounding may decide either way (then a note)."""
    stated = None if old.layers is None else list(old.layers)
    expected = None if new.layers is None else list(new.layers)
    if stated == expected:
        return None, None
    if stated is not None and expected is not None and new.grid is not None:
        i, j = stated
        cell = new.grid[i][j] if 0 <= i < len(new.grid) and 0 <= j < len(new.grid[i]) else None
        if cell is not None and math.isfinite(cell) and abs(cell - new.score) <= tol:
            return None, (f"chosen layers {tuple(stated)} -> {tuple(expected)}: a near tie (the recorded layers "
                          f"score {cell:.6f}, within {tol:g} of the recomputed {new.score:.6f})")
    return Mismatch("layers", stated, expected), None


@dataclass
class Outcome:
    """The check of one record: status is "ok", "moved" (a value beyond the tolerance), "invalid" (a stated
    field is not what would be run: `mismatches`) or "skipped" (not recomputed; `reason` says why)."""

    setting: str
    x: str
    y: str
    status: str
    reason: str = ""
    diffs: list[Diff] = field(default_factory=list)
    mismatches: list[Mismatch] = field(default_factory=list)
    layers: tuple[Any, Any] | None = None  # (recorded, recomputed) chosen layers
    verdict: tuple[str, str] | None = None  # (recorded, recomputed) verdict against the matched controls
    flags: list[str] = field(default_factory=list)  # the recomputed record's board flags (leaderboard/flags.py)
    notes: list[str] = field(default_factory=list)

    @property
    def verdict_moved(self) -> bool:
        return self.verdict is not None and self.verdict[0] != self.verdict[1]

    def as_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["diffs"] = [dict(x.__dict__) for x in self.diffs]
        d["mismatches"] = [dict(x.__dict__) for x in self.mismatches]
        return d
