"""The leaderboard's static index.html: one self-contained file (inline CSS and vanilla JS, no external
asset) that opens offline from the file system. The CSS and the script are package data
(platobench/leaderboard/static/), inlined into the page as written.

The ranked tables are rendered by the page's script from the records embedded as JSON; clicking a column
header sorts that table only (best first on the first click: descending for a higher-is-better column,
ascending for a lower-is-better one or a text column; again: reverse), and a select filters rows by model
family (of the language or the vision model; every family of every record is listed). The state lives in
the URL fragment, one sort per table keyed by the table's id — `#family=demo&board-0=score.desc` — so a
view can be linked. Missing values sort last in either direction. The per-language means, the
pair x setting overview, the stitching table of a board of stitch records and the values reported by
papers are static tables (the overview and the stitching table follow the filter). A contents list links
each board's section (id `Board.anchor`, boards in the order of platobench/leaderboard/order.py; the
script scrolls to a section without touching the fragment's state); each board's figures and its heatmaps,
in a regular grid best pair first, sit in its own section.
Baseline rows (zoo family `baseline/`) are shaded and their baseline model carries a "baseline" tag; the
verdict column and the sentence under each table compare real pairs with their matched baselines.
"""

from __future__ import annotations

import html
import json
from importlib import resources
from typing import Any

from platobench.leaderboard.baselines import is_baseline
from platobench.leaderboard.boards import (
    OVERVIEW_ANCHOR,
    PAPERS_ANCHOR,
    Board,
    Ranked,
    family,
    finite,
    fmt,
    fmt_params,
    fmt_top5,
    overview,
    x_summary,
)
from platobench.leaderboard.flags import flags_note, record_flags
from platobench.leaderboard.kinds import record_kind
from platobench.leaderboard.notes import (
    MISSING,
    PARAMS_RULE,
    TIE_RULE,
    fmt_p,
    has_in_sample,
    in_sample_of,
    p_floor_sentence,
    top5_of,
    zeroshot_sentence,
)
from platobench.leaderboard.order import DEFAULT_MODALITIES, modality_label
from platobench.leaderboard.stitch_table import SAMPLE_HEADER, STITCH_HEADER, StitchSection, stitch_section
from platobench.results import ResultRecord

COLUMNS = [  # key, header, kind ("num" sorts numerically, "text" alphabetically)
    ("rank", "rank", "num"), ("x", "language model", "text"), ("y", "vision model", "text"),
    ("score", "score", "num"), ("in_sample", "in-sample best", "num"), ("top5", "top-5 (chance)", "num"), ("calibrated", "calibrated", "num"), ("ci", "CI", "num"), ("p", "p", "num"),
    ("null_mean", "null mean", "num"), ("chance", "chance", "num"), ("layers", "layers (L, V)", "text"),
    ("params_x", "params L", "num"), ("params_y", "params V", "num"),
    ("verdict", "verdict vs baselines", "text"), ("flags", "flags", "text"),
]


def board_headers(board: Board) -> dict[str, str]:
    """The headers of COLUMNS that a board of another modality pair than text x vision names otherwise."""
    if board.modalities == DEFAULT_MODALITIES:
        return {}
    head_x, head_y = board.headers
    return {"x": head_x, "y": head_y, "layers": "layers (x, y)", "params_x": "params x", "params_y": "params y"}
# Columns in the metric's units: their first click sorts best first (descending when higher is better).
METRIC_COLUMNS = ("score", "in_sample", "top5", "calibrated", "ci", "null_mean", "chance")


def first_directions(higher_is_better: bool) -> dict[str, str]:
    """Column key -> direction ("asc"/"desc") of a column's first click in a board of that metric direction:
    best first for the metric's columns, ascending for rank, p, parameter counts and text."""
    best = "desc" if higher_is_better else "asc"
    return {key: best if key in METRIC_COLUMNS else "asc" for key, _, _ in COLUMNS}


def static_text(name: str) -> str:
    """The text of a package data file under platobench/leaderboard/static/ ("leaderboard.css" or
    "leaderboard.js"), inlined into the page so that it opens offline."""
    return (resources.files("platobench.leaderboard") / "static" / name).read_text(encoding="utf-8")


def _num(value: float | None) -> float | None:
    return value if finite(value) else None


def _name_cell(name: str) -> str:
    """An escaped model name; a baseline gets a visible "baseline" tag."""
    tag = '<span class="tag">baseline</span>' if is_baseline(name) else ""
    return html.escape(name) + tag


def _row(row: Ranked, verdict: str = "") -> dict[str, Any]:
    """A ranked-table row: display cells (HTML-escaped text; the rank with its tie marker, "1="), sort keys
    (numbers or strings; None = missing, also for a non-finite number, which JSON cannot hold; the CI sorts
    by its end nearer the worst score), the families it belongs to, and whether it is a baseline row."""
    esc = html.escape
    r = row.record
    layers = f"{r.layers[0]}, {r.layers[1]}" if r.layers is not None else MISSING
    p = r.null.p_value if r.null is not None else None
    null_mean = r.null.mean if r.null is not None else None
    ci_end = None if r.ci is None else r.ci.lo if r.metric.higher_is_better else r.ci.hi
    top5 = top5_of(r)[0]
    flags = record_flags(r)
    cells = {
        "rank": row.label, "x": _name_cell(r.x.name),
        "y": _name_cell(r.y.name), "score": fmt(r.score), "in_sample": fmt(in_sample_of(r)), "top5": fmt_top5(r), "calibrated": fmt(r.calibrated),
        "ci": f"[{r.ci.lo:.3f}, {r.ci.hi:.3f}]" if r.ci is not None else MISSING, "p": fmt_p(r.null),
        "null_mean": fmt(null_mean), "chance": fmt(r.chance), "layers": layers,
        "params_x": fmt_params(r.x.params_m, r.x.name),
        "params_y": fmt_params(r.y.params_m, r.y.name), "verdict": esc(verdict), "flags": esc(", ".join(flags)),
    }
    sort = {
        "rank": row.rank, "x": r.x.name, "y": r.y.name, "score": _num(r.score), "in_sample": _num(in_sample_of(r)), "top5": _num(top5),
        "calibrated": _num(r.calibrated), "ci": _num(ci_end), "p": _num(p), "null_mean": _num(null_mean),
        "chance": _num(r.chance), "layers": layers if r.layers is not None else None, "params_x": _num(r.x.params_m),
        "params_y": _num(r.y.params_m), "verdict": verdict or None, "flags": ", ".join(flags) or None,
    }
    return {
        "x": esc(r.x.name), "y": esc(r.y.name), "cells": cells, "sort": sort,
        "families": sorted({family(r.x.name), family(r.y.name)}),
        "baseline": is_baseline(r.x.name) or is_baseline(r.y.name),
    }


def _static_table(header: list[str], rows: list[tuple[list[str], list[str] | None]], cls: str = "") -> str:
    """rows: (cells, families or None). Cells are escaped here; a families list makes the row filterable."""
    head = "".join(f'<th class="t">{html.escape(h)}</th>' for h in header)
    body = []
    for cells, fams in rows:
        attr = f' data-families="{html.escape(" ".join(fams))}"' if fams is not None else ""
        tds = "".join(
            f'<td class="{"missing" if c.startswith(MISSING) else ""}">{html.escape(c)}</td>' for c in cells
        )
        body.append(f"<tr{attr}>{tds}</tr>")
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def _stitch_parts(section: StitchSection | None) -> list[str]:
    """The "stitching" table of a board of stitch records (rows filterable by model family), the pairs'
    setup lines, sample captions and notes on unreadable records, all escaped; [] for any other board."""
    if section is None:
        return []
    esc = html.escape
    parts = ["<h3>stitching</h3>"]
    if section.rows:
        parts.append(_static_table(STITCH_HEADER, [(row, sorted({family(row[0]), family(row[1])}))
                                                   for row in section.rows]))
        parts.append("<ul>" + "".join(f"<li>{esc(s)}</li>" for s in section.setups) + "</ul>")
    parts += [f'<p class="note">not shown: {esc(p)}</p>' for p in section.problems]
    if section.samples:
        parts.append(f"<p>Sample captions of {esc(section.samples_of)}:</p>")
        parts.append(_static_table(SAMPLE_HEADER, [(row, None) for row in section.samples]))
    return parts


def _contents(boards: list[Board], overview_shown: bool) -> str:
    """The contents list: one link per board section (headline first), the overview and the papers' table."""
    items = [(b.anchor, b.title) for b in boards]
    items += [(OVERVIEW_ANCHOR, "Overview: every pair under every setting")] if overview_shown else []
    items += [(PAPERS_ANCHOR, "Reported by papers (not measured here)")]
    links = "".join(f'<li><a href="#{a}">{html.escape(t)}</a></li>' for a, t in items)
    return f'<nav id="contents"><h2>Contents</h2><ol>{links}</ol></nav>'


def _plot_parts(anchor: str, plots: dict[str, list[str]] | None) -> list[str]:
    """A board's figures, its heatmaps in a regular grid (best pair first, collapsed) and its notes, under
    a heading with id `anchor`-plots."""
    if not plots or not any(plots.values()):
        return []
    esc = html.escape
    parts = [f'<h3 id="{anchor}-plots">plots</h3>']
    parts += [f'<a href="{esc(f)}"><img class="figure" src="{esc(f)}" alt="{esc(f)}"></a>' for f in plots.get("figures", [])]
    heat = plots.get("heatmaps", [])
    if heat:
        cells = "".join(f'<a href="{esc(f)}"><img loading="lazy" src="{esc(f)}" alt="{esc(f)}"></a>' for f in heat)
        parts.append(f"<details><summary>layer x layer heatmaps ({len(heat)}, best pair first)</summary>"
                     f'<div class="heatmaps">{cells}</div></details>')
    parts += [f'<p class="note">not plotted: {esc(n)}</p>' for n in plots.get("notes", [])]
    return parts


def render(boards: list[Board], records: list[ResultRecord], paper: list[dict[str, Any]], plots: dict[str, Any]) -> str:
    """The whole page as a string."""
    data = {
        "columns": COLUMNS,
        "boards": [
            {"id": f"board-{i}", "first": first_directions(b.first.metric.higher_is_better), "headers": board_headers(b),
             "hide": [*([] if record_kind(b.first.kind).top5 else ["top5"]),
                      *([] if has_in_sample([row.record for row in b.rows]) else ["in_sample"]),
                      *([] if flags_note(b.records) else ["flags"])],
             "rows": [_row(row, got[row.record.pair_id].text) for row in b.rows]}
            for i, b in enumerate(boards) for got in [b.verdicts]
        ],
    }
    # JSON inside <script>: escaping '<' keeps "</script>" or "<!--" in a model name from ending the block.
    payload = json.dumps(data).replace("<", "\\u003c")
    families = sorted({f for r in records for f in (family(r.x.name), family(r.y.name))})
    options = "".join(f'<option value="{html.escape(f)}">{html.escape(f)}</option>' for f in families)
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">', "<title>platobench leaderboard</title>",
        f"<style>\n{static_text('leaderboard.css')}</style></head><body>", "<h1>platobench leaderboard</h1>",
        (f"<p>{len(records)} result records. Click a column header to sort that table (best first, click "
         "again to reverse); <code>missing</code> marks a value that was not measured (it sorts last). "
         "<em>null mean</em>: mean score of the permutation null, the selection of layers included: what a "
         "score is judged against; <em>chance</em>: the closed-form score of one fixed layer pair of unrelated "
         "representations, below the null mean of a best-of-grid score, so never its bar; "
         f"a p marked ≤ is at its permutation floor (see the note under its board). {html.escape(PARAMS_RULE)}</p>"),
        f'<label>model family: <select id="family"><option value="">all</option>{options}</select></label>',
        "<noscript><p>The ranked tables need JavaScript; README.md and leaderboard.csv hold the same data.</p></noscript>",
    ]
    settings, rows = overview(records)
    parts.append(_contents(boards, len(settings) > 1))
    per_board = plots.get("boards", {})
    for i, b in enumerate(boards):
        p_note = p_floor_sentence([row.record for row in b.rows])
        zs_note = zeroshot_sentence([row.record for row in b.rows])
        stitched = stitch_section(b)  # a stitch board's controls are its map variants, not baseline models
        parts += [f'<h2 id="{b.anchor}">{html.escape(b.title)}</h2>', f'<p id="board-{i}-count"></p>',
                  f'<table id="board-{i}"></table>', f'<p class="note">{html.escape(TIE_RULE)}</p>',
                  *([f'<p class="note">{html.escape(flags_note(b.records))}</p>'] if flags_note(b.records) else []),
                  *([f'<p class="note">{html.escape(p_note)}</p>'] if p_note else []),
                  *([f'<p class="note">{html.escape(zs_note)}</p>'] if zs_note else []),
                  f'<p class="verdict">{html.escape(stitched.sentence if stitched else b.sentence)}</p>',
                  *_stitch_parts(stitched)]
        vision = b.y_models
        if len(vision) > 1:
            per = (("language model", "vision models") if b.modalities == DEFAULT_MODALITIES
                   else ("x model", "y models"))
            parts.append(f"<p>Per {per[0]}, mean over the {len(vision)} {per[1]} of this board:</p>")
            parts.append(_static_table(["rank", b.headers[0], *vision, "mean"], [(
                [str(s["rank"]) if s["rank"] is not None else MISSING, s["x"],
                 *[fmt(s["scores"][v]) for v in vision],
                 fmt(s["mean"]) if s["mean"] is not None else f"{MISSING} ({s['present']}/{s['expected']})"],
                [family(s["x"])],
            ) for s in x_summary(b)]))
        parts += _plot_parts(b.anchor, per_board.get(b.key))
    if len(settings) > 1:
        parts.append(f'<h2 id="{OVERVIEW_ANCHOR}">Overview: every pair under every setting</h2>')
        mixed = any(r["modalities"] != DEFAULT_MODALITIES for r in rows)
        heads = ["x model", "y model", "modalities"] if mixed else ["language model", "vision model"]
        parts.append(_static_table([*heads, *settings], [(
            [r["x"], r["y"], *([modality_label(r["modalities"])] if mixed else []), *[fmt(r["scores"][s]) for s in settings]],
            sorted({family(r["x"]), family(r["y"])}),
        ) for r in rows]))
    parts += [
        f'<h2 id="{PAPERS_ANCHOR}">Reported by papers (not measured here)</h2>',
        ("<p>Copied from the papers cited below for comparison only: other code, data and model versions. "
         "These are <strong>not</strong> platobench measurements and never enter the ranked tables.</p>"),
        _static_table(["source", "language model", "vision model", "metric", "value", "note"], [(
            [p["source"], p["language"], p["vision"], p["metric"], f"{p['value']:.3f}", p.get("note", "")], None,
        ) for p in paper], cls="paper"),
        "<ul>" + "".join(f"<li>{html.escape(c)}</li>" for c in dict.fromkeys(p["citation"] for p in paper)) + "</ul>",
        f'<script type="application/json" id="pb-data">{payload}</script>',
        f"<script>\n{static_text('leaderboard.js')}</script>", "</body></html>",
    ]
    return "\n".join(parts) + "\n"
