"""Leaderboard plots (matplotlib, Agg backend through `Figure` — no display, no pyplot state).

- `heatmap`: a record's layer x layer score grid (language layers on y, vision layers on x), chosen pair
  marked; every heatmap has the same size (HEATMAP_SIZE), so a board's heatmaps form a regular grid.
- `size_plot`: alignment against language-model size, one line per vision model — the PRH figure
  (Huh et al. 2024, Fig. 3: bigger/better language models align more with vision models) — with each
  record's CI as error bar and the chance level and permutation-null mean as reference lines; the y axis
  holds those and spans at least a tenth of the metric's range (`y_limits`), so noise never looks like a
  trend. Each language model is one plain x tick at its size (no log-scale "2×10¹" ticks). A baseline
  language model (zoo family `baseline/`) is one dotted horizontal line at its best score, labelled
  directly right of the points with labels kept apart, not a point; a line of a baseline vision model is dashed.
- `llm_vs_jepa`: LLMs (kind causal_lm) and text JEPAs (kind text_jepa) side by side, per vision model,
  each bar with its record's CI (the comparison of Balestriero & LeCun's JEPA follow-up to PRH).
Figures are saved with a tight bounding box, so a legend outside the axes is never clipped.
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
from matplotlib.ticker import MaxNLocator, NullLocator

from platobench.leaderboard.baselines import is_baseline
from platobench.leaderboard.boards import Board
from platobench.leaderboard.kinds import record_kind
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


def _save(fig: Figure, path: Path, *, tight: bool = True) -> None:
    """Write `fig` as PNG; `tight` crops to what is drawn, so a legend outside the axes stays in the file
    (off for heatmaps, which keep HEATMAP_SIZE exactly)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100, format="png", bbox_inches="tight" if tight else None)


HEATMAP_SIZE = (4.0, 3.2)  # inches at 100 dpi


def heatmap(record: ResultRecord, path: Path) -> None:
    """Plot `record.grid` ([L_language][L_vision]) with the chosen layers marked (record.grid must be set)."""
    grid = np.asarray(record.grid, dtype=float)
    fig = Figure(figsize=HEATMAP_SIZE, layout="constrained")  # one size for all: a regular grid on the page
    ax = fig.subplots()
    cmap = "viridis" if record.metric.higher_is_better else "viridis_r"
    im = ax.imshow(grid, origin="lower", aspect="auto", cmap=cmap, interpolation="nearest")
    fig.colorbar(im, ax=ax, label=_text(record.metric.id))
    chosen = ""
    if record.layers is not None:  # named in the title: a legend would hide cells
        ax.plot(record.layers[1], record.layers[0], marker="*", color="red", markersize=12, linestyle="none")
        chosen = f" — red star: {record.metric.selection} {record.score:.3f}"
    ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
    ax.set_xlabel(_text(f"{_short(record.y.name)} layer"))
    ax.set_ylabel(_text(f"{_short(record.x.name)} layer"))
    ax.set_title(_text(f"{record.setting} (n={record.dataset.n}){chosen}"), fontsize=8)
    _save(fig, path, tight=False)


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


DODGE_DECADES = 0.012  # horizontal offset between vision models at one size, in decades of the log x axis
TICK_MIN_PX = 22  # language models whose ticks would be closer than this (pixels) share one tick label
LABEL_GAP = 0.035  # least vertical distance between two baseline labels, as a fraction of the y range


def _size_label(millions: float) -> str:
    return f"{millions / 1000:g}B" if millions >= 1000 else f"{millions:g}M"


def _size_ticks(points: list[tuple[float, str]], merge_decades: float) -> tuple[list[float], list[str]]:
    """x ticks of the size plot: one per language model at its size, labelled "name (size)"; models whose
    sizes are within `merge_decades` of the previous tick share it, their names joined by " / "."""
    ticks: list[tuple[float, list[str]]] = []
    for x, name in sorted(set(points)):
        if ticks and np.log10(x) - np.log10(ticks[-1][0]) < merge_decades:
            ticks[-1][1].append(name)
        else:
            ticks.append((x, [name]))
    return [x for x, _ in ticks], [f"{' / '.join(names)} ({_size_label(x)})" for x, names in ticks]


def _spread(ys: list[float], gap: float) -> list[float]:
    """Label heights for lines at `ys` (ascending), moved up just enough to be `gap` apart."""
    out: list[float] = []
    for y in ys:
        out.append(max(y, out[-1] + gap) if out else y)
    return out


def _baselines(ax: Any, flat: list[ResultRecord], x_label: float) -> list[Any]:
    """One dotted line per baseline language model at its best score over the vision models, a band over
    its range of scores, and a direct label at `x_label` (right of every point), labels kept apart;
    returns the legend handles (one entry for all baselines)."""
    if not flat:
        return []
    higher = flat[0].metric.higher_is_better
    scores: dict[str, list[float]] = {}
    for r in flat:
        scores.setdefault(r.x.name, []).append(r.score)
    best = {name: (max(v) if higher else min(v)) for name, v in scores.items()}
    for name, values in scores.items():
        ax.axhline(best[name], color="dimgrey", linestyle=":", linewidth=1.2)
        if max(values) > min(values):
            ax.axhspan(min(values), max(values), color="tab:olive", alpha=0.08, linewidth=0)
    lo, hi = ax.get_ylim()
    order = sorted(best, key=lambda n: best[n])
    for name, y in zip(order, _spread([best[n] for n in order], LABEL_GAP * (hi - lo))):
        ax.annotate(_text(_short(name.split("/", 1)[-1], 28)), (x_label, y), fontsize=7, color="dimgrey",
                    style="italic", va="center", annotation_clip=False,
                    bbox={"facecolor": "white", "edgecolor": "none", "pad": 1})
    return [Line2D([], [], color="dimgrey", linestyle=":", label="baseline language model: its best score"),
            Patch(color="tab:olive", alpha=0.2, label="baseline: range over vision models")]


def has_size(record: ResultRecord) -> bool:
    """The record's language model has a parameter count a log axis can place (finite and > 0; records
    are validated so, this guards records built without validation)."""
    size = record.x.params_m
    return size is not None and bool(np.isfinite(size)) and size > 0


def size_figure(records: list[ResultRecord]) -> tuple[Figure | None, list[str]]:
    """Score against language-model parameters (log x, one plain tick per language model) with the
    record's CI as error bar, one colour per vision model (points of one size side by side) and one marker
    per language-model kind; only the LLMs (causal_lm) are joined by a line, as in the PRH figure. Each
    baseline language model is one dotted horizontal line at its best score over the vision models (size
    means nothing for it) with a band over its range, labelled directly at the right; the chance level and
    the permutation-null mean are drawn as reference lines and the y range holds them and every CI end
    (`y_limits`). Returns (the figure, or None when no point remains; names of language models left out
    because their record has no usable parameter count, `has_size`, or no finite score)."""
    flat = [r for r in records if is_baseline(r.x.name) and np.isfinite(r.score)]
    records_real = [r for r in records if not is_baseline(r.x.name)]
    left_out = sorted({r.x.name for r in records_real if not has_size(r) or not np.isfinite(r.score)})
    plotted = sorted(
        (r for r in records_real if has_size(r) and np.isfinite(r.score)),
        key=lambda r: (r.y.name, r.x.kind or "?", r.x.params_m, r.score, r.x.name),
    )
    if not plotted:
        return None, left_out
    fig = Figure(figsize=(10, 4.8), layout="constrained")
    ax = fig.subplots()
    colours = {v: f"C{i % 10}" for i, v in enumerate(sorted({r.y.name for r in plotted}))}
    for j, (vision, colour) in enumerate(colours.items()):
        dodge = 10 ** (DODGE_DECADES * (j - (len(colours) - 1) / 2))
        mine = [r for r in plotted if r.y.name == vision]
        llm = sorted((r.x.params_m * dodge, r.score) for r in mine if r.x.kind == "causal_lm")
        if llm:
            ax.plot([x for x, _ in llm], [y for _, y in llm], color=colour, alpha=0.6,
                    linestyle="--" if is_baseline(vision) else "-")
        for r in mine:
            marker, size = kind_marker(r.x.kind or "?")
            ax.errorbar(r.x.params_m * dodge, r.score, yerr=_error(r), marker=marker,
                        color=colour, markersize=size, capsize=3, elinewidth=1)
    handles = [Line2D([], [], color=c, label=_text(_short(v)), linestyle="--" if is_baseline(v) else "-")
               for v, c in colours.items()]
    handles += [Line2D([], [], color="grey", marker=kind_marker(k)[0], linestyle="none",
                       label=_text(_short(k))) for k in sorted({r.x.kind or "?" for r in plotted})]
    shown = plotted + flat
    handles += _references(ax, shown)
    ends = [e for r in shown if r.ci is not None for e in (r.ci.lo, r.ci.hi)]
    refs = [r.chance for r in shown if r.chance is not None] + [r.null.mean for r in shown if r.null is not None]
    first = records[0]
    ax.set_ylim(*y_limits([r.score for r in shown] + ends + refs, first.metric.id))
    ax.set_xscale("log")
    sizes = [r.x.params_m for r in plotted]
    room = 2.2 if flat else 1.0  # space right of the points for the baselines' labels
    ax.set_xlim(min(sizes) / 1.25, max(sizes) * 1.25 * room)
    handles += _baselines(ax, flat, max(sizes) * 1.3)
    lo, hi = ax.get_xlim()
    px_per_decade = 0.65 * fig.get_figwidth() * 100 / np.log10(hi / lo)  # the axes take about 65% of the width
    ticks, labels = _size_ticks([(r.x.params_m, _text(_short(r.x.name))) for r in plotted],
                                TICK_MIN_PX / px_per_decade)
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticks(ticks, labels, rotation=40, ha="right", rotation_mode="anchor", fontsize=7)
    fig.legend(handles=handles, loc="outside right upper", fontsize=7, title="vision model / language kind\n(bars: CI)",
               title_fontsize=7)
    ax.set_xlabel("language model parameters (log scale)")
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


def llm_vs_jepa_figure(records: list[ResultRecord]) -> Figure | None:
    """Two panels side by side — LLMs (causal_lm) and text JEPAs (text_jepa) — with one bar per language
    model and vision model and the record's CI as its error bar, on a shared y axis; None unless both
    kinds are present."""
    panels = {  # titles "LLMs (causal_lm)", "text JEPAs (text_jepa)"
        f"{KINDS[kind].family} ({kind})": [r for r in records if r.x.kind == kind and np.isfinite(r.score)]
        for kind in ("causal_lm", "text_jepa")
    }
    if not all(panels.values()):
        return None
    vision = sorted({r.y.name for rs in panels.values() for r in rs})
    widths = [len({r.x.name for r in rs}) for rs in panels.values()]
    fig = Figure(figsize=(3 + 1.1 * sum(widths), 4.5), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True, width_ratios=widths)
    bar = 0.8 / len(vision)
    for ax, (title, rs) in zip(axes, panels.items()):
        langs = sorted({r.x.name for r in rs}, key=lambda n: next(
            (r.x.params_m or 0.0) for r in rs if r.x.name == n))
        by_pair = {(r.x.name, r.y.name): r for r in rs}
        for j, v in enumerate(vision):
            mine = [(i, by_pair[(lang, v)]) for i, lang in enumerate(langs) if (lang, v) in by_pair]
            errors = np.hstack([_error(r) for _, r in mine])
            ax.bar([i + j * bar for i, _ in mine], [r.score for _, r in mine], width=bar, label=_text(v),
                   color=f"C{j % 10}", yerr=errors, capsize=2, error_kw={"elinewidth": 1})
        ax.set_xticks([i + bar * (len(vision) - 1) / 2 for i in range(len(langs))])
        ax.set_xticklabels([_text(n.split("/", 1)[-1]) for n in langs], rotation=30, ha="right", fontsize=7)
        ax.set_title(title, fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel(_text(records[0].metric.id))
    handles = [Patch(color=f"C{j % 10}", label=_text(_short(v))) for j, v in enumerate(vision)]
    fig.legend(handles=handles, loc="outside lower center", ncols=min(3, len(vision)), fontsize=7,
               title="vision model (bars: CI)", title_fontsize=7)
    fig.suptitle(_text(f"LLM vs text JEPA — {records[0].setting} (n={records[0].dataset.n})"), fontsize=9)
    return fig


def llm_vs_jepa(records: list[ResultRecord], path: Path) -> bool:
    """`llm_vs_jepa_figure` written to `path` as PNG; writes nothing and returns False unless both kinds
    are present."""
    fig = llm_vs_jepa_figure(records)
    if fig is not None:
        _save(fig, path)
    return fig is not None


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
    if not all(record_kind(r.kind).alignment_plots for r in records):  # captioning scores: neither plot applies
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
