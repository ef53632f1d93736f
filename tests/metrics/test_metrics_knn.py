"""kNN metrics (platobench.metrics.knn): known answers, ties, brute-force agreement, invariances,
permutation hook, faiss backend."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from platobench.errors import UserError
from platobench.metrics import get_metric, layer_grid, score
from platobench.metrics.knn import KnnSets, combine_lcs, knn_sets, permute_knn

KNN_METRICS = ["mutual_knn", "cycle_knn", "lcs_knn", "cknna"]


# ---- brute-force definitions (written from the metric definitions, one sample at a time) ----------


def brute_knn(x: torch.Tensor, k: int) -> list[list[int]]:
    """Neighbour lists by sorting every row on (-inner product, index), self excluded."""
    s = (x.double() @ x.double().T).tolist()
    n = len(s)
    return [sorted((j for j in range(n) if j != i), key=lambda j: (-s[i][j], j))[:k] for i in range(n)]


def brute_lcs(a: list[int], b: list[int]) -> int:
    t = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for p, q in itertools.product(range(len(a)), range(len(b))):
        t[p + 1][q + 1] = t[p][q] + 1 if a[p] == b[q] else max(t[p][q + 1], t[p + 1][q])
    return t[-1][-1]


def brute_inclusion(x: torch.Tensor, k: int) -> list[dict[int, float]]:
    """Per row, the probability of each sample being in the list when ties at the k-th inner product are
    broken uniformly at random: 1 above it, (slots left) / (tied samples) at it."""
    s = (x.double() @ x.double().T).tolist()
    n = len(s)
    out = []
    for i in range(n):
        others = sorted((s[i][j] for j in range(n) if j != i), reverse=True)
        kth = others[k - 1]
        above = [j for j in range(n) if j != i and s[i][j] > kth]
        tied = [j for j in range(n) if j != i and s[i][j] == kth]
        out.append({**{j: 1.0 for j in above}, **{j: (k - len(above)) / len(tied) for j in tied}})
    return out


def brute_expected_mutual(x: torch.Tensor, y: torch.Tensor, k: int) -> float:
    """mutual_knn under ties="expected": mean over rows of sum_j P(j in N_X(i)) P(j in N_Y(i)), over k."""
    px, py = brute_inclusion(x, k), brute_inclusion(y, k)
    return sum(sum(p * py[i].get(j, 0.0) for j, p in px[i].items()) for i in range(len(px))) / (len(px) * k)


def brute_scores(x: torch.Tensor, y: torch.Tensor, k: int) -> dict[str, float]:
    nx, ny = brute_knn(x, k), brute_knn(y, k)
    n = len(nx)
    mutual = brute_expected_mutual(x, y, k)
    cycle = sum(any(i in nx[j] for j in ny[i]) for i in range(n)) / n
    lcs = sum(brute_lcs(nx[i], ny[i]) for i in range(n)) / (n * k)
    return {"mutual_knn": mutual, "cycle_knn": cycle, "lcs_knn": lcs, "cknna": brute_cknna(x, y, nx, ny)}


def hsic_unbiased_dense(a: np.ndarray, b: np.ndarray) -> float:
    """Song et al. (2012) eq. 5 on (possibly asymmetric) zero-diagonal matrices, as the PRH code uses it."""
    n = a.shape[0]
    one = np.ones(n)
    return (np.trace(a @ b) + one @ a @ one * (one @ b @ one) / ((n - 1) * (n - 2))
            - 2 * one @ a @ b @ one / (n - 2)) / (n * (n - 3))


def brute_cknna(x, y, nx, ny) -> float:
    n = x.shape[0]
    kk = (x.double() @ x.double().T).numpy()
    ll = (y.double() @ y.double().T).numpy()
    vx, vy = np.zeros((n, n)), np.zeros((n, n))
    for i in range(n):
        vx[i, nx[i]] = 1
        vy[i, ny[i]] = 1
    m = vx * vy
    kl = hsic_unbiased_dense(m * kk, m * ll)
    return kl / np.sqrt(hsic_unbiased_dense(vx * kk, vx * kk) * hsic_unbiased_dense(vy * ll, vy * ll))


def gaussian(n: int, d: int, seed: int) -> torch.Tensor:
    return torch.randn(n, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


# ---- hand-made known answers ------------------------------------------------------------------------

# 1-D features, inner product x_i x_j. Worked by hand with k = 2:
#   N_X: 0:[4,1] 1:[0,4] 2:[3,1] 3:[2,1] 4:[0,1]      N_Y: 0:[1,2] 1:[2,0] 2:[1,0] 3:[4,0] 4:[3,0]
#   shared per sample 1,1,1,0,1 -> mutual 4/10; cycle (Y-neighbour j with i in N_X(j)): 1,1,0,0,1 -> 3/5;
#   LCS per sample 1,1,1,0,1 -> 4/10.
HAND_X = torch.tensor([[3.0], [1.0], [-1.0], [-2.0], [2.0]])
HAND_Y = torch.tensor([[1.0], [3.0], [2.0], [-1.0], [-3.0]])


def test_hand_made_neighbours_and_scores():
    assert knn_sets(HAND_X, 2).idx.tolist() == [[4, 1], [0, 4], [3, 1], [2, 1], [0, 1]]
    assert knn_sets(HAND_Y, 2).idx.tolist() == [[1, 2], [2, 0], [1, 0], [4, 0], [3, 0]]
    assert score("mutual_knn", HAND_X, HAND_Y, k=2) == pytest.approx(0.4)
    assert score("cycle_knn", HAND_X, HAND_Y, k=2) == pytest.approx(0.6)
    assert score("lcs_knn", HAND_X, HAND_Y, k=2) == pytest.approx(0.4)


def test_lcs_uses_order_of_lists():
    """LCS of [1,2,3] with [3,2,1] is 1, with [1,3,2] is 2, with itself 3 (k = 3, N = 4)."""
    a = KnnSets(torch.tensor([[1, 2, 3]] * 3 + [[0, 1, 2]]), torch.zeros(4, 3), torch.empty(0), torch.empty(0))
    b = KnnSets(torch.tensor([[3, 2, 1], [1, 3, 2], [1, 2, 3], [2, 1, 0]]), torch.zeros(4, 3),
                torch.empty(0), torch.empty(0))
    assert combine_lcs([a], [b], {}).item() == pytest.approx((1 + 2 + 3 + 1) / 12)


def test_ties_broken_by_lower_index():
    """All inner products equal: neighbours are the lowest other indices, in index order."""
    x = torch.ones(6, 3)
    assert knn_sets(x, 3).idx.tolist() == [[1, 2, 3], [0, 2, 3], [0, 1, 3], [0, 1, 2], [0, 1, 2], [0, 1, 2]]
    # Ties inside the list keep index order after larger scores: row 0 sees 2 (score 2) then 1, 3 tied.
    y = torch.tensor([[1.0], [1.0], [2.0], [1.0], [-1.0]])
    assert knn_sets(y, 3).idx[0].tolist() == [2, 1, 3]


@pytest.mark.parametrize("seed", range(3))
def test_ties_match_brute_force_with_many_ties(seed):
    """Integer features in {-1, 0, 1}^2 make most scores tied; torch.topk alone would pick arbitrarily."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(-1, 2, (120, 2), generator=g).float()
    for k in (1, 5, 20):
        assert knn_sets(x, k).idx.tolist() == brute_knn(x, k)


@pytest.mark.parametrize("k", [1, 3, 10])
def test_scores_match_brute_force(k):
    x, y = gaussian(40, 6, 1), gaussian(40, 9, 2)
    y[:, :3] += 2 * x[:, :3]  # some shared structure so that scores are not all near chance
    ref = brute_scores(x, y, k)
    for m in KNN_METRICS:
        assert score(m, x, y, k=k) == pytest.approx(ref[m], abs=1e-9), m


def test_scores_match_brute_force_with_ties():
    g = torch.Generator().manual_seed(5)
    x = torch.randint(-1, 2, (30, 2), generator=g).double()
    y = torch.randint(-2, 3, (30, 2), generator=g).double()
    ref = brute_scores(x, y, 4)
    for m in KNN_METRICS:
        assert score(m, x, y, k=4) == pytest.approx(ref[m], abs=1e-9), m
    nx, ny = brute_knn(x, 4), brute_knn(y, 4)  # the lower-index rule, on request
    listed = sum(len(set(a) & set(b)) for a, b in zip(nx, ny)) / (30 * 4)
    assert score("mutual_knn", x, y, k=4, ties="lower_index") == pytest.approx(listed, abs=1e-12)
    assert listed != pytest.approx(ref["mutual_knn"], abs=1e-3)  # the case has boundary ties that matter


def test_tied_lists_score_their_expectation_not_their_lowest_ids():
    """Closed forms. Every inner product tied (one sign group): each of the N - 1 others is a neighbour with
    probability k / (N - 1), so against any Y the expected overlap is k / (N - 1), chance, where the lower
    index rule puts both sides' lists on samples 0..k and scores far above it. Two sign groups of 25 against
    themselves: k / 24 (independent tie-breaking on both sides), not 1."""
    n, k = 50, 5
    onehot = torch.eye(n, dtype=torch.float64)  # every inner product between two rows is 0: all tied
    y = gaussian(n, 4, 7)
    assert score("mutual_knn", onehot, y, k=k) == pytest.approx(k / (n - 1), abs=1e-12)
    assert score("mutual_knn", onehot, onehot, k=k) == pytest.approx(k / (n - 1), abs=1e-12)
    assert score("mutual_knn", onehot, onehot, k=k, ties="lower_index") == 1.0  # both lists are the lowest ids
    signs = torch.tensor([[1.0], [-1.0]]).repeat(n // 2, 1).double()
    assert score("mutual_knn", signs, signs, k=k) == pytest.approx(k / (n // 2 - 1), abs=1e-12)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(8, 40), k=st.integers(1, 5))
def test_expected_overlap_matches_brute_force_and_permutes_exactly(seed, n, k):
    """With many exact ties: the grid equals the brute-force expectation, and a permutation null's grid from
    the relabelled lists (`permute_knn`) equals the score recomputed on Y[perm]."""
    from platobench.metrics.api import summarize_layers

    g = torch.Generator().manual_seed(seed)
    x = torch.randint(-1, 2, (n, 2), generator=g).double()
    y = torch.randint(-1, 2, (n, 3), generator=g).double()
    if min(len({tuple(r) for r in v.tolist()}) for v in (x, y)) < 2:
        return  # a constant layer has no score
    assert score("mutual_knn", x, y, k=k) == pytest.approx(brute_expected_mutual(x, y, k), abs=1e-12)
    perm = torch.randperm(n, generator=g)
    summaries = summarize_layers("mutual_knn", [x], [y], k=k)
    assert summaries.grid(perm=perm)[0, 0].item() == pytest.approx(score("mutual_knn", x, y[perm], k=k), abs=1e-12)


# ---- properties ---------------------------------------------------------------------------------


def test_identical_inputs_score_one():
    x = gaussian(60, 8, 3)
    for m in ("mutual_knn", "lcs_knn", "cknna"):
        assert score(m, x, x) == pytest.approx(1.0, abs=1e-12), m


def test_independent_data_near_chance():
    """mutual_knn of independent data: E = k/(N-1) (a uniformly random k-subset); sd ~ 0.0025 here."""
    n, k = 400, 10
    value = score("mutual_knn", gaussian(n, 32, 10), gaussian(n, 32, 11), k=k)
    chance = get_metric("mutual_knn").chance(n, {"k": k})
    assert chance == pytest.approx(k / (n - 1))
    assert abs(value - chance) < 0.01
    assert score("lcs_knn", gaussian(n, 32, 10), gaussian(n, 32, 11), k=k) < 0.05


def random_orthogonal(d: int, seed: int) -> torch.Tensor:
    q, r = torch.linalg.qr(gaussian(d, d, seed))
    return q * torch.sign(torch.diagonal(r))


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), scale=st.floats(0.05, 20.0), n=st.integers(12, 40), d=st.integers(2, 12))
def test_rotation_and_isotropic_scaling_invariance(seed, scale, n, d):
    x, y = gaussian(n, d, seed), gaussian(n, d + 1, seed + 1)
    y[:, :2] += x[:, :2]
    x2 = scale * x @ random_orthogonal(d, seed + 2)
    for m in KNN_METRICS:
        assert score(m, x2, y, k=3) == pytest.approx(score(m, x, y, k=3), abs=1e-9), m


def test_translation_is_not_claimed_and_changes_scores():
    x, y = gaussian(50, 5, 7), gaussian(50, 5, 8)
    y += x
    for m in KNN_METRICS:
        assert "translation" not in get_metric(m).invariances
    assert score("mutual_knn", x + 10.0, y) != score("mutual_knn", x, y)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_symmetry_where_claimed(seed):
    x, y = gaussian(30, 4, seed), gaussian(30, 7, seed + 1)
    for m in KNN_METRICS:
        if get_metric(m).symmetric:
            assert score(m, x, y, k=4) == pytest.approx(score(m, y, x, k=4), abs=1e-12), m


def test_cknna_is_not_symmetric_like_the_reference():
    """The reference estimator's 1ᵀK̃L̃1 term makes cknna(X, Y) != cknna(Y, X) in general."""
    x, y = gaussian(40, 3, 1), gaussian(40, 3, 2)
    y += x
    assert not get_metric("cknna").symmetric
    assert score("cknna", x, y, k=5) != pytest.approx(score("cknna", y, x, k=5), abs=1e-9)


def test_joint_sample_permutation_invariance():
    x, y = gaussian(50, 6, 3), gaussian(50, 6, 4)
    y += x
    perm = torch.randperm(50, generator=torch.Generator().manual_seed(0))
    for m in KNN_METRICS:
        assert score(m, x[perm], y[perm]) == pytest.approx(score(m, x, y), abs=1e-9), m


# ---- permutation hook ------------------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(6, 60), k=st.integers(1, 5))
def test_permute_equals_recompute_with_ties(seed, n, k):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(-1, 2, (n, 2), generator=g).float()  # many exact ties
    perm = torch.randperm(n, generator=g)
    got, want = permute_knn(knn_sets(y, k), perm), knn_sets(y[perm], k)
    assert torch.equal(got.idx, want.idx)
    assert torch.equal(got.sim, want.sim)
    twice = permute_knn(got, perm)
    assert torch.equal(twice.idx, knn_sets(y[perm][perm], k).idx)


def test_permute_hook_is_registered_and_validates():
    for m in KNN_METRICS:
        assert get_metric(m).extra["permute"] is permute_knn
    s = knn_sets(gaussian(10, 3, 0), 2)
    with pytest.raises(UserError, match="perm must be a permutation of range\\(10\\)"):
        permute_knn(s, torch.zeros(10, dtype=torch.long))


# ---- backends --------------------------------------------------------------------------------------


def test_faiss_backend_matches_torch():
    x = gaussian(300, 16, 9).float()
    for k in (1, 10):
        a, b = knn_sets(x, k, backend="faiss"), knn_sets(x, k)
        assert torch.equal(a.idx, b.idx)
        assert torch.allclose(a.sim, b.sim, atol=1e-4)


def test_faiss_backend_exact_on_ties():
    g = torch.Generator().manual_seed(3)
    x = torch.randint(-1, 2, (80, 2), generator=g).float()
    t, f = knn_sets(x, 6), knn_sets(x, 6, backend="faiss")
    assert f.idx.tolist() == brute_knn(x, 6)
    assert torch.equal(f.tie_rows, t.tie_rows) and torch.equal(f.tie_cols, t.tie_cols)
    y = torch.randint(-1, 2, (80, 3), generator=g).float()
    assert score("mutual_knn", x, y, k=6, backend="faiss") == score("mutual_knn", x, y, k=6)


def test_unknown_backend():
    with pytest.raises(UserError, match="backend must be one of"):
        score("mutual_knn", HAND_X, HAND_Y, k=2, backend="annoy")


def test_overflowing_features_raise_in_knn_sets_and_are_rescaled_by_score():
    x = torch.tensor([[1.0, 2.0], [3.0, -1.0], [0.5, 0.5], [-2.0, 1.0], [1.0, -3.0]])
    with pytest.raises(UserError, match="overflow"):
        knn_sets(x * 1e30, 2)
    assert score("mutual_knn", x * 2.0**100, HAND_Y, k=2) == score("mutual_knn", x, HAND_Y, k=2)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_gpu_matches_cpu():
    x, y = gaussian(500, 32, 1).float(), gaussian(500, 64, 2).float()
    y[:, :32] += x
    for m in KNN_METRICS:
        assert score(m, x.cuda(), y.cuda()) == pytest.approx(score(m, x, y), abs=1e-6), m



def grid_case() -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """N = 700 (the grouped top-k path), layers of growing scale, a layer of integers full of ties."""
    g = torch.Generator().manual_seed(5)
    xs = [torch.randn(700, 300, generator=g) * (1 + i) for i in range(3)]
    ys = [xs[i][:, :200] + 0.8 * torch.randn(700, 200, generator=g) for i in range(2)]
    ys.append((torch.randn(700, 64, generator=g) * 4).round())
    return xs, ys


#: Metrics whose values are ratios of neighbour counts (exact whatever the CPU's rounding).
COUNT_METRICS = ("mutual_knn", "lcs_knn", "cycle_knn")
#: layer_grid of `grid_case()` with k = 10, as float.hex, computed by the code before the fused
#: preprocessing, grouped top-k and membership combination (commit 4c35503; the same on 1 and 2 threads).
GRIDS_BEFORE = {
    "mutual_knn/l2": [
        "0x1.22d0e56041893p-3", "0x1.0ad33c8ff1f4ep-6", "0x1.d41d41d41d41dp-7",
        "0x1.d8cba134f496fp-7", "0x1.23fc7d38775e8p-2", "0x1.cf6ee27345ecbp-7",
        "0x1.f0337e192940bp-7", "0x1.eb851eb851eb8p-7", "0x1.142ffb51a09f3p-6",
    ],
    "mutual_knn/prh": [
        "0x1.2285ff6a3413ep-3", "0x1.fe3e9c3baf401p-7", "0x1.aeaa46cd6298cp-7",
        "0x1.eb851eb851eb8p-7", "0x1.205442b4cf240p-2", "0x1.e6d6bf577a966p-7",
        "0x1.f4e1dd7a0095dp-7", "0x1.9bf0c94a05443p-7", "0x1.a9fbe76c8b439p-7",
    ],
    "cknna/l2": [
        "0x1.1fccf3e88c04bp-3", "0x1.b017c80e197c8p-7", "0x1.9af9a7a95e626p-7",
        "0x1.92bb9f375a8c0p-7", "0x1.34862ba7ea8d1p-2", "0x1.98c44f6dc0dfbp-7",
        "0x1.adeba27ce64f3p-7", "0x1.b783c984db9b9p-7", "0x1.e815063192a3cp-7",
    ],
    "cknna/prh": [
        "0x1.1f065e37e1f1ep-3", "0x1.a3d417fbc2cb3p-7", "0x1.919e638457cb2p-7",
        "0x1.bc0ea597f144ap-7", "0x1.31ea3f6020d1dp-2", "0x1.895bd95ce69fep-7",
        "0x1.94d26df5cc3ddp-7", "0x1.5a09b4d0a40afp-7", "0x1.7ccb0abed7e45p-7",
    ],
    "lcs_knn/none": [
        "0x1.d548d9ac53172p-4", "0x1.e2285ff6a3414p-7", "0x1.cf6ee27345ecbp-7",
        "0x1.e6d6bf577a966p-7", "0x1.94a05442b4cf2p-3", "0x1.f0337e192940bp-7",
        "0x1.cf6ee27345ecbp-7", "0x1.aeaa46cd6298cp-7", "0x1.0624dd2f1a9fcp-6",
    ],
    "cycle_knn/l2": [
        "0x1.869536202ecfcp-1", "0x1.41d41d41d41d4p-3", "0x1.0750750750750p-3",
        "0x1.21a54d880bb3fp-3", "0x1.edb6db6db6db7p-1", "0x1.0d2a6c405d9f7p-3",
        "0x1.277f44c118de6p-3", "0x1.18de5ab277f45p-3", "0x1.41d41d41d41d4p-3",
    ],
}


@pytest.mark.parametrize("key", sorted(GRIDS_BEFORE))
def test_knn_grids_are_unchanged(key):
    metric, mode = key.split("/")
    xs, ys = grid_case()
    got = [float(v) for v in layer_grid(metric, xs, ys, preprocess=mode, k=10).flatten()]
    before = [float.fromhex(h) for h in GRIDS_BEFORE[key]]
    if metric in COUNT_METRICS:  # ratios of neighbour counts: exact on every CPU
        assert [v.hex() for v in got] == GRIDS_BEFORE[key]
    else:  # cknna sums float32 kernel products, whose rounding differs between CPUs (AVX2 vs AVX-512 kernels)
        assert got == pytest.approx(before, rel=1e-6)


def test_grouped_top_equals_topk():
    """knn_search._top (the m best groups of columns, then numpy's selection) gives topk's values and,
    where no other column has the same score, its columns: random scores, ties, duplicated rows, NaN, -inf, and widths
    that are not a multiple of the group."""
    from platobench.metrics.knn_search import _top

    g = torch.Generator().manual_seed(8)
    for n, kind in itertools.product((400, 1000, 1003), range(4)):
        s = torch.randn(300, n, generator=g)
        if kind == 1:
            s = s.round(decimals=1)
        elif kind == 2:
            s[:, n // 2 :] = s[:, : n - n // 2]
        elif kind == 3:
            s[::7, ::5] = float("-inf")
            s[5, 3] = float("nan")
        for m in (1, 11, 30):
            got, want = _top(s, m), s.topk(m, dim=1)
            assert torch.equal(got.values.nan_to_num(9.0), want.values.nan_to_num(9.0)), (n, kind, m)
            distinct = (s[:, None, :] == want.values[:, :, None]).sum(2) == 1  # no other column has the score
            assert torch.equal(torch.where(distinct, got.indices, 0), torch.where(distinct, want.indices, 0))


def test_mutual_counts_equal_the_list_intersections(monkeypatch):
    from platobench.metrics import knn as knn_module
    from platobench.metrics.knn import combine_mutual

    g = torch.Generator().manual_seed(9)
    sx = [knn_sets(torch.randn(200, 8, generator=g), 6) for _ in range(3)]
    sy = [knn_sets(torch.randn(200, 5, generator=g), 6) for _ in range(2)] + [sx[1]]
    want = torch.tensor([[sum(len(set(a.idx[i].tolist()) & set(b.idx[i].tolist())) for i in range(200)) / (200 * 6)
                          for b in sy] for a in sx], dtype=torch.float64)
    assert torch.equal(combine_mutual(sx, sy, {}), want)
    monkeypatch.setattr(knn_module, "BLOCK_BYTES", 4000)  # blocks of a few samples
    assert torch.equal(combine_mutual(sx, sy, {}), want)


def test_expected_counts_equal_the_listed_ones_without_ties_and_hold_in_small_blocks(monkeypatch):
    """The weighted path (inclusion probabilities) gives the listed counts exactly where no row ties, and
    the same grid whatever the block of samples, ties included."""
    from platobench.metrics import knn as knn_module
    from platobench.metrics.knn import _expected_counts, combine_mutual

    g = torch.Generator().manual_seed(4)
    sx = [knn_sets(torch.randn(150, 6, generator=g), 5) for _ in range(3)]
    sy = [knn_sets(torch.randn(150, 4, generator=g), 5) for _ in range(2)]
    assert torch.equal(_expected_counts(sx, sy) / (150 * 5), combine_mutual(sx, sy, {"ties": "lower_index"}))
    tied = [knn_sets(torch.randint(-1, 2, (150, 2), generator=g).float(), 5) for _ in range(2)]
    whole = combine_mutual([*sx, tied[0]], [*sy, tied[1]], {"ties": "expected"})
    monkeypatch.setattr(knn_module, "BLOCK_BYTES", 6000)  # a few samples per block
    assert torch.allclose(combine_mutual([*sx, tied[0]], [*sy, tied[1]], {"ties": "expected"}), whole, rtol=0, atol=1e-15)
