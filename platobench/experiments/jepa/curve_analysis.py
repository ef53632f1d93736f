"""Learning curves from records: alignment against examples seen, and the sample-efficiency ratio.

Balestriero & LeCun (2026) compare objectives by the number of training examples each needs to reach a
given alignment (good views: 21.6M examples where next-token prediction needs 900M, "42x"). Here:

- a curve is one run's (examples seen, score) points; curves are grouped by (setting, vision model) and
  by recipe, one per seed;
- the level L is stated: an absolute score, or "frac:F" (F of the way from the reference's mean score at
  its first checkpoint to the best mean score it reaches; default F = 0.75), or "final" (its mean score at
  its last checkpoint). For a lower-is-better metric "best" and "reach" are read downwards;
- the examples a curve needs to reach L: the first checkpoint at or past L, interpolated linearly in
  log(examples) with the checkpoint before it ("at or before the first checkpoint" when the first already
  reaches it; "not reached" when none does);
- the ratio of a recipe: examples it needs / examples the reference needs, on the mean curves over seeds
  (the headline), and per seed (seed s against the reference's seed s, same L) for the spread. When the
  recipe never reaches L, the ratio is only bounded below: > last checkpoint / reference's examples.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from scipy import stats

from platobench.api import ResultRecord, UserError

Curve = list[tuple[int, float]]  # (examples seen, score), ascending examples


@dataclass
class CurveSet:
    """Every run's curve under one (setting, vision model): recipe -> seed -> curve."""

    setting: str
    vision: str
    metric: str
    higher_is_better: bool
    chance: float | None
    runs: dict[str, dict[int, Curve]] = field(default_factory=dict)
    initial: dict[str, dict[int, float]] = field(default_factory=dict)  # recipe -> seed -> score at 0 examples
    controls: dict[str, float] = field(default_factory=dict)  # control model -> score

    def initial_mean(self, recipe: str) -> float | None:
        """Mean over seeds of `recipe`'s score at initialisation (None without a snapshot at 0 examples)."""
        values = list(self.initial.get(recipe, {}).values())
        return statistics.fmean(values) if values else None

    def mean_curve(self, recipe: str) -> Curve:
        """Mean over seeds at each example count every seed of `recipe` has."""
        seeds = list(self.runs[recipe].values())
        common = set.intersection(*({x for x, _ in c} for c in seeds))
        return [(x, statistics.fmean(dict(c)[x] for c in seeds)) for x in sorted(common)]


def curve_sets(records: Iterable[ResultRecord], tag: str) -> dict[tuple[str, str], CurveSet]:
    """Group records carrying `details[tag]` (recipe, seed, examples_seen) into curve sets; a snapshot at
    0 examples goes to `initial` (a log axis has no 0), a record whose `details[tag]` says
    `control: true` to `controls`."""
    out: dict[tuple[str, str], CurveSet] = {}
    for r in records:
        info = r.details.get(tag)
        if info is None:
            continue
        key = (r.setting, r.y.name)
        cs = out.setdefault(key, CurveSet(r.setting, r.y.name, r.metric.id, r.metric.higher_is_better, r.chance))
        if info.get("control"):
            cs.controls[r.x.name] = r.score
        elif info["examples_seen"] == 0:
            cs.initial.setdefault(info["recipe"], {})[info["seed"]] = r.score
        else:
            cs.runs.setdefault(info["recipe"], {}).setdefault(info["seed"], []).append((info["examples_seen"], r.score))
    for cs in out.values():
        for seeds in cs.runs.values():
            for seed, curve in seeds.items():
                seeds[seed] = sorted(curve)
    return out


def parse_level(text: str) -> str | float:
    """`--level`: "final", "frac:F" with F in (0, 1], or a number; UserError otherwise."""
    if text == "final":
        return text
    if text.startswith("frac:"):
        try:
            f = float(text[5:])
        except ValueError:
            f = float("nan")
        if 0 < f <= 1:
            return text
    else:
        try:
            return float(text)
        except ValueError:
            pass
    raise UserError(f"--level: expected final, frac:F with F in (0, 1], or a score, got {text!r}")


def resolve_level(level: str | float, reference: Curve, higher_is_better: bool) -> float:
    """The absolute level L that `level` names on the reference's mean curve."""
    if isinstance(level, float):
        return level
    if level == "final":
        return reference[-1][1]
    fraction = float(level.removeprefix("frac:"))
    first = reference[0][1]
    best = max(y for _, y in reference) if higher_is_better else min(y for _, y in reference)
    return first + fraction * (best - first)


def examples_to_reach(curve: Curve, level: float, higher_is_better: bool) -> float | None:
    """Examples `curve` needs to reach `level` (log-linear interpolation between the checkpoints around the
    first crossing); the first checkpoint's count if it already reaches it; None if no checkpoint does."""
    sign = 1.0 if higher_is_better else -1.0
    for i, (x, y) in enumerate(curve):
        if sign * (y - level) >= 0:
            if i == 0:
                return float(x)
            (x0, y0) = curve[i - 1]
            t = (level - y0) / (y - y0)
            return 10 ** (math.log10(x0) + t * (math.log10(x) - math.log10(x0)))
    return None


def _ratio(n_other: float | None, n_ref: float | None, last: int) -> dict[str, Any]:
    if n_ref is None:
        return {"ratio": None, "examples": n_other, "note": "the reference does not reach the level"}
    if n_other is None:
        return {"ratio": None, "lower_bound": last / n_ref, "examples": None, "note": "not reached"}
    return {"ratio": n_other / n_ref, "examples": n_other}


def t_interval(values: Sequence[float], level: float = 0.95) -> tuple[float, float] | None:
    """Student-t interval of the mean over seeds (None below two values)."""
    if len(values) < 2:
        return None
    mean, sem = statistics.fmean(values), statistics.stdev(values) / math.sqrt(len(values))
    half = float(stats.t.ppf(0.5 + level / 2, len(values) - 1)) * sem
    return mean - half, mean + half


def efficiency(cs: CurveSet, reference: str, level: str | float) -> dict[str, Any]:
    """Sample-efficiency table of one curve set against recipe `reference`: the level, the reference's
    examples to reach it, and per other recipe its examples, ratio (mean curves), per-seed ratios, and
    the score difference reference - recipe at the last common checkpoint (per seed, mean, 95% t-interval
    over seeds)."""
    if reference not in cs.runs:
        raise UserError(f"the reference recipe {reference!r} has no records under {cs.setting}")
    ref_mean = cs.mean_curve(reference)
    target = resolve_level(level, ref_mean, cs.higher_is_better)
    n_ref = examples_to_reach(ref_mean, target, cs.higher_is_better)
    out: dict[str, Any] = {
        "setting": cs.setting, "vision": cs.vision, "metric": cs.metric, "higher_is_better": cs.higher_is_better,
        "chance": cs.chance, "reference": reference, "level_rule": str(level), "level": target,
        "reference_examples": n_ref, "reference_initial": cs.initial_mean(reference), "controls": cs.controls,
        "recipes": {},
    }
    for recipe, seeds in cs.runs.items():
        if recipe == reference:
            continue
        mean = cs.mean_curve(recipe)
        row = _ratio(examples_to_reach(mean, target, cs.higher_is_better), n_ref, mean[-1][0])
        per_seed = {}
        for seed, curve in seeds.items():
            if seed in cs.runs[reference]:
                ref_n = examples_to_reach(cs.runs[reference][seed], target, cs.higher_is_better)
                per_seed[seed] = _ratio(examples_to_reach(curve, target, cs.higher_is_better), ref_n, curve[-1][0])
        row["per_seed"] = per_seed
        row["initial"] = cs.initial_mean(recipe)
        last = min(mean[-1][0], ref_mean[-1][0])
        diffs = [dict(cs.runs[reference][s])[last] - dict(c)[last] for s, c in seeds.items()
                 if s in cs.runs[reference] and last in dict(c) and last in dict(cs.runs[reference][s])]
        row["difference_at"] = last
        row["difference"] = {"per_seed": diffs, "mean": statistics.fmean(diffs) if diffs else None,
                             "ci95": t_interval(diffs)}
        out["recipes"][recipe] = row
    return out


def _ratio_text(row: dict[str, Any]) -> str:
    if row["ratio"] is not None:
        return f"{row['ratio']:.3g}x"
    if "lower_bound" in row:
        return f"not reached (> {row['lower_bound']:.3g}x)"
    return "n/a (the reference does not reach L)"


def format_efficiency(tables: Sequence[dict[str, Any]]) -> str:
    """Markdown: one row per (setting, vision, recipe) with the level, examples to reach it, the ratio
    (mean curves), per-seed ratios, and reference - recipe at the last checkpoint with its interval."""
    head = ["setting", "vision", "metric", "level", "reference needs", "recipe", "needs", "ratio",
            "per seed", "reference - recipe (last ckpt)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    notes = []
    for t in tables:
        if t["controls"]:
            shown = ", ".join(f"{name} {score:.4f}" for name, score in sorted(t["controls"].items(), key=lambda x: -x[1]))
            notes.append(f"- {t['setting']} x {t['vision']}: controls {shown}")
        if t["reference_initial"] is not None:
            inits = [f"{t['reference']} {t['reference_initial']:.4f}"] + [
                f"{name} {row['initial']:.4f}" for name, row in t["recipes"].items() if row.get("initial") is not None]
            notes.append(f"- {t['setting']} x {t['vision']}: at initialisation (0 examples) {', '.join(inits)}")
        arrow = "↑" if t["higher_is_better"] else "↓"
        ref_n = "not reached" if t["reference_examples"] is None else f"{t['reference_examples']:,.0f}"
        for recipe, row in t["recipes"].items():
            needs = "not reached" if row["examples"] is None else f"{row['examples']:,.0f}"
            seeds = ", ".join(f"s{s}: {_ratio_text(r)}" for s, r in row["per_seed"].items())
            d = row["difference"]
            diff = "missing" if d["mean"] is None else f"{d['mean']:+.4f}"
            if d["ci95"] is not None:
                diff += f" [{d['ci95'][0]:+.4f}, {d['ci95'][1]:+.4f}]"
            lines.append("| " + " | ".join([
                t["setting"], t["vision"], f"{t['metric']} {arrow}", f"{t['level']:.4f} ({t['level_rule']})",
                f"{ref_n} ({t['reference']})", recipe, needs, _ratio_text(row), seeds,
                f"{diff} at {row['difference_at']:,}",
            ]) + " |")
    return "\n".join(lines + ([""] + notes if notes else []))
