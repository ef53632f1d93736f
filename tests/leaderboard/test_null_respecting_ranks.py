"""A record at its own null never ranks above one that exceeds it (platobench/leaderboard/boards.py), and
the case that made it rank first — tied neighbour lists broken to the lowest ids on both sides — scores its
expectation instead and is flagged (platobench/metrics/knn.py, platobench/leaderboard/flags.py)."""

from __future__ import annotations

import torch
from bench_fixtures import make_record

from platobench import leaderboard as lb
from platobench.bench.scoring import score_paired
from platobench.bench.settings import Setting
from platobench.bench.terminal_board import board_rows
from platobench.leaderboard.baselines import exceeds_null
from platobench.leaderboard.flags import TIED, record_flags
from platobench.results import DatasetRef, IntervalRef, NullRef
from platobench.zoo import load_zoo

V = "demo/dinov2-s-imgfocus"


def at_null():
    """The issue's row: mutual kNN .461 with a null mean of .432 and p .267 (calibrated .051 [-.02, .12])."""
    r = make_record("demo-mknn", "mine/tfidf-on-eval", V, 0.461)
    return r.model_copy(update={
        "null": NullRef(mean=0.432, std=0.03, p_value=0.267, n_perm=100, seed=0),
        "calibrated": (0.461 - 0.432) / (1 - 0.432),
        "ci": IntervalRef(lo=0.421, hi=0.501, level=0.95, method="test")})


def test_a_record_at_its_null_ranks_below_every_record_that_exceeds_its_own():
    real = [make_record("demo-mknn", f"demo/m{i}", V, s) for i, s in enumerate((0.225, 0.175, 0.13))]
    board_records = [at_null(), *real]
    assert exceeds_null(board_records[0]) is False and all(exceeds_null(r) for r in real)
    (board,) = lb.build_boards(board_records)
    assert [r.record.x.name for r in board.rows] == ["demo/m0", "demo/m1", "demo/m2", "mine/tfidf-on-eval"]
    assert [r.rank for r in board.rows] == [1, 2, 3, 4]
    rows = board_rows(board_records)["demo-mknn"]  # run's and submit's board: the same order
    assert [(row["x"], row["rank"]) for row in rows] == [(r.record.x.name, r.rank) for r in board.rows]
    # ties never cross the tiers: the at-null row's CI overlaps nobody's, yet a wide one would not join them
    wide = at_null().model_copy(update={"ci": IntervalRef(lo=0.1, hi=0.6, level=0.95, method="test")})
    (board,) = lb.build_boards([wide, *real])
    assert board.rows[-1].record.x.name == "mine/tfidf-on-eval" and board.rows[-1].rank == 4


def _clusters(n: int, groups: int, seed: int) -> torch.Tensor:
    """Rows that are one of `groups` one-hot patterns (assigned at random): within a group every inner product
    ties, as a sparse layer after the prh clamp reduces to a few sign patterns."""
    label = torch.randint(0, groups, (n,), generator=torch.Generator().manual_seed(seed))
    return torch.nn.functional.one_hot(label, groups).float() + 0.0


def test_lists_tied_on_both_sides_score_their_expectation_and_are_flagged():
    """Two independent cluster layers share nothing, but breaking every tie to the lowest ids puts both
    sides' lists on the first members of each cluster, which overlap: the lower-index score sits far above
    chance (and so does its null). By expectation it is at chance, its null with it, and the row is flagged."""
    zoo = load_zoo()
    n = 240
    xs, ys = [_clusters(n, 3, 1)], [_clusters(n, 3, 2)]
    ds = DatasetRef(name="synthetic", revision="r", n=n, fingerprint="f" * 64)
    x, y = zoo.get("baseline/bag-of-words"), zoo.get("baseline/random-init-efficientnet-lite0")
    common = {"id": "t", "dataset": "x", "metric": "mutual_knn", "n_perm": 30, "n_ci": 0}
    listed = score_paired(Setting(**common, params={"k": 10, "ties": "lower_index"}), x, y, xs, ys, ds, inputs={})
    expected = score_paired(Setting(**common, params={"k": 10}), x, y, xs, ys, ds, inputs={})
    chance = 10 / (n - 1)
    assert listed.score > 5 * chance and listed.null.mean > 3 * chance
    assert abs(expected.score - chance) < 0.2 * chance and abs(expected.null.mean - chance) < 0.2 * chance
    assert expected.metric.params["ties"] == "expected"
    assert expected.details["tie_share"] == {"x": [1.0], "y": [1.0]}
    assert record_flags(expected) == [TIED]
