"""VICReg terms and the effective rank: closed forms and invariances."""

from __future__ import annotations

import math

import pytest
import torch

from platobench.experiments.jepa.losses import (
    LossWeights,
    covariance_term,
    effective_rank,
    jepa_loss,
    variance_term,
)


def orthogonal_columns(n: int, k: int, seed: int = 0) -> torch.Tensor:
    """[n, k] centred matrix whose columns are orthogonal with unit sample variance."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, k, generator=g, dtype=torch.float64)
    q, _ = torch.linalg.qr(x - x.mean(dim=0))
    q = q - q.mean(dim=0)  # QR of centred data keeps columns centred; re-centre against rounding
    return q * math.sqrt(n - 1)


def test_variance_term_is_zero_above_unit_std_and_099_when_constant():
    z = 3.0 * orthogonal_columns(50, 4)
    assert variance_term(z).item() == 0.0
    constant = torch.ones(10, 4)
    assert variance_term(constant).item() == pytest.approx(1.0 - math.sqrt(1e-4))


def test_variance_term_is_the_mean_hinge_per_dimension():
    z = orthogonal_columns(40, 2) * torch.tensor([0.5, 2.0], dtype=torch.float64)
    expected = ((1.0 - math.sqrt(0.25 + 1e-4)) + 0.0) / 2
    assert variance_term(z).item() == pytest.approx(expected, rel=1e-9)


def test_covariance_term_zero_for_uncorrelated_and_closed_form_for_duplicated_columns():
    assert covariance_term(orthogonal_columns(30, 5)).item() == pytest.approx(0.0, abs=1e-18)
    x = orthogonal_columns(30, 1) * 1.5  # variance 2.25
    z = torch.cat([x, x], dim=1)  # covariance [[s2, s2], [s2, s2]]: off-diagonal sum 2 s2^2, / K=2
    assert covariance_term(z).item() == pytest.approx(2.25**2, rel=1e-9)


def test_jepa_loss_without_predictor_combines_the_paper_weights():
    z_a = orthogonal_columns(20, 3, seed=1).float()
    z_b = z_a + 0.5
    parts = jepa_loss(z_a, z_b, None, None)
    assert parts.invariance.item() == pytest.approx(0.25)
    assert parts.variance.item() == pytest.approx(
        0.0, abs=1e-6
    )  # unit std passes the hinge (sqrt(1 + eps) > 1)
    assert parts.covariance.item() == pytest.approx(0.0, abs=1e-10)
    assert parts.total.item() == pytest.approx(25 * 0.25, rel=1e-5)
    weighted = jepa_loss(z_a, z_b, None, None, LossWeights(invariance=2.0, variance=0.0, covariance=0.0))
    assert weighted.total.item() == pytest.approx(0.5, rel=1e-5)


def test_jepa_loss_with_predictor_uses_each_prediction_against_the_other_view():
    z_a, z_b = torch.zeros(4, 2), torch.ones(4, 2)
    parts = jepa_loss(z_a, z_b, p_a=torch.ones(4, 2), p_b=torch.full((4, 2), 3.0))
    assert parts.invariance.item() == pytest.approx(0.5 * (0.0 + 9.0))
    with pytest.raises(ValueError, match="both predictions"):
        jepa_loss(z_a, z_b, torch.ones(4, 2), None)
    with pytest.raises(ValueError, match=r"\[N, K\]"):
        jepa_loss(torch.zeros(1, 2), torch.zeros(1, 2), None, None)


def test_collapse_costs_more_than_a_whitened_embedding():
    spread = 2.0 * orthogonal_columns(64, 8).float()
    collapsed = torch.ones(64, 8)
    assert (
        jepa_loss(collapsed, collapsed, None, None).total > 20 * jepa_loss(spread, spread, None, None).total
    )


@pytest.mark.parametrize("k", [1, 3, 7])
def test_effective_rank_of_k_equal_variances_is_k(k):
    z = torch.cat([orthogonal_columns(40, k), torch.zeros(40, 10 - k, dtype=torch.float64)], dim=1)
    assert effective_rank(z) == pytest.approx(k, rel=1e-9)


def test_effective_rank_closed_form_invariances_and_collapse():
    z = orthogonal_columns(60, 2) * torch.tensor([1.0, math.sqrt(3.0)], dtype=torch.float64)  # eigen 1, 3
    p = torch.tensor([0.25, 0.75], dtype=torch.float64)
    assert effective_rank(z) == pytest.approx(math.exp(-(p * p.log()).sum().item()), rel=1e-9)
    q, _ = torch.linalg.qr(torch.randn(2, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(3)))
    assert effective_rank(7.0 * z @ q + 5.0) == pytest.approx(
        effective_rank(z), rel=1e-9
    )  # rotation, scale, shift
    line = torch.arange(10.0).unsqueeze(1) * torch.tensor([[1.0, -2.0, 0.5]])
    assert effective_rank(line) == pytest.approx(1.0, rel=1e-6)
    assert effective_rank(torch.ones(5, 3)) == 0.0
    with pytest.raises(ValueError, match="N >= 2"):
        effective_rank(torch.ones(1, 3))
