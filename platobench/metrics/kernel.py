"""Centred kernel alignment (CKA; Kornblith et al. 2019, "Similarity of neural network representations
revisited") with a linear or RBF kernel and the biased or unbiased HSIC estimator, in float64.

  biased    HSIC_0(K, L) = tr(K H L H) / (n - 1)^2 with H = I - 11^T/n (Gretton et al. 2005), so
            CKA = <HKH, HLH>_F / (||HKH||_F ||HLH||_F).
  unbiased  HSIC_1 of Song et al. 2012 (JMLR 13, eq. 5), on kernels with a zero diagonal. HSIC_1 is an
            inner product of U-centred Gram matrices (Szekely & Rizzo 2014, "Partial distance
            correlation", Def. 1 and Prop. 1): HSIC_1(K, L) = <U(K), U(L)>_F / (n (n - 3)) with
            U(K)_ij = K~_ij - r_i/(n-2) - r_j/(n-2) + s/((n-1)(n-2)) for i != j, U(K)_ii = 0,
            K~ = K with its diagonal zeroed, r its row sums, s its total. Needs n >= 4.

Per layer the summary is the centred Gram matrix, flattened and scaled to unit norm, so a whole layer
grid is one matrix product V_X V_Y^T ("grid == score" by construction). Kernels:
  linear  K = X X^T.
  rbf     K_ij = exp(-||x_i - x_j||^2 / (2 sigma^2)), sigma = sigma_frac * median of ||x_i - x_j|| over the
          pairs i < j (lower median; Kornblith et al. use a fraction of the median distance).
"""

from __future__ import annotations

from typing import Any

import torch

from platobench.errors import UserError
from platobench.metrics.registry import Metric, register
from platobench.metrics.validation import DegenerateFeaturesError, check_choice, check_positive, pow2_unit

KERNELS = ("linear", "rbf")
ESTIMATORS = ("unbiased", "biased")
_Y_CHUNK = 16  # Y layers per matrix product in `combine` (bounds the stacked copy of Y summaries)


def gram(x: torch.Tensor, kernel: str, sigma_frac: float) -> torch.Tensor:
    """Kernel matrix [N, N] float64 of the rows of x [N, D]."""
    x = x.to(torch.float64)
    g = x @ x.T
    if kernel == "linear":
        return g
    sq = g.diagonal()
    d2 = (sq[:, None] + sq[None, :] - 2.0 * g).clamp_min_(0.0)
    d2.fill_diagonal_(0.0)
    iu = torch.triu_indices(x.shape[0], x.shape[0], offset=1)
    med = d2[iu[0], iu[1]].median()
    if med <= 0:
        raise UserError("cka with kernel='rbf': the median pairwise distance is 0 (mostly identical samples); "
                        "expected distinct feature rows")
    sigma2 = sigma_frac**2 * med
    return torch.exp(-d2 / (2.0 * sigma2))


def u_centre(k: torch.Tensor) -> torch.Tensor:
    """U-centring of a symmetric [n, n] kernel (Szekely & Rizzo 2014), diagonal ignored and set to 0."""
    n = k.shape[0]
    k = k.clone()
    k.fill_diagonal_(0.0)
    r = k.sum(dim=1)
    s = r.sum()
    u = k - r[:, None] / (n - 2) - r[None, :] / (n - 2) + s / ((n - 1) * (n - 2))
    u.fill_diagonal_(0.0)
    return u


def double_centre(k: torch.Tensor) -> torch.Tensor:
    """H K H for H = I - 11^T/n."""
    return k - k.mean(dim=0, keepdim=True) - k.mean(dim=1, keepdim=True) + k.mean()


def _summarize(x: torch.Tensor, p: dict[str, Any]) -> torch.Tensor:
    """Unit-norm flattened centred Gram matrix of one layer: [N*N] float64. The layer is first brought
    to max |x| in [0.5, 1) by a power of two (`pow2_unit`: exact, CKA is scale-invariant) so that the
    Gram matrix of float64 features near the range limits neither underflows nor overflows."""
    k = gram(pow2_unit(x), p["kernel"], p["sigma_frac"])
    c = u_centre(k) if p["estimator"] == "unbiased" else double_centre(k)
    norm = torch.linalg.vector_norm(c)
    if not norm > 0:
        raise DegenerateFeaturesError("cka: a layer's centred Gram matrix is zero (constant features); "
                        "CKA is undefined, expected features that vary across samples")
    return (c / norm).flatten()


def _combine(sx: list[torch.Tensor], sy: list[torch.Tensor], p: dict[str, Any]) -> torch.Tensor:
    vx = torch.stack(sx)
    parts = [vx @ torch.stack(sy[j:j + _Y_CHUNK]).T for j in range(0, len(sy), _Y_CHUNK)]
    return torch.cat(parts, dim=1).clamp(-1.0, 1.0)  # a cosine: only rounding can leave [-1, 1]


def _permute(summary: torch.Tensor, perm: torch.Tensor) -> torch.Tensor:
    """Summary of the same layer with its samples reordered: rows and columns of the Gram permuted."""
    n = perm.numel()
    return summary.view(n, n)[perm[:, None], perm[None, :]].reshape(-1)


def _validate(n: int, p: dict[str, Any]) -> None:
    check_choice(p["kernel"], KERNELS, "cka parameter kernel")
    check_choice(p["estimator"], ESTIMATORS, "cka parameter estimator")
    check_positive(p["sigma_frac"], "cka parameter sigma_frac")
    need = 4 if p["estimator"] == "unbiased" else 2
    if n < need:
        raise UserError(f"cka with estimator={p['estimator']!r} needs N >= {need} samples, got N={n}")


def _chance(n: int, p: dict[str, Any]) -> float | None:
    """Unbiased HSIC has expectation 0 for independent inputs; the biased one depends on the data."""
    return 0.0 if p["estimator"] == "unbiased" else None


CKA = register(
    Metric(
        id="cka",
        params={"kernel": "linear", "estimator": "unbiased", "sigma_frac": 1.0},
        higher_is_better=True,
        symmetric=True,
        invariances=("rotation", "isotropic_scaling", "translation", "sample_permutation_joint"),
        chance=_chance,
        summarize_x=_summarize,
        combine=_combine,
        validate=_validate,
        description="Centred kernel alignment (Kornblith et al. 2019); estimator unbiased = HSIC_1 of "
        "Song et al. 2012 (default) or biased = HSIC_0; kernel linear or rbf (sigma = sigma_frac x median "
        "pairwise distance); float64.",
        range=(-1.0, 1.0),
        identity_score=1.0,
        extra={"permute": _permute},
    )
)
