"""Misalignment of two modalities' solutions and its Davis-Kahan-type upper bound.

Quantity reported (the misalignment). For whitened embeddings U_a, U_b [n, d] (orthonormal columns,
see platobench.experiments.theory.spectral), the misalignment is the rotation residual of the metric engine,
    ρ = (1/d) min_{Q orthogonal} ||U_a Q - U_b||_F^2 = (1/d) min_Q E_{i~p} ||Q^T f_a(i) - f_b(i)||^2,
computed as `platobench.metrics.score("rotation_residual", X, Y)` on X = [U_a; -U_a], Y = [U_b; -U_b]:
those rows have zero column means (the engine's centring is a no-op), the second moments of the
p-weighted population, and ||X||_F^2 = 2d, so the engine's 2(1 - ||X^T Y||_* / 2d) is exactly ρ.
With cos θ_k the singular values of U_a^T U_b (cosines of the principal angles, in [0, 1]),
ρ = (2/d) Σ_k (1 - cos θ_k) <= (2/d) Σ_k sin^2 θ_k = (2/d) ||sin Θ||_F^2, since 1 - c <= 1 - c^2 on [0, 1].

Bound on ||sin Θ||_F (Davis & Kahan 1970, sin-Θ theorem; the one-gap form of Yu, Wang & Samworth 2015).
Let A_a, A_b be the whitened Laplacians restricted to sqrt(p)^⟂ (same p for both modalities: they
observe the same states), E = A_b - A_a, μ_1 <= ... the eigenvalues of A_a with gap δ_a = μ_{d+1} - μ_d,
ν_1 <= ... those of A_b. Let U_a⟂ hold A_a's eigenvectors for μ_{d+1}, ... (A_a U_a⟂ = U_a⟂ Λ) and
A_b U_b = U_b N with N = diag(ν_1..ν_d). Then S = U_a⟂^T U_b has ||S||_F = ||sin Θ||_F and
    Λ S - S N = -U_a⟂^T E U_b,   entrywise   (μ_{d+k} - ν_j) S_kj = -(U_a⟂^T E U_b)_kj.
By Weyl, ν_j <= ν_d <= μ_d + ||E||_2, so μ_{d+k} - ν_j >= δ_a - ||E||_2. If ||E||_2 < δ_a,
    ||sin Θ||_F <= ||E U_b||_F / (δ_a - ||E||_2) <= min(√d ||E||_2, ||E||_F) / (δ_a - ||E||_2).
The same holds with the roles of a and b swapped (sin Θ is symmetric for equal d), and ||sin Θ||_F <= √d
always. With s the smallest of these,   ρ <= bound = min(2, 2 s^2 / d).
The bound is a priori: it uses only W_a, W_b, p and d (||E|| measures the pair mismatch ||W_a - W_b||
in the whitened metric: E = B^T P^{-1/2} (L_b - L_a) P^{-1/2} B), not the learned solutions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from platobench.experiments.theory.spectral import complement_basis, whitened_laplacian


@dataclass(frozen=True)
class BoundReport:
    """The a priori bound on ρ and its ingredients (all floats)."""

    bound: float
    sin_theta_bound: float
    perturbation_op: float
    perturbation_fro: float
    gap_a: float
    gap_b: float

    @property
    def informative(self) -> bool:
        """True when the bound is below the trivial value 2 (the perturbation is under a gap)."""
        return self.bound < 2.0


def misalignment(U_a: np.ndarray, U_b: np.ndarray) -> float:
    """ρ = (1/d) min_Q ||U_a Q - U_b||_F^2 for whitened U_a, U_b [n, d], via the metric engine."""
    from platobench.api import score

    X = np.concatenate([U_a, -U_a])
    Y = np.concatenate([U_b, -U_b])
    return float(score("rotation_residual", X, Y))


def davis_kahan_bound(W_a: np.ndarray, W_b: np.ndarray, p: np.ndarray, d: int) -> BoundReport:
    """The bound on ρ for the d-dimensional solutions of pair matrices W_a, W_b [n, n] under p [n]."""
    B = complement_basis(p)
    A_a, A_b = whitened_laplacian(W_a, p, B), whitened_laplacian(W_b, p, B)
    mu_a, mu_b = np.linalg.eigvalsh(A_a), np.linalg.eigvalsh(A_b)
    E = A_b - A_a
    op = float(np.linalg.norm(E, 2))
    fro = float(np.linalg.norm(E, "fro"))
    n1 = mu_a.size
    gap_a = float(mu_a[d] - mu_a[d - 1]) if d < n1 else 0.0
    gap_b = float(mu_b[d] - mu_b[d - 1]) if d < n1 else 0.0
    s = float(np.sqrt(d))
    for gap in (gap_a, gap_b):
        if op < gap:
            s = min(s, min(np.sqrt(d) * op, fro) / (gap - op))
    return BoundReport(
        bound=float(min(2.0, 2.0 * s * s / d)),
        sin_theta_bound=float(s),
        perturbation_op=op,
        perturbation_fro=fro,
        gap_a=gap_a,
        gap_b=gap_b,
    )
