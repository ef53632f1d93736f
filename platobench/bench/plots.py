"""Leaderboard plots (matplotlib, Agg backend through `Figure` — no display, no pyplot state).

- `heatmap`: a record's layer x layer score grid (language layers on y, vision layers on x), chosen pair marked.
- `size_plot`: alignment against language-model size, one line per vision model — the PRH figure
  (Huh et al. 2024, Fig. 3: bigger/better language models align more with vision models). A baseline
  language model (zoo family `baseline/`) is a dotted horizontal line, not a point; a line of a baseline
  vision model is dashed.
- `llm_vs_jepa`: LLMs (kind causal_lm) and text JEPAs (kind text_jepa) side by side, per vision model
  (the comparison of Balestriero & LeCun's JEPA follow-up to PRH).
Every function writes one PNG and returns why something was left out, so nothing is dropped silently.
Text from records is drawn as written (`_text`: a `$` in a metric id or kind must not start matplotlib's
math mode, where it could fail to parse); file names are slugs of the ids, cut to a length every file
system takes.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from platobench.bench.baselines import is_baseline
from platobench.bench.results import ResultRecord

if TYPE_CHECKING:
    from platobench.bench.leaderboard import Board


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


KIND_MARKERS = {"causal_lm": "o", "text_jepa": "*", "text_encoder": "s", "clip_text": "^"}


def size_plot(records: list[ResultRecord], path: Path) -> tuple[bool, list[str]]:
    """Score against language-model parameters (log x), one colour per vision model and one marker per
    language-model kind; only the LLMs (causal_lm) are joined by a line, as in the PRH figure. Baseline
    language models are drawn as dotted horizontal lines at their score (size means nothing for them).
    Returns (written, names of language models left out because their record has no parameter count or no
    finite score); writes nothing when no point remains."""
    flat = [r for r in records if is_baseline(r.language.name) and np.isfinite(r.score)]
    records_real = [r for r in records if not is_baseline(r.language.name)]
    left_out = sorted({r.language.name for r in records_real if r.language.params_m is None or not np.isfinite(r.score)})
    points = sorted(
        (r.vision.name, r.language.kind or "?", r.language.params_m, r.score, r.language.name)
        for r in records_real if r.language.params_m is not None and np.isfinite(r.score)
    )
    if not points:
        return False, left_out
    fig = Figure(figsize=(7, 4.5), layout="constrained")
    ax = fig.subplots()
    colours = {v: f"C{i}" for i, v in enumerate(sorted({p[0] for p in points}))}
    for vision, colour in colours.items():
        mine = [p for p in points if p[0] == vision]
        llm = sorted((p[2], p[3]) for p in mine if p[1] == "causal_lm")
        if llm:
            ax.plot([x for x, _ in llm], [y for _, y in llm], color=colour, alpha=0.6,
                    linestyle="--" if is_baseline(vision) else "-")
        for _, kind, x, y, name in mine:
            ax.plot(x, y, marker=KIND_MARKERS.get(kind, "D"), color=colour, markersize=8 if kind == "text_jepa" else 6)
            ax.annotate(_text(name.split("/", 1)[-1]), (x, y), fontsize=6, xytext=(3, 3), textcoords="offset points")
    for r in flat:
        colour = colours.get(r.vision.name, "grey")
        ax.axhline(r.score, color=colour, linestyle=":", linewidth=1.2)
        ax.annotate(_text(f"{r.language.name} (baseline)"), (0.01, r.score), xycoords=("axes fraction", "data"),
                    fontsize=6, color=colour, xytext=(0, 2), textcoords="offset points")
    handles = [Line2D([], [], color=c, label=_text(v), linestyle="--" if is_baseline(v) else "-")
               for v, c in colours.items()]
    if flat:
        handles.append(Line2D([], [], color="grey", linestyle=":", label="baseline language model"))
    handles += [Line2D([], [], color="grey", marker=KIND_MARKERS.get(k, "D"), linestyle="none", label=_text(k))
                for k in sorted({p[1] for p in points})]
    ax.legend(handles=handles, fontsize=7, title="vision model / language kind", title_fontsize=7)
    ax.set_xscale("log")
    ax.set_xlabel("language model parameters (millions, log scale)")
    first = records[0]
    ax.set_ylabel(_text(f"{first.metric.id} ({'higher' if first.metric.higher_is_better else 'lower'} is better)"))
    ax.set_title(_text(f"alignment vs language-model size — {first.setting} (n={first.dataset.n})"), fontsize=9)
    ax.grid(alpha=0.3)
    _save(fig, path)
    return True, left_out


def llm_vs_jepa(records: list[ResultRecord], path: Path) -> bool:
    """Two panels side by side — LLMs (causal_lm) and text JEPAs (text_jepa) — with one bar per language
    model and vision model, on a shared y axis. Writes nothing and returns False unless both kinds are present."""
    panels = {
        "LLMs (causal_lm)": [r for r in records if r.language.kind == "causal_lm" and np.isfinite(r.score)],
        "text JEPAs (text_jepa)": [r for r in records if r.language.kind == "text_jepa" and np.isfinite(r.score)],
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
    "notes": what was not plotted and why}."""
    files: list[str] = []
    notes: list[str] = []
    for board in boards:
        records = [row.record for row in board.rows]
        key = _slug(board.key)
        gridless = [r.pair_id for r in records if not r.grid]
        if gridless:
            notes.append(f"{board.key}: {len(gridless)} record(s) without a layer grid (no heatmap), e.g. {gridless[0]}")
        for r in records:
            if not r.grid:
                continue
            rel = f"plots/heatmaps/{key}/{_slug(r.pair_id)}.png"
            heatmap(r, out_dir / rel)
            files.append(rel)
        rel = f"plots/size_{key}.png"
        written, left_out = size_plot(records, out_dir / rel)
        if written:
            files.append(rel)
        if left_out:
            notes.append(f"{board.key}: size plot leaves out {', '.join(left_out)} (no parameter count or no score)")
        rel = f"plots/llm_vs_jepa_{key}.png"
        if llm_vs_jepa(records, out_dir / rel):
            files.append(rel)
        else:
            notes.append(f"{board.key}: no LLM vs text-JEPA plot (needs records of both a causal_lm and a text_jepa)")
    return {"files": files, "notes": notes}
