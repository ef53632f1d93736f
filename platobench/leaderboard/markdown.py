"""The leaderboard's README.md: per-board ranked tables (with the stitching table under a board of stitch
records, platobench/leaderboard/stitch_table.py), per-language summaries, the pair x setting overview,
plots and the separate table of values reported by papers.

Record text is untrusted (platobench/leaderboard/safe_text.py): every text taken from a record, a plot
note or a paper value is escaped (`md_text`), so it shows as written and adds no markup.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from platobench.leaderboard.baselines import is_baseline
from platobench.leaderboard.boards import (
    Board,
    fmt,
    fmt_ci,
    fmt_layers,
    fmt_params,
    language_summary,
    overview,
)
from platobench.leaderboard.notes import MISSING, TIE_RULE, p_floor_sentence
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


def readme(boards: list[Board], records: list[ResultRecord], paper: list[dict[str, Any]], plots: dict[str, Any]) -> str:
    """The leaderboard's README.md: per-board ranked tables, per-language summaries, the pair x setting
    overview, plots, and the separate table of values reported by papers. Every text taken from a record,
    a plot note or a paper value is escaped (`md_text`), so it shows as written and adds no markup."""
    lines = [
        "# platobench leaderboard",
        "",
        f"Built from {len(records)} result records by `platobench leaderboard`. Scores are ranked only against",
        "scores of the same setting on the same samples. *calibrated*: the score against its permutation null",
        "(see the record's `null`); *CI*: subsampling confidence interval; *layers*: chosen (language, vision)",
        f"layer indices of the grid. `{MISSING}` marks a value that was not measured — never skipped silently.",
        "*(baseline)* tags a negative control (zoo family `baseline/`); *verdict* compares a real pair with the",
        "board's strongest baseline: *beats baselines* only when its CI lies entirely beyond that baseline's CI.",
        "*null mean*: the mean score of the permutation null; *chance*: the score expected of unrelated",
        "representations (the record's `chance`). A rank marked `=` is shared by rows whose CIs overlap.",
        "",
    ]
    for board in boards:
        lines += [f"## {md_text(board.title)}", ""]
        got = board.verdicts
        lines += _md_table(
            ["rank", "language model", "vision model", "score", "calibrated", "CI", "p", "null mean", "chance",
             "layers", "params (L / V)", "verdict"],
            [[
                row.label, model_cell(r.language.name), model_cell(r.vision.name), fmt(r.score), fmt(r.calibrated),
                fmt_ci(r), fmt(r.null.p_value if r.null else None), fmt(r.null.mean if r.null else None),
                fmt(r.chance), fmt_layers(r),
                f"{fmt_params(r.language.params_m)} / {fmt_params(r.vision.params_m)}", got.get(r.pair_id, ""),
            ] for row in board.rows for r in [row.record]],
        )
        lines += ["", TIE_RULE, ""]
        p_note = p_floor_sentence([row.record for row in board.rows])
        lines += [p_note, ""] if p_note else []
        stitched = stitch_section(board)  # a stitch board's controls are its map variants, not baseline models
        sentence = stitched.sentence if stitched is not None else board.sentence
        lines += [md_text(sentence, brackets=False)]  # its CI "[lo, hi]" stays as written
        lines += stitch_lines(stitched)
        vision = board.vision_models
        if len(vision) > 1:
            lines += ["", f"Per language model, mean over the {len(vision)} vision models of this board:", ""]
            lines += _md_table(
                ["rank", "language model", *[model_cell(v) for v in vision], "mean"],
                [[
                    str(s["rank"]) if s["rank"] is not None else MISSING, model_cell(s["language"]),
                    *[fmt(s["scores"][v]) for v in vision],
                    fmt(s["mean"]) if s["mean"] is not None else f"{MISSING} ({s['present']}/{s['expected']})",
                ] for s in language_summary(board)],
            )
        lines.append("")
    settings, rows = overview(records)
    if len(settings) > 1:
        lines += ["## Overview: every pair under every setting", ""]
        lines += _md_table(["language model", "vision model", *map(md_text, settings)],
                           [[model_cell(r["language"]), model_cell(r["vision"]), *[fmt(r["scores"][s]) for s in settings]]
                            for r in rows])
        lines.append("")
    if plots.get("files"):
        lines += ["## Plots", ""]
        lines += [f"- [{md_text(Path(p).name)}]({md_text(p)})" for p in plots["files"]]
        lines += [f"- not plotted: {md_text(why)}" for why in plots.get("notes", [])]
        lines.append("")
    lines += [
        "## Reported by papers (not measured here)",
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
