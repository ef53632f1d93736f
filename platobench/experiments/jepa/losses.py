"""JEPA objective with VICReg's anti-collapse terms, and the effective-rank collapse diagnostic.

Anti-collapse: VICReg (Bardes, Ponce & LeCun, "VICReg: Variance-Invariance-Covariance Regularization for
Self-Supervised Learning", ICLR 2022). For a batch of projected embeddings Z `[N, K]`:
- invariance s(Z, Z') = mean over samples and dimensions of (z - z')^2 (here: prediction vs target view);
- variance  v(Z) = (1/K) sum_j max(0, gamma - sqrt(Var(Z_j) + eps)), gamma = 1, eps = 1e-4 (a hinge on
  each dimension's standard deviation: a collapsed, constant embedding pays ~1);
- covariance c(Z) = (1/K) sum_{i != j} C(Z)_ij^2 with C the sample covariance (decorrelates, i.e.
  whitens, the dimensions: penalises dimensional collapse).
Loss = lambda * s + mu * (v(Z) + v(Z')) + nu * (c(Z) + c(Z')) with the paper's lambda = mu = 25, nu = 1.
Why not LeJEPA's SIGReg: on tiny CPU runs (batches of 16-64 captions, a randomly initialised encoder whose
mean-pooled outputs start nearly identical) SIGReg's random 1-D projections barely see dimensional collapse
and its gradient vanishes at the collapsed point; VICReg's terms act on every dimension directly.

Diagnostic: effective rank (Roy & Vetterli, "The effective rank: a measure of effective dimensionality",
EUSIPCO 2007): exp of the Shannon entropy of the normalised singular values of a matrix.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

VARIANCE_TARGET = 1.0  # gamma: the standard deviation each dimension is pushed up to
VARIANCE_EPS = 1e-4


@dataclass(frozen=True)
class LossWeights:
    """VICReg coefficients (lambda, mu, nu); the defaults are the paper's."""

    invariance: float = 25.0
    variance: float = 25.0
    covariance: float = 1.0


@dataclass(frozen=True)
class LossParts:
    """Total loss and its unweighted terms (variance and covariance summed over the two views)."""

    total: torch.Tensor
    invariance: torch.Tensor
    variance: torch.Tensor
    covariance: torch.Tensor


def variance_term(z: torch.Tensor) -> torch.Tensor:
    """v(Z) of `z` `[N, K]`: mean over dimensions of max(0, 1 - sqrt(Var + 1e-4)) (unbiased variance)."""
    std = torch.sqrt(z.var(dim=0) + VARIANCE_EPS)
    return F.relu(VARIANCE_TARGET - std).mean()


def covariance_term(z: torch.Tensor) -> torch.Tensor:
    """c(Z) of `z` `[N, K]`: sum of squared off-diagonal entries of the sample covariance, divided by K."""
    centred = z - z.mean(dim=0)
    cov = centred.T @ centred / (z.shape[0] - 1)
    off_diagonal = cov.square().sum() - torch.diagonal(cov).square().sum()
    return off_diagonal / z.shape[1]


def jepa_loss(
    z_a: torch.Tensor,
    z_b: torch.Tensor,
    p_a: torch.Tensor | None,
    p_b: torch.Tensor | None,
    weights: LossWeights = LossWeights(),
) -> LossParts:
    """VICReg loss of two views. z_a, z_b `[N, K]`: projected embeddings of view a and view b (N >= 2).

    Without a predictor (p_a = p_b = None) the invariance term compares z_a with z_b; with one,
    p_a = predictor(z_a) predicts z_b and p_b predicts z_a (the JEPA form), averaged. Variance and
    covariance act on z_a and z_b. Computed in float32 (autocast off), so bf16 training keeps exact
    variance/covariance sums.
    """
    if (p_a is None) != (p_b is None):
        raise ValueError("give both predictions p_a and p_b, or neither")
    if z_a.ndim != 2 or z_a.shape != z_b.shape or z_a.shape[0] < 2:
        raise ValueError(
            f"expected two [N, K] batches with N >= 2, got {tuple(z_a.shape)} and {tuple(z_b.shape)}"
        )
    with torch.autocast(device_type=z_a.device.type, enabled=False):
        z_a, z_b = z_a.float(), z_b.float()
        if p_a is None:
            invariance = F.mse_loss(z_a, z_b)
        else:
            invariance = 0.5 * (F.mse_loss(p_a.float(), z_b) + F.mse_loss(p_b.float(), z_a))
        variance = variance_term(z_a) + variance_term(z_b)
        covariance = covariance_term(z_a) + covariance_term(z_b)
        total = (
            weights.invariance * invariance + weights.variance * variance + weights.covariance * covariance
        )
    return LossParts(total=total, invariance=invariance, variance=variance, covariance=covariance)


def effective_rank(z: torch.Tensor) -> float:
    """Effective rank (Roy & Vetterli 2007) of the covariance of embeddings `z` `[N, D]`, in [1, min(N-1, D)].

    With lambda_i the eigenvalues (= singular values) of the sample covariance and p_i = lambda_i / sum(lambda),
    erank = exp(-sum_i p_i log p_i). Equals k for k equal non-zero eigenvalues; 1 for an embedding collapsed
    onto a line. Computed in float64. A constant embedding (zero covariance) has no spectrum: returns 0.
    """
    if z.ndim != 2 or z.shape[0] < 2:
        raise ValueError(f"effective_rank expects a [N, D] matrix with N >= 2, got shape {tuple(z.shape)}")
    data = z.detach().double()
    eigenvalues = torch.linalg.svdvals(data - data.mean(dim=0)).square()
    total = eigenvalues.sum()
    if total <= 0:
        return 0.0
    return float(torch.special.entr(eigenvalues / total).sum().exp())
