"""The metric engine (platobench.metrics.api / registry): grid == per-pair score, determinism,
streaming inputs, permuted grids, and bad-input errors."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
import torch

from platobench.errors import UserError
from platobench.metrics import (
    UndefinedScoreError,
    api,
    get_metric,
    layer_grid,
    list_metrics,
    score,
    summarize_layers,
)


def layers(n: int, widths: Sequence[int], seed: int) -> list[torch.Tensor]:
    """Random layers sharing a latent signal so that scores differ from layer to layer."""
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(n, 4, generator=g)
    out = []
    for i, d in enumerate(widths):
        x = torch.randn(n, d, generator=g)
        w = min(d, 4)
        x[:, :w] += (i + 1) * z[:, :w]
        out.append(x)
    return out


XS = layers(48, [5, 12, 7], seed=1)
YS = layers(48, [9, 3], seed=2)


@pytest.mark.parametrize("metric", [m.id for m in list_metrics()])
def test_grid_equals_per_pair_score(metric):
    grid = layer_grid(metric, XS, YS)
    assert grid.shape == (3, 2) and grid.dtype == torch.float64
    pairs = torch.tensor([[score(metric, x, y) for y in YS] for x in XS], dtype=torch.float64)
    assert torch.allclose(grid, pairs, atol=1e-6, rtol=0)
    assert len(set(grid.flatten().tolist())) > 1  # the layers really differ


@pytest.mark.parametrize("metric", ["mutual_knn", "cycle_knn", "lcs_knn", "cknna"])
def test_grid_is_deterministic_and_accepts_stacked_tensors(metric):
    xs = torch.stack(layers(40, [6, 6, 6], seed=3))
    ys = [y.numpy() for y in layers(40, [4, 8], seed=4)]
    a, b = layer_grid(metric, xs, ys, k=5), layer_grid(metric, xs, ys, k=5)
    assert torch.equal(a, b)
    assert torch.equal(a, layer_grid(metric, list(xs), [torch.from_numpy(y) for y in ys], k=5))


@pytest.mark.parametrize("preprocess", ["l2", "prh"])
def test_grid_equals_score_after_preprocess(preprocess):
    """Single-layer scores with the same preprocessing equal the grid when the stack-level step is
    per layer (l2), and the grid is finite and in range for prh."""
    grid = layer_grid("mutual_knn", XS, YS, preprocess=preprocess)
    assert ((grid >= 0) & (grid <= 1)).all()
    if preprocess == "l2":
        pairs = torch.tensor([[score("mutual_knn", x, y, preprocess="l2") for y in YS] for x in XS])
        assert torch.allclose(grid, pairs.double(), atol=1e-6)


class LazyLayers(Sequence):
    """Layers generated on access, counting reads (the engine must not need the whole stack)."""

    def __init__(self, n: int, widths: list[int], seed: int) -> None:
        self.n, self.widths, self.seed, self.reads = n, widths, seed, 0

    def __len__(self) -> int:
        return len(self.widths)

    def __getitem__(self, i):
        if not 0 <= i < len(self):
            raise IndexError(i)
        self.reads += 1
        g = torch.Generator().manual_seed(self.seed * 1000 + i)
        return torch.randn(self.n, self.widths[i], generator=g)


def test_lazy_sequences_are_streamed():
    xs, ys = LazyLayers(30, [4, 5, 6], 1), LazyLayers(30, [7, 8], 2)
    grid = layer_grid("mutual_knn", xs, ys, k=3)
    eager = layer_grid("mutual_knn", [xs[i] for i in range(3)], [ys[i] for i in range(2)], k=3)
    assert torch.equal(grid, eager)


def test_permuted_grid_equals_grid_of_permuted_inputs():
    perm = torch.randperm(48, generator=torch.Generator().manual_seed(7))
    for metric in ("mutual_knn", "cycle_knn", "lcs_knn", "cknna"):
        summaries = summarize_layers(metric, XS, YS, k=4)
        got = summaries.grid(perm=perm)
        want = layer_grid(metric, XS, [y[perm] for y in YS], k=4)
        assert torch.allclose(got, want, atol=1e-9), metric
        assert not torch.allclose(got, summaries.grid(), atol=1e-3), metric


def test_descriptors_are_complete():
    ids = [m.id for m in list_metrics()]
    assert {"mutual_knn", "cycle_knn", "lcs_knn", "cknna"} <= set(ids)
    knn = [m.id for m in list_metrics("*knn")]  # a glob; more metrics may match it later
    assert {"cycle_knn", "lcs_knn", "mutual_knn"} <= set(knn) and all(i.endswith("knn") for i in knn)
    assert "cknna" not in knn and knn == sorted(knn)
    d = get_metric("mutual_knn").describe()
    assert d["params"] == {"k": 10, "backend": "torch", "ties": "expected"} and d["higher_is_better"] is True
    assert get_metric("mutual_knn").chance(101, {"k": 10}) == pytest.approx(0.1)


# ---- bad input -------------------------------------------------------------------------------------

X = torch.randn(20, 4)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: score("mutual_knn", X, torch.randn(19, 4)), "20 samples but .* 19"),
        (lambda: score("mutual_knn", X[:10], X[:10]), "k must be smaller than the number of samples N: got k=10, N=10"),
        (lambda: score("mutual_knn", X, X, k=0), "k must be an integer >= 1"),
        (lambda: score("mutual_knn", X, X, k=2.5), "k must be an integer >= 1"),
        (lambda: score("cknna", X[:3], X[:3], k=1), "at least 4 samples"),
        (lambda: score("mutual_knn", torch.full((20, 4), float("nan")), X), "X contains 80 NaN/inf"),
        (lambda: score("mutual_knn", X, X.clone().index_fill_(0, torch.tensor([3]), float("inf"))), "Y contains 4 NaN/inf"),
        (lambda: score("mutual_knn", torch.randn(20, 0), X), "X is empty"),
        (lambda: score("mutual_knn", torch.randn(20), X), "X must be 2-D"),
        (lambda: layer_grid("mutual_knn", [], [X]), "Xs has no layers"),
        (lambda: layer_grid("mutual_knn", [X, torch.randn(19, 4)], [X]), r"Xs\[1\] has 19 samples"),
        (lambda: layer_grid("mutual_knn", torch.randn(20, 4), [X]), r"Xs must be \[L, N, D\]"),
        (lambda: score("nearest", X, X), "unknown metric 'nearest'"),
        (lambda: score("mutual_knn", X, X, topk=5), r"unknown parameter\(s\) \['topk'\]"),
        (lambda: score("mutual_knn", X, X, preprocess="zscore"), "preprocess must be one of"),
        (lambda: score("mutual_knn", X, np.array(["a"] * 20).reshape(20, 1)), "Y must hold real numbers"),
    ],
)
def test_bad_input_raises_user_error(call, match):
    with pytest.raises(UserError, match=match):
        call()


def test_permute_without_hook_is_refused():
    no_hook = [m for m in list_metrics() if "permute" not in m.extra]
    if not no_hook:
        pytest.skip("every registered metric has a permutation hook")
    s = summarize_layers(no_hook[0].id, XS, YS)
    with pytest.raises(UserError, match="no cheap permutation"):
        s.grid(perm=torch.arange(48))


@pytest.mark.parametrize("metric", ["mutual_knn", "cka", "cknna"])
def test_grid_in_blocks_of_x_layers_equals_the_whole_grid(monkeypatch, metric):
    """layer_grid combines X layers a block at a time (GRID_BLOCK_BYTES); one layer per block gives the
    grid of all summaries at once (bit for bit where a cell does not depend on the block, to rounding for
    CKA's product of flattened Grams)."""
    g = torch.Generator().manual_seed(5)
    xs = [torch.randn(60, w, generator=g) for w in (8, 16, 4)]
    ys = [torch.randn(60, w, generator=g) for w in (5, 12)]
    whole = summarize_layers(metric, xs, ys, preprocess="l2").grid()
    monkeypatch.setattr(api, "GRID_BLOCK_BYTES", 1)
    blocked = layer_grid(metric, xs, ys, preprocess="l2")
    assert torch.allclose(blocked, whole, rtol=0, atol=1e-12)
    if metric != "cka":
        assert torch.equal(blocked, whole)


def test_undefined_cell_is_named_with_its_layer_across_blocks(monkeypatch):
    x = np.array([[-3, -3], [0, 0], [-1, -1], [-1, -1], [-1, -1], [-2, -2]], np.float64)
    y = np.array([[-1, 0], [0, 0], [0, 0], [0, 0], [0, 1], [0, -1]], np.float64)
    ok, ok2 = (np.random.default_rng(seed).standard_normal((6, 3)) for seed in (0, 1))
    monkeypatch.setattr(api, "GRID_BLOCK_BYTES", 1)
    with pytest.raises(UndefinedScoreError, match=r"first \(Xs\[2\], Ys\[0\]\)"):
        layer_grid("cknna", [ok, x, y], [ok2], k=2)  # y's self-HSIC is <= 0
