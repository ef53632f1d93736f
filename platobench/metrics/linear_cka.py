"""Linear CKA in feature space: both HSIC estimators of platobench.metrics.kernel without any N×N matrix,
O(N D^2) time and O(N D + D^2) memory per layer, O(N Dx Dy) per layer pair.

With X~ = X minus its column means (linear CKA is translation invariant, so nothing changes), a_i = ||x~_i||^2
and K = X~ X~^T:
  biased    (n - 1)^2 HSIC_0(K, L) = <HKH, HLH>_F = ||X~^T Y~||_F^2  (H K H = K for centred columns).
  unbiased  n (n - 3) HSIC_1(K, L) of Song et al. 2012 (JMLR 13, eq. 5) on K~ = K with a zero diagonal:
            tr(K~ L~) = ||X~^T Y~||_F^2 - a.b,  1^T K~ 1 = ||X~^T 1||^2 - sum(a) = -sum(a),
            K~ 1 = X~ (X~^T 1) - a = -a, so 1^T K~ L~ 1 = a.b, and
            n (n - 3) HSIC_1 = ||X~^T Y~||_F^2 - n/(n - 2) a.b + sum(a) sum(b) / ((n - 1)(n - 2)).
CKA = HSIC(X, Y) / sqrt(HSIC(X, X) HSIC(Y, Y)). Each layer's X~ is scaled by HSIC(X, X)^(-1/4) (every
term above is bilinear in the squared scales), so a grid cell is the HSIC expression itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from platobench.metrics.validation import DegenerateFeaturesError

#: Bytes of the concatenated Y layers one product of `combine` reads at a time (at least one layer).
BLOCK_BYTES = 256 * 2**20


@dataclass(frozen=True)
class FeatureSummary:
    """One layer for linear CKA in feature space.

    x [N, D] float64: the layer with centred columns, scaled so that its self-HSIC term is 1.
    a [N] float64: squared row norms of x for the unbiased estimator; None for the biased one.
    """

    x: torch.Tensor
    a: torch.Tensor | None

    def permuted(self, perm: torch.Tensor) -> FeatureSummary:
        """The summary of the same layer with its samples reordered (row r is sample perm[r])."""
        return FeatureSummary(self.x[perm], None if self.a is None else self.a[perm])


def _cross(x: torch.Tensor, ys: Sequence[torch.Tensor]) -> torch.Tensor:
    """||x^T y_j||_F^2 for each y_j [N, D_j]: [len(ys)] float64, one product per block of Y layers."""
    out, block, size = [], [], 0
    for j, y in enumerate(ys):
        block.append(y)
        size += y.numel() * y.element_size()
        if size >= BLOCK_BYTES or j == len(ys) - 1:
            p = (x.T @ (block[0] if len(block) == 1 else torch.cat(block, dim=1))).square_().sum(dim=0)
            out += [part.sum() for part in p.split([b.shape[1] for b in block])]
            block, size = [], 0
    return torch.stack(out)


def _corrections(ax: torch.Tensor, ay: torch.Tensor, n: int) -> torch.Tensor:
    """The unbiased estimator's terms beyond ||X~^T Y~||^2 for stacked row norms ax [Lx, N], ay [Ly, N]."""
    return -n / (n - 2) * (ax @ ay.T) + torch.outer(ax.sum(dim=1), ay.sum(dim=1)) / ((n - 1) * (n - 2))


def summarize(x: torch.Tensor, estimator: str) -> FeatureSummary:
    """Feature-space summary of one layer x [N, D] (any float dtype, already scaled to max |x| ~ 1)."""
    n = x.shape[0]
    xc = x.to(torch.float64, copy=True)  # centred and scaled in place: one [N, D] float64 copy in all
    xc -= xc.mean(dim=0, keepdim=True)
    own = _cross(xc, [xc])[0]
    a = None
    if estimator == "unbiased":
        a = torch.einsum("nd,nd->n", xc, xc)
        own = own + _corrections(a[None], a[None], n)[0, 0]
    if not own > 0:
        raise DegenerateFeaturesError("cka: a layer's centred Gram matrix is zero (constant features); "
                                      "CKA is undefined, expected features that vary across samples")
    scale = float(own) ** -0.25
    return FeatureSummary(xc.mul_(scale), None if a is None else a * scale**2)


def combine(sx: Sequence[FeatureSummary], sy: Sequence[FeatureSummary]) -> torch.Tensor:
    """CKA of every layer pair: [Lx, Ly] float64, no N×N matrix (cost N Dx Dy per pair)."""
    n = sx[0].x.shape[0]
    ys = [s.x for s in sy]
    grid = torch.stack([_cross(s.x, ys) for s in sx])
    if sx[0].a is not None:
        grid += _corrections(torch.stack([s.a for s in sx]), torch.stack([s.a for s in sy]), n)
    return grid.clamp(-1.0, 1.0)  # a cosine: only rounding can leave [-1, 1]
