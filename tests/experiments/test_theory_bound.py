"""Misalignment (rotation residual via the metric engine) and the Davis-Kahan bound on it."""

import numpy as np
import pytest
import scipy.linalg
from hypothesis import given, settings
from hypothesis import strategies as st

from platobench.experiments.theory import worlds as wd
from platobench.experiments.theory.bound import davis_kahan_bound, misalignment
from platobench.experiments.theory.experiments import VIOLATION_SLACK, run_worlds
from platobench.experiments.theory.spectral import spectral_embedding


def _direct_rho(Ua, Ub):
    Q, _ = scipy.linalg.orthogonal_procrustes(Ua, Ub)
    return np.linalg.norm(Ua @ Q - Ub) ** 2 / Ua.shape[1]


def _sin_theta_fro(Ua, Ub):
    cos = np.clip(np.linalg.svd(Ua.T @ Ub, compute_uv=False), 0, 1)
    return np.sqrt(np.sum(1 - cos**2))


def test_misalignment_is_the_normalised_procrustes_residual():
    rng = np.random.default_rng(0)
    Ua = np.linalg.qr(rng.standard_normal((40, 3)))[0]
    Ub = np.linalg.qr(Ua + 0.3 * rng.standard_normal((40, 3)))[0]
    assert misalignment(Ua, Ub) == pytest.approx(_direct_rho(Ua, Ub), abs=1e-10)
    assert 0 < misalignment(Ua, Ub) < 2
    Q = np.linalg.qr(rng.standard_normal((3, 3)))[0]
    assert misalignment(Ua, Ua @ Q) < 1e-12


@pytest.mark.parametrize("family", wd.FAMILIES)
def test_identical_graphs_align_up_to_rotation(family):
    """The theorem: same pair graph -> same solution up to rotation, even when modality B enumerates
    the states in its own order (a permuted observation map) and solves there."""
    rng = np.random.default_rng(11)
    w = wd.random_world(50, rng, family)
    perm = rng.permutation(w.n)
    a = spectral_embedding(w.W, w.p, 4)
    b_perm = spectral_embedding(w.W[np.ix_(perm, perm)], w.p[perm], 4)
    U_b = np.empty_like(b_perm.U)
    U_b[perm] = b_perm.U
    assert a.gap > 1e-6
    assert misalignment(a.U, U_b) < 1e-8
    assert davis_kahan_bound(w.W, w.W, w.p, 4).bound == 0.0


def _check_world(seed, n, d, share, kind):
    rng = np.random.default_rng(seed)
    w = wd.random_world(n, rng)
    d = min(d, n - 2)
    if kind == "rewire":
        W_a, W_b = w.W, wd.rewire(w.W, share, rng)
    else:
        W_a = wd.bad_views(w.W, w.p, 1 - share, wd.confusion_kernel(n, rng))
        W_b = wd.bad_views(w.W, w.p, 1 - share, wd.confusion_kernel(n, rng))
    Ua, Ub = spectral_embedding(W_a, w.p, d).U, spectral_embedding(W_b, w.p, d).U
    b = davis_kahan_bound(W_a, W_b, w.p, d)
    rho = misalignment(Ua, Ub)
    assert rho <= b.bound + VIOLATION_SLACK
    assert _sin_theta_fro(Ua, Ub) <= b.sin_theta_bound + 1e-7  # the intermediate sin-Θ claim
    assert rho <= 2 * _sin_theta_fro(Ua, Ub) ** 2 / d + 1e-9  # ρ <= (2/d)||sin Θ||_F^2
    return rho, b


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(6, 40), d=st.integers(1, 6),
       share=st.floats(1e-4, 0.6), kind=st.sampled_from(["rewire", "bad_views"]))
def test_bound_holds_on_random_worlds(seed, n, d, share, kind):
    _check_world(seed, n, d, share, kind)


def test_bound_is_informative_for_small_perturbations():
    """Not vacuous: a tiny rewiring gives a bound far below its trivial value 2, and ρ under it."""
    rho, b = _check_world(seed=4, n=40, d=3, share=0.001, kind="rewire")
    assert b.informative and b.bound < 0.1
    assert rho > 0


def test_bound_holds_at_adversarial_small_gaps():
    """A ring has pairs of equal eigenvalues; a slightly non-uniform p splits them by a tiny gap, so at
    d = 1 the solution is nearly unconstrained. The bound must still hold (it is then trivial)."""
    n = 30
    W = np.zeros((n, n))
    idx = np.arange(n)
    W[idx, (idx + 1) % n] = W[(idx + 1) % n, idx] = 1
    W = wd.normalise_pairs(W)
    rng = np.random.default_rng(0)
    p = np.full(n, 1 / n) * (1 + 1e-6 * rng.standard_normal(n))
    p /= p.sum()
    W_b = wd.rewire(W, 0.05, rng)
    Ua, Ub = spectral_embedding(W, p, 1).U, spectral_embedding(W_b, p, 1).U
    b = davis_kahan_bound(W, W_b, p, 1)
    assert b.gap_a < 1e-5
    assert misalignment(Ua, Ub) <= b.bound + VIOLATION_SLACK
    # d = 2 takes the whole degenerate pair: the gap is large again and the bound informative
    b2 = davis_kahan_bound(W, wd.rewire(W, 0.001, np.random.default_rng(1)), p, 2)
    assert b2.gap_a > 1e-3


def test_three_hundred_worlds_have_no_violation():
    report = run_worlds(300, seed=0)
    assert report["worlds"] == 300 and len(report["rows"]) == 300
    assert report["violations"] == 0
    assert 0 < report["median_ratio"] <= report["max_ratio"] <= 1.0
    assert report["informative"] > 50  # the bound is not trivial on most of the easy worlds
    assert {r["family"] for r in report["rows"]} == set(wd.FAMILIES)
    assert any(r["adversarial"] for r in report["rows"])
