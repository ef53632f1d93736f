"""Centred kernel alignment (CKA; Kornblith et al. 2019, "Similarity of neural network representations
revisited") with a linear or RBF kernel and the biased or unbiased HSIC estimator, in float64 (the Gram
products of large layers in float32, see below).

  biased    HSIC_0(K, L) = tr(K H L H) / (n - 1)^2 with H = I - 11^T/n (Gretton et al. 2005), so
            CKA = <HKH, HLH>_F / (||HKH||_F ||HLH||_F).
  unbiased  HSIC_1 of Song et al. 2012 (JMLR 13, eq. 5), on kernels with a zero diagonal. HSIC_1 is an
            inner product of U-centred Gram matrices (Szekely & Rizzo 2014, "Partial distance
            correlation", Def. 1 and Prop. 1): HSIC_1(K, L) = <U(K), U(L)>_F / (n (n - 3)) with
            U(K)_ij = K~_ij - r_i/(n-2) - r_j/(n-2) + s/((n-1)(n-2)) for i != j, U(K)_ii = 0,
            K~ = K with its diagonal zeroed, r its row sums, s its total. Needs n >= 4.

Per layer the summary is the centred Gram matrix, flattened and scaled to unit norm, so a whole layer
grid is one matrix product V_X V_Y^T ("grid == score" by construction). The Gram product x x^T is
taken of column-centred features, each off-diagonal block once (`products.self_product`), in
float32 once it is large (`FLOAT32_PRODUCT_MIN` multiply-adds), in float64 below; the U-/double
centring (in place) and the products of summaries are float64. The float32 product moves CKA by
< 1e-8 on random features and on features with one dimension 100x the others (tests/
test_metrics_cka_feature_space.py checks 1e-6; benchmarks/gram_floor.py, part 2).

Linear kernel, large N: a layer [N, D] with D^2 <= N, or whose N×N float64 Gram would exceed
`GRAM_BUDGET_BYTES`, is summarised in feature space instead (platobench.metrics.linear_cka: the same
estimators without any N×N matrix; `feature_space`). The D^2 <= N rule makes that path no slower than
the Gram path for any pair of such layers (N Dx Dy <= N^2 per pair and per permutation draw). When a
grid mixes both kinds (only possible within the budget), the feature-space layers are turned into
centred Grams in `combine`. Kernels:
  linear  K = X X^T.
  rbf     K_ij = exp(-||x_i - x_j||^2 / (2 sigma^2)), sigma = sigma_frac * median of ||x_i - x_j|| over the
          pairs i < j (lower median; Kornblith et al. use a fraction of the median distance).
"""

from __future__ import annotations

from typing import Any

import torch

from platobench.errors import UserError
from platobench.metrics.linear_cka import FeatureSummary
from platobench.metrics.linear_cka import combine as combine_features
from platobench.metrics.linear_cka import summarize as summarize_features
from platobench.metrics.products import self_product
from platobench.metrics.registry import Metric, register
from platobench.metrics.validation import DegenerateFeaturesError, check_choice, check_positive, pow2_unit

KERNELS = ("linear", "rbf")
ESTIMATORS = ("unbiased", "biased")
#: Bytes of the stacked copy of Y summaries one product of `combine` reads (at least one layer).
_Y_CHUNK_BYTES = 256 * 2**20
#: Gram products x x^T of at least this many multiply-adds (N^2 D) are computed in float32, smaller
#: ones (which cost little) in float64; the centring and everything after it is float64.
FLOAT32_PRODUCT_MIN = 2**27
#: Largest N×N float64 Gram matrix (bytes) that linear CKA builds per layer; beyond it, feature space.
GRAM_BUDGET_BYTES = 2**30


def feature_space(n: int, d: int) -> bool:
    """Whether linear CKA summarises a layer [n, d] in feature space (see the module docstring)."""
    return d * d <= n or n * n * 8 > GRAM_BUDGET_BYTES


def gram(
    x: torch.Tensor, kernel: str, sigma_frac: float, product: torch.dtype = torch.float64
) -> torch.Tensor:
    """Kernel matrix [N, N] float64 of the rows of x [N, D]; the inner products x x^T are computed in
    the dtype `product`, everything after them in float64."""
    g = self_product(x.to(product))
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


def u_centre_(k: torch.Tensor) -> torch.Tensor:
    """U-centring of a symmetric [n, n] kernel (Szekely & Rizzo 2014), in place and returned; the
    diagonal is ignored and set to 0: U_ij = K~_ij - v_i - v_j with v = r/(n-2) - s/(2(n-1)(n-2))."""
    n = k.shape[0]
    k.fill_diagonal_(0.0)
    r = k.sum(dim=1)
    v = r / (n - 2) - r.sum() / (2 * (n - 1) * (n - 2))
    k -= v[:, None]
    k -= v[None, :]
    return k.fill_diagonal_(0.0)


def double_centre_(k: torch.Tensor) -> torch.Tensor:
    """H K H for H = I - 11^T/n, in place and returned."""
    half = k.mean() / 2
    rows, cols = k.mean(dim=1) - half, k.mean(dim=0) - half
    k -= rows[:, None]
    k -= cols[None, :]
    return k


def _gram_summary(x: torch.Tensor, p: dict[str, Any]) -> torch.Tensor:
    """Unit-norm flattened centred Gram matrix of one layer x [N, D]: [N*N] float64. The columns are
    centred first (both kernels' CKA is translation invariant), so that a float32 product rounds
    relative to the spread of the features, not to a large common offset. For float32 features and a
    float32 product the float64 column mean is rounded to float32 and subtracted in float32: the
    rounding of the mean is one more translation, which the centring of the Gram removes."""
    n, d = x.shape
    if n * n * d >= FLOAT32_PRODUCT_MIN and x.dtype == torch.float32:
        xc, product = x - x.mean(dim=0, dtype=torch.float64).float(), torch.float32
    elif n * n * d >= FLOAT32_PRODUCT_MIN:  # float64 features: centred before rounding to float32
        xc, product = (x - x.mean(dim=0)).float(), torch.float32
    else:
        x = x.to(torch.float64)
        xc, product = x - x.mean(dim=0), torch.float64
    k = gram(xc, p["kernel"], p["sigma_frac"], product=product)
    c = u_centre_(k) if p["estimator"] == "unbiased" else double_centre_(k)
    norm = torch.linalg.vector_norm(c)
    if not norm > 0:
        raise DegenerateFeaturesError("cka: a layer's centred Gram matrix is zero (constant features); "
                        "CKA is undefined, expected features that vary across samples")
    return c.div_(norm).view(-1)


def _summarize(x: torch.Tensor, p: dict[str, Any]) -> torch.Tensor | FeatureSummary:
    """One layer's summary: a `FeatureSummary` (linear kernel, `feature_space`) or the unit-norm
    flattened centred Gram matrix [N*N] float64. The layer is first brought to max |x| in [0.5, 1) by a
    power of two (`pow2_unit`: exact, CKA is scale-invariant) so that products of float64 features near
    the range limits neither underflow nor overflow."""
    x = pow2_unit(x)
    if p["kernel"] == "linear" and feature_space(*x.shape):
        return summarize_features(x, p["estimator"])
    return _gram_summary(x, p)


def _as_gram(s: torch.Tensor | FeatureSummary, p: dict[str, Any]) -> torch.Tensor:
    return _gram_summary(s.x, p) if isinstance(s, FeatureSummary) else s


def _combine(sx: list[Any], sy: list[Any], p: dict[str, Any]) -> torch.Tensor:
    if all(isinstance(s, FeatureSummary) for s in [*sx, *sy]):
        return combine_features(sx, sy)
    sx, sy = [_as_gram(s, p) for s in sx], [_as_gram(s, p) for s in sy]
    vx = torch.stack(sx)
    step = max(1, _Y_CHUNK_BYTES // (sy[0].numel() * sy[0].element_size()))
    parts = [vx @ torch.stack(sy[j:j + step]).T for j in range(0, len(sy), step)]
    return torch.cat(parts, dim=1).clamp(-1.0, 1.0)  # a cosine: only rounding can leave [-1, 1]


def _permute(summary: torch.Tensor | FeatureSummary, perm: torch.Tensor) -> torch.Tensor | FeatureSummary:
    """Summary of the same layer with its samples reordered: rows of the features, or rows and columns
    of the Gram permuted."""
    if isinstance(summary, FeatureSummary):
        return summary.permuted(perm)
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
        estimand=lambda p: "population" if p["estimator"] == "unbiased" else "expected_at_n",
        # Half-subsets, not the grouped jackknife: a best-of-grid CKA is the maximum of near-tied cells on a flat
        # spectrum, not a smooth statistic, and leaving out a twentieth of the samples re-selects among them, which
        # the jackknife's (B - 1) factor inflates (standard error 1.22-1.23x the score's spread, coverage .964 and
        # .979 at N = 256); half-subsets cover .943-.957 in every cell (1,000 datasets each; docs/statistics.md).
        interval="subsample",
        extra={"permute": _permute},
    )
)
