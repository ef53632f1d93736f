"""The offline board's summary tables in reports/offline-board.md, generated from the committed records.

reports/offline-board.md is a reading of the offline board in prose around two tables; the tables are
written by `platobench reports` between the marker lines

    <!-- begin generated: NAME -->
    <!-- end generated: NAME -->

(NAME "text-vision" for the text x vision boards, "same-modality" for the others) from the records under
RESULTS/offline, so that their numbers never drift from the records (`tests/committed/test_reports_rebuild.py`
rebuilds the file and compares its bytes). One row per board: its best real pair and strongest baseline with
score and interval, the rule its verdicts come from (paired tests of the excess over the null against each
pair's own matched controls, where the records state their subset and permutation draws; otherwise interval
overlap with the strongest matched control, platobench/leaderboard/verdicts.py) and how many real pairs got
each verdict.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from platobench.errors import UserError
from platobench.files.atomic import atomic_write_text
from platobench.leaderboard.baselines import is_baseline_record, strongest_baseline
from platobench.leaderboard.boards import Board, build_boards, finite, fmt, fmt_ci
from platobench.leaderboard.markdown import model_cell
from platobench.leaderboard.order import DEFAULT_MODALITIES, modality_label
from platobench.leaderboard.verdicts import OVERLAP, PAIRED
from platobench.results import ResultRecord, load_records

REPORT = "offline-board.md"
RESULTS_FOLDER = "offline"
HEADER = ["board", "best real pair", "score [CI]", "strongest baseline", "score [CI]", "verdicts by", "real pairs"]
RULES = {PAIRED: "paired tests, per pair", OVERLAP: "CI overlap with the strongest matched control"}
BLOCK = re.compile(r"(<!-- begin generated: (?P<name>[a-z-]+) -->\n).*?(<!-- end generated: (?P=name) -->)", re.S)


def _pair(r: ResultRecord | None) -> tuple[str, str]:
    if r is None:
        return "none", "—"
    return f"{model_cell(r.x.name)} × {model_cell(r.y.name)}", f"{fmt(r.score)} {fmt_ci(r)}"


def board_row(board: Board) -> list[str]:
    """One board's row of the summary table (module docstring)."""
    records = [row.record for row in board.rows]
    real = [r for r in records if not is_baseline_record(r)]
    best = next((r for r in real if finite(r.score)), None)
    verdicts = board.verdicts
    counts = Counter(verdicts[r.pair_id].text for r in real)
    d = board.first.dataset
    pair = "" if board.modalities == DEFAULT_MODALITIES else f", {modality_label(board.modalities)}"
    strongest = strongest_baseline(records)
    rules = {verdicts[r.pair_id].rule for r in real} - {""}
    rule = " and ".join(RULES[r] for r in sorted(rules, reverse=True)) or "none"
    return [f"`{board.setting}` ({d.name}, N={d.n}{pair})", *_pair(best), *_pair(strongest), rule,
            f"{len(real)}: " + ", ".join(f"{n} {v}" for v, n in counts.most_common())]


def tables(records: list[ResultRecord]) -> dict[str, str]:
    """NAME -> the Markdown table of that block, for the boards of `records`."""
    boards = build_boards(records)
    out = {}
    for name, keep in (("text-vision", True), ("same-modality", False)):
        rows = [board_row(b) for b in boards if (b.modalities == DEFAULT_MODALITIES) == keep]
        lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER),
                 *["| " + " | ".join(row) + " |" for row in rows]]
        out[name] = "\n".join(lines) + "\n"
    return out


def fill(template: str, generated: dict[str, str]) -> str:
    """`template` with every generated block replaced; UserError when a block of `generated` is missing."""
    missing = set(generated) - {m["name"] for m in BLOCK.finditer(template)}
    if missing:
        raise UserError(f"{REPORT} lacks the marker lines of {sorted(missing)}: "
                        "<!-- begin generated: NAME --> ... <!-- end generated: NAME -->")
    return BLOCK.sub(lambda m: m.group(1) + generated.get(m["name"], "") + m.group(3), template)


def rebuild(results: Path, reports: Path, out: Path) -> list[str]:
    """`platobench reports`: `out`/offline-board.md, the committed prose of `reports`/offline-board.md with its
    tables written again from the records under `results`/offline."""
    template = reports / REPORT
    if not template.is_file():
        raise UserError(f"{template} is missing: it holds the prose around the generated tables")
    folder = results / RESULTS_FOLDER
    records = load_records(folder) if folder.is_dir() else []
    if not records:
        raise UserError(f"no records under {folder}: run `make board` first")
    path = atomic_write_text(out / REPORT, fill(template.read_text(encoding="utf-8"), tables(records)))
    return [str(path)]
