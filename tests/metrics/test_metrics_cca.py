"""SVCCA (platobench.metrics.cca): principal-angle closed form, a hand-made case, invariances,
determinism, grid == per pair, parameter errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.linalg import subspace_angles

from platobench.errors import UserError
from platobench.metrics import layer_grid, score
from platobench.metrics.cca import svd_directions


def rand(n: int, d: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, d))


def random_orthogonal(d: int, seed: int) -> np.ndarray:
    q, r = np.linalg.qr(np.random.default_rng(seed).standard_normal((d, d)))
    return q * np.sign(np.diag(r))


def svcca_by_definition(x: np.ndarray, y: np.ndarray, variance: float) -> float:
    """Raghu et al.: SVD keeping `variance` of the variance, then CCA = cosines of principal angles."""

    def reduce(a):
        a = a - a.mean(0)
        u, s, _ = np.linalg.svd(a, full_matrices=False)
        k = int(np.searchsorted(np.cumsum(s**2) / np.sum(s**2), variance) + 1)
        return u[:, :k] * s[:k]

    return float(np.cos(subspace_angles(reduce(x), reduce(y))).mean())


@pytest.mark.parametrize("variance", [0.5, 0.9, 0.99])
def test_matches_principal_angle_definition(variance):
    x, y = rand(60, 8, 0), rand(60, 10, 1)
    y[:, :3] += x[:, :3]
    assert score("svcca", x, y, variance=variance) == pytest.approx(svcca_by_definition(x, y, variance), abs=1e-10)


def test_hand_made_half_shared_case():
    """X = [a, b], Y = [a, c] with a, b, c orthogonal centred columns of equal norm: correlations 1 and 0."""
    q = np.linalg.qr(np.c_[np.ones(12), rand(12, 3, 2)])[0][:, 1:]  # orthonormal, orthogonal to 1
    a, b, c = q.T
    x, y = np.c_[a, b], np.c_[a, c]
    assert score("svcca", x, y) == pytest.approx(0.5, abs=1e-12)


def test_dim_keeps_exactly_that_many_directions():
    x = torch.from_numpy(rand(30, 9, 3))
    assert svd_directions(x, 0.99, 4).shape == (30, 4)
    u = svd_directions(x, 0.5, None)
    assert 1 <= u.shape[1] < 9 and torch.allclose(u.T @ u, torch.eye(u.shape[1], dtype=torch.float64), atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), c=st.floats(0.1, 10.0), shift=st.floats(-5.0, 5.0))
def test_invariances(seed, c, shift):
    x, z = rand(30, 6, seed), rand(30, 5, seed + 1)
    x2 = c * x @ random_orthogonal(6, seed + 2) + shift
    assert score("svcca", x, x2) == pytest.approx(1.0, abs=1e-8)
    assert score("svcca", x2, z) == pytest.approx(score("svcca", x, z), abs=1e-8)


def test_deterministic_symmetric_grid_equals_pairs():
    xs = [rand(40, d, d) for d in (3, 12)]
    ys = [xs[1] @ rand(12, 6, 1) + 0.5 * rand(40, 6, 2), rand(40, 5, 3), rand(40, 20, 4)]
    grid = layer_grid("svcca", xs, ys)
    assert torch.equal(grid, layer_grid("svcca", xs, ys))
    pairs = torch.tensor([[score("svcca", x, y) for y in ys] for x in xs], dtype=torch.float64)
    assert torch.allclose(grid, pairs, atol=1e-6, rtol=0)
    assert score("svcca", xs[1], ys[0]) == pytest.approx(score("svcca", ys[0], xs[1]), abs=1e-12)
    assert ((grid >= 0) & (grid <= 1)).all()


@pytest.mark.parametrize(
    "kw,message",
    [
        ({"variance": 1.0}, "variance must be a number strictly between 0 and 1"),
        ({"variance": 0}, "variance must be a number strictly between 0 and 1"),
        ({"dim": 0}, "dim must be an integer >= 1"),
        ({"dim": 20}, "dim must be < N=20"),
        ({"dim": 6}, "exceeds a layer's rank 5"),
    ],
)
def test_bad_parameters(kw, message):
    x = rand(20, 5, 0)
    with pytest.raises(UserError, match=message):
        score("svcca", x, x, **kw)


def test_constant_layer_is_rejected():
    with pytest.raises(UserError, match="constant"):
        score("svcca", np.ones((10, 3)), rand(10, 3, 0))
