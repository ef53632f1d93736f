"""Nearest-neighbour alignment metrics of the Platonic Representation Hypothesis.

Huh, Cheung, Wang & Isola, "The Platonic Representation Hypothesis", ICML 2024 (arXiv 2405.07987),
section 2 and appendix A; protocol of minyoungg/platonic-rep `metrics.py`.

Neighbours (every metric here): N_X(i) = the k samples j != i with the largest inner product
<x_i, x_j>, listed by decreasing inner product, ties broken by the lower index. This is exact and
deterministic; the reference sorts `X X^T` with the diagonal set to -1e8 using an unstable argsort,
so its tie-breaking is arbitrary (and a similarity below -1e8 would let a sample be its own
neighbour).

  mutual_knn  mean_i |N_X(i) ∩ N_Y(i)| / k.  Symmetric; chance k / (N - 1).
  cycle_knn   mean_i 1[∃ j ∈ N_Y(i): i ∈ N_X(j)]: go to a Y-neighbour, come back through X
              (the reference's `knn_A[knn_B]` with A = X, B = Y).  Not symmetric, and below 1 on
              equal inputs when some i is no neighbour of any of its own neighbours.
  lcs_knn     mean_i LCS(N_X(i), N_Y(i)) / k: longest common subsequence of the two ordered lists,
              normalised to [0, 1] (the reference returns the raw length in [0, k]).  Symmetric.
  cknna       the reference estimator: with K = X X^T, L = Y Y^T and the mask M_ij = 1[j ∈ N_X(i) and
              j ∈ N_Y(i)] (self excluded), cknna = h(M∘K, M∘L) / sqrt(h(V_X∘K, V_X∘K) h(V_Y∘L, V_Y∘L)),
              h the unbiased HSIC of Song et al. (2012, eq. 5) applied to the (asymmetric) masked
              kernels, V_X the kNN indicator of X.  Because h uses 1ᵀ K̃ L̃ 1 on asymmetric matrices the
              estimator is not symmetric in (X, Y).  Unlike the reference we add no 1e-6 to the
              denominator (it is not negligible for l2-normalised features, whose HSIC values are small).

Invariances (declared on every metric here, under preprocess "none"): rotation and isotropic scaling
of either side and a joint reordering of the samples leave the inner-product order, hence the lists,
unchanged (cknna's ratio of HSICs is also unchanged by the scale c^2 of the inner products).
Translation is not declared: X + v changes <x_i, x_j> by <x_i + x_j, v> + |v|^2, which reorders neighbours.

Layer grids (see platobench.metrics.registry): the per-layer summary is the neighbour lists
(`KnnSets`, O(N k) memory, found by platobench.metrics.knn_search without any N×N matrix at large N);
`combine` works on the lists of every layer at once, over blocks of samples.  mutual_knn and
cycle_knn compare k-lists elementwise (O(N k²) per layer pair); lcs_knn runs the k×k LCS dynamic
programme, each row one `cummax`, vectorised over layer pairs and samples; cknna rebuilds the dense
masked kernels of a block of rows and takes the four HSIC terms from batched products (O(N²) time per
layer pair, memory bounded by `BLOCK_BYTES`).

Permutation nulls: `permute_knn(sets, perm)` returns the neighbour lists of `Y[perm]` from those of
`Y` without recomputing any inner product (exact, including ties); it is registered on every metric
here as `Metric.extra["permute"]`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from platobench.errors import UserError
from platobench.metrics.knn_search import BACKENDS, BLOCK_BYTES, KnnSets, knn_sets, permute_knn
from platobench.metrics.registry import Metric, register
from platobench.metrics.validation import check_int, pow2_unit

# ---------------------------------------------------------------------------------------------
# Dense indicator blocks for batched layer combination.


def _stack(sets: Sequence[KnnSets], field: str) -> torch.Tensor:
    """[L, N, k] stack of one field of every layer (sims promoted to a common dtype)."""
    parts = [getattr(s, field) for s in sets]
    if field == "sim":
        dtype = torch.float64 if any(p.dtype == torch.float64 for p in parts) else parts[0].dtype
        parts = [p.to(dtype) for p in parts]
    return torch.stack(parts)


def _rows_block(idx: torch.Tensor, lo: int, hi: int, values: torch.Tensor | None, dtype) -> torch.Tensor:
    """B [L, hi-lo, N] with B[l, i-lo, idx[l, i, m]] = values[l, i, m] (or 1) for lo <= i < hi."""
    L, n, k = idx.shape
    out = torch.zeros(L, hi - lo, n, dtype=dtype, device=idx.device)
    src = values[:, lo:hi].to(dtype) if values is not None else torch.ones(1, dtype=dtype, device=idx.device)
    return out.scatter_(2, idx[:, lo:hi], src.expand(L, hi - lo, k))


def _cols_block(idx: torch.Tensor, lo: int, hi: int, values: torch.Tensor | None, dtype) -> torch.Tensor:
    """Bᵀ restricted to rows lo..hi: B [L, hi-lo, N] with B[l, j-lo, i] = values[l, i, m] (or 1) for
    every neighbour j = idx[l, i, m] in [lo, hi) — the reverse-neighbour indicator."""
    L, n, _ = idx.shape
    out = torch.zeros(L, hi - lo, n, dtype=dtype, device=idx.device)
    layer, row, slot = ((idx >= lo) & (idx < hi)).nonzero(as_tuple=True)
    src = values[layer, row, slot].to(dtype) if values is not None else torch.ones((), dtype=dtype, device=idx.device)
    out[layer, idx[layer, row, slot] - lo, row] = src
    return out


def _samples_per_block(n: int, bytes_per_sample: int) -> int:
    """Samples per block so that the block's dense temporaries stay within BLOCK_BYTES."""
    return max(1, min(n, BLOCK_BYTES // max(1, bytes_per_sample)))


def _check_same_n(sx: Sequence[KnnSets], sy: Sequence[KnnSets]) -> tuple[int, int]:
    n, k = sx[0].n, sx[0].k
    for s in (*sx, *sy):
        if s.n != n or s.k != k:
            raise UserError(f"all layers must share N and k; got (N={s.n}, k={s.k}) and (N={n}, k={k})")
    return n, k


# ---------------------------------------------------------------------------------------------
# Combiners: lists of per-layer KnnSets -> [Lx, Ly] float64.


def combine_mutual(sx: Sequence[KnnSets], sy: Sequence[KnnSets], params: dict[str, Any]) -> torch.Tensor:
    """mutual_knn grid: |N_X(i) ∩ N_Y(i)| by comparing the two k-lists of every sample (a list holds
    distinct samples, so each shared neighbour matches once): O(N k²) per layer pair, no N×N block."""
    n, k = _check_same_n(sx, sy)
    ix, iy = _stack(sx, "idx"), _stack(sy, "idx")
    counts = torch.zeros(len(sx), len(sy), dtype=torch.float64, device=ix.device)
    step = _samples_per_block(n, len(sy) * k * k)
    for a in range(len(sx)):
        for lo in range(0, n, step):
            hi = min(n, lo + step)
            shared = ix[a, None, lo:hi, :, None] == iy[:, lo:hi, None, :]  # [Ly, c, k, k]
            counts[a] += shared.flatten(1).sum(1).double()
    return counts / (n * k)


def combine_cycle(sx: Sequence[KnnSets], sy: Sequence[KnnSets], params: dict[str, Any]) -> torch.Tensor:
    """cycle_knn grid: sample i is hit when some j ∈ N_Y(i) has i ∈ N_X(j); the X-lists of the k
    Y-neighbours are gathered and searched for i: O(N k²) per layer pair, no N×N block."""
    n, k = _check_same_n(sx, sy)
    ix, iy = _stack(sx, "idx"), _stack(sy, "idx")
    hits = torch.zeros(len(sx), len(sy), dtype=torch.float64, device=ix.device)
    step = _samples_per_block(n, 9 * len(sy) * k * k)
    for a in range(len(sx)):
        for lo in range(0, n, step):
            hi = min(n, lo + step)
            back = ix[a][iy[:, lo:hi]]  # [Ly, c, k, k]: X-lists of the Y-neighbours of lo..hi
            me = torch.arange(lo, hi, device=ix.device)[None, :, None, None]
            hits[a] += (back == me).flatten(2).any(2).sum(1).double()
    return hits / n


def combine_lcs(sx: Sequence[KnnSets], sy: Sequence[KnnSets], params: dict[str, Any]) -> torch.Tensor:
    """lcs_knn grid: LCS of the ordered lists by the k×k dynamic programme, vectorised over layer
    pairs and a block of samples. Row p of the table: dp_p[q] = max_{q' <= q} max(dp_{p-1}[q'],
    dp_{p-1}[q'-1] + match(p, q')) — one `cummax` per row since dp_{p-1} is non-decreasing in q."""
    n, k = _check_same_n(sx, sy)
    ix, iy = _stack(sx, "idx"), _stack(sy, "idx")
    lx, ly = len(sx), len(sy)
    total = torch.zeros(lx, ly, dtype=torch.float64, device=ix.device)
    step = _samples_per_block(n, 8 * lx * ly * k * (k + 2))
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        a = ix[:, None, lo:hi, :, None]  # [Lx, 1, c, k, 1]
        b = iy[None, :, lo:hi, None, :]  # [1, Ly, c, 1, k]
        match = (a == b).to(torch.int32)  # [Lx, Ly, c, k, k]
        prev = torch.zeros(lx, ly, hi - lo, k + 1, dtype=torch.int32, device=ix.device)
        for p in range(k):
            cand = torch.maximum(prev[..., 1:], prev[..., :-1] + match[..., p, :])
            row = torch.cummax(cand, dim=-1).values
            prev = torch.cat([prev[..., :1], row], dim=-1)
        total += prev[..., -1].sum(-1).double()
    return total / (n * k)


def _cknna_hsic(sx: Sequence[KnnSets], sy: Sequence[KnnSets], n: int) -> torch.Tensor:
    """Unbiased HSIC (Song et al. 2012, eq. 5) of the masked kernels M∘K_x, M∘L_y, M = V_x∘V_y, for
    every layer pair, in float64: [tr(K̃L̃) + 1ᵀK̃1·1ᵀL̃1/((n-1)(n-2)) - 2·1ᵀK̃L̃1/(n-2)] / (n(n-3))."""
    f64 = torch.float64
    ix, iy = _stack(sx, "idx"), _stack(sy, "idx")
    kx, ky = _stack(sx, "sim"), _stack(sy, "sim")
    lx, ly = len(sx), len(sy)
    trace = torch.zeros(lx, ly, dtype=f64, device=ix.device)
    sum_k = torch.zeros_like(trace)
    sum_l = torch.zeros_like(trace)
    cross = torch.zeros_like(trace)
    step = _samples_per_block(n, 8 * (10 * n * (lx + ly) + 4 * lx * ly))
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        vx = _rows_block(ix, lo, hi, None, f64)
        ax, ay = _rows_block(ix, lo, hi, kx, f64), _rows_block(iy, lo, hi, ky, f64)
        vxt, vyt = _cols_block(ix, lo, hi, None, f64), _cols_block(iy, lo, hi, None, f64)
        axt = _cols_block(ix, lo, hi, kx, f64)
        # tr(K̃L̃) = Σ_ij (V_x∘V_xᵀ∘K)_ij (V_y∘V_yᵀ∘L)_ij: mutual-neighbour kernels, rows lo..hi.
        trace += (ax * vxt).flatten(1) @ (ay * vyt).flatten(1).T
        # Column sums of K̃ and row sums of L̃ for samples j in lo..hi: [c, Lx, Ly].
        col_k = torch.bmm(axt.transpose(0, 1), vyt.permute(1, 2, 0))
        row_l = torch.bmm(vx.transpose(0, 1), ay.permute(1, 2, 0))
        sum_k += col_k.sum(0)
        sum_l += row_l.sum(0)
        cross += (col_k * row_l).sum(0)
    hsic = trace + sum_k * sum_l / ((n - 1) * (n - 2)) - 2.0 * cross / (n - 2)
    return hsic / (n * (n - 3))


def combine_cknna(sx: Sequence[KnnSets], sy: Sequence[KnnSets], params: dict[str, Any]) -> torch.Tensor:
    """cknna grid: HSIC of every layer pair over sqrt of each layer's self-HSIC (computed per layer
    with the same code, so a grid entry equals the one-pair score). NaN where a layer's self-HSIC is
    <= 0 (the estimator on asymmetric masked kernels is not a norm): the score is undefined there and
    `LayerSummaries.grid` raises UndefinedScoreError."""
    n, _ = _check_same_n(sx, sy)
    hxy = _cknna_hsic(sx, sy, n)
    hx = torch.stack([_cknna_hsic([s], [s], n)[0, 0] for s in sx])
    hy = torch.stack([_cknna_hsic([s], [s], n)[0, 0] for s in sy])
    defined = (hx[:, None] > 0) & (hy[None, :] > 0)  # an unbiased self-HSIC can be <= 0: no normaliser
    return torch.where(defined, hxy / torch.sqrt(hx[:, None] * hy[None, :]), float("nan"))


# ---------------------------------------------------------------------------------------------
# Registration.


def _validate(min_n: int):
    def validate(n: int, params: dict[str, Any]) -> None:
        k = check_int(params["k"], "k", 1)
        if n <= k:
            raise UserError(f"k must be smaller than the number of samples N: got k={k}, N={n} "
                            f"(each sample has only N-1 other samples)")
        if n < min_n:
            raise UserError(f"this metric needs at least {min_n} samples, got N={n}")
        if params["backend"] not in BACKENDS:
            raise UserError(f"backend must be one of {list(BACKENDS)}, got {params['backend']!r}")

    return validate


def _summarize(x: torch.Tensor, params: dict[str, Any]) -> KnnSets:
    """Neighbour lists of x [N, D] brought to max |x| in [0.5, 1) by a power of two first (`pow2_unit`):
    the neighbours are unchanged, the inner products can neither underflow (tiny features: every
    sample would tie) nor overflow, and `sim` holds the inner products of the rescaled layer."""
    return knn_sets(pow2_unit(x), params["k"], backend=params["backend"])


def _no_chance(n: int, params: dict[str, Any]) -> None:
    return None


_PARAMS = {"k": 10, "backend": "torch"}
_KNN_INVARIANCES = ("rotation", "isotropic_scaling", "sample_permutation_joint")

def _knn_metric(
    id: str, combine: Any, *, symmetric: bool, description: str, chance: Any = None, min_n: int = 2,
    range: tuple[float, float] | None = (0.0, 1.0), identity_score: float | None = 1.0,
) -> Metric:
    """A kNN-family descriptor: shared parameters, invariances, summaries and permutation hook."""
    return Metric(
        id=id, params=dict(_PARAMS), higher_is_better=True, symmetric=symmetric, invariances=_KNN_INVARIANCES,
        chance=chance or _no_chance, summarize_x=_summarize, combine=combine, validate=_validate(min_n),
        description=description, range=range, identity_score=identity_score, extra={"permute": permute_knn},
    )


for _metric in (
    _knn_metric("mutual_knn", combine_mutual, symmetric=True, chance=lambda n, p: p["k"] / (n - 1),
                description="mean fraction of shared k nearest neighbours (inner product, self excluded; PRH)"),
    _knn_metric("cycle_knn", combine_cycle, symmetric=False, identity_score=None,
                description="fraction of samples i reached back from a Y-neighbour through X-neighbours (PRH)"),
    _knn_metric("lcs_knn", combine_lcs, symmetric=True,
                description="longest common subsequence of the ordered kNN lists / k (PRH)"),
    _knn_metric("cknna", combine_cknna, symmetric=False, min_n=4, range=None,
                description="CKA restricted to mutual k-nearest-neighbour pairs, unbiased HSIC (PRH reference "
                "estimator); unbounded: a ratio of HSICs of asymmetric masked kernels, not a cosine, so it can "
                "leave [-1, 1]; undefined (error) when a layer's self-HSIC is <= 0"),
):
    register(_metric)
