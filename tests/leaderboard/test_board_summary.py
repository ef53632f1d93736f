"""The generated tables of reports/offline-board.md: one row per board from its records, written between the
marker lines and nowhere else."""

from __future__ import annotations

import pytest
from bench_fixtures import make_record

from platobench.errors import UserError
from platobench.leaderboard.board_summary import fill, tables

V = "demo/dinov2-s-imgfocus"


def test_a_board_row_names_its_best_real_pair_strongest_baseline_and_verdict_counts():
    records = [
        make_record("s", "demo/mpnet-base", V, 0.40),  # CI [.38, .42], beyond the bag of words' [.18, .22]
        make_record("s", "demo/minilm-l6", V, 0.21),  # CI [.19, .23]: within it
        make_record("s", "baseline/bag-of-words", V, 0.20),
    ]
    (row,) = tables(records)["text-vision"].splitlines()[2:]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells == ["`s` (openclipart-1024, N=64)", "demo/mpnet-base × demo/dinov2-s-imgfocus", "0.400 [0.380, 0.420]",
                     "baseline/bag-of-words (baseline) × demo/dinov2-s-imgfocus", "0.200 [0.180, 0.220]",
                     "CI overlap with the strongest matched control", "2: 1 beats baselines, 1 within baseline CI"]
    assert tables(records)["same-modality"].count("\n") == 2  # header only: no other modality pair


def test_fill_replaces_only_the_marked_blocks_and_refuses_a_template_without_them():
    template = "prose\n<!-- begin generated: a -->\nold\n<!-- end generated: a -->\nmore prose\n"
    assert fill(template, {"a": "new\n"}) == "prose\n<!-- begin generated: a -->\nnew\n<!-- end generated: a -->\nmore prose\n"
    with pytest.raises(UserError, match="marker lines"):
        fill("prose only\n", {"a": "new\n"})
