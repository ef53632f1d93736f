"""Checks of a printed board against the records it shows: the plain tables parsed back, each row's
expected cells, and `assert_board_matches` (the `--json` board and the text hold exactly the records'
numbers). Shared by the run/submit tests and the experiments' (jepa compare) board tests."""

from __future__ import annotations

import re
from typing import Any

from platobench.bench import terminal_board
from platobench.leaderboard.boards import rank_records
from platobench.results import ResultRecord


def plain_tables(text: str) -> dict[str, list[dict[str, str]]]:
    """setting -> table rows (column name -> cell; cells split on runs of 2+ spaces) of the plain boards
    printed in `text`."""
    tables: dict[str, list[dict[str, str]]] = {}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("== ") and i + 2 < len(lines) and lines[i + 1].startswith("rank"):
            rows = tables.setdefault(line[3:].split(":")[0], [])
            header = lines[i + 1].split()
            for row in lines[i + 3:]:
                if not row[:1].isdigit():
                    break
                rows.append(dict(zip(header, re.split(r"\s{2,}", row.strip()))))
    return tables


def expected_row(r: ResultRecord) -> dict[str, Any]:
    """The board numbers of record `r`, straight from the record."""
    return {"score": r.score, "ci": None if r.ci is None else [r.ci.lo, r.ci.hi], "chance": r.chance,
            "null_mean": None if r.null is None else r.null.mean, "calibrated": r.calibrated,
            "p_value": None if r.null is None else r.null.p_value, "layers": list(r.layers)}


def assert_board_matches(board: dict[str, list[dict[str, Any]]], text: str | None, records: list[ResultRecord]) -> None:
    """The --json board and the printed plain tables hold exactly the records' numbers."""
    by_key = {(r.setting, r.x.name, r.y.name): r for r in records}
    assert sum(len(rows) for rows in board.values()) == len(records) > 0
    for setting, rows in board.items():
        for row in rows:
            got = {k: row[k] for k in ("score", "ci", "chance", "null_mean", "calibrated", "p_value", "layers")}
            assert got == expected_row(by_key[(setting, row["x"], row["y"])])
        ordered = [by_key[(setting, row["x"], row["y"])] for row in rows]
        assert [(row["x"], row["y"], row["rank"]) for row in rows] == [
            (r.record.x.name, r.record.y.name, r.rank) for r in rank_records(ordered)]
    if text is None:
        return
    tables = plain_tables(text)
    assert set(tables) == set(board)
    for setting, rows in board.items():
        assert len(tables[setting]) == len(rows)
        for cells, row in zip(tables[setting], rows):
            r = by_key[(setting, row["x"], row["y"])]
            num = (lambda v, d=3: "-" if v is None else f"{v:.{d}f}")
            ci = "-" if r.ci is None else f"[{r.ci.lo:.3f}, {r.ci.hi:.3f}]"
            pair = f"{terminal_board._model(r.x.name)} x {terminal_board._model(r.y.name)}"
            assert cells["rank"] == str(row["rank"]) and cells["pair"] == pair
            assert [cells["score"], cells["ci"], cells["calib"]] == [num(r.score), ci, num(r.calibrated)]
            p = terminal_board._p_cell(r.null)
            assert cells.get("p", p) == p  # the column is left out when every row has the same p
            assert cells["layers"] == f"{r.layers[0]},{r.layers[1]}"
