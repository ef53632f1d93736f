"""Orthogonal Procrustes alignment (Schonemann 1966): how far one representation is from a rotation of
the other. Lower is better; both metrics are computed in float64.

rotation_residual
    Centre the columns of X [N, Dx] and Y [N, Dy], scale each to unit Frobenius norm, zero-pad the
    narrower one. Then min over orthogonal Q of ||X Q - Y||_F^2 = 2 (1 - ||X^T Y||_*) in [0, 2]
    (||.||_* the nuclear norm). ||X^T Y||_* depends on X only through X X^T (it is tr (X^T Y Y^T X)^1/2
    = tr (Y^T X X^T Y)^1/2), so the per-layer summary is any A [N, r] with A A^T = X X^T, r = min(N, D):
    X itself when D <= N, the QR factor R^T of X^T otherwise; a grid entry costs
    one nuclear norm of an r_x x r_y matrix (an r x r eigvalsh), batched over layer pairs: O(N^3) per
    pair once D >= N, so rotation-residual grids cost far more than kNN or CKA grids.

rotation_residual_heldout
    The rotation is fitted on one half of the samples and scored on the other. `split_seed` draws a random
    split (torch.randperm, `generator.manual_seed(split_seed)`): the first N // 2 of the permutation form the
    fit half, the rest the held-out half; the same split is used for X and Y. Everything is fitted on
    the fit half, per side: the column means (subtracted from both halves) and the basis V of the fit
    half's row space (its right singular vectors with singular value above sqrt(max(n, D) eps) times the
    largest, see `row_space`; r <= N//2 - 1). In those
    coordinates C = (X_fit - mean) V and H = (X_held - mean) V; H is then scaled to unit Frobenius norm
    (the only statistic taken from the held-out half, so that the residual lies in [0, 4] and 2 means
    "no better than unrelated"). Q = W Z^T from the SVD C_x^T C_y = W S Z^T (narrower side zero-padded)
    and the residual is ||H_x Q - H_y||_F^2 = 2 - 2 tr(Q^T H_x^T H_y). Working in the fit half's row
    space makes the fitted map unique (a rotation in D > N/2 dimensions is otherwise unconstrained
    outside that space), keeps identical inputs at residual 0, and keeps the invariance to rotation,
    isotropic scaling and translation of either side.
"""

from __future__ import annotations

from typing import Any

import torch

from platobench.errors import UserError
from platobench.metrics.registry import Metric, register
from platobench.metrics.validation import DegenerateFeaturesError, as_features, check_int, pow2_unit

_PAIR_BLOCK = 1 << 25  # float64 entries of the batched r x r cross-products held at once


def fit_rotation(X: Any, Y: Any) -> torch.Tensor:
    """Orthogonal Procrustes: Q [Dx, Dy] float64 minimising ||X Q - Y||_F, X [N, Dx], Y [N, Dy] as given
    (no centring or scaling). Q = W Z^T from the thin SVD X^T Y = W S Z^T; when Dx != Dy, Q has
    orthonormal rows (Dx <= Dy) or columns (Dx >= Dy), the solution with the narrower side zero-padded.
    Unique when X^T Y has full rank min(Dx, Dy); otherwise LAPACK's singular vectors pick one."""
    x = as_features(X, "X").to(torch.float64)
    y = as_features(Y, "Y").to(torch.float64)
    if x.shape[0] != y.shape[0]:
        raise UserError(f"X has {x.shape[0]} samples but Y has {y.shape[0]}; rows must be paired samples")
    w, _, zt = torch.linalg.svd(x.T @ y, full_matrices=False)
    return w @ zt


def centre_unit(x: torch.Tensor, name: str = "features") -> torch.Tensor:
    """Columns centred, whole matrix scaled to unit Frobenius norm; float64 [N, D]."""
    x = x.to(torch.float64)
    x = x - x.mean(dim=0, keepdim=True)
    norm = torch.linalg.matrix_norm(x)
    if not norm > 0:
        raise DegenerateFeaturesError(f"{name} are constant across samples; a rotation residual needs varying features")
    return x / norm


def row_space(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Thin SVD x = U S V^T of x [n, D] float64 from the eigendecomposition of the smaller Gram matrix
    (x^T x or x x^T; several times faster than an SVD on CPU). Returns (U [n, r], S [r], V [D, r]),
    singular values in decreasing order; directions with S below sqrt(max(n, D) eps) S_max, the
    precision of a Gram eigendecomposition, count as zero and are dropped."""
    n, d = x.shape
    lam, vec = torch.linalg.eigh(x.T @ x if d <= n else x @ x.T)
    lam, vec = lam.flip(0), vec.flip(1)
    keep = lam > lam[0] * max(n, d) * torch.finfo(lam.dtype).eps
    s, vec = lam[keep].sqrt(), vec[:, keep]
    if d <= n:
        return (x @ vec) / s, s, vec
    return vec, s, (x.T @ vec) / s


def nuclear_norms(m: torch.Tensor) -> torch.Tensor:
    """Sum of singular values of each matrix in a batch [..., a, b]: square roots of the eigenvalues
    of the smaller Gram m^T m or m m^T (eigvalsh is much faster than svdvals on CPU). Eigenvalues
    below r eps lambda_max (r the Gram's size) are rounding noise of the zero ones (padding, rank
    deficiency) and count as 0; so singular values below sqrt(r eps) s_max (~1e-7 s_max) are dropped."""
    g = m.mT @ m if m.shape[-1] <= m.shape[-2] else m @ m.mT
    lam = torch.linalg.eigvalsh(g)
    floor = lam[..., -1:] * g.shape[-1] * torch.finfo(lam.dtype).eps
    return torch.where(lam > floor, lam, 0.0).sqrt().sum(dim=-1)


def _pad(mats: list[torch.Tensor], r: int) -> torch.Tensor:
    """Stack [n, r_l] matrices into [L, n, r], zero-padding columns."""
    return torch.stack([torch.nn.functional.pad(m, (0, r - m.shape[1])) for m in mats])


def _pair_blocks(lx: int, ly: int, r: int) -> list[tuple[int, int]]:
    """Row ranges of X layers such that [rows, Ly, r, r] float64 fits in _PAIR_BLOCK entries."""
    step = max(1, _PAIR_BLOCK // max(1, ly * r * r))
    return [(i, min(lx, i + step)) for i in range(0, lx, step)]


# --- rotation_residual -------------------------------------------------------------------------------

def _summarize_residual(x: torch.Tensor, p: dict[str, Any]) -> torch.Tensor:
    """A [N, min(N, D)] with A A^T = X X^T (X centred, unit norm): X itself when D <= N, else R^T from
    the QR factorisation X^T = Q R (Q^T Q = I, so R^T R = X X^T). X is first brought to max |x| in
    [0.5, 1) by a power of two (`pow2_unit`, exact) so that its norm cannot overflow or underflow."""
    xc = centre_unit(pow2_unit(x))
    if xc.shape[1] <= xc.shape[0]:
        return xc
    return torch.linalg.qr(xc.T).R.T


def _combine_residual(sx: list[torch.Tensor], sy: list[torch.Tensor], p: dict[str, Any]) -> torch.Tensor:
    r = max(m.shape[1] for m in sx + sy)
    ax, ay = _pad(sx, r), _pad(sy, r)
    rows = []
    for i0, i1 in _pair_blocks(len(sx), len(sy), r):
        rows.append(2.0 - 2.0 * nuclear_norms(torch.einsum("inr,jns->ijrs", ax[i0:i1], ay)))
    return torch.cat(rows).clamp_min(0.0)


def _permute_rows(summary: torch.Tensor, perm: torch.Tensor) -> torch.Tensor:
    return summary[perm]


ROTATION_RESIDUAL = register(
    Metric(
        id="rotation_residual",
        params={},
        higher_is_better=False,
        symmetric=True,
        invariances=("rotation", "isotropic_scaling", "translation", "sample_permutation_joint"),
        chance=lambda n, p: None,
        summarize_x=_summarize_residual,
        combine=_combine_residual,
        description="Orthogonal Procrustes residual min_Q ||XQ - Y||_F^2 = 2(1 - ||X^T Y||_*) after centring, "
        "unit Frobenius norm and zero-padding; 0 = a rotation of each other, lower is better.",
        range=(0.0, 2.0),
        identity_score=0.0,
        estimand="expected_at_n",  # the fitted rotation overfits: the in-sample residual falls as D / N grows
        extra={"permute": _permute_rows},
    )
)


# --- rotation_residual_heldout -----------------------------------------------------------------------

def split_halves(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Seeded split of range(n): (fit indices, held-out indices), sizes n // 2 and n - n // 2, sorted."""
    g = torch.Generator().manual_seed(int(seed))
    perm = torch.randperm(n, generator=g)
    return perm[: n // 2].sort().values, perm[n // 2:].sort().values


def _summarize_heldout(x: torch.Tensor, p: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
    """(C [n_fit, r], H [n_held, r]): fit-half and unit-norm held-out coordinates in the fit row space."""
    fit, held = split_halves(x.shape[0], p["split_seed"])
    x = pow2_unit(x).to(torch.float64)  # exact power-of-two rescaling: no overflow of norms and Grams
    mean = x[fit].mean(dim=0, keepdim=True)
    xa, xb = x[fit] - mean, x[held] - mean
    if not torch.linalg.matrix_norm(xa) > 0:
        raise DegenerateFeaturesError(
            "rotation_residual_heldout: features are constant on the fit half; expected varying features")
    u, s, v = row_space(xa)
    h = xb @ v
    norm = torch.linalg.matrix_norm(h)
    if not norm > 0:
        raise UserError("rotation_residual_heldout: the held-out half has no component in the fit half's span; "
                        "expected varying features")
    return u * s, h / norm


def _combine_heldout(sx: list, sy: list, p: dict[str, Any]) -> torch.Tensor:
    r = max(c.shape[1] for c, _ in sx + sy)
    cx, hx = _pad([c for c, _ in sx], r), _pad([h for _, h in sx], r)
    cy, hy = _pad([c for c, _ in sy], r), _pad([h for _, h in sy], r)
    rows = []
    for i0, i1 in _pair_blocks(len(sx), len(sy), r):
        w, _, zt = torch.linalg.svd(torch.einsum("inr,jns->ijrs", cx[i0:i1], cy))
        q = w @ zt
        held = torch.einsum("inr,jns->ijrs", hx[i0:i1], hy)
        rows.append(2.0 - 2.0 * (q * held).sum(dim=(-2, -1)))
    return torch.cat(rows).clamp(0.0, 4.0)  # |tr(Q^T Hx^T Hy)| <= 1: only rounding can leave [0, 4]


def _validate_heldout(n: int, p: dict[str, Any]) -> None:
    check_int(p["split_seed"], "rotation_residual_heldout parameter split_seed", 0)
    if n < 4:
        raise UserError(f"rotation_residual_heldout needs N >= 4 samples (two halves of >= 2), got N={n}")


ROTATION_RESIDUAL_HELDOUT = register(
    Metric(
        id="rotation_residual_heldout",
        params={"split_seed": 0},
        higher_is_better=False,
        symmetric=True,
        invariances=("rotation", "isotropic_scaling", "translation"),
        chance=lambda n, p: None,
        summarize_x=_summarize_heldout,
        combine=_combine_heldout,
        validate=_validate_heldout,
        description="Procrustes residual out of sample: rotation fitted on a seeded half (in its row space), "
        "residual 2 - 2 tr(Q^T Hx^T Hy) on the other half scaled to unit norm; in [0, 4], lower is better.",
        range=(0.0, 4.0),
        identity_score=0.0,
        interval="rate",
        estimand="expected_at_n",
    )
)
