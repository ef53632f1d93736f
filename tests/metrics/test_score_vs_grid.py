"""`score` and `layer_grid` agree exactly where the docs say they do (platobench/metrics/api.py).

Per-layer preprocessing (none, l2): every grid cell is the score of that layer pair. Stack-level
preprocessing (prh, prh_exact): the clamp's quantile is taken over the whole stack passed in, so a grid
cell equals the stack-clamped score of its layer pair, and differs from `score` on the two layers alone."""

from __future__ import annotations

import pytest
import torch

from platobench.metrics import layer_grid, score, summarize_layers


def _stacks(seed: int = 0) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(80, 6, generator=g)
    # layers of very different scales, with outliers: the stack's quantile differs from each layer's
    xs = [z @ torch.randn(6, 12, generator=g) * s + torch.randn(80, 12, generator=g) for s in (0.1, 1.0, 30.0)]
    xs[2][::7] *= 20
    ys = [z @ torch.randn(6, 9, generator=g) * s + torch.randn(80, 9, generator=g) for s in (5.0, 0.2)]
    return xs, ys


@pytest.mark.parametrize("metric, params", [("cka", {}), ("mutual_knn", {"k": 5})])
@pytest.mark.parametrize("preprocess", ["none", "l2"])
def test_per_layer_preprocessing_grid_equals_score(metric, params, preprocess):
    xs, ys = _stacks()
    grid = layer_grid(metric, xs, ys, preprocess=preprocess, **params)
    for i, x in enumerate(xs):
        for j, y in enumerate(ys):
            assert abs(float(grid[i, j]) - score(metric, x, y, preprocess=preprocess, **params)) <= 1e-6


@pytest.mark.parametrize("preprocess", ["prh", "prh_exact"])
def test_stack_preprocessing_grid_is_the_stack_clamped_score_not_the_lone_layer_score(preprocess):
    xs, ys = _stacks()
    grid = layer_grid("cka", xs, ys, preprocess=preprocess)
    lone_differs = False
    for i in range(len(xs)):
        for j in range(len(ys)):
            stacked = summarize_layers("cka", xs, ys, preprocess=preprocess, x_layers=[i], y_layers=[j]).grid()
            assert abs(float(grid[i, j]) - float(stacked[0, 0])) <= 1e-9
            lone = score("cka", xs[i], ys[j], preprocess=preprocess)
            lone_differs |= abs(float(grid[i, j]) - lone) > 1e-4
            # a stack of one layer is that layer alone: then grid and score agree
            single = layer_grid("cka", [xs[i]], [ys[j]], preprocess=preprocess)
            assert abs(float(single[0, 0]) - lone) <= 1e-6
    assert lone_differs, "the example must show the documented difference"
