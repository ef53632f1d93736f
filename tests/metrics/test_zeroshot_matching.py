"""Blind matching solvers (platobench.metrics.matching): planted problems, the brute-force oracle,
invariances, reproducibility and error messages."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from scipy.stats import ortho_group

from platobench.errors import UserError
from platobench.metrics.matching import (
    assignment_gain,
    blind_match,
    candidate_lists,
    centered_linear_kernel,
    cosine_kernel,
    qap_objective,
    standardize_kernel,
)


def planted(n: int, d: int, noise: float, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """X [n, d]; Y = (X Q + noise) with rows shuffled; truth[i] = row of Y that holds X's row i."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    Q = ortho_group.rvs(d, random_state=seed)
    shuffle = rng.permutation(n)
    Y = (X @ Q + noise * rng.standard_normal((n, d)))[shuffle]
    return X, Y, np.argsort(shuffle)


def sym(n: int, seed: int) -> np.ndarray:
    M = np.random.default_rng(seed).standard_normal((n, n))
    return M + M.T


def test_standardize_known_answer_and_idempotent():
    K = np.array([[9.0, 1.0, 2.0], [1.0, -4.0, 3.0], [2.0, 3.0, 7.0]])
    S = standardize_kernel(K)
    sd = np.sqrt(2.0 / 3.0)  # off-diagonal values 1, 2, 3 (each twice): mean 2, population std sqrt(2/3)
    expected = np.array([[0.0, -1 / sd, 0.0], [-1 / sd, 0.0, 1 / sd], [0.0, 1 / sd, 0.0]])
    np.testing.assert_allclose(S, expected, atol=1e-12)
    np.testing.assert_allclose(standardize_kernel(S), S, atol=1e-12)


def test_standardize_removes_affine_changes_of_the_kernel():
    K = sym(6, 0)
    np.testing.assert_allclose(standardize_kernel(3.5 * K - 2.0), standardize_kernel(K), atol=1e-12)


@pytest.mark.parametrize("solver", ["faq", "gw"])
def test_planted_copy_recovered_exactly_at_low_noise(solver):
    X, Y, truth = planted(n=60, d=16, noise=0.01, seed=3)
    result = blind_match(cosine_kernel(X), cosine_kernel(Y), solver=solver, seed=0)
    np.testing.assert_array_equal(result.permutation, truth)
    assert result.correlation > 0.99


def test_brute_recovers_planted_copy_and_is_exhaustive():
    X, Y, truth = planted(n=6, d=3, noise=0.02, seed=1)
    A, B = standardize_kernel(cosine_kernel(X)), standardize_kernel(cosine_kernel(Y))
    result = blind_match(A, B, solver="brute")
    np.testing.assert_array_equal(result.permutation, truth)
    best = max(qap_objective(A, B, np.array(p)) for p in itertools.permutations(range(6)))
    assert result.objective == pytest.approx(best, abs=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_solvers_agree_with_brute_on_small_planted_problems(seed):
    X, Y, truth = planted(n=8, d=4, noise=0.2, seed=seed)
    A, B = cosine_kernel(X), cosine_kernel(Y)
    oracle = blind_match(A, B, solver="brute")
    np.testing.assert_array_equal(oracle.permutation, truth)
    for solver in ("faq", "gw"):
        result = blind_match(A, B, solver=solver, seed=seed, restarts=8)
        np.testing.assert_array_equal(result.permutation, oracle.permutation)
        assert result.objective == pytest.approx(oracle.objective, abs=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_brute_bounds_every_solver_and_the_truth_on_hard_problems(seed):
    X, Y, truth = planted(n=8, d=4, noise=0.6, seed=seed)
    A, B = cosine_kernel(X), cosine_kernel(Y)
    oracle = blind_match(A, B, solver="brute")
    assert oracle.objective >= qap_objective(standardize_kernel(A), standardize_kernel(B), truth) - 1e-9
    for solver in ("faq", "gw"):
        assert blind_match(A, B, solver=solver, seed=seed).objective <= oracle.objective + 1e-9


def test_correlation_is_pearson_of_off_diagonal_entries():
    A, B = sym(7, 1), sym(7, 2)
    result = blind_match(A, B, solver="faq", seed=0)
    p = result.permutation
    off = ~np.eye(7, dtype=bool)
    pearson = np.corrcoef(A[off], B[np.ix_(p, p)][off])[0, 1]
    assert result.correlation == pytest.approx(pearson, abs=1e-12)
    assert result.objective == pytest.approx(pearson * 7 * 6, abs=1e-9)


@pytest.mark.parametrize("solver", ["faq", "gw"])
def test_best_start_is_kept(solver):
    result = blind_match(sym(12, 4), sym(12, 5), solver=solver, seed=1, restarts=5)
    starts = result.info["start_objectives"]
    assert len(starts) == 6
    assert result.objective == pytest.approx(max(starts), abs=1e-12)
    assert result.info["best_start"] == int(np.argmax(starts))


@pytest.mark.parametrize("solver", ["faq", "gw"])
def test_seed_reproduces_and_changes_random_starts(solver):
    A, B = sym(15, 6), sym(15, 7)
    r1 = blind_match(A, B, solver=solver, seed=3, restarts=4)
    r2 = blind_match(A, B, solver=solver, seed=3, restarts=4)
    r3 = blind_match(A, B, solver=solver, seed=4, restarts=4)
    np.testing.assert_array_equal(r1.permutation, r2.permutation)
    assert r1.info["start_objectives"] == r2.info["start_objectives"]
    assert r1.info["start_objectives"][0] == r3.info["start_objectives"][0]  # deterministic start
    assert r1.info["start_objectives"][1:] != r3.info["start_objectives"][1:]


@pytest.mark.parametrize("solver", ["faq", "gw", "brute"])
def test_invariant_to_rotating_either_side(solver):
    n = 8 if solver == "brute" else 30
    X, Y, truth = planted(n=n, d=6, noise=0.05, seed=11)
    base = blind_match(cosine_kernel(X), cosine_kernel(Y), solver=solver, seed=0)
    Qx, Qy = ortho_group.rvs(6, random_state=1), ortho_group.rvs(6, random_state=2)
    rot_x = blind_match(cosine_kernel(X @ Qx), cosine_kernel(Y), solver=solver, seed=0)
    rot_y = blind_match(cosine_kernel(X), cosine_kernel(2.0 * Y @ Qy), solver=solver, seed=0)
    np.testing.assert_array_equal(rot_x.permutation, base.permutation)
    np.testing.assert_array_equal(rot_y.permutation, base.permutation)
    np.testing.assert_array_equal(base.permutation, truth)


def test_centered_linear_kernel_ignores_rotation_and_translation():
    X = np.random.default_rng(0).standard_normal((10, 4))
    Q = ortho_group.rvs(4, random_state=0)
    np.testing.assert_allclose(centered_linear_kernel(X @ Q + 5.0), centered_linear_kernel(X), atol=1e-10)


def test_torch_and_numpy_inputs_agree():
    A, B = sym(9, 8), sym(9, 9)
    r_np = blind_match(A, B, solver="faq", seed=0)
    r_t = blind_match(torch.from_numpy(A).float(), torch.from_numpy(B), solver="faq", seed=0)
    np.testing.assert_array_equal(r_np.permutation, r_t.permutation)


def test_gain_matches_its_definition_and_sums_to_objective():
    A, B = sym(6, 10), sym(6, 11)
    p = np.array([2, 0, 5, 1, 4, 3])
    As, Bs = standardize_kernel(A), standardize_kernel(B)
    G = assignment_gain(A, B, p)
    for i, j in itertools.product(range(6), range(6)):
        assert G[i, j] == pytest.approx(sum(As[i, k] * Bs[p[k], j] for k in range(6)), abs=1e-12)
    assert G[np.arange(6), p].sum() == pytest.approx(qap_objective(As, Bs, p), abs=1e-9)


def test_candidate_lists_start_with_assignment_then_largest_gain():
    A, B = sym(7, 12), sym(7, 13)
    p = np.array([6, 5, 4, 3, 2, 1, 0])
    cands = candidate_lists(A, B, p, k=5)
    G = assignment_gain(A, B, p)
    assert cands.shape == (7, 5)
    np.testing.assert_array_equal(cands[:, 0], p)
    for i in range(7):
        others = sorted((j for j in range(7) if j != p[i]), key=lambda j: (-G[i, j], j))
        assert cands[i, 1:].tolist() == others[:4]
    assert candidate_lists(A, B, p, k=20).shape == (7, 7)


@pytest.mark.parametrize(
    "A, B, kwargs, message",
    [
        (np.ones((3, 4)), np.eye(3), {}, "A must be a square kernel"),
        (sym(4, 0), sym(5, 0), {}, "A has N=4 items but B has N=5"),
        (np.arange(16.0).reshape(4, 4), sym(4, 0), {}, "A is not symmetric"),
        (sym(2, 0), sym(2, 1), {}, "N >= 3"),
        (np.ones((4, 4)), sym(4, 1), {}, "A has constant off-diagonal entries"),
        (sym(4, 0), np.full((4, 4), np.nan), {}, "B contains NaN/inf"),
        (sym(4, 0), sym(4, 1), {"solver": "qap"}, "solver must be one of"),
        (sym(10, 0), sym(10, 1), {"solver": "brute"}, "N <= 9"),
        (sym(4, 0), sym(4, 1), {"restarts": -1}, "restarts must be an integer >= 0"),
        (sym(4, 0), sym(4, 1), {"seed": -2}, "seed must be an integer >= 0"),
        ("kernel", sym(4, 1), {}, "A must be a numpy array or torch tensor"),
    ],
)
def test_errors_name_the_argument(A, B, kwargs, message):
    with pytest.raises(UserError, match=message):
        blind_match(A, B, **kwargs)


def test_candidate_lists_reject_bad_input():
    with pytest.raises(UserError, match="permutation must be a permutation of 0..3"):
        candidate_lists(sym(4, 0), sym(4, 1), [0, 0, 1, 2])
    with pytest.raises(UserError, match="k must be an integer >= 1"):
        candidate_lists(sym(4, 0), sym(4, 1), [0, 1, 2, 3], k=0)
    with pytest.raises(UserError, match="all-zero row"):
        cosine_kernel(np.zeros((3, 2)))
