"""The `scaling-n` report: scaling-n.json (setup and every point), scaling-n.md (one table per metric)
and scaling-n.png (score against N, log scale, one panel per metric)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from platobench.api import UserError, atomic_write_text, save_figure
from platobench.experiments.scaling.curve import Point

STYLE = {"real": {"color": "C0", "linestyle": "-"}, "synthetic": {"color": "C1", "linestyle": "--"}}


def _cell(p: Point | None) -> str:
    if p is None:
        return ""
    spread = f" [{p.lo:.4f}, {p.hi:.4f}]" if p.draws > 1 else " (1 draw)"
    return f"{p.mean:.4f}{spread}"


def markdown(setup: dict[str, Any], points: Sequence[Point]) -> str:
    lines = ["# Alignment against N", "",
             f"Real: {setup['real']}. Synthetic: {setup['synthetic']}.", "",
             f"Preprocess `{setup['preprocess']}`, score = mean over draws, brackets = "
             "2.5%–97.5% of the draws (real: random subsets of the pool, a spread that shrinks to 0 at the pool "
             "size; synthetic: fresh samples of one population). Synthetic rows are not model measurements. "
             "seconds: scoring time of the row's draws, real and synthetic together.", ""]
    for metric in dict.fromkeys(p.metric for p in points):
        rows = {}
        for p in points:
            if p.metric == metric:
                rows.setdefault(p.n, {})[p.source] = p
        table = [[f"{n:,}", _cell(r.get("real")), _cell(r.get("synthetic")),
                  "" if (c := next(iter(r.values())).chance) is None else f"{c:.4f}",
                  f"{sum(p.seconds for p in r.values()):.1f}"] for n, r in sorted(rows.items())]
        lines += [f"## {metric}", "", "| N | real | synthetic | chance | seconds |", "|---:|---|---|---:|---:|",
                  *("| " + " | ".join(row) + " |" for row in table), ""]
    return "\n".join(lines)


def figure(points: Sequence[Point]) -> Figure:
    metrics = list(dict.fromkeys(p.metric for p in points))
    fig = Figure(figsize=(5.2 * len(metrics), 3.8), layout="constrained")
    for ax, metric in zip(fig.subplots(1, len(metrics), squeeze=False)[0], metrics):
        for source, style in STYLE.items():
            ps = sorted((p for p in points if p.metric == metric and p.source == source), key=lambda p: p.n)
            if not ps:
                continue
            ns = [p.n for p in ps]
            ax.plot(ns, [p.mean for p in ps], marker="o", markersize=3, label=source, **style)
            ax.fill_between(ns, [p.lo for p in ps], [p.hi for p in ps], color=style["color"], alpha=0.2)
        chance = sorted({(p.n, p.chance) for p in points if p.metric == metric and p.chance is not None})
        if chance:
            ax.plot(*zip(*chance), color="grey", linestyle=":", label="chance")
        ax.set_xscale("log")
        ax.set_xlabel("N (samples)")
        ax.set_ylabel(metric)
        ax.legend(fontsize=8)
    return fig


def write_report(folder: Path, setup: dict[str, Any], points: Sequence[Point]) -> list[str]:
    """Write the three files under `folder`; returns their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    payload = {"setup": setup, "points": [p.as_dict() for p in points]}
    files = [atomic_write_text(folder / "scaling-n.json", json.dumps(payload, indent=1) + "\n"),
             atomic_write_text(folder / "scaling-n.md", markdown(setup, points) + "\n"),
             save_figure(figure(points), folder / "scaling-n.png")]
    return [str(f) for f in files]


def rebuild(results: Path, reports: Path, out: Path) -> list[str]:
    """`platobench reports`: the scaling-n report again under `out`/scaling-n from the committed
    `reports`/scaling-n/scaling-n.json (its setup and every measured point; scaling-n writes no records, so
    `results` is not read). UserError when that JSON is missing or malformed."""
    path = reports / "scaling-n" / "scaling-n.json"
    if not path.is_file():
        raise UserError(f"{path} is missing: run `platobench scaling-n --report {path.parent}` first")
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
        setup, points = payload["setup"], [Point(**p) for p in payload["points"]]
    except (ValueError, TypeError, KeyError) as exc:  # an edited file: say which, never a traceback
        raise UserError(f"{path} is not a scaling-n report's data (setup and points): {exc}") from None
    return write_report(out / "scaling-n", setup, points)
