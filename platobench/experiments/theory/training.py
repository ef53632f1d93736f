"""A real JEPA trained by gradient descent on sampled positive pairs of a finite world.

Encoder f_θ: observation [m] -> R^k, linear (`nn.Linear`) or a two-layer MLP (tanh). Anti-collapse is
hard whitening (W-MSE, Ermolov et al. 2021): with F = f_θ(obs) [n, k] over all n states, the whitened
outputs are Z = (F - p^T F) R^{-T}, C = Cov_p(F) = R R^T (Cholesky), so Cov_p(Z) = I exactly (the
theorem's constraint, taken over the known state distribution). The loss is the mean over the sampled
positive pairs (i_t, j_t), t = 1..N, of ||Z_{i_t} - Z_{j_t}||^2. It equals sum_ab Ŵ_ab ||Z_a - Z_b||^2
= 2 tr(Z^T L̂ Z) for Ŵ the pairs' count matrix over N and L̂ its Laplacian, which is how it is evaluated
(O(n^2) per step instead of O(N)); it is minimised full batch with L-BFGS (strong-Wolfe line search).
Its global minimisers are the spectral solution of the empirical pair matrix of the N pairs
(platobench.experiments.theory.spectral) up to rotation, so training can be checked against the closed form.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from platobench.api import UserError
from platobench.experiments.theory.spectral import whiten
from platobench.experiments.theory.threads import single_threaded

ENCODERS = ("linear", "mlp")


@dataclass(frozen=True)
class TrainedJEPA:
    """U [n, d]: whitened embedding of the trained encoder's outputs (comparable to
    SpectralSolution.U); losses: training loss at each evaluation."""

    U: np.ndarray
    losses: np.ndarray


def _encoder(kind: str, m: int, d: int, hidden: int) -> torch.nn.Module:
    if kind == "linear":
        return torch.nn.Linear(m, d)
    if kind == "mlp":
        return torch.nn.Sequential(torch.nn.Linear(m, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, d))
    raise UserError(f"encoder must be one of {list(ENCODERS)}, got {kind!r}")


def whitened_outputs(F: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """Z [n, k] = (F - p^T F) R^{-T}, with R R^T = Cov_p(F): Cov_p(Z) = I_k."""
    Fc = F - p @ F
    C = Fc.T @ (p[:, None] * Fc)
    R = torch.linalg.cholesky(C)
    return torch.linalg.solve_triangular(R, Fc.T, upper=False).T


def pairs_laplacian(pairs: tuple[np.ndarray, np.ndarray], n: int) -> torch.Tensor:
    """L̂ [n, n] float64 of the sampled pairs (i [N], j [N]): with Ŵ = (C + C^T) / 2N for the count
    matrix C, L̂ = diag(Ŵ 1) - Ŵ, so 2 tr(Z^T L̂ Z) = mean_t ||Z_{i_t} - Z_{j_t}||^2."""
    counts = np.zeros((n, n))
    np.add.at(counts, (np.asarray(pairs[0]), np.asarray(pairs[1])), 1.0 / len(pairs[0]))
    W = torch.from_numpy((counts + counts.T) / 2)
    return torch.diag(W.sum(dim=1)) - W


def train_jepa(
    obs: np.ndarray,
    p: np.ndarray,
    pairs: tuple[np.ndarray, np.ndarray],
    d: int,
    *,
    encoder: str = "linear",
    hidden: int = 128,
    max_iter: int = 500,
    seed: int = 0,
) -> TrainedJEPA:
    """Train an encoder of observations obs [n, m] on sampled pairs (i [N], j [N]) of states, with
    state distribution p [n]; return its whitened d-dimensional embedding."""
    n, m = obs.shape
    if p.shape != (n,):
        raise UserError(f"p must have one probability per observed state ({n}), got shape {p.shape}")
    if not 1 <= d < n:
        raise UserError(f"d must be in [1, n-1] = [1, {n - 1}], got {d}")
    gen = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=gen)))
        net = _encoder(encoder, m, d, hidden).double()
    x = torch.from_numpy(np.asarray(obs, dtype=np.float64))
    pt = torch.from_numpy(np.asarray(p, dtype=np.float64))
    lap = pairs_laplacian(pairs, n)
    opt = torch.optim.LBFGS(net.parameters(), lr=1.0, max_iter=max_iter, history_size=50,
                            tolerance_grad=1e-12, tolerance_change=1e-15, line_search_fn="strong_wolfe")
    losses: list[float] = []

    def closure() -> torch.Tensor:
        opt.zero_grad()
        Z = whitened_outputs(net(x), pt)
        loss = 2 * torch.einsum("ak,ab,bk->", Z, lap, Z)
        loss.backward()
        losses.append(loss.item())
        return loss

    with single_threaded():
        opt.step(closure)
    with torch.no_grad():
        F = net(x).numpy()
    return TrainedJEPA(U=whiten(F, p), losses=np.asarray(losses))
