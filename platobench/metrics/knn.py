"""Nearest-neighbour alignment metrics of the Platonic Representation Hypothesis.

Huh, Cheung, Wang & Isola, "The Platonic Representation Hypothesis", ICML 2024 (arXiv 2405.07987),
section 2 and appendix A; protocol of minyoungg/platonic-rep `metrics.py`.

Neighbours (every metric here): N_X(i) = the k samples j != i with the largest inner product
<x_i, x_j>, listed by decreasing inner product, ties broken by the lower index. This is exact and
deterministic; the reference sorts `X X^T` with the diagonal set to -1e8 using an unstable argsort,
so its tie-breaking is arbitrary (and a similarity below -1e8 would let a sample be its own
neighbour).

Ties at the boundary (more samples share the k-th inner product than the list has room for: duplicate
samples, or a sparse layer that preprocessing reduces to a few sign patterns) make the list a choice.
Breaking them to the lower index on *both* sides makes tied lists coincide on the lowest sample ids, so a
layer whose lists are mostly tied can score far above chance for no reason in the data. mutual_knn
therefore resolves ties by expectation (`ties="expected"`, the default): the score is the expected overlap
when each side breaks its own ties uniformly at random, independently. For a row with a boundary tie, the
samples above the k-th inner product are in the list for sure and each of the t tied samples with
probability r / t (r: the slots left for them); the expected overlap of row i is sum_j P(j ∈ N_X(i))
P(j ∈ N_Y(i)), exact and free of sample ids. `ties="lower_index"` keeps the lists as listed (the rule
before). The other kNN metrics here read ordered lists (cycle, LCS) or products of list masks (CKNNA),
whose expectations under random tie-breaking have no such closed form: they keep the lower-index rule, and
records flag layers whose lists are mostly tied (`tie_share`).

  mutual_knn  mean_i |N_X(i) ∩ N_Y(i)| / k (its expectation over tie-breaking, above).  Symmetric; chance
              k / (N - 1).
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
`combine` works on the lists of every layer at once, over blocks of samples, and never builds an N×N
block of scores: mutual_knn looks every Y-list up in a membership block of an X layer's lists (a bool
per pair of samples of the block: O(N k) per layer pair); cycle_knn compares k-lists elementwise;
lcs_knn runs the k×k LCS dynamic programme, each row one `cummax`, vectorised over layer pairs and
samples; cknna takes the four HSIC terms from the masked kernels' nonzero entries, which lie at the
shared list slots (O(N k²) per layer pair each). Temporaries are bounded by `BLOCK_BYTES`.

Permutation nulls: `permute_knn(sets, perm)` returns the neighbour lists of `Y[perm]` from those of
`Y` without recomputing any inner product (exact, including ties); it is registered on every metric
here as `Metric.extra["permute"]`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import torch

from platobench.errors import UserError
from platobench.metrics.knn_search import BACKENDS, BLOCK_BYTES, KnnSets, knn_sets, permute_knn
from platobench.metrics.registry import Metric, register
from platobench.metrics.validation import check_int, pow2_unit

# ---------------------------------------------------------------------------------------------
# Stacked lists of every layer, blocks of samples.


def _stack(sets: Sequence[KnnSets], field: str) -> torch.Tensor:
    """[L, N, k] stack of one field of every layer (sims promoted to a common dtype)."""
    parts = [getattr(s, field) for s in sets]
    if field == "sim":
        dtype = torch.float64 if any(p.dtype == torch.float64 for p in parts) else parts[0].dtype
        parts = [p.to(dtype) for p in parts]
    return torch.stack(parts)


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


def tie_share(s: KnnSets) -> float:
    """The share of samples whose k-th neighbour is tied at the boundary (the list is a choice among equal
    inner products), in [0, 1]."""
    return int(s.tie_rows.unique().numel()) / s.n if len(s.tie_rows) else 0.0


class _Entries(NamedTuple):
    """One layer's neighbour lists as weighted entries, sorted by row: sample `cols[e]` is in the list of
    sample `rows[e]` with probability `w[e]` (1 for a listed neighbour; on a row with a boundary tie, 1 above
    the k-th inner product and r / t for each of its t tied samples, r the slots left for them)."""

    rows: torch.Tensor
    cols: torch.Tensor
    w: torch.Tensor


def _entries(s: KnnSets) -> _Entries:
    """`_Entries` of one layer under random tie-breaking (module docstring)."""
    n, k = s.n, s.k
    dev = s.idx.device
    f64 = torch.float64
    rows = torch.arange(n, device=dev).repeat_interleave(k)
    cols = s.idx.flatten()
    if not len(s.tie_rows):
        return _Entries(rows, cols, torch.ones(len(cols), dtype=f64, device=dev))
    tied = torch.zeros(n, dtype=torch.bool, device=dev)
    tied[s.tie_rows] = True
    sure = (s.sim > s.sim[:, k - 1 :]) | ~tied[:, None]  # [N, k]: listed for sure (every slot of an untied row)
    count = torch.zeros(n, dtype=f64, device=dev).index_add_(0, s.tie_rows, torch.ones(len(s.tie_rows), dtype=f64, device=dev))
    room = (k - sure.sum(1)).to(f64)
    share = torch.where(tied, room / count.clamp(min=1), 0.0)
    rows = torch.cat([rows[sure.flatten()], s.tie_rows])
    cols = torch.cat([cols[sure.flatten()], s.tie_cols])
    w = torch.cat([torch.ones(int(sure.sum()), dtype=f64, device=dev), share[s.tie_rows]])
    order = rows.argsort(stable=True)
    return _Entries(rows[order], cols[order], w[order])


def _expected_counts(sx: Sequence[KnnSets], sy: Sequence[KnnSets]) -> torch.Tensor:
    """[Lx, Ly] sum over samples of the expected overlap sum_j P(j ∈ N_X(i)) P(j ∈ N_Y(i)): a dense block of
    X's inclusion probabilities (rows of a block of samples) looked up at every Y entry of those rows and
    summed per Y layer, O(N k + T) per layer pair (T: the tied candidates) after O(N²) per X layer."""
    n = sx[0].n
    ex, ey = [_entries(s) for s in sx], [_entries(s) for s in sy]
    dev = sx[0].idx.device
    y_rows = torch.cat([e.rows for e in ey])
    y_cols = torch.cat([e.cols for e in ey])
    y_w = torch.cat([e.w for e in ey])
    y_layer = torch.cat([torch.full((len(e.rows),), b, device=dev) for b, e in enumerate(ey)])
    order = y_rows.argsort(stable=True)
    y_rows, y_cols, y_w, y_layer = y_rows[order], y_cols[order], y_w[order], y_layer[order]
    counts = torch.zeros(len(sx), len(sy), dtype=torch.float64, device=dev)
    step = _samples_per_block(n, 8 * n)
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        ya, yb = (int(v) for v in torch.searchsorted(y_rows, torch.tensor([lo, hi], device=dev)))
        slots = (y_rows[ya:yb] - lo) * n + y_cols[ya:yb]
        block = torch.zeros((hi - lo) * n, dtype=torch.float64, device=dev)
        for a, e in enumerate(ex):
            xa, xb = (int(v) for v in torch.searchsorted(e.rows, torch.tensor([lo, hi], device=dev)))
            marks = (e.rows[xa:xb] - lo) * n + e.cols[xa:xb]
            block[marks] = e.w[xa:xb]
            counts[a] += torch.bincount(y_layer[ya:yb], weights=block[slots] * y_w[ya:yb], minlength=len(sy))
            block[marks] = 0.0
    return counts


def combine_mutual(sx: Sequence[KnnSets], sy: Sequence[KnnSets], params: dict[str, Any]) -> torch.Tensor:
    """mutual_knn grid: |N_X(i) ∩ N_Y(i)| from a membership block of X's lists (row i marks N_X(i)),
    looked up at the slots of every Y-list (a list holds distinct samples, so each shared neighbour
    counts once): O(N k) per layer pair after O(N²) per X layer, in blocks of samples. Under
    `ties="expected"`, when a layer of either side has a boundary tie, the same with inclusion
    probabilities in place of the lists (`_expected_counts`); without one both give the same counts."""
    n, k = _check_same_n(sx, sy)
    if params.get("ties", "expected") == "expected" and any(len(s.tie_rows) for s in (*sx, *sy)):
        return _expected_counts(sx, sy) / (n * k)
    ix, iy = _stack(sx, "idx"), _stack(sy, "idx")
    counts = torch.zeros(len(sx), len(sy), dtype=torch.float64, device=ix.device)
    step = _samples_per_block(n, n + 8 * len(sy) * k)
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        base = torch.arange(hi - lo, device=ix.device)[:, None] * n  # flat offset of each block row
        slots = (iy[:, lo:hi] + base).flatten()  # [Ly * c * k]: flat slots of the Y-lists in the block
        member = torch.zeros((hi - lo) * n, dtype=torch.bool, device=ix.device)
        for a in range(len(sx)):
            marks = (ix[a, lo:hi] + base).flatten()
            member[marks] = True
            counts[a] += member[slots].view(len(sy), -1).sum(1, dtype=torch.int64).double()
            member[marks] = False
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
    """Unbiased HSIC (Song et al. 2012, eq. 5) of the masked kernels K~ = M∘K_x, L~ = M∘L_y, M = V_x∘V_y,
    for every layer pair, in float64: [tr(K~L~) + 1ᵀK~1·1ᵀL~1/((n-1)(n-2)) - 2·1ᵀK~L~1/(n-2)] / (n(n-3)).

    Sparse and exact: row i of K~ and L~ is nonzero only at the shared neighbours j ∈ N_X(i) ∩ N_Y(i),
    held at their slots of X's list (K~_ij = <x_i, x_j>, L~_ij = <y_i, y_j> from Y's list). Then
    1ᵀK~L~1 = Σ_j (column sum of K~)_j (row sum of L~)_j, and tr(K~L~) = Σ_ij K~_ij L~_ji looks up row j's
    entry for i. O(N k²) per layer pair; no N×N block."""
    f64 = torch.float64
    ix, iy = _stack(sx, "idx"), _stack(sy, "idx")
    kx, ky = _stack(sx, "sim").to(f64), _stack(sy, "sim").to(f64)
    ly, k = len(sy), ix.shape[2]
    out = torch.zeros(len(sx), ly, dtype=f64, device=ix.device)
    step = _samples_per_block(n, 24 * ly * k * k)
    rows = torch.arange(n, device=ix.device)
    for a in range(len(sx)):
        lt = torch.empty(ly, n, k, dtype=f64, device=ix.device)  # L~ at the slots of X's list
        kt = torch.empty_like(lt)  # K~ likewise
        for lo in range(0, n, step):
            hi = min(n, lo + step)
            match = ix[a, None, lo:hi, :, None] == iy[:, lo:hi, None, :]  # [Ly, c, k, k]
            lt[:, lo:hi] = (match * ky[:, lo:hi, None, :]).sum(3)
            kt[:, lo:hi] = match.any(3) * kx[a, None, lo:hi]
        cols = torch.zeros(ly, n, dtype=f64, device=ix.device)
        cols.scatter_add_(1, ix[a].flatten().expand(ly, -1), kt.flatten(1))  # column sums of K~
        cross = (cols * lt.sum(2)).sum(1)
        trace = torch.zeros(ly, dtype=f64, device=ix.device)
        for lo in range(0, n, step):
            hi = min(n, lo + step)
            j = ix[a, lo:hi]  # [c, k]: the X-neighbours of lo..hi
            back = ix[a][j] == rows[lo:hi, None, None]  # [c, k, k]: slot of i in row j's X-list
            trace += (kt[:, lo:hi] * (back * lt[:, j]).sum(3)).flatten(1).sum(1)
        total = trace + kt.sum((1, 2)) * lt.sum((1, 2)) / ((n - 1) * (n - 2)) - 2.0 * cross / (n - 2)
        out[a] = total / (n * (n - 3))
    return out


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


TIES = ("expected", "lower_index")


def _validate(min_n: int):
    def validate(n: int, params: dict[str, Any]) -> None:
        if "ties" in params and params["ties"] not in TIES:
            raise UserError(f"ties must be one of {list(TIES)}, got {params['ties']!r}")
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
    range: tuple[float, float] | None = (0.0, 1.0), identity_score: float | None = 1.0, interval: str = "subsample",
    params: dict[str, Any] | None = None,
) -> Metric:
    """A kNN-family descriptor: shared parameters (and `params` of its own), invariances, summaries and
    permutation hook."""
    return Metric(
        id=id, params={**_PARAMS, **(params or {})}, higher_is_better=True, symmetric=symmetric, invariances=_KNN_INVARIANCES,
        chance=chance or _no_chance, summarize_x=_summarize, combine=combine, validate=_validate(min_n),
        description=description, range=range, identity_score=identity_score, interval=interval,
        estimand="expected_at_n", neighbour_sets=True, extra={"permute": permute_knn},
    )


for _metric in (
    # Half-subsets overstate the spread of mutual kNN and CKNNA (standard error 1.1-1.4x, coverage .975-1.00);
    # reading the variance's rate in N from quarter-subsets brings it to 0.94-1.18x (coverage .92-.985), and
    # mutual kNN, a share of shared neighbours, on the arcsin(sqrt) scale of a proportion to .962-.965 with a
    # paired difference's power at 3 SD .815 (docs/statistics.md).
    _knn_metric("mutual_knn", combine_mutual, symmetric=True, chance=lambda n, p: p["k"] / (n - 1), interval="arcsine_rate",
                params={"ties": "expected"},
                description="mean fraction of shared k nearest neighbours (inner product, self excluded; PRH); ties "
                            "at the k-th neighbour counted by their expected overlap under random tie-breaking"),
    # Cycle kNN is a mean of per-sample hits whose rate saturates on small subsets (p (1 - p) / n more than a
    # power of n): half-subsets understate its spread (0.73-1.08x), the jackknife overstates it (1.75-2.08x,
    # coverage .999), the rate scheme on the raw score misreads the rate; on the arcsin(sqrt) scale it fits
    # (docs/statistics.md).
    _knn_metric("cycle_knn", combine_cycle, symmetric=False, identity_score=None, interval="arcsine_rate",
                description="fraction of samples i reached back from a Y-neighbour through X-neighbours (PRH)"),
    _knn_metric("lcs_knn", combine_lcs, symmetric=True,
                description="longest common subsequence of the ordered kNN lists / k (PRH)"),
    _knn_metric("cknna", combine_cknna, symmetric=False, min_n=4, range=None, interval="rate",
                description="CKA restricted to mutual k-nearest-neighbour pairs, unbiased HSIC (PRH reference "
                "estimator); unbounded: a ratio of HSICs of asymmetric masked kernels, not a cosine, so it can "
                "leave [-1, 1]; undefined (error) when a layer's self-HSIC is <= 0"),
):
    register(_metric)
