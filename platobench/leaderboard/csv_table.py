"""leaderboard.csv: one row per record, boards in order, best first. Text cells that a spreadsheet
would run as a formula are neutralised (`csv_cell`)."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from platobench.files.atomic import atomic_write_text
from platobench.leaderboard.baselines import is_baseline
from platobench.leaderboard.boards import Board, family
from platobench.leaderboard.flags import record_flags
from platobench.leaderboard.notes import in_sample_of, top5_of
from platobench.leaderboard.order import modality_label
from platobench.leaderboard.safe_text import csv_cell
from platobench.leaderboard.verdicts import Verdict
from platobench.results import ResultRecord

CSV_COLUMNS = (
    "setting", "modalities", "dataset", "n", "dataset_fingerprint", "rank", "x", "y", "x_input", "y_input",
    "x_family", "y_family", "x_kind", "y_kind", "is_baseline", "verdict", "verdict_rule", "verdict_p", "verdict_control", "verdict_controls", "flags", "metric", "higher_is_better", "score",
    "in_sample_best", "top5", "chance_top5", "calibrated", "ci_lo", "ci_hi", "ci_level", "p_value", "null_mean", "chance", "layer_x", "layer_y",
    "last_layer_score", "params_x_m", "params_y_m", "schema_version", "platobench_version",
    "git_sha", "created",
)


def board_row(rank: int | None, r: ResultRecord, verdict: Verdict | None = None) -> dict[str, Any]:
    """One board row of record `r`, keys `CSV_COLUMNS`, absent values None; `verdict` is the record's
    verdict against its matched controls (platobench/leaderboard/verdicts.py): its text, rule, p-value, the
    control that decides it and how many controls it was judged against."""
    top5, chance_top5 = top5_of(r)
    return {
        "setting": r.setting, "modalities": modality_label(r.modalities), "dataset": r.dataset.name, "n": r.dataset.n, "dataset_fingerprint": r.dataset.fingerprint,
        "rank": rank, "x": r.x.name, "y": r.y.name, "x_input": r.x.input, "y_input": r.y.input,
        "x_family": family(r.x.name), "y_family": family(r.y.name), "x_kind": r.x.kind, "y_kind": r.y.kind,
        "is_baseline": is_baseline(r.x.name) or is_baseline(r.y.name),
        "verdict": "" if verdict is None else verdict.text, "verdict_rule": None if verdict is None else verdict.rule or None,
        "verdict_p": None if verdict is None else verdict.p,
        "verdict_control": None if verdict is None else verdict.binding,
        "verdict_controls": None if verdict is None or verdict.rule == "" else len(verdict.controls),
        "flags": "; ".join(record_flags(r)) or None,
        "metric": r.metric.id, "higher_is_better": r.metric.higher_is_better, "score": r.score,
        "in_sample_best": in_sample_of(r), "top5": top5, "chance_top5": chance_top5,
        "calibrated": r.calibrated,
        "ci_lo": None if r.ci is None else r.ci.lo, "ci_hi": None if r.ci is None else r.ci.hi,
        "ci_level": None if r.ci is None else r.ci.level, "p_value": None if r.null is None else r.null.p_value,
        "null_mean": None if r.null is None else r.null.mean, "chance": r.chance,
        "layer_x": None if r.layers is None else r.layers[0],
        "layer_y": None if r.layers is None else r.layers[1],
        "last_layer_score": r.last_layer_score,
        "params_x_m": r.x.params_m, "params_y_m": r.y.params_m,
        "schema_version": r.schema_version, "platobench_version": r.platobench_version, "git_sha": r.provenance.git_sha,
        "created": r.created,
    }


def csv_row(rank: int | None, r: ResultRecord, verdict: Verdict | None = None) -> dict[str, Any]:
    """One CSV row: `board_row` with empty cells for absent values. Text cells that a spreadsheet would
    run as a formula are prefixed with `'` (`csv_cell`)."""
    return {key: csv_cell("" if value is None else value) for key, value in board_row(rank, r, verdict).items()}


def csv_text(boards: list[Board]) -> str:
    """leaderboard.csv: one row per record (empty cells where a value is absent), boards in order, best first."""
    buffer = io.StringIO(newline="")
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS)
    writer.writeheader()
    for board in boards:
        got = board.verdicts
        writer.writerows(csv_row(row.rank, row.record, got[row.record.pair_id]) for row in board.rows)
    return buffer.getvalue()


def write_csv(boards: list[Board], path: Path) -> None:
    """`csv_text` written to `path` as UTF-8, atomically (a reader never sees half a table)."""
    atomic_write_text(path, csv_text(boards))
