"""Procrustes residuals (platobench.metrics.procrustes): closed form vs fitted rotation, scipy's
orthogonal Procrustes, invariances, the held-out variant against its written definition, errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.linalg import orthogonal_procrustes, subspace_angles

from platobench.errors import UserError
from platobench.metrics import layer_grid, score
from platobench.metrics.procrustes import centre_unit, fit_rotation, split_halves


def rand(n: int, d: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, d))


def random_orthogonal(d: int, seed: int) -> np.ndarray:
    q, r = np.linalg.qr(np.random.default_rng(seed).standard_normal((d, d)))
    return q * np.sign(np.diag(r))


def prepared(x: np.ndarray, width: int) -> np.ndarray:
    """Centred, unit Frobenius norm, zero-padded to `width` columns (the metric's definition)."""
    x = x - x.mean(0)
    x = x / np.linalg.norm(x)
    return np.pad(x, ((0, 0), (0, width - x.shape[1])))


def test_fit_rotation_matches_scipy_and_is_orthogonal():
    x, y = rand(40, 6, 0), rand(40, 6, 1)
    q = fit_rotation(x, y).numpy()
    assert np.allclose(q, orthogonal_procrustes(x, y)[0], atol=1e-10)
    assert np.allclose(q.T @ q, np.eye(6), atol=1e-10)


def test_fit_rotation_rectangular_has_orthonormal_rows_or_columns():
    x, y = rand(30, 4, 2), rand(30, 7, 3)
    q = fit_rotation(x, y).numpy()
    assert q.shape == (4, 7) and np.allclose(q @ q.T, np.eye(4), atol=1e-10)
    q2 = fit_rotation(y, x).numpy()
    assert q2.shape == (7, 4) and np.allclose(q2.T @ q2, np.eye(4), atol=1e-10)


@pytest.mark.parametrize("dx,dy", [(5, 5), (3, 8), (9, 4)])
def test_closed_form_equals_residual_of_the_fitted_rotation(dx, dy):
    x, y = rand(25, dx, 4), rand(25, dy, 5)
    y[:, :2] += x[:, :2]
    w = max(dx, dy)
    xp, yp = prepared(x, w), prepared(y, w)
    q = fit_rotation(xp, yp).numpy()
    fitted = np.linalg.norm(xp @ q - yp) ** 2
    closed = 2 * (1 - np.linalg.svd(xp.T @ yp, compute_uv=False).sum())
    assert score("rotation_residual", x, y) == pytest.approx(closed, abs=1e-10)
    assert fitted == pytest.approx(closed, abs=1e-10)
    # optimality: no random rotation does better
    for s in range(5):
        r = random_orthogonal(w, 100 + s)
        assert np.linalg.norm(xp @ r - yp) ** 2 >= closed - 1e-12


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), c=st.floats(0.1, 10.0), shift=st.floats(-5.0, 5.0), extra=st.integers(0, 3))
def test_residual_zero_for_rotated_scaled_translated_copy(seed, c, shift, extra):
    x = rand(20, 5, seed)
    # a rotation of x embedded in a wider space (zero-padding semantics)
    y = c * np.pad(x, ((0, 0), (0, extra))) @ random_orthogonal(5 + extra, seed + 1) + shift
    assert score("rotation_residual", x, y) == pytest.approx(0.0, abs=1e-8)
    z = rand(20, 4, seed + 2)
    assert score("rotation_residual", y, z) == pytest.approx(score("rotation_residual", x, z), abs=1e-8)
    assert score("rotation_residual_heldout", x, y) == pytest.approx(0.0, abs=1e-8)
    assert score("rotation_residual_heldout", y, z) == pytest.approx(score("rotation_residual_heldout", x, z), abs=1e-8)


def test_wide_features_heldout_identity_and_rotation_are_zero():
    """D > N/2: the fit half's row space makes the map unique, so copies still score 0."""
    x = rand(20, 50, 7)
    assert score("rotation_residual_heldout", x, x) == pytest.approx(0.0, abs=1e-10)
    assert score("rotation_residual_heldout", x, 3 * x @ random_orthogonal(50, 8) - 1) == pytest.approx(0.0, abs=1e-8)


def heldout_by_definition(x: np.ndarray, y: np.ndarray, seed: int) -> float:
    """The documented held-out residual, written out with numpy and scipy."""
    fit, held = (t.numpy() for t in split_halves(x.shape[0], seed))

    def coords(a):
        mean = a[fit].mean(0)
        _, s, vt = np.linalg.svd(a[fit] - mean, full_matrices=False)
        v = vt[s > s[0] * max(a[fit].shape) * np.finfo(float).eps].T
        h = (a[held] - mean) @ v
        return (a[fit] - mean) @ v, h / np.linalg.norm(h)

    (cx, hx), (cy, hy) = coords(x), coords(y)
    r = max(cx.shape[1], cy.shape[1])
    pad = lambda m: np.pad(m, ((0, 0), (0, r - m.shape[1])))
    q = orthogonal_procrustes(pad(cx), pad(cy))[0]
    return float(np.linalg.norm(pad(hx) @ q - pad(hy)) ** 2)


@pytest.mark.parametrize("dx,dy,seed", [(4, 4, 0), (3, 6, 1), (6, 3, 2), (12, 12, 3)])
def test_heldout_matches_written_definition(dx, dy, seed):
    x, y = rand(30, dx, 10 + seed), rand(30, dy, 20 + seed)
    y[:, :2] += x[:, :2]
    assert score("rotation_residual_heldout", x, y, split_seed=seed) == pytest.approx(heldout_by_definition(x, y, seed), abs=1e-8)


def test_heldout_split_is_seeded_and_exceeds_in_sample_on_noise():
    fit, held = split_halves(11, 3)
    assert len(fit) == 5 and len(held) == 6 and sorted(fit.tolist() + held.tolist()) == list(range(11))
    assert torch.equal(split_halves(11, 3)[0], fit) and not torch.equal(split_halves(11, 4)[0], fit)
    x, y = rand(60, 8, 1), rand(60, 8, 2)
    a, b = score("rotation_residual_heldout", x, y, split_seed=1), score("rotation_residual_heldout", x, y, split_seed=2)
    assert a != b and a == score("rotation_residual_heldout", x, y, split_seed=1)
    # independent data: the in-sample fit overfits (< 2), the held-out residual does not (about 2)
    assert score("rotation_residual", x, y) < 1.6 and 1.7 < a < 2.3


def test_grid_equals_per_pair_and_symmetry():
    xs = [rand(24, d, d) for d in (2, 7, 30)]
    ys = [xs[1] @ rand(7, 5, 1) + 0.2 * rand(24, 5, 2), rand(24, 40, 3)]
    for metric in ("rotation_residual", "rotation_residual_heldout"):
        grid = layer_grid(metric, xs, ys)
        pairs = torch.tensor([[score(metric, x, y) for y in ys] for x in xs], dtype=torch.float64)
        assert torch.allclose(grid, pairs, atol=1e-6, rtol=0)
        assert score(metric, xs[1], ys[0]) == pytest.approx(score(metric, ys[0], xs[1]), abs=1e-9)


def test_residual_relates_to_principal_angles_for_orthonormal_bases():
    """Closed form sanity: for two centred, equal-norm orthonormal-column frames the nuclear norm is the
    sum of the cosines of the principal angles between their spans."""
    x = rand(40, 3, 5)
    y = rand(40, 3, 6)
    qx = np.linalg.qr(x - x.mean(0))[0]
    qy = np.linalg.qr(y - y.mean(0))[0]
    cos = np.cos(subspace_angles(qx, qy))
    assert score("rotation_residual", qx, qy) == pytest.approx(2 * (1 - cos.sum() / 3), abs=1e-10)


def test_errors_name_the_problem():
    with pytest.raises(UserError, match="constant"):
        score("rotation_residual", np.ones((5, 2)), rand(5, 2, 0))
    with pytest.raises(UserError, match="N >= 4"):
        score("rotation_residual_heldout", rand(3, 2, 0), rand(3, 2, 1))
    with pytest.raises(UserError, match="seed must be an integer"):
        score("rotation_residual_heldout", rand(8, 2, 0), rand(8, 2, 1), split_seed=-1)
    with pytest.raises(UserError, match="samples"):
        fit_rotation(rand(5, 2, 0), rand(6, 2, 0))
    with pytest.raises(UserError, match="constant"):
        centre_unit(torch.ones(4, 2))
