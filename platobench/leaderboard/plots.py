"""Leaderboard plots (matplotlib, Agg backend through `Figure` — no display, no pyplot state).

- `heatmap`: a record's layer x layer score grid (language layers on y, vision layers on x), chosen pair marked.
- `size_plot`: alignment against language-model size, one line per vision model — the PRH figure
  (Huh et al. 2024, Fig. 3: bigger/better language models align more with vision models) — with each
  record's CI as error bar and the chance level and permutation-null mean as reference lines; the y axis
  holds those and spans at least a tenth of the metric's range (`y_limits`), so noise never looks like a
  trend. A baseline language model (zoo family `baseline/`) is a dotted horizontal line, not a point; a
  line of a baseline vision model is dashed.
- `llm_vs_jepa`: LLMs (kind causal_lm) and text JEPAs (kind text_jepa) side by side, per vision model
  (the comparison of Balestriero & LeCun's JEPA follow-up to PRH).
Boards of stitch records (captioning scores, not alignment) get neither the size plot nor the LLM vs
JEPA plot. Every function writes one PNG and returns why something was left out, so nothing is dropped silently.
Text from records is drawn as written (`_text`: a `$` in a metric id or kind must not start matplotlib's
math mode, where it could fail to parse); file names are slugs of the ids, cut to a length every file
system takes.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from platobench.leaderboard.baselines import is_baseline
from platobench.leaderboard.boards import Board
from platobench.metrics import list_metrics
from platobench.metrics.zeroshot import METRIC_ID as ZEROSHOT_METRIC
from platobench.results import ResultRecord
from platobench.zoo.support import KINDS

MAX_SLUG_BYTES = 120


def _slug(text: str) -> str:
    """`text` as a file name: '/' becomes '--', other characters but letters, digits and `._+-` become '-'
    (model names contain no '--' or '__', so two pair ids never share a slug).
    A slug longer than MAX_SLUG_BYTES (UTF-8) is cut and ends in 16 hex digits of the text's SHA-256."""
    slug = "".join(c if c.isalnum() or c in "._+-" else "-" for c in text.replace("/", "--"))
    if len(slug.encode()) <= MAX_SLUG_BYTES:
        return slug
    head = slug.encode()[: MAX_SLUG_BYTES - 17].decode(errors="ignore")
    return f"{head}-{hashlib.sha256(text.encode(errors='replace')).hexdigest()[:16]}"


def _text(value: object) -> str:
    """Record text for a label: every `$` escaped, so matplotlib draws it instead of parsing math."""
    return str(value).replace("$", r"\$")


def _short(text: str, limit: int = 40) -> str:
    """`text` cut to `limit` characters (ending in "…") for a legend outside the axes, which a long
    model name would otherwise squeeze to nothing."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _save(fig: Figure, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100, format="png")


def heatmap(record: ResultRecord, path: Path) -> None:
    """Plot `record.grid` ([L_language][L_vision]) with the chosen layers marked (record.grid must be set)."""
    grid = np.asarray(record.grid, dtype=float)
    fig = Figure(figsize=(1.8 + 0.28 * grid.shape[1], 1.4 + 0.22 * grid.shape[0]), layout="constrained")
    ax = fig.subplots()
    cmap = "viridis" if record.metric.higher_is_better else "viridis_r"
    im = ax.imshow(grid, origin="lower", aspect="auto", cmap=cmap, interpolation="nearest")
    fig.colorbar(im, ax=ax, label=_text(record.metric.id))
    if record.layers is not None:
        ax.plot(record.layers[1], record.layers[0], marker="*", color="red", markersize=12, linestyle="none",
                label=_text(f"{record.metric.selection}: {record.score:.3f}"))
        ax.legend(loc="upper left", fontsize=7, framealpha=0.8)
    ax.set_xlabel(_text(f"{record.vision.name} layer"))
    ax.set_ylabel(_text(f"{record.language.name} layer"))
    ax.set_title(_text(f"{record.setting} (n={record.dataset.n})"), fontsize=9)
    _save(fig, path)


OTHER_MARKER = ("D", 6)  # a language kind with no declared marker (a kind this version does not know)


def kind_marker(kind: str) -> tuple[str, int]:
    """The size plot's (matplotlib marker, size in points) for a language-model kind, as declared in
    `platobench.zoo.support.KINDS`; OTHER_MARKER for any other kind."""
    declared = KINDS.get(kind)
    if declared is None or declared.marker is None:
        return OTHER_MARKER
    return declared.marker, declared.marker_size


MIN_SPAN = 0.1  # the y axis of a size plot spans at least this fraction of the metric's range


def metric_range(metric_id: str) -> tuple[float, float] | None:
    """The closed interval every score of `metric_id` lies in (platobench.metrics registry; top-1
    accuracy [0, 1] for zero-shot matching), or None for an unbounded or unknown metric."""
    ranges: dict[str, tuple[float, float] | None] = {m.id: m.range for m in list_metrics()}
    ranges[ZEROSHOT_METRIC] = (0.0, 1.0)
    return ranges.get(metric_id)


def y_limits(values: list[float], metric_id: str) -> tuple[float, float]:
    """The y range of a size plot that holds every finite value of `values` (scores, CI ends, chance,
    null means; at least one finite) and never zooms into noise: it spans at least MIN_SPAN of the
    metric's range (of the largest absolute value when the metric is unbounded), starts at the metric's
    lower bound (0) for kNN overlaps, stays inside the metric's range where the values allow, plus 5%."""
    finite_values = [v for v in values if np.isfinite(v)]
    vmin, vmax = min(finite_values), max(finite_values)
    bounds = metric_range(metric_id)
    lo, hi = (min(vmin, bounds[0]), vmax) if bounds is not None and "knn" in metric_id else (vmin, vmax)
    span = MIN_SPAN * (bounds[1] - bounds[0]) if bounds is not None else MIN_SPAN * (max(abs(lo), abs(hi)) or 1.0)
    if hi - lo < span:
        mid = (lo + hi) / 2
        lo, hi = mid - span / 2, mid + span / 2
        if bounds is not None:
            shift = max(bounds[0] - lo, 0.0) - max(hi - bounds[1], 0.0)
            lo, hi = min(lo + shift, vmin), max(hi + shift, vmax)
    pad = 0.05 * (hi - lo)
    return lo - pad, hi + pad


def _error(r: ResultRecord) -> list[list[float]]:
    """The record's CI as matplotlib's asymmetric yerr [[below], [above]] (0 without a CI)."""
    if r.ci is None or not (np.isfinite(r.ci.lo) and np.isfinite(r.ci.hi)):
        return [[0.0], [0.0]]
    return [[max(r.score - r.ci.lo, 0.0)], [max(r.ci.hi - r.score, 0.0)]]


def _references(ax: Any, records: list[ResultRecord]) -> list[Line2D]:
    """Draw the chance level(s) of `records` and the mean of their permutation-null means (with a band
    over the range of those means when they differ); returns the legend handles."""
    handles = []
    chances = sorted({r.chance for r in records if r.chance is not None and np.isfinite(r.chance)})
    for c in chances:
        ax.axhline(c, color="black", linestyle="-.", linewidth=1.0)
    if chances:
        handles.append(Line2D([], [], color="black", linestyle="-.", label="chance"))
    means = [r.null.mean for r in records if r.null is not None and np.isfinite(r.null.mean)]
    if means:
        ax.axhline(float(np.mean(means)), color="dimgrey", linestyle=(0, (6, 3)), linewidth=1.0)
        if max(means) > min(means):
            ax.axhspan(min(means), max(means), color="grey", alpha=0.12, linewidth=0)
        handles.append(Line2D([], [], color="dimgrey", linestyle=(0, (6, 3)),
                              label="permutation null mean (band: its range over pairs)"))
    return handles


def size_figure(records: list[ResultRecord]) -> tuple[Figure | None, list[str]]:
    """Score against language-model parameters (log x) with the record's CI as error bar, one colour per
    vision model and one marker per language-model kind; only the LLMs (causal_lm) are joined by a line,
    as in the PRH figure. Baseline language models are dotted horizontal lines at their score (size means
    nothing for them); the chance level and the permutation-null mean are drawn as reference lines and the
    y range holds them and every CI end (`y_limits`). Returns (the figure, or None when no point remains;
    names of language models left out because their record has no parameter count or no finite score)."""
    flat = [r for r in records if is_baseline(r.language.name) and np.isfinite(r.score)]
    records_real = [r for r in records if not is_baseline(r.language.name)]
    left_out = sorted({r.language.name for r in records_real if r.language.params_m is None or not np.isfinite(r.score)})
    plotted = sorted(
        (r for r in records_real if r.language.params_m is not None and np.isfinite(r.score)),
        key=lambda r: (r.vision.name, r.language.kind or "?", r.language.params_m, r.score, r.language.name),
    )
    if not plotted:
        return None, left_out
    fig = Figure(figsize=(9.5, 4.5), layout="constrained")
    ax = fig.subplots()
    colours = {v: f"C{i}" for i, v in enumerate(sorted({r.vision.name for r in plotted}))}
    for vision, colour in colours.items():
        mine = [r for r in plotted if r.vision.name == vision]
        llm = sorted((r.language.params_m, r.score) for r in mine if r.language.kind == "causal_lm")
        if llm:
            ax.plot([x for x, _ in llm], [y for _, y in llm], color=colour, alpha=0.6,
                    linestyle="--" if is_baseline(vision) else "-")
        for r in mine:
            kind = r.language.kind or "?"
            marker, size = kind_marker(kind)
            ax.errorbar(r.language.params_m, r.score, yerr=_error(r), marker=marker,
                        color=colour, markersize=size, capsize=3, elinewidth=1)
            ax.annotate(_text(r.language.name.split("/", 1)[-1]), (r.language.params_m, r.score), fontsize=6,
                        xytext=(3, 3), textcoords="offset points")
    for r in flat:
        colour = colours.get(r.vision.name, "grey")
        ax.axhline(r.score, color=colour, linestyle=":", linewidth=1.2)
        ax.annotate(_text(f"{r.language.name} (baseline)"), (0.01, r.score), xycoords=("axes fraction", "data"),
                    fontsize=6, color=colour, xytext=(0, 2), textcoords="offset points")
    handles = [Line2D([], [], color=c, label=_text(_short(v)), linestyle="--" if is_baseline(v) else "-")
               for v, c in colours.items()]
    if flat:
        handles.append(Line2D([], [], color="grey", linestyle=":", label="baseline language model"))
    handles += [Line2D([], [], color="grey", marker=kind_marker(k)[0], linestyle="none",
                       label=_text(_short(k))) for k in sorted({r.language.kind or "?" for r in plotted})]
    shown = plotted + flat
    handles += _references(ax, shown)
    fig.legend(handles=handles, loc="outside right upper", fontsize=7, title="vision model / language kind\n(bars: CI)",
               title_fontsize=7)
    ends = [e for r in shown if r.ci is not None for e in (r.ci.lo, r.ci.hi)]
    refs = [r.chance for r in shown if r.chance is not None] + [r.null.mean for r in shown if r.null is not None]
    first = records[0]
    ax.set_ylim(*y_limits([r.score for r in shown] + ends + refs, first.metric.id))
    ax.set_xscale("log")
    ax.set_xlabel("language model parameters (millions, log scale)")
    ax.set_ylabel(_text(f"{first.metric.id} ({'higher' if first.metric.higher_is_better else 'lower'} is better)"))
    ax.set_title(_text(f"alignment vs language-model size — {first.setting} (n={first.dataset.n})"), fontsize=9)
    ax.grid(alpha=0.3)
    return fig, left_out


def size_plot(records: list[ResultRecord], path: Path) -> tuple[bool, list[str]]:
    """`size_figure` written to `path` as PNG. Returns (written, language models left out); writes
    nothing when no point remains."""
    fig, left_out = size_figure(records)
    if fig is not None:
        _save(fig, path)
    return fig is not None, left_out


def llm_vs_jepa(records: list[ResultRecord], path: Path) -> bool:
    """Two panels side by side — LLMs (causal_lm) and text JEPAs (text_jepa) — with one bar per language
    model and vision model, on a shared y axis. Writes nothing and returns False unless both kinds are present."""
    panels = {  # titles "LLMs (causal_lm)", "text JEPAs (text_jepa)"
        f"{KINDS[kind].family} ({kind})": [r for r in records if r.language.kind == kind and np.isfinite(r.score)]
        for kind in ("causal_lm", "text_jepa")
    }
    if not all(panels.values()):
        return False
    vision = sorted({r.vision.name for rs in panels.values() for r in rs})
    widths = [len({r.language.name for r in rs}) for rs in panels.values()]
    fig = Figure(figsize=(3 + 1.1 * sum(widths), 4.5), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True, width_ratios=widths)
    bar = 0.8 / len(vision)
    for ax, (title, rs) in zip(axes, panels.items()):
        langs = sorted({r.language.name for r in rs}, key=lambda n: next(
            (r.language.params_m or 0.0) for r in rs if r.language.name == n))
        scores = {(r.language.name, r.vision.name): r.score for r in rs}
        for j, v in enumerate(vision):
            xs = [i + j * bar for i, lang in enumerate(langs) if (lang, v) in scores]
            ys = [scores[(lang, v)] for lang in langs if (lang, v) in scores]
            ax.bar(xs, ys, width=bar, label=_text(v), color=f"C{j}")
        ax.set_xticks([i + bar * (len(vision) - 1) / 2 for i in range(len(langs))])
        ax.set_xticklabels([_text(n.split("/", 1)[-1]) for n in langs], rotation=30, ha="right", fontsize=7)
        ax.set_title(title, fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel(_text(records[0].metric.id))
    handles = [Patch(color=f"C{j}", label=_text(v)) for j, v in enumerate(vision)]
    fig.legend(handles=handles, loc="outside lower center", ncols=min(3, len(vision)), fontsize=7)
    fig.suptitle(_text(f"LLM vs text JEPA — {records[0].setting} (n={records[0].dataset.n})"), fontsize=9)
    _save(fig, path)
    return True


def plot_all(boards: list[Board], out_dir: Path) -> dict[str, Any]:
    """Every plot of the leaderboard under out_dir/plots. Returns {"files": paths relative to out_dir,
    "notes": what was not plotted and why, "boards": board key -> {"figures": its size and LLM vs JEPA
    plots, "heatmaps": its heatmaps best row first, "notes": its notes without the key}}."""
    files: list[str] = []
    notes: list[str] = []
    per_board: dict[str, dict[str, list[str]]] = {}
    for board in boards:
        mine: dict[str, list[str]] = {"figures": [], "heatmaps": [], "notes": []}
        per_board[board.key] = mine
        _plot_board(board, out_dir, mine)
        files += mine["heatmaps"] + mine["figures"]
        notes += [f"{board.key}: {n}" for n in mine["notes"]]
    return {"files": files, "notes": notes, "boards": per_board}


def _plot_board(board: Board, out_dir: Path, mine: dict[str, list[str]]) -> None:
    """The plots of one board, their paths and notes appended to `mine` (see `plot_all`)."""
    records = [row.record for row in board.rows]
    key = _slug(board.key)
    gridless = [r.pair_id for r in records if not r.grid]
    if gridless:
        mine["notes"].append(f"{len(gridless)} record(s) without a layer grid (no heatmap), e.g. {gridless[0]}")
    for r in records:
        if not r.grid:
            continue
        rel = f"plots/heatmaps/{key}/{_slug(r.pair_id)}.png"
        heatmap(r, out_dir / rel)
        mine["heatmaps"].append(rel)
    if any(r.kind == "stitch" for r in records):  # captioning scores: neither plot below applies
        mine["notes"].append("no size or LLM vs text-JEPA plot (a stitching board scores captions, not alignment)")
        return
    rel = f"plots/size_{key}.png"
    written, left_out = size_plot(records, out_dir / rel)
    if written:
        mine["figures"].append(rel)
    if left_out:
        mine["notes"].append(f"size plot leaves out {', '.join(left_out)} (no parameter count or no score)")
    rel = f"plots/llm_vs_jepa_{key}.png"
    if llm_vs_jepa(records, out_dir / rel):
        mine["figures"].append(rel)
    else:
        mine["notes"].append("no LLM vs text-JEPA plot (needs records of both a causal_lm and a text_jepa)")
