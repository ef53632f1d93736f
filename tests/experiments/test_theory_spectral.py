"""Closed-form solution of a finite world: whitening, known spectra, the generalised eigenproblem."""

import numpy as np
import pytest
import scipy.linalg

from platobench.errors import UserError
from platobench.experiments.theory import worlds as wd
from platobench.experiments.theory.spectral import spectral_embedding, whiten


def _world(n=30, seed=0, family="sbm"):
    return wd.random_world(n, np.random.default_rng(seed), family)


@pytest.mark.parametrize("family", wd.FAMILIES)
def test_solution_is_whitened_and_centred(family):
    w = _world(family=family)
    sol = spectral_embedding(w.W, w.p, 4)
    np.testing.assert_allclose(sol.U.T @ sol.U, np.eye(4), atol=1e-10)
    np.testing.assert_allclose(w.p @ sol.F, np.zeros(4), atol=1e-10)  # E_p[f] = 0
    np.testing.assert_allclose(sol.F.T @ (w.p[:, None] * sol.F), np.eye(4), atol=1e-10)  # Cov_p[f] = I


def test_eigenvalues_solve_generalised_problem():
    """μ are the eigenvalues of L v = μ P v without the trivial 0 (constant v)."""
    w = _world(n=25, seed=3, family="geometric")
    sol = spectral_embedding(w.W, w.p, 3)
    L = np.diag(w.W.sum(1)) - w.W
    general = scipy.linalg.eigh(L, np.diag(w.p), eigvals_only=True)
    np.testing.assert_allclose(general[1:], sol.eigenvalues, atol=1e-9)
    # The columns of F are generalised eigenvectors: L F = P F diag(μ_1..μ_d)
    np.testing.assert_allclose(L @ sol.F, (w.p[:, None] * sol.F) * sol.eigenvalues[:3], atol=1e-9)
    assert sol.gap == pytest.approx(sol.eigenvalues[3] - sol.eigenvalues[2])


def test_complete_graph_spectrum_closed_form():
    """K_n with uniform p: W = (J - I) / (n(n-1)), whitened Laplacian = (nI - J)/(n-1): all μ = n/(n-1)."""
    n = 9
    W = wd.normalise_pairs(np.ones((n, n)) - np.eye(n))
    sol = spectral_embedding(W, np.full(n, 1 / n), 2)
    np.testing.assert_allclose(sol.eigenvalues, np.full(n - 1, n / (n - 1)), rtol=1e-12)
    assert sol.gap == pytest.approx(0.0, abs=1e-12)


def test_two_components_give_the_signed_indicator():
    """Two disconnected cliques of masses a, b: d=1 solution is ±(sqrt(b/a) on A, -sqrt(a/b) on B)."""
    n_a, n = 4, 10
    W = np.zeros((n, n))
    W[:n_a, :n_a] = 1
    W[n_a:, n_a:] = 1
    np.fill_diagonal(W, 0)
    p = np.random.default_rng(0).dirichlet(np.ones(n)) * 0.5 + 0.5 / n
    a = p[:n_a].sum()
    b = 1 - a
    sol = spectral_embedding(wd.normalise_pairs(W), p, 1)
    expected = np.where(np.arange(n) < n_a, np.sqrt(b / a), -np.sqrt(a / b))
    f = sol.F[:, 0] * np.sign(sol.F[0, 0])
    np.testing.assert_allclose(f, expected, atol=1e-10)
    assert sol.eigenvalues[0] == pytest.approx(0.0, abs=1e-12)


def test_whiten_recovers_solution_from_any_invertible_reparametrisation():
    w = _world(n=20, seed=5)
    sol = spectral_embedding(w.W, w.p, 3)
    A = np.random.default_rng(1).standard_normal((3, 3)) + 3 * np.eye(3)
    U = whiten(sol.F @ A + 7.0, w.p)
    # same column space, still orthonormal: U = sol.U Q for an orthogonal Q
    Q = sol.U.T @ U
    np.testing.assert_allclose(Q.T @ Q, np.eye(3), atol=1e-10)
    np.testing.assert_allclose(sol.U @ Q, U, atol=1e-10)


def test_input_errors_name_the_problem():
    w = _world(n=10)
    with pytest.raises(UserError, match=r"d must be in \[1, n-1\]"):
        spectral_embedding(w.W, w.p, 10)
    with pytest.raises(UserError, match="p must be a 1-D distribution"):
        spectral_embedding(w.W, np.full(10, 0.2), 2)
    with pytest.raises(UserError, match="symmetric"):
        spectral_embedding(np.triu(w.W), w.p, 2)
    with pytest.raises(UserError, match="collapsed"):
        whiten(np.ones((10, 2)), w.p)
