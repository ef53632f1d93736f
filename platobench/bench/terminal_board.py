"""The board a run ends with: one plain-text table per setting, printed in the terminal.

Columns: language x vision, score, confidence interval, chance level, permutation-null mean, calibrated
score, p-value, chosen layers and the baseline verdict (platobench/bench/baselines.py). Rows are sorted
best first (by the metric's direction); baseline rows are tagged `[baseline]`. `board_rows` gives the
same numbers as plain dicts for `--json`. Text from records is printed on one line with control
characters (terminal escape sequences included) replaced by spaces.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from platobench.bench.baselines import board_sentence, is_baseline, verdicts
from platobench.bench.results import ResultRecord
from platobench.bench.safe_text import one_line

COLUMNS = ("pair", "score", "ci", "chance", "null", "calibrated", "p", "layers", "verdict")


def _num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _sorted(records: list[ResultRecord]) -> list[ResultRecord]:
    higher = records[0].metric.higher_is_better
    return sorted(records, key=lambda r: (-r.score if higher else r.score, r.pair_id))


def board_rows(records: Iterable[ResultRecord]) -> dict[str, list[dict[str, Any]]]:
    """setting -> rows (best first) with the printed numbers, unrounded."""
    by_setting: dict[str, list[ResultRecord]] = {}
    for r in records:
        by_setting.setdefault(r.setting, []).append(r)
    out: dict[str, list[dict[str, Any]]] = {}
    for setting, rs in sorted(by_setting.items()):
        verdict = verdicts(rs)
        out[setting] = [
            {
                "language": r.language.name,
                "vision": r.vision.name,
                "baseline": is_baseline(r.language.name) or is_baseline(r.vision.name),
                "score": r.score,
                "ci": None if r.ci is None else [r.ci.lo, r.ci.hi],
                "chance": r.chance,
                "null_mean": None if r.null is None else r.null.mean,
                "calibrated": r.calibrated,
                "p_value": None if r.null is None else r.null.p_value,
                "layers": None if r.layers is None else list(r.layers),
                "verdict": verdict.get(r.pair_id, ""),
            }
            for r in _sorted(rs)
        ]
    return out


def _table(header: tuple[str, ...], rows: list[list[str]]) -> list[str]:
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(header)]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in rows]
    return out


def render(records: Iterable[ResultRecord]) -> str:
    """Plain-text tables, one per setting, each followed by its baseline sentence."""
    records = list(records)
    by_setting: dict[str, list[ResultRecord]] = {}
    for r in records:
        by_setting.setdefault(r.setting, []).append(r)
    lines: list[str] = []
    for setting, rows in board_rows(records).items():
        first = by_setting[setting][0]
        better = "higher" if first.metric.higher_is_better else "lower"
        lines.append(one_line(
            f"== {setting}: {first.metric.id} on {first.dataset.name} (N={first.dataset.n}, "
            f"{first.metric.preprocess}, {first.metric.selection}; {better} is better)"
        ))
        body = []
        for row in rows:
            tag = " [baseline]" if row["baseline"] else ""
            ci = "-" if row["ci"] is None else f"[{row['ci'][0]:.3f}, {row['ci'][1]:.3f}]"
            layers = "-" if row["layers"] is None else f"{row['layers'][0]},{row['layers'][1]}"
            body.append([
                one_line(f"{row['language']} x {row['vision']}{tag}"), _num(row["score"], 4), ci, _num(row["chance"]),
                _num(row["null_mean"]), _num(row["calibrated"]), _num(row["p_value"], 4), layers, row["verdict"],
            ])
        lines += _table(COLUMNS, body)
        sentence = board_sentence(by_setting[setting])
        if sentence:
            lines.append(one_line(sentence))
        n_perm = {r.null.n_perm for r in by_setting[setting] if r.null is not None and r.null.n_perm > 0}
        if n_perm:
            floor = ", ".join(f"{1 / (b + 1):.4f}" for b in sorted(n_perm))
            lines.append(f"p-values are permutation p-values; their floor is 1/(B+1) = {floor}.")
        lines.append("")
    return "\n".join(lines)
