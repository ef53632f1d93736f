"""The leaderboard's README.md: a contents list linking each board's anchor (`Board.anchor`, boards in the
order of platobench/leaderboard/order.py), per-board ranked tables (with the stitching table under a board
of stitch records, platobench/leaderboard/stitch_table.py), per-language summaries and the board's plots
(its figures, then its heatmaps in a table of HEATMAP_COLUMNS), the pair x setting overview and the
separate table of values reported by papers.

Record text is untrusted (platobench/leaderboard/safe_text.py): every text taken from a record, a plot
note or a paper value is escaped (`md_text`), so it shows as written and adds no markup.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from platobench.leaderboard.baselines import is_baseline
from platobench.leaderboard.boards import (
    OVERVIEW_ANCHOR,
    PAPERS_ANCHOR,
    Board,
    fmt,
    fmt_ci,
    fmt_layers,
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
    zeroshot_sentence,
)
from platobench.leaderboard.order import DEFAULT_MODALITIES, modality_label
from platobench.leaderboard.safe_text import md_text
from platobench.leaderboard.stitch_table import SAMPLE_HEADER, STITCH_HEADER, StitchSection, stitch_section
from platobench.results import ResultRecord


def model_cell(name: str) -> str:
    """A model name as the Markdown tables show it (escaped): baselines tagged "(baseline)"."""
    return f"{md_text(name)} (baseline)" if is_baseline(name) else md_text(name)


def _md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table; every cell must already be Markdown (record text escaped with `md_text`)."""
    return [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
        *["| " + " | ".join(row) + " |" for row in rows],
    ]


def stitch_lines(section: StitchSection | None) -> list[str]:
    """The "stitching" table of a board of stitch records (every cell escaped), the pairs' setup lines,
    sample captions and notes on unreadable records; [] for any other board."""
    if section is None:
        return []
    lines = ["", "### stitching", ""]
    if section.rows:
        lines += _md_table(STITCH_HEADER, [[md_text(c) for c in row] for row in section.rows])
        lines += ["", *[f"- {md_text(s)}" for s in section.setups]]
    lines += [f"- not shown: {md_text(p)}" for p in section.problems]
    if section.samples:
        lines += ["", f"Sample captions of {md_text(section.samples_of)}:", ""]
        lines += _md_table(SAMPLE_HEADER, [[md_text(c) for c in row] for row in section.samples])
    return lines


HEATMAP_COLUMNS = 3


def anchor_tag(name: str) -> str:
    """An HTML anchor for a link `#name`, put at the end of its heading's line (`name` is made of
    letters, digits, "_" and "-" only)."""
    return f' <a id="{name}"></a>'


def contents(boards: list[Board], overview_shown: bool) -> list[str]:
    """The contents list: one link per board (headline first), the overview and the papers' table."""
    lines = ["## Contents", ""]
    lines += [f"- [{md_text(b.title)}](#{b.anchor})" for b in boards]
    if overview_shown:
        lines.append(f"- [Overview: every pair under every setting](#{OVERVIEW_ANCHOR})")
    return [*lines, f"- [Reported by papers (not measured here)](#{PAPERS_ANCHOR})", ""]


def plot_lines(plots: dict[str, list[str]] | None) -> list[str]:
    """A board's plots: its figures as images, its heatmaps in a table of HEATMAP_COLUMNS images (best
    row first) and what was not plotted; [] when the board has none of these."""
    if not plots or not any(plots.values()):
        return []
    lines = ["", "### plots", ""]
    lines += [f"![{md_text(Path(f).stem)}]({md_text(f)})" for f in plots.get("figures", [])]
    heat = plots.get("heatmaps", [])
    if heat:
        lines += ["", f"Layer x layer heatmaps ({len(heat)}, best pair first):", ""]
        rows = [heat[i:i + HEATMAP_COLUMNS] for i in range(0, len(heat), HEATMAP_COLUMNS)]
        cells = [[f"![{md_text(Path(f).stem)}]({md_text(f)})" for f in row] + [""] * (HEATMAP_COLUMNS - len(row))
                 for row in rows]
        lines += _md_table([" "] * HEATMAP_COLUMNS, cells)
    lines += ["", *[f"- not plotted: {md_text(why)}" for why in plots.get("notes", [])]]
    return lines


def readme(boards: list[Board], records: list[ResultRecord], paper: list[dict[str, Any]], plots: dict[str, Any]) -> str:
    """The leaderboard's README.md: the contents list, per-board ranked tables, per-language summaries and
    plots, the pair x setting overview, and the separate table of values reported by papers. Every text taken from a record,
    a plot note or a paper value is escaped (`md_text`), so it shows as written and adds no markup."""
    lines = [
        "# platobench leaderboard",
        "",
        f"Built from {len(records)} result records by `platobench leaderboard`. Scores are ranked only against",
        "scores of the same setting on the same samples. *calibrated*: the score against its permutation null",
        "(see the record's `null`); *CI*: confidence interval of what the record's `ci.estimand` names (the",
        "expected score at this N for kNN metrics, the population value for CKA); *layers*: chosen (language, vision)",
        f"layer indices of the grid. `{MISSING}` marks a value that was not measured — never skipped silently.",
        "*(baseline)* tags a negative control (zoo family `baseline/`); *verdict* compares a real pair with its",
        "own matched baselines (the baseline rows that keep one of its sides) by a paired test of the excess over",
        "the null on the same subsets and permutations, each pair at .05 against its own controls and not adjusted",
        "across the board, so no other row can move it (docs/statistics.md); a record without subset scores is",
        "compared with the strongest of its matched baselines: *beats baselines* only when its CI lies entirely",
        "beyond that baseline's CI.",
        "*null mean*: the mean score of the permutation null, the selection of layers included: what a pair's",
        "score and CI are judged against; *chance*: the closed-form score of one fixed layer pair of unrelated",
        "representations (the record's `chance`), below the null mean of a best-of-grid score, so never the bar",
        "for one. A rank marked `=` is shared by rows the data cannot separate (a paired test; overlapping CIs",
        "for records without subset scores). Rows that do not exceed their own null (calibrated CI above 0 and",
        "p ≤ .05) rank below every row that does, whatever their raw score.",
        "A p marked `≤` is at its permutation floor (see the note under its board).",
        PARAMS_RULE,
        "",
    ]
    settings, rows = overview(records)
    lines += contents(boards, len(settings) > 1)
    per_board = plots.get("boards", {})
    for board in boards:
        lines += [f"## {md_text(board.title)}{anchor_tag(board.anchor)}", ""]
        got = board.verdicts
        head_x, head_y = board.headers
        params_head = "params (L / V)" if board.modalities == DEFAULT_MODALITIES else "params (x / y)"
        top5 = record_kind(board.first.kind).top5  # a zero-shot board shows top-5 beside its top-1 score
        inside = has_in_sample([row.record for row in board.rows])  # held-out selection: its in-sample best too
        flagged = flags_note(board.records)
        lines += _md_table(
            ["rank", head_x, head_y, "score", *(["in-sample best"] if inside else []),
             *(["top-5 (chance)"] if top5 else []), "calibrated", "CI", "p",
             "null mean", "chance", "layers", params_head, "verdict", *(["flags"] if flagged else [])],
            [[
                row.label, model_cell(r.x.name), model_cell(r.y.name), fmt(r.score),
                *([fmt(in_sample_of(r))] if inside else []), *([fmt_top5(r)] if top5 else []), fmt(r.calibrated),
                fmt_ci(r), fmt_p(r.null), fmt(r.null.mean if r.null else None),
                fmt(r.chance), fmt_layers(r),
                f"{fmt_params(r.x.params_m, r.x.name)} / {fmt_params(r.y.params_m, r.y.name)}",
                got[r.pair_id].text, *([", ".join(record_flags(r))] if flagged else []),
            ] for row in board.rows for r in [row.record]],
        )
        lines += ["", TIE_RULE, ""]
        lines += [md_text(flagged, brackets=False), ""] if flagged else []
        p_note = p_floor_sentence([row.record for row in board.rows])
        lines += [p_note, ""] if p_note else []
        zs_note = zeroshot_sentence([row.record for row in board.rows])
        lines += [md_text(zs_note, brackets=False), ""] if zs_note else []
        stitched = stitch_section(board)  # a stitch board's controls are its map variants, not baseline models
        sentence = stitched.sentence if stitched is not None else board.sentence
        lines += [md_text(sentence, brackets=False)]  # its CI "[lo, hi]" stays as written
        lines += stitch_lines(stitched)
        vision = board.y_models
        if len(vision) > 1:
            per = (("language model", "vision models") if board.modalities == DEFAULT_MODALITIES
                   else ("x model", "y models"))
            lines += ["", f"Per {per[0]}, mean over the {len(vision)} {per[1]} of this board:", ""]
            lines += _md_table(
                ["rank", head_x, *[model_cell(v) for v in vision], "mean"],
                [[
                    str(s["rank"]) if s["rank"] is not None else MISSING, model_cell(s["x"]),
                    *[fmt(s["scores"][v]) for v in vision],
                    fmt(s["mean"]) if s["mean"] is not None else f"{MISSING} ({s['present']}/{s['expected']})",
                ] for s in x_summary(board)],
            )
        lines += plot_lines(per_board.get(board.key))
        lines.append("")
    if len(settings) > 1:
        lines += [f"## Overview: every pair under every setting{anchor_tag(OVERVIEW_ANCHOR)}", ""]
        mixed = any(r["modalities"] != DEFAULT_MODALITIES for r in rows)
        heads = ["x model", "y model", "modalities"] if mixed else ["language model", "vision model"]
        lines += _md_table([*heads, *map(md_text, settings)],
                           [[model_cell(r["x"]), model_cell(r["y"]), *([modality_label(r["modalities"])] if mixed else []),
                             *[fmt(r["scores"][s]) for s in settings]] for r in rows])
        lines.append("")
    lines += [
        f"## Reported by papers (not measured here){anchor_tag(PAPERS_ANCHOR)}",
        "",
        "Values copied from the papers named below, for comparison only. They come from other code, data and",
        "model versions and are **not** platobench measurements; they are never mixed into the tables above.",
        "",
    ]
    lines += _md_table(
        ["source", "language model", "vision model", "metric", "value", "note"],
        [[*(md_text(p[k]) for k in ("source", "language", "vision", "metric")), f"{p['value']:.3f}",
          md_text(p.get("note", ""))] for p in paper],
    )
    lines += ["", "Citations:", ""]
    lines += [f"- {md_text(c)}" for c in dict.fromkeys(p["citation"] for p in paper)]
    return "\n".join(lines) + "\n"
