"""One verdict per record, whichever view prints it (issue: a verdict belongs to the pair, not to the board).

On every committed record the leaderboard (its boards, leaderboard.csv, the Markdown and HTML tables), `run`'s
board (`board_rows` against the results folder), `evaluate().to_pandas()`, `submit`'s standings and `check`'s
verdict comparison give the same verdict; and adding twelve submitted encoders to every committed board
changes no committed verdict, while they themselves are judged against their own controls."""

from __future__ import annotations

import csv
import io
import random
from pathlib import Path

import pytest

from platobench.bench.check import judge_again
from platobench.bench.check_fields import Outcome
from platobench.bench.evaluation import Results
from platobench.bench.runner import RunSummary
from platobench.bench.submit_ranks import standings
from platobench.bench.terminal_board import board_rows
from platobench.leaderboard import build_boards
from platobench.leaderboard.baselines import is_baseline, is_baseline_record
from platobench.leaderboard.csv_table import csv_text
from platobench.leaderboard.order import board_name
from platobench.leaderboard.verdicts import NO_MATCH, verdicts
from platobench.results import load_records

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results" / "offline"
SUBMISSIONS = 12


@pytest.fixture(scope="module")
def committed():
    records = load_records(RESULTS)
    boards = build_boards(records)
    return records, {r.pair_id + "@" + r.setting: v.text for b in boards for r in b.records
                     for v in [b.verdicts[r.pair_id]]}


def key(r) -> str:
    return r.pair_id + "@" + r.setting


def test_every_view_gives_every_committed_record_the_same_verdict(committed):
    records, board = committed
    real = [r for r in records if not is_baseline_record(r)]
    assert len(records) > 300 and sum(v.startswith("beats") for v in board.values()) > 50
    assert all(board[key(r)] != NO_MATCH for r in real)  # every committed real pair has its controls
    # leaderboard.csv
    rows = csv.DictReader(io.StringIO(csv_text(build_boards(records))))
    assert {row["x"] + "__" + row["y"] + "@" + row["setting"]: row["verdict"] for row in rows} == board
    # run's board and --json, against the results folder
    run = {row["x"] + "__" + row["y"] + "@" + setting.split(" ")[0]: row["verdict"]
           for setting, got in board_rows(records, records).items() for row in got}
    assert run == board
    # a run that re-scored one board only prints the same verdicts when it reads the folder's controls
    one = [r for r in real if r.setting == "demo-cka" and r.modalities == ("text", "vision")]
    assert {row["x"] + "__" + row["y"] + "@demo-cka": row["verdict"]
            for row in board_rows(one[:5], records)["demo-cka"]} == {key(r): board[key(r)] for r in one[:5]}
    # evaluate().to_pandas(): the run's records, the folder as the pool
    table = Results(records=one[:5], summary=RunSummary(), out=RESULTS, pool=records).to_pandas()
    assert {f"{x}__{y}@{s}": v for x, y, s, v in zip(table.x, table.y, table.setting, table.verdict)} == {
        key(r): board[key(r)] for r in one[:5]}
    # submit: a model's standings among its peers, its rows and their boards
    for name in ("demo/minilm-l6", "demo/efficientnet-lite1"):
        mine = [r for r in records if name in (r.x.name, r.y.name)]
        for r, row in zip(mine, standings(name, records, mine)):
            assert row["verdict"] == board[key(r)]
            assert all(b["verdict"] == board[f"{b['x']}__{b['y']}@{r.setting}"] for b in row["board"])
    # check: the stated verdict of every record (recomputed = stated here)
    outcomes = [Outcome(r.setting, r.x.name, r.y.name, status="ok") for r in records]
    judge_again(records, {id(r): r for r in records}, outcomes)
    assert {key(r): o.verdict[0] for r, o in zip(records, outcomes)} == board
    assert all(o.status == "ok" for o in outcomes)


def _submission(r, i: int, rng: random.Random):
    """Record `r` (a real pair) as if a submitted encoder `sub/enc-i` had replaced its x model, its numbers
    shifted by a few hundredths (the draws with them, so it stays consistent)."""
    shift = rng.uniform(-0.03, 0.03)
    moved = lambda v: None if v is None else v + shift  # noqa: E731
    x = r.x.model_copy(update={"name": f"sub/enc-{i}", "trained_on": None, "fitted_on_eval": None})
    ci = r.ci if r.ci is None else r.ci.model_copy(update={
        "lo": r.ci.lo + shift, "hi": r.ci.hi + shift, "draws": None if r.ci.draws is None else [d + shift for d in r.ci.draws]})
    return r.model_copy(update={"x": x, "score": r.score + shift, "ci": ci, "grid": None, "layers": None,
                                "calibrated": moved(r.calibrated)})


def test_twelve_submissions_change_no_committed_verdict(committed):
    records, board = committed
    rng = random.Random(0)
    real = [r for r in records if not is_baseline_record(r) and r.x.modality == "text" and r.kind == "paired"]
    added = [_submission(r, i % SUBMISSIONS, rng) for i, r in enumerate(rng.sample(real, 60))]
    added = list({key(r): r for r in added}.values())
    names = {r.x.name for r in added}
    assert len(names) == SUBMISSIONS
    after = build_boards([*records, *added])
    got = {key(r): b.verdicts[r.pair_id].text for b in after for r in b.records}
    assert {k: v for k, v in got.items() if k in board} == board
    assert all(got[key(r)] != NO_MATCH for r in added if not is_baseline(r.y.name))  # judged on their own controls
    # the verdict of a committed record read against a pool that holds only it and its controls is the same
    for r in rng.sample([r for r in records if not is_baseline_record(r)], 40):
        mine = [c for c in records if c.setting == r.setting and (c.pair_id == r.pair_id or (
            is_baseline_record(c) and (c.x.name == r.x.name or c.y.name == r.y.name)))]
        assert verdicts([r], mine)[r.pair_id].text == board[key(r)], board_name(r)
