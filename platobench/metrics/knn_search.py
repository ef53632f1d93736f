"""Exact k-nearest-neighbour search by inner product, in bounded memory, for the kNN metrics.

Neighbours: N(i) = the k samples j != i with the largest <x_i, x_j>, by decreasing inner product, ties
broken by the lower index (platobench.metrics.knn states the metrics built on them).

Engines (backend "torch", any device):
  whole   N² scores fit in `BLOCK_BYTES`: all inner products from one symmetric product
          (`products.self_product`: each off-diagonal block once, mirrored), then the top k + 1 of
          each row (`_top`: on the CPU among the best max-pooled groups of columns, else `topk`).
  tiles   larger N: square tiles of X Xᵀ on and above the diagonal only, each used twice (its rows
          and, transposed, its columns) to update a running top-(k+1) of every row. Memory
          O(N k + tile²), time N² D / 2 multiply-adds: half of a row-blocked search.
Both give the same lists: the top-(k+1) inner products of a row are the same numbers in any order of
merging, so a row whose k-th and (k+1)-th values differ has a unique top k, sorted by (value desc,
index asc); a row where they are equal (a tie at the boundary, e.g. duplicate samples) is recomputed
from its whole row of scores and takes the lowest tied indices. Each score is one float product
x_i·x_j whichever tile holds it; MKL's float32 product computes every entry in the same order, so on
the CPU duplicate samples tie exactly and all engines return the same lists and scores bit for bit
(tests/metrics/test_metrics_knn_search.py, N ≤ 4,096, with ties and duplicates). MKL's float64 product does
not (its own x xᵀ is not exactly symmetric): there, as with any float64 engine, scores equal to
rounding can order either way. cuBLAS has not been checked for this (no GPU here).

Backend "faiss": faiss `IndexFlatIP` (exact, float32, CPU), ties re-broken the same way.
`benchmarks/large_n.py` measures both backends up to N = 100,000.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import torch
import torch.nn.functional as F

from platobench.errors import UserError
from platobench.metrics.products import self_product

BACKENDS = ("torch", "faiss")
#: Bytes of dense temporaries a chunked step may allocate (score rows, tiles, indicator blocks).
BLOCK_BYTES = 256 * 2**20
#: Rows and columns of one tile of the tiled search.
TILE = 4096
#: Columns pooled into one group by `_top` (its candidates are the m best groups).
_GROUP = 8
_OVERFLOW = "features are too large: inner products overflow to inf/NaN; rescale the input"


@dataclass(frozen=True)
class KnnSets:
    """The k nearest neighbours (by inner product, self excluded) of every sample of one layer.

    idx [N, k] int64: neighbours of sample i by decreasing inner product, ties by lower index.
    sim [N, k]: the inner products <x_i, x_idx[i, m]> (the features' dtype; float32 for faiss).
    tie_rows, tie_cols [T] int64: for each row whose k-th inner product is shared by more samples than
        the list has room for, every (i, j), j != i, with <x_i, x_j> == sim[i, k-1]. These let
        `permute_knn` re-break ties by the new lower index after relabelling.
    """

    idx: torch.Tensor
    sim: torch.Tensor
    tie_rows: torch.Tensor
    tie_cols: torch.Tensor

    @property
    def n(self) -> int:
        return int(self.idx.shape[0])

    @property
    def k(self) -> int:
        return int(self.idx.shape[1])


def _sort_lists(idx: torch.Tensor, sim: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Order each row [N, k] by decreasing `sim`, ties by increasing `idx` (two stable sorts)."""
    by_index = idx.sort(dim=1, stable=True).indices
    idx, sim = idx.gather(1, by_index), sim.gather(1, by_index)
    by_sim = sim.sort(dim=1, descending=True, stable=True).indices
    return idx.gather(1, by_sim), sim.gather(1, by_sim)


class _Top(NamedTuple):
    values: torch.Tensor
    indices: torch.Tensor


def _top(s: torch.Tensor, m: int) -> _Top:
    """The m largest scores of every row of s [R, N] and their columns, by decreasing score (the order
    of equal scores, and which of them is taken at the m-th place, is arbitrary, as with `topk`; NaN
    counts as the largest). On the CPU with N >= 4 m _GROUP: the top m of a row lie in the m groups of
    `_GROUP` columns with the largest maxima (any other column is at most the smallest of these m
    maxima, hence at most the m-th largest score), so only m * _GROUP candidates per row (and the
    columns past the last whole group) are selected among, with numpy's introselect: several times
    faster than `topk` over the whole row. Elsewhere `topk`."""
    rows, n = s.shape
    if s.device.type != "cpu" or n < 4 * m * _GROUP:
        return _Top(*s.topk(m, dim=1))
    whole = n - n % _GROUP
    maxima = F.max_pool1d(s[:, :whole].detach().unsqueeze(1), _GROUP).squeeze(1).numpy()  # NaN propagates
    groups = np.argpartition(maxima, maxima.shape[1] - m, axis=1)[:, -m:]
    cols = (groups[:, :, None] * _GROUP + np.arange(_GROUP)).reshape(rows, -1)
    cols = torch.from_numpy(np.concatenate([cols, np.broadcast_to(np.arange(whole, n), (rows, n - whole))], axis=1))
    cand = s.gather(1, cols)
    pick = torch.from_numpy(np.argpartition(cand.detach().numpy(), cand.shape[1] - m, axis=1)[:, -m:])
    values, order = cand.gather(1, pick).sort(dim=1, descending=True)
    return _Top(values, cols.gather(1, pick.gather(1, order)))


def _lists(s: torch.Tensor, rows: torch.Tensor, k: int) -> KnnSets:
    """Exact lists of the samples `rows` [R] from their score rows s [R, N] (overwritten: self -> -inf);
    tie_rows index into `rows`.

    `topk(k + 1)` gives the list directly for rows whose k-th and (k+1)-th scores differ (sorted by
    (score desc, index asc) afterwards). Rows with a tie at the boundary — topk would pick among the
    tied samples arbitrarily — take the lowest tied indices, and their tied candidates are kept."""
    n = s.shape[1]
    r = torch.arange(len(rows), device=s.device)
    s[r, rows] = float("-inf")
    top = _top(s, min(k + 1, n))
    if not torch.isfinite(top.values[:, :k]).all() or top.values.isnan().any():
        raise UserError(_OVERFLOW)
    idx, sim = _sort_lists(top.indices[:, :k], top.values[:, :k])
    empty = torch.empty(0, dtype=torch.long, device=s.device)
    if k + 1 > n - 1:  # every other sample is a neighbour: no boundary
        return KnnSets(idx, sim, empty, empty)
    boundary = (top.values[:, k] == top.values[:, k - 1]).nonzero().flatten()
    if len(boundary) == 0:
        return KnnSets(idx, sim, empty, empty)
    s = s[boundary]
    kth = top.values[boundary, k - 1 : k]  # [B, 1]
    above, tied = s > kth, s == kth
    tied[torch.arange(len(boundary), device=s.device), rows[boundary]] = False
    room = k - above.sum(1, keepdim=True)  # >= 1 tied slots per row
    take = above | (tied & (tied.cumsum(1) <= room))
    cols = take.nonzero()[:, 1].view(len(boundary), k)  # row-major: ascending index within a row
    idx[boundary], sim[boundary] = _sort_lists(cols, s.gather(1, cols))
    tie_r, tie_c = tied.nonzero(as_tuple=True)  # tied.sum(1) > room on every boundary row
    return KnnSets(idx, sim, boundary[tie_r], tie_c)


def _knn_rows(x: torch.Tensor, k: int, rows: torch.Tensor) -> KnnSets:
    """Exact lists of the samples `rows` [R] of x [N, D], from blocks of whole score rows x[rows] xᵀ
    (at most `BLOCK_BYTES` each); tie_rows index into `rows`."""
    n = x.shape[0]
    step = max(1, BLOCK_BYTES // (4 * n * x.element_size()))
    parts = [(_lists(x[rows[lo:lo + step]] @ x.T, rows[lo:lo + step], k), lo) for lo in range(0, len(rows), step)]
    return KnnSets(
        torch.cat([p.idx for p, _ in parts]),
        torch.cat([p.sim for p, _ in parts]),
        torch.cat([p.tie_rows + lo for p, lo in parts]),
        torch.cat([p.tie_cols for p, _ in parts]),
    )


def _merge(best: torch.Tensor, arg: torch.Tensor, lo: int, t: torch.Tensor, col0: int) -> None:
    """Fold the scores t [R, C] of rows lo..lo+R against columns col0..col0+C into the running top
    values `best` [N, m] and their columns `arg` [N, m], in place."""
    m, rows = best.shape[1], slice(lo, lo + t.shape[0])
    top = t.topk(min(m, t.shape[1]), dim=1)
    values = torch.cat([best[rows], top.values], dim=1)
    cols = torch.cat([arg[rows], top.indices + col0], dim=1)
    keep = values.topk(m, dim=1)
    best[rows], arg[rows] = keep.values, cols.gather(1, keep.indices)


def _knn_tiles(x: torch.Tensor, k: int, tile: int = TILE) -> KnnSets:
    """Exact kNN from the tiles of x xᵀ on and above the diagonal (module docstring); N > k + 1."""
    n = x.shape[0]
    best = torch.full((n, k + 1), float("-inf"), dtype=x.dtype, device=x.device)
    arg = torch.zeros(n, k + 1, dtype=torch.long, device=x.device)
    for a in range(0, n, tile):
        xa = x[a:a + tile]
        for b in range(a, n, tile):
            t = xa @ x[b:b + tile].T
            if a == b:
                t.fill_diagonal_(float("-inf"))
            _merge(best, arg, a, t, b)
            if b != a:
                _merge(best, arg, b, t.T, a)
    if not torch.isfinite(best[:, :k]).all() or best.isnan().any():
        raise UserError(_OVERFLOW)
    idx, sim = _sort_lists(arg[:, :k], best[:, :k])
    redo = (best[:, k] == best[:, k - 1]).nonzero().flatten()
    empty = torch.empty(0, dtype=torch.long, device=x.device)
    if len(redo) == 0:
        return KnnSets(idx, sim, empty, empty)
    exact = _knn_rows(x, k, redo)
    idx[redo], sim[redo] = exact.idx, exact.sim
    return KnnSets(idx, sim, redo[exact.tie_rows], exact.tie_cols)


def _knn_torch(x: torch.Tensor, k: int) -> KnnSets:
    """Exact kNN on x's device: from the whole symmetric score matrix while it fits in `BLOCK_BYTES`,
    else by tiles."""
    n = x.shape[0]
    if n * n * x.element_size() <= BLOCK_BYTES:
        return _lists(self_product(x, out_dtype=x.dtype), torch.arange(n, device=x.device), k)
    return _knn_tiles(x, k)


def _knn_faiss(x: torch.Tensor, k: int) -> KnnSets:
    """kNN with a faiss exact inner-product index (float32). faiss orders equal scores arbitrarily, so
    we retrieve k + 2 candidates, re-break ties by the lower index, and recompute with the torch
    backend any row whose k-th score equals the next one (the tie may extend past what faiss
    returned). Scores come from faiss's own BLAS call: near-ties (~float32 eps) can resolve differently
    from the torch backend."""
    import faiss  # optional dependency, imported on use

    n = x.shape[0]
    xs = x.detach().to("cpu", torch.float32).contiguous()
    if n <= k + 2:
        return _knn_torch(xs, k)
    index = faiss.IndexFlatIP(xs.shape[1])
    index.add(xs.numpy())
    scores, found = index.search(xs.numpy(), k + 2)
    scores, found = torch.from_numpy(scores), torch.from_numpy(found)
    if not torch.isfinite(scores).all():
        raise UserError(_OVERFLOW)
    self_hit = found == torch.arange(n).unsqueeze(1)
    # Drop self (or the last candidate when self was not retrieved): k + 1 candidates per row.
    drop = torch.where(self_hit.any(1), self_hit.to(torch.int8).argmax(1), torch.full((n,), k + 1))
    keep = torch.ones_like(self_hit)
    keep[torch.arange(n), drop] = False
    cand, cand_sim = _sort_lists(found[keep].view(n, k + 1), scores[keep].view(n, k + 1))
    idx, sim = cand[:, :k].contiguous(), cand_sim[:, :k].contiguous()
    redo = (cand_sim[:, k] == cand_sim[:, k - 1]).nonzero().flatten()
    tie_rows = tie_cols = torch.empty(0, dtype=torch.long)
    if len(redo):
        exact = _knn_rows(xs, k, redo)
        idx[redo], sim[redo] = exact.idx, exact.sim
        tie_rows, tie_cols = redo[exact.tie_rows], exact.tie_cols
    dev = x.device
    return KnnSets(idx.to(dev), sim.to(dev), tie_rows.to(dev), tie_cols.to(dev))


def knn_sets(x: torch.Tensor, k: int, *, backend: str = "torch") -> KnnSets:
    """Exact k nearest neighbours by inner product of every row of x [N, D], self excluded, ties by
    the lower index. backend "torch" (default; chunked, runs on x's device) or "faiss" (CPU,
    IndexFlatIP, float32; for large N)."""
    if backend == "torch":
        return _knn_torch(x, k)
    if backend == "faiss":
        return _knn_faiss(x, k)
    raise UserError(f"backend must be one of {list(BACKENDS)}, got {backend!r}")


def permute_knn(sets: KnnSets, perm: Any) -> KnnSets:
    """Neighbour lists of Y[perm] given those of Y (row a of Y[perm] is row perm[a] of Y).

    Exact, ties included: equal scores are re-broken by the new lower index using the stored tied
    candidates. Cost O(N k log k + T). `perm` is a permutation of range(N) (tensor or sequence)."""
    n = sets.n
    perm = torch.as_tensor(perm, dtype=torch.long, device=sets.idx.device)
    if perm.shape != (n,) or not torch.equal(perm.sort().values, torch.arange(n, device=perm.device)):
        raise UserError(f"perm must be a permutation of range({n}), got shape {tuple(perm.shape)}")
    inv = torch.empty_like(perm)
    inv[perm] = torch.arange(n, device=perm.device)
    idx, sim = inv[sets.idx[perm]], sets.sim[perm]
    tie_rows, tie_cols = inv[sets.tie_rows], inv[sets.tie_cols]
    if len(tie_rows):
        key = tie_rows * n + tie_cols
        order = key.argsort()
        tie_rows, tie_cols = tie_rows[order], tie_cols[order]
        kth = sim[:, -1:]
        slots = sim == kth  # tied slots of every row
        room = slots.sum(1)
        first = torch.searchsorted(tie_rows, tie_rows, right=False)
        rank = torch.arange(len(tie_rows), device=tie_rows.device) - first
        chosen = rank < room[tie_rows]
        has_ties = torch.zeros(n, dtype=torch.bool, device=idx.device)
        has_ties[tie_rows] = True
        fill = slots & has_ties.unsqueeze(1)
        idx[fill] = tie_cols[chosen]  # both in row-major order, `room` entries per row
    idx, sim = _sort_lists(idx, sim)
    return KnnSets(idx, sim, tie_rows, tie_cols)


