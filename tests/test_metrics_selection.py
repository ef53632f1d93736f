"""Layer selection (platobench.metrics.selection): best pair with PRH tie-breaking, last, fixed, batches."""

from __future__ import annotations

import json

import pytest
import torch

from platobench.errors import UserError
from platobench.metrics.selection import Selection, best_index, parse_selection, reduce_grids, select

GRID = torch.tensor([[0.1, 0.5, 0.2], [0.5, 0.0, 0.4]], dtype=torch.float64)


def test_best_is_max_or_min_with_first_row_major_tie():
    assert select(GRID, "best", higher_is_better=True) == Selection("best", 0, 1, 0.5)
    assert select(GRID, "best", higher_is_better=False) == Selection("best", 1, 1, 0.0)
    assert best_index(torch.zeros(3, 4), True) == (0, 0)


def test_best_equals_the_reference_scan():
    """platonic-rep compute_score: for i, for j: if score > best: keep (i, j)."""
    g = torch.randint(0, 5, (6, 7), generator=torch.Generator().manual_seed(0)).double()
    best, where = -1.0, None
    for i in range(6):
        for j in range(7):
            if g[i, j] > best:
                best, where = float(g[i, j]), (i, j)
    s = select(g, "best", True)
    assert (s.x_layer, s.y_layer, s.score) == (*where, best)


def test_last_and_fixed_with_negative_indices():
    assert select(GRID, "last", True) == Selection("last", 1, 2, 0.4)
    assert select(GRID, "0,-1", True) == Selection("fixed", 0, 2, 0.2)
    assert select(GRID, (1, 0), False) == Selection("fixed", 1, 0, 0.5)


def test_record_is_json_serialisable():
    rec = select(GRID, "best", True).to_record()
    assert json.loads(json.dumps(rec)) == {"mode": "best", "x_layer": 0, "y_layer": 1, "score": 0.5}


def test_reduce_grids_takes_selection_inside_each_grid():
    grids = torch.stack([GRID, -GRID, GRID * 2])
    assert torch.equal(reduce_grids(grids, "best", True), torch.tensor([0.5, 0.0, 1.0], dtype=torch.float64))
    assert torch.equal(reduce_grids(grids, "best", False), torch.tensor([0.0, -0.5, 0.0], dtype=torch.float64))
    assert torch.equal(reduce_grids(grids, "last", True), grids[:, 1, 2])


@pytest.mark.parametrize("spec", ["max", "1", "a,b", "1,2,3", (1,), (True, 0), 3])
def test_bad_specs_are_named(spec):
    with pytest.raises(UserError, match="layer selection must be"):
        parse_selection(spec)


def test_out_of_range_and_bad_grid():
    with pytest.raises(UserError, match="index 5 is out of range for Ys with 3 layers"):
        select(GRID, "0,5", True)
    with pytest.raises(UserError, match="index -3 is out of range for Xs with 2 layers"):
        select(GRID, (-3, 0), True)
    with pytest.raises(UserError, match="non-empty"):
        select(torch.zeros(0, 2), "best", True)
