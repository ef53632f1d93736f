"""Rotation recovery from unpaired data (platobench.metrics.unpaired_rotation): planted rotations,
known answers of the held-out evaluation, invariances, reproducibility and error messages."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.stats import ortho_group

from platobench.errors import UserError
from platobench.metrics.unpaired_rotation import (
    FittedMap,
    evaluate_map,
    fit_paired_map,
    fit_unpaired_map,
    rotation_recovery,
    stiefel_params,
)


def planted(n: int = 180, dx: int = 8, dy: int = 12, noise: float = 0.05, seed: int = 0):
    """X [n, dx] with decaying scales; Y = X W + noise + offset, W [dx, dy] with orthonormal rows."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, dx)) * np.linspace(1.0, 0.3, dx)
    W = ortho_group.rvs(dy, random_state=seed)[:dx]
    Y = X @ W + noise * rng.standard_normal((n, dy)) + 3.0
    return X, Y, W


def split(X, Y, n_train=120):
    return X[:n_train], Y[:n_train], X[n_train:], Y[n_train:]


def test_stiefel_parameter_counts():
    assert stiefel_params(8, 12) == 60  # 12 * 8 - 8 * 9 / 2
    assert stiefel_params(12, 8) == 60
    assert stiefel_params(5, 5) == 10  # dim SO(5)
    assert stiefel_params(1, 7) == 6  # a unit vector in R^7


def test_unpaired_recovers_the_planted_rotation_like_the_paired_fit():
    X, Y, _ = planted()
    result = rotation_recovery(*split(X, Y), solver="gw", seed=0)
    un, pa = result["unpaired"], result["paired"]
    assert un["train_match_accuracy"] == 1.0
    assert un["recall@1"] == 1.0 and pa["recall@1"] == 1.0
    assert un["residual"] == pytest.approx(pa["residual"], abs=1e-9)
    assert 0.0 <= result["oracle_residual"] <= un["residual"] < 0.05
    assert un["n_paired"] == 0 and pa["n_paired"] == 120
    assert un["n_params"] == pa["n_params"] == 60 and pa["n_entries"] == 96
    assert result["chance"] == {"residual": 2.0, "recall@1": 1 / 60, "recall@5": 5 / 60}


def test_unpaired_map_is_close_to_the_true_map():
    X, Y, W = planted(noise=0.01)
    rng = np.random.default_rng(1)
    fitted = fit_unpaired_map(X[:120], Y[rng.permutation(120)], solver="faq", seed=0, restarts=1)
    assert fitted.method == "unpaired" and fitted.matching is not None
    np.testing.assert_allclose(fitted.rotation.numpy(), W, atol=0.05)
    q = fitted.rotation.numpy()
    np.testing.assert_allclose(q @ q.T, np.eye(8), atol=1e-10)  # orthonormal rows


def test_wider_x_side_is_supported():
    X, Y, _ = planted(dx=8, dy=12)
    result = rotation_recovery(*split(Y, X), solver="gw", seed=0)
    assert result["unpaired"]["train_match_accuracy"] == 1.0
    assert result["unpaired"]["recall@1"] == 1.0
    assert result["unpaired"]["residual"] == pytest.approx(result["paired"]["residual"], abs=1e-9)


def test_unrelated_sides_do_not_align():
    X, _, _ = planted(seed=0)
    _, Y, _ = planted(seed=5)
    result = rotation_recovery(*split(X, Y), seed=0)
    assert result["paired"]["residual"] > 1.5
    assert result["paired"]["recall@1"] < 0.1
    assert result["unpaired"]["train_match_accuracy"] < 0.1


def test_invariant_to_rotating_and_translating_either_side():
    X, Y, _ = planted()
    base = rotation_recovery(*split(X, Y), seed=0)
    R = ortho_group.rvs(12, random_state=3)
    moved = rotation_recovery(*split(X - 7.0, 2.0 * Y @ R), seed=0)
    for method in ("unpaired", "paired"):
        for key in ("residual", "recall@1", "recall@5"):
            assert moved[method][key] == pytest.approx(base[method][key], abs=1e-8)
    assert moved["oracle_residual"] == pytest.approx(base["oracle_residual"], abs=1e-8)


def test_seed_reproduces():
    X, Y, _ = planted(noise=0.3)
    a = rotation_recovery(*split(X, Y), seed=4, solver="faq", restarts=2)
    b = rotation_recovery(*split(torch.from_numpy(X), torch.from_numpy(Y)), seed=4, solver="faq", restarts=2)
    assert a == b


def _identity_map(d: int) -> FittedMap:
    zeros = torch.zeros(d, dtype=torch.float64)
    return FittedMap(torch.eye(d, dtype=torch.float64), zeros, zeros, "paired", 0, stiefel_params(d, d), d * d)


def test_evaluation_residual_known_answer():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((6, 3))
    R = ortho_group.rvs(3, random_state=0)
    Y = X @ R
    fitted = _identity_map(3)
    out = evaluate_map(fitted, X, Y)
    hx, hy = X / np.linalg.norm(X), Y / np.linalg.norm(Y)
    assert out["residual"] == pytest.approx(np.linalg.norm(hx - hy) ** 2, abs=1e-12)
    assert evaluate_map(fitted, X, X)["residual"] == pytest.approx(0.0, abs=1e-12)
    assert evaluate_map(fitted, X, -X)["residual"] == pytest.approx(4.0, abs=1e-12)


def test_recall_counts_ties_against_the_partner():
    fitted = _identity_map(2)
    X = np.array([[1.0, 0.0], [2.0, 0.0], [3.0, 0.0]])
    Y = np.array([[1.0, 0.0], [2.0, 0.0], [4.0, 0.0]])  # every candidate equally similar
    out = evaluate_map(fitted, X, Y, ks=(1, 2, 3))
    assert out["recall@1"] == 0.0 and out["recall@2"] == 0.0 and out["recall@3"] == 1.0
    distinct = evaluate_map(fitted, np.eye(2)[[0, 1, 1]] + [[0, 0], [0, 0], [0.1, 0]], np.eye(2)[[0, 1, 1]])
    assert distinct["recall@1"] == pytest.approx(1 / 3)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda X, Y: fit_unpaired_map(X[:10], Y[:12]), "X_train has 10 samples but Y_train has 12"),
        (lambda X, Y: fit_paired_map(X[:2], Y[:2]), "at least 3 samples"),
        (lambda X, Y: evaluate_map(fit_paired_map(X, Y), X[:5, :4], Y[:5]), r"differ from the training widths"),
        (lambda X, Y: evaluate_map(fit_paired_map(X, Y), X[:5], Y[:6]), "X_test has 5 samples but Y_test has 6"),
        (lambda X, Y: evaluate_map(fit_paired_map(X, Y), X[:5], Y[:5], ks=(0,)), "ks must hold integers >= 1"),
        (lambda X, Y: fit_paired_map(np.ones((5, 8)), Y[:5]), "X_train is constant"),
        (lambda X, Y: fit_unpaired_map(X[:20], Y[:20], solver="sinkhorn"), "solver must be one of"),
    ],
)
def test_errors_name_the_argument(call, message):
    X, Y, _ = planted(n=40)
    with pytest.raises(UserError, match=message):
        call(X, Y)
