"""A JEPA trained by gradient descent reaches the closed-form spectral solution up to rotation."""

import numpy as np
import pytest
import torch

from platobench.errors import UserError
from platobench.experiments.theory import worlds as wd
from platobench.experiments.theory.bound import misalignment
from platobench.experiments.theory.experiments import TRAINING_TOLERANCE, run_training
from platobench.experiments.theory.spectral import spectral_embedding
from platobench.experiments.theory.training import pairs_laplacian, train_jepa, whitened_outputs


def test_whitened_outputs_have_identity_covariance_under_p():
    rng = np.random.default_rng(0)
    p = torch.from_numpy(rng.dirichlet(np.ones(12)))
    F = torch.from_numpy(rng.standard_normal((12, 3)) @ np.diag([5.0, 0.1, 2.0]) + 4.0)
    Z = whitened_outputs(F, p)
    torch.testing.assert_close(p @ Z, torch.zeros(3, dtype=torch.float64), atol=1e-12, rtol=0)
    torch.testing.assert_close(Z.T @ (p[:, None] * Z), torch.eye(3, dtype=torch.float64), atol=1e-12, rtol=0)


def test_laplacian_loss_is_the_mean_over_sampled_pairs():
    rng = np.random.default_rng(2)
    i, j = rng.integers(0, 9, size=500), rng.integers(0, 9, size=500)
    Z = torch.from_numpy(rng.standard_normal((9, 3)))
    per_pair = (Z[torch.from_numpy(i)] - Z[torch.from_numpy(j)]).pow(2).sum(1).mean()
    assert float(2 * torch.trace(Z.T @ pairs_laplacian((i, j), 9) @ Z)) == pytest.approx(float(per_pair), rel=1e-12)


@pytest.fixture(scope="module")
def small_world():
    rng = np.random.default_rng(7)
    w = wd.random_world(16, rng, "sbm")
    pairs = wd.sample_pairs(w.W, 5000, rng)
    return w, pairs, spectral_embedding(wd.empirical_pairs(*pairs, w.n), w.p, 2)


@pytest.mark.parametrize("encoder,obs_dim", [("linear", None), ("mlp", 6)])
def test_trained_jepa_matches_closed_form_up_to_rotation(small_world, encoder, obs_dim):
    w, pairs, closed = small_world
    assert closed.gap > 1e-3
    obs = wd.one_hot_observations(w.n) if obs_dim is None else wd.random_observations(w.n, obs_dim, np.random.default_rng(1))
    trained = train_jepa(obs, w.p, pairs, 2, encoder=encoder, seed=0)
    assert misalignment(trained.U, closed.U) < TRAINING_TOLERANCE
    # the final loss is the closed form's optimum 2 (μ_1 + μ_2) of the empirical whitened Laplacian
    assert trained.losses[-1] == pytest.approx(2 * closed.eigenvalues[:2].sum(), rel=1e-6)
    # and the loss went down from the random initialisation
    assert trained.losses[0] > trained.losses[-1] * 1.01


def test_untrained_encoder_is_not_the_solution(small_world):
    """Guards against a check that cannot fail: one step from the initialisation is far away."""
    w, pairs, closed = small_world
    trained = train_jepa(wd.one_hot_observations(w.n), w.p, pairs, 2, max_iter=1, seed=0)
    assert misalignment(trained.U, closed.U) > 1e-3


def test_training_report_is_within_tolerance_and_reproducible():
    a = run_training(n_worlds=1, n_states=14, dim=2, n_pairs=3000, seed=3)
    b = run_training(n_worlds=1, n_states=14, dim=2, n_pairs=3000, seed=3)
    assert a["within_tolerance"] and len(a["rows"]) == 3
    assert [r["sampling_residual"] for r in a["rows"]] == [r["sampling_residual"] for r in b["rows"]]
    for r in a["rows"]:  # trained = closed form (pairs), so both are equally far from the population W
        assert r["residual_population"] == pytest.approx(r["sampling_residual"], abs=1e-5)


def test_train_input_errors():
    with pytest.raises(UserError, match="encoder must be one of"):
        train_jepa(np.eye(5), np.full(5, 0.2), (np.array([0]), np.array([1])), 2, encoder="transformer")
    with pytest.raises(UserError, match="d must be in"):
        train_jepa(np.eye(5), np.full(5, 0.2), (np.array([0]), np.array([1])), 5)
