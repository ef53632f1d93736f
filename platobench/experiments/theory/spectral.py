"""The closed-form JEPA solution of a finite world: the whitened spectral embedding of its pair graph.

Objective (a JEPA with whitened anti-collapse, predictor = identity): over encoders f: states -> R^d,
    minimise   E_{(i,j) ~ W} ||f(i) - f(j)||^2        subject to   Cov_{i ~ p}[f(i)] = I_d.
Write F [n, d] for the table of f and P = diag(p). The objective is sum_ij W_ij ||F_i - F_j||^2
= 2 tr(F^T L F) with L = diag(W 1) - W the graph Laplacian. Adding a constant to f changes neither the
objective nor the covariance, so take p^T F = 0; the constraint becomes F^T P F = I. With
U = P^{1/2} F this is   min tr(U^T M U)  s.t.  U^T U = I,  U ⟂ s,   M = P^{-1/2} L P^{-1/2}, s = sqrt(p),
i.e. the generalised eigenproblem L v = λ P v. M s = 0, so M acts on s^⟂; with an orthonormal basis B
[n, n-1] of s^⟂ and A = B^T M B, the minimisers (Ky Fan) are U = B V_d Q for V_d the eigenvectors of the
d smallest eigenvalues μ_1 <= ... <= μ_d of A and any orthogonal Q: unique up to rotation exactly when
the spectral gap δ = μ_{d+1} - μ_d is positive. The representation of state i is F_i = U_i / sqrt(p_i).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg

from platobench.api import UserError


@dataclass(frozen=True)
class SpectralSolution:
    """U [n, d]: whitened embedding (orthonormal columns, ⟂ sqrt(p)); F [n, d] = U / sqrt(p) the
    per-state representation; eigenvalues [n-1] of A ascending; gap = μ_{d+1} - μ_d (0 if d = n-1)."""

    U: np.ndarray
    F: np.ndarray
    eigenvalues: np.ndarray
    gap: float


def complement_basis(p: np.ndarray) -> np.ndarray:
    """An orthonormal basis B [n, n-1] of the orthogonal complement of sqrt(p)."""
    return scipy.linalg.null_space(np.sqrt(p)[None, :])


def whitened_laplacian(W: np.ndarray, p: np.ndarray, basis: np.ndarray | None = None) -> np.ndarray:
    """A = B^T P^{-1/2} (diag(W 1) - W) P^{-1/2} B, [n-1, n-1], symmetric positive semi-definite."""
    check_world(W, p)
    B = complement_basis(p) if basis is None else basis
    L = np.diag(W.sum(axis=1)) - W
    s = 1.0 / np.sqrt(p)
    M = s[:, None] * L * s[None, :]
    A = B.T @ M @ B
    return (A + A.T) / 2


def spectral_embedding(W: np.ndarray, p: np.ndarray, d: int, basis: np.ndarray | None = None) -> SpectralSolution:
    """The d-dimensional whitened spectral embedding of pair matrix W [n, n] under state distribution p."""
    n = p.shape[0]
    if not 1 <= d <= n - 1:
        raise UserError(f"embedding dimension d must be in [1, n-1] = [1, {n - 1}], got {d}")
    B = complement_basis(p) if basis is None else basis
    mu, V = np.linalg.eigh(whitened_laplacian(W, p, B))
    U = B @ V[:, :d]
    gap = float(mu[d] - mu[d - 1]) if d < n - 1 else 0.0
    return SpectralSolution(U=U, F=U / np.sqrt(p)[:, None], eigenvalues=mu, gap=gap)


def check_world(W: np.ndarray, p: np.ndarray) -> None:
    """p [n] must be a positive distribution; W [n, n] symmetric non-negative."""
    if p.ndim != 1 or (p <= 0).any() or abs(p.sum() - 1) > 1e-9:
        raise UserError("p must be a 1-D distribution with every state probability > 0 and sum 1")
    if W.shape != (p.size, p.size):
        raise UserError(f"W must be [n, n] = [{p.size}, {p.size}] to match p, got {W.shape}")
    if (W < 0).any() or not np.allclose(W, W.T, atol=1e-12):
        raise UserError("W must be symmetric with non-negative pair weights")


def whiten(F: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Whitened coordinates U [n, k] of any representation F [n, k] (full rank under p): centre under
    p, map to Cov_p = I, multiply rows by sqrt(p). A spectral solution's U is returned unchanged up to a
    rotation; the alignment of two representations is read off these coordinates."""
    Fc = F - p @ F
    C = Fc.T @ (p[:, None] * Fc)
    evals, evecs = np.linalg.eigh(C)
    if evals.min() <= 1e-12 * max(evals.max(), 1e-300):
        raise UserError("representation is rank-deficient under p (collapsed); cannot whiten it")
    return np.sqrt(p)[:, None] * (Fc @ evecs / np.sqrt(evals))
