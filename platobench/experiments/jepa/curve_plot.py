"""Plots of learning curves and of the scaling law (matplotlib `Figure`, Agg; no pyplot state)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matplotlib.figure import Figure

from platobench.experiments.jepa.curve_analysis import CurveSet


def curve_figure(cs: CurveSet, level: float | None = None, order: Sequence[str] = ()) -> Figure:
    """Score against examples seen (log x) of every recipe in `cs`: the mean over seeds as a line with a
    marker per checkpoint and the seeds' min-max as a band; each recipe's mean at initialisation as a
    dotted line of its colour; the controls (grey, dash-dot), the chance level and the ratio's level L.
    Recipes are drawn (and coloured) in `order`, then any others in their order in `cs`."""
    fig = Figure(figsize=(9.0, 4.4))
    ax = fig.add_subplot()
    for recipe in [*[r for r in order if r in cs.runs], *[r for r in cs.runs if r not in order]]:
        mean = cs.mean_curve(recipe)
        xs = [x for x, _ in mean]
        seeds = list(cs.runs[recipe].values())
        lows = [min(dict(c)[x] for c in seeds) for x in xs]
        highs = [max(dict(c)[x] for c in seeds) for x in xs]
        (line,) = ax.plot(xs, [y for _, y in mean], marker="o", markersize=3.5,
                          label=f"{recipe} ({len(seeds)} seed{'s' if len(seeds) > 1 else ''})")
        ax.fill_between(xs, lows, highs, color=line.get_color(), alpha=0.18, linewidth=0)
        if (initial := cs.initial_mean(recipe)) is not None:
            ax.axhline(initial, color=line.get_color(), linestyle=":", linewidth=1, label=f"{recipe} at init")
    for i, (name, score) in enumerate(sorted(cs.controls.items())):
        ax.axhline(score, color=str(0.35 + 0.15 * (i % 3)), linestyle="-.", linewidth=0.9,
                   label=f"control {name.split('/', 1)[-1]}")
    if cs.chance is not None:
        ax.axhline(cs.chance, color="0.5", linestyle=":", linewidth=1, label=f"chance {cs.chance:.3g}")
    if level is not None:
        ax.axhline(level, color="0.2", linestyle="--", linewidth=0.8, label=f"level {level:.3g}")
    ax.set_xscale("log")
    ax.set_xlabel("training examples seen (pairs for a JEPA, documents for ntp)")
    arrow = "higher is better" if cs.higher_is_better else "lower is better"
    ax.set_ylabel(f"{cs.metric} ({arrow})")
    ax.set_title(f"{cs.setting}: text model x {cs.vision}", fontsize=10)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    fig.tight_layout()
    return fig


def law_figure(points: Sequence[dict[str, Any]], predict: Any, metric_label: str) -> Figure:
    """Misalignment against examples seen (log x) per share of good views P: measured points (fit grid
    as circles, held-out runs as crosses) and the fitted law's curve for each P."""
    import numpy as np

    fig = Figure(figsize=(7.0, 4.4))
    ax = fig.add_subplot()
    shares = sorted({p["p_good"] for p in points})
    xs_all = [p["examples"] for p in points]
    grid = np.geomspace(min(xs_all), max(xs_all), 64)
    colours = {}
    for share in shares:
        (line,) = ax.plot(grid, predict(np.full_like(grid, share), grid), linewidth=1, label=f"law, P = {share:g}")
        colours[share] = line.get_color()
    for p in points:
        marker = "o" if p["role"] == "fit" else "x"
        ax.scatter([p["examples"]], [p["misalignment"]], color=colours[p["p_good"]], marker=marker, s=16)
    ax.set_xscale("log")
    ax.set_xlabel("training examples seen")
    ax.set_ylabel(metric_label)
    ax.set_title("trained scaling law: o fit runs, x held-out runs (predicted before training)", fontsize=10)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=7, loc="best", ncol=2)
    fig.tight_layout()
    return fig
