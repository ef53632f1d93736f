"""Exact kNN search engines (platobench.metrics.knn_search): the whole-matrix engine, the tiled engine
and a row-by-row search give the same lists, ties and tie candidates, on random features, duplicate
samples and integer features full of exact ties. Bit-for-bit in float32 (MKL computes every entry of
a float32 product in the same order); in float64 MKL's own full product x xᵀ is not exactly symmetric,
so there the engines agree on the lists and to rounding on the scores."""

from __future__ import annotations

import pytest
import torch

from platobench.errors import UserError
from platobench.metrics import knn_search
from platobench.metrics.knn_search import KnnSets, _knn_rows, _knn_tiles, knn_sets
from platobench.metrics.products import self_product


def brute(x: torch.Tensor, k: int) -> list[list[int]]:
    """Lists by sorting every row of float64 inner products on (-score, index), self excluded."""
    s = (x.double() @ x.double().T).tolist()
    n = len(s)
    return [sorted((j for j in range(n) if j != i), key=lambda j: (-s[i][j], j))[:k] for i in range(n)]


def rows_engine(x: torch.Tensor, k: int) -> KnnSets:
    return _knn_rows(x, k, torch.arange(x.shape[0]))


def assert_same(a: KnnSets, b: KnnSets) -> None:
    assert torch.equal(a.idx, b.idx)
    assert torch.equal(a.sim, b.sim)
    ka, kb = a.tie_rows * 10**6 + a.tie_cols, b.tie_rows * 10**6 + b.tie_cols
    assert torch.equal(ka.sort().values, kb.sort().values)


def duplicated(n: int, d: int, seed: int) -> torch.Tensor:
    """n l2-normalised rows, every one present twice, in a seeded random order."""
    g = torch.Generator().manual_seed(seed)
    base = torch.nn.functional.normalize(torch.randn(n // 2, d, generator=g), dim=1)
    return torch.cat([base, base])[torch.randperm(n, generator=g)]


CASES = {
    "random": lambda: torch.nn.functional.normalize(torch.randn(600, 48, generator=torch.Generator().manual_seed(0)), dim=1),
    "duplicates": lambda: duplicated(600, 48, 1),
    "integer ties": lambda: torch.randint(-1, 2, (300, 3), generator=torch.Generator().manual_seed(2)).float(),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("k", [1, 10])
def test_engines_agree(case, k):
    x = CASES[case]()
    whole = knn_sets(x, k)
    assert_same(whole, rows_engine(x, k))
    for tile in (64, 100, x.shape[0]):  # tiles that divide N, that do not, and one tile
        assert_same(_knn_tiles(x, k, tile=tile), whole)


@pytest.mark.parametrize("case", ["duplicates", "integer ties"])
def test_lists_equal_brute_force(case):
    x = CASES[case]()[:120]
    want = brute(x, 6)
    assert knn_sets(x, 6).idx.tolist() == want
    assert _knn_tiles(x, 6, tile=32).idx.tolist() == want


def test_duplicates_tie_exactly_and_the_lower_index_wins():
    """A sample's duplicate is its nearest neighbour, with the other copies' scores exactly equal."""
    x = duplicated(800, 64, 4)
    s = self_product(x, out_dtype=x.dtype)
    assert torch.equal(s, s.T) and torch.equal(s, x @ x.T)
    sets = _knn_tiles(x, 3, tile=128)
    twin = torch.tensor([int(((x == x[i]).all(1) & (torch.arange(800) != i)).nonzero()) for i in range(800)])
    assert torch.equal(sets.idx[:, 0], twin)


def test_large_n_uses_tiles_and_matches_rows(monkeypatch):
    """Above the whole-matrix budget knn_sets tiles; the lists equal the row-by-row search."""
    x = duplicated(3000, 16, 5)
    monkeypatch.setattr(knn_search, "BLOCK_BYTES", 3000 * 3000 * 4 - 1)  # N² scores no longer fit
    monkeypatch.setattr(knn_search, "TILE", 700)
    calls = []
    real = knn_search._knn_tiles
    monkeypatch.setattr(knn_search, "_knn_tiles", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    got = knn_sets(x, 10)
    assert calls == [1]
    assert_same(got, rows_engine(x, 10))


def test_tiles_refuse_overflow():
    x = torch.randn(50, 4, generator=torch.Generator().manual_seed(6)) * 1e30
    with pytest.raises(UserError, match="overflow"):
        _knn_tiles(x, 3, tile=16)


def test_float64_engines_agree_to_rounding():
    x = torch.randn(400, 20, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    rows, whole, tiles = rows_engine(x, 10), knn_sets(x, 10), _knn_tiles(x, 10, tile=64)
    assert torch.equal(whole.idx, rows.idx) and torch.equal(tiles.idx, rows.idx)
    assert torch.allclose(whole.sim, rows.sim, rtol=0, atol=1e-13)
    assert torch.allclose(tiles.sim, rows.sim, rtol=0, atol=1e-13)


def test_self_product_equals_full_product():
    g = torch.Generator().manual_seed(7)
    for n, d in [(1, 3), (129, 5), (1000, 40), (300, 1)]:
        x = torch.randn(n, d, generator=g)
        assert torch.equal(self_product(x, out_dtype=torch.float32), x @ x.T)
        x64 = x.double()
        assert torch.allclose(self_product(x64), x64 @ x64.T, rtol=0, atol=1e-12)
