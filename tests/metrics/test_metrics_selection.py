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


def test_a_fixed_selection_names_the_models_layers_when_constant_layers_are_left_out():
    """`kept_selection` moves a fixed pair to the kept layers' grid ("best" and "last" stay), refuses a left-out
    layer; `score_paired` with a constant first vision layer then scores and records the layers it names."""
    from platobench.bench.scoring import score_paired
    from platobench.bench.settings import Setting
    from platobench.errors import UserError
    from platobench.metrics.selection import kept_selection
    from platobench.results import DatasetRef
    from platobench.zoo import load_zoo

    assert kept_selection("fixed:1,2", (3, 4), [0, 1, 2], [1, 2, 3]) == "fixed:1,1"
    assert kept_selection("1,-1", (3, 4), [0, 1, 2], [1, 2, 3]) == "fixed:1,2"
    assert kept_selection("best", (3, 4), [0], [1]) == "best" and kept_selection("last", (3, 4), [0], [1]) == "last"
    with pytest.raises(UserError, match="names layer 0 of Ys"):
        kept_selection("fixed:1,0", (3, 4), [0, 1, 2], [1, 2, 3])
    g = torch.Generator().manual_seed(3)
    latent = torch.randn(60, 6, generator=g)
    text = [latent @ torch.randn(6, 10, generator=g) + torch.randn(60, 10, generator=g) for _ in range(3)]
    vision = [torch.ones(60, 8)] + [latent @ torch.randn(6, 8, generator=g) * (j + 1) + torch.randn(60, 8, generator=g)
                                    for j in range(3)]
    setting = Setting(id="t", dataset="d", metric="cka", selection="fixed:1,2", n_perm=3, n_ci=0)
    zoo = load_zoo()
    record = score_paired(setting, zoo.get("demo/minilm-l6"), zoo.get("demo/dinov2-s-imgfocus"), text, vision,
                          DatasetRef(name="d", revision="r", n=60, fingerprint="f" * 64), inputs={})
    assert record.layers == (1, 2) and record.score == pytest.approx(record.grid[1][2], abs=1e-8)
    assert record.grid[1][0] is None and record.details["excluded_layers"]["y"] == [0]


def test_a_layer_constant_on_an_interval_subset_is_left_out_and_said_so():
    """At small N a layer can vary over all samples and yet be constant on one of the interval's subsets
    (here a vision layer that differs from the rest in two samples only): the interval could not be drawn
    on it, so `score_paired` leaves it out like a constant layer, scores the record again without it and
    says why (the subsets are those `interval_subsets` names); without an interval the layer stays."""
    from platobench.bench.scoring import score_paired
    from platobench.bench.settings import Setting
    from platobench.metrics.stats import interval_subsets
    from platobench.results import DatasetRef
    from platobench.zoo import load_zoo

    n = 24
    g = torch.Generator().manual_seed(5)
    latent = torch.randn(n, 4, generator=g)
    text = [latent @ torch.randn(4, 6, generator=g) + torch.randn(n, 6, generator=g) for _ in range(2)]
    sparse = torch.ones(n, 5)
    sparse[[3, 17]] += torch.randn(2, 5, generator=g)
    vision = [sparse, latent @ torch.randn(4, 5, generator=g) + torch.randn(n, 5, generator=g)]
    setting = Setting(id="t", dataset="d", metric="mutual_knn", params={"k": 3}, n_perm=3, n_ci=20)
    subsets = interval_subsets("mutual_knn", n, n_sub=20, frac=setting.ci_fraction, seed=setting.seed)
    assert any(not ({3, 17} & set(idx.tolist())) for idx in subsets)  # some subset holds neither sample
    zoo = load_zoo()
    sides = zoo.get("demo/minilm-l6"), zoo.get("demo/dinov2-s-imgfocus")
    ref = DatasetRef(name="d", revision="r", n=n, fingerprint="f" * 64)
    record = score_paired(setting, *sides, text, vision, ref, inputs={})
    excluded = record.details["excluded_layers"]
    assert excluded["y"] == [0] and excluded["x"] == [] and "one of the interval's 20 subsets" in excluded["why"]
    assert all(row[0] is None for row in record.grid) and record.layers[1] == 1
    alone = score_paired(setting, *sides, text, vision[1:], ref, inputs={})
    assert record.ci.draws == alone.ci.draws and record.score == alone.score
    without = score_paired(Setting(id="t", dataset="d", metric="mutual_knn", params={"k": 3}, n_perm=3, n_ci=0),
                           *sides, text, vision, ref, inputs={})
    assert without.details["excluded_layers"]["y"] == [] and "subsets" not in without.details["excluded_layers"]["why"]
    with pytest.raises(ValueError, match="every layer of demo/dinov2-s-imgfocus is constant across the samples, or as"):
        score_paired(setting, *sides, text, [sparse], ref, inputs={})
