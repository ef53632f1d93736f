"""Where a submitted encoder ranks: each of its records among its *peers*, and the board they form.

The peers of a submission record are the records of the results folder that measure another model against
the same reference (the record's other side), from the same side of a pair of the same modalities, under
the same setting and metric, on the same samples (dataset name, fingerprint and n: a `--limit` run only meets
records of the same limit). The board of a record is its peers plus the record, ranked as the leaderboard
ranks (platobench/leaderboard/boards.py); every verdict on it is the one the leaderboard gives, read against
the record's own matched controls anywhere in the results folder (platobench/leaderboard/verdicts.py), so
the controls of the submission's own side count too. A record without peers has no rank: the folder holds
nothing to rank it against.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from platobench.bench.terminal_board import board_rows
from platobench.leaderboard.boards import rank_records
from platobench.leaderboard.flags import record_flags
from platobench.leaderboard.order import board_name
from platobench.leaderboard.verdicts import judge
from platobench.results import ResultRecord


def side_of(record: ResultRecord, name: str) -> int:
    """The side (0: x, 1: y) the submitted model `name` takes in `record`."""
    return 0 if record.x.name == name else 1


def reference(record: ResultRecord, name: str) -> str:
    """The other side of submitted model `name`'s record: the model it is measured against."""
    return record.sides[1 - side_of(record, name)].name


def peers(record: ResultRecord, records: list[ResultRecord], name: str) -> list[ResultRecord]:
    """The records of `records` comparable with submission `record` (module doc), the record itself left out."""
    side = side_of(record, name)
    ref = record.sides[1 - side].name
    return [x for x in records
            if x.pair_id != record.pair_id and x.setting == record.setting and x.kind == record.kind
            and x.metric == record.metric and x.modalities == record.modalities and x.sides[1 - side].name == ref
            and (x.dataset.name, x.dataset.fingerprint, x.dataset.n)
            == (record.dataset.name, record.dataset.fingerprint, record.dataset.n)]


def standings(name: str, records: list[ResultRecord], mine: list[ResultRecord]) -> list[dict[str, Any]]:
    """For each record of submitted model `name`: its rank among its peers in `records` (None without peers
    or without a finite score or with its rank withheld), the board size `of` (peers + the record), the peer
    count, its verdict, its flags and the board's rows (verdicts against the matched controls anywhere in
    `records`)."""
    out = []
    for r in mine:
        board = board_records(name, records, r)
        ranked = rank_records(board)
        rank = next(row.rank for row in ranked if row.record is r) if len(board) > 1 else None
        out.append({"setting": r.setting, "reference": reference(r, name), "score": r.score, "rank": rank,
                    "of": len(board), "peers": len(board) - 1, "calibrated": r.calibrated, "n": r.dataset.n,
                    "board": board_rows(board, records)[board_name(r)], "verdict": judge(r, records).text,
                    "flags": record_flags(r)})
    return out


def board_records(name: str, records: list[ResultRecord], mine: ResultRecord) -> list[ResultRecord]:
    """The board of submitted model `name`'s record `mine`: its peers in `records` and the record."""
    return [*peers(mine, records, name), mine]


def rank_line(name: str, row: dict[str, Any], out: Path) -> str:
    """One printed line of `standings`: the score and the rank among the peers, or that there are none."""
    calibrated = "" if row["calibrated"] is None else f" (calibrated {row['calibrated']:.3f})"
    head = f"{name} — {row['setting']} vs {row['reference']} (n={row['n']}): score {row['score']:.4f}{calibrated}, "
    verdict = f"; verdict: {row['verdict']}" + (f"; flags: {', '.join(row['flags'])}" if row["flags"] else "")
    if not row["peers"]:
        return head + (f"no rank: nothing to rank against ({out} holds no record of another model against "
                       f"{row['reference']} under {row['setting']} on these {row['n']} samples){verdict}")
    if row["rank"] is None:
        return head + f"no rank (score missing), {row['peers']} peers{verdict}"
    return head + f"rank {row['rank']} of {row['of']} ({row['peers']} peers on the same samples){verdict}"


def no_peers_hint(out: Path, run_command: str, limit: int | None) -> str:
    """How to get peers into the results folder `out`; `run_command`: the `platobench run` that scores them
    under the submission's settings, pairs and limit."""
    committed = ("the committed records under results/offline use every sample, so a run without --limit "
                 "into --out results/offline ranks among them" if limit is not None
                 else "--out results/offline ranks among the committed records")
    return (f"{out} holds no peers for some of these records, so they are not ranked. Peers are other "
            f"models scored against the same references, settings and samples: {committed}; or score the peers "
            f"into {out} first: {run_command}")
