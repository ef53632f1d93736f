"""Feature preprocessing applied to a model's whole layer stack before scoring.

Modes:
  none       features as given.
  l2         each row (sample) of each layer divided by its Euclidean norm (`F.normalize`, eps 1e-12).
  prh        the PRH protocol as published (Huh et al. 2024; minyoungg/platonic-rep): clamp every value
             of the stack to [-c, c], then l2-normalise each row of each layer. c is computed as in
             `metrics.remove_outliers(feats, q=0.95, exact=False)`, which `measure_alignment.py` runs on
             the [N, L, D] stack by default (its `--precise` flag is off in the documented commands):
             for each sample n, the linearly interpolated `torch.quantile` (q = 0.95) of |x| over all of
             that sample's L*D values, then the mean of these N per-sample quantiles.
  prh_exact  the reference's `exact=True` branch (`measure_alignment.py --precise`, and
             `platonic.Alignment.score`): c = sort(|x| over the whole [N, L, D] stack)[int(0.95 * numel)]
             with no interpolation; then clamp and l2 as in `prh`.

Both prh modes mirror the reference's order of operations: clamp the whole stack first, l2-normalise
each layer second (`compute_score(..., normalize=True)` normalises each layer pair just before scoring).
A "0.95 quantile over the whole stack" is the `prh_exact` branch; the reference's published default is
the per-sample mean, so `prh` follows that.

Differences from the reference, on purpose: the stack's layers may differ in width (each sample's
values are then the concatenation of its layers; the reference clamps a list-of-layers file layer by
layer); float64 inputs stay float64 (the reference casts to float32 first). For float32 inputs c is the
float32 number the reference's `remove_outliers` returns under the installed torch, bit for bit. Torch
versions differ in the last bit of `torch.quantile`: the installed 2.14 (the floor of pyproject.toml)
rounds q to the input's dtype and forms the rank q (n - 1) in float64, interpolates with
`torch.lerp` at the weight rank - floor(rank) rounded to the input's dtype; older releases formed the
rank in the input's dtype (`q * last_index` in aten/native/Sorting.cpp). `prh` does that arithmetic
itself on the two order statistics it needs (`_row_quantiles`), and tests/metrics/test_metrics_preprocess.py
checks it against the installed `torch.quantile`.

Cost. The per-sample quantiles are computed once per stack (`LayerStack.prh_row_quantiles`; a
subset or permutation of the samples, `RowSubset`, indexes them; layers given as `CachedLayers`, as the
feature store gives them, keep them across stacks and runs), in two reads of every layer: a
strided sample of each sample's values gives a threshold below its order statistics, and one pass keeps
only the values above it (about (1 - q) + 2% of them), from which the order statistics are selected
(`_row_tail`). The whole stack is never held in memory. `prh_exact` keeps the overall top (1 - q) share
of |x| by streaming `topk` merges. The l2 and prh layers are normalised in two passes over each layer,
in chunks of rows that stay in the CPU caches (`_unit_layer`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import torch

from platobench.errors import UserError
from platobench.metrics.cached_layers import CachedLayers
from platobench.metrics.validation import as_features, mark_unit, pow2_exponent, pow2_scale, to_features

PREPROCESS_MODES = frozenset({"none", "l2", "prh", "prh_exact"})
PRH_QUANTILE = 0.95
#: Values per sample in the sample that brackets the `prh` order statistics (`_row_tail`).
_SAMPLE = 4096
#: Standard deviations of the sample count by which the bracket lies below the wanted rank.
_MARGIN = 6.0
#: Bytes of a layer's rows processed at once (`_unit_layer`, `_above`): small enough to stay in the
#: CPU caches between the steps, large enough that each step is one worthwhile parallel region (on a
#: loaded machine every region waits for its slowest thread).
_CHUNK_BYTES = 1 << 22


class LayerStack:
    """A read-only view of a model's layers, validated one layer at a time (lazy sequences stay lazy).

    The per-sample `prh` quantiles are computed once per stack and kept (`prh_row_quantiles`); a stack
    over a `RowSubset` takes its parent's, indexed, instead of reading the layers again."""

    def __init__(self, layers: Sequence[Any], name: str, label: str | None = None) -> None:
        """label: how error messages name layer i, "{i}" standing for the index (default "name[{i}]")."""
        self._layers = layers
        self.name = name
        self._label = label if label is not None else name + "[{i}]"
        self._n: int | None = None
        self._row_quantiles: dict[float, torch.Tensor] = {}

    def label(self, i: int) -> str:
        """The name of layer i in error messages, e.g. "Xs[3]"."""
        return self._label.replace("{i}", str(i))

    def __len__(self) -> int:
        return len(self._layers)

    def __getitem__(self, i: int) -> torch.Tensor:
        return as_features(self._layers[i], self.label(i))

    def converted(self, i: int) -> torch.Tensor:
        """Layer i converted like `self[i]` and detached from autograd, its values not checked yet (the
        prh statistics and `_unit_layer` check them)."""
        return to_features(self._layers[i], self.label(i)).detach()

    def __iter__(self) -> Iterator[torch.Tensor]:
        for i in range(len(self)):
            yield self[i]

    def widths(self) -> list[int]:
        """Width D_l of every layer, read from the raw items' shapes (no conversion or validation)."""
        raw = (self._layers[i] for i in range(len(self)))
        return [int(x.shape[1]) if len(getattr(x, "shape", ())) == 2 else int(self[i].shape[1])
                for i, x in enumerate(raw)]

    def n_samples(self) -> int:
        if self._n is None:
            self._n = int(self[0].shape[0])
        return self._n

    def columns(self, i: int, step: int) -> torch.Tensor:
        """Every `step`-th column of layer i [N, ceil(D_i / step)] (from column (step // 2) mod D_i),
        converted like `self[i]` (from the raw item's columns when it is a 2-D tensor or array, else from
        the whole layer) and detached; the values are not checked (the prh statistics check them all)."""
        raw = self._layers[i]
        if isinstance(raw, (torch.Tensor, np.ndarray)) and raw.ndim == 2 and raw.shape[1] > 0:
            return to_features(raw[:, (step // 2) % raw.shape[1] :: step], self.label(i)).detach()
        layer = self.converted(i)
        return layer[:, (step // 2) % layer.shape[1] :: step]

    def prh_row_quantiles(self, q: float = PRH_QUANTILE) -> torch.Tensor:
        """[N]: for each sample, `torch.quantile(|x_n|, q)` (linear interpolation) over its values in
        every layer, in layer 0's dtype; computed on first use (`_row_quantiles`) and kept, or taken from
        the statistics of `CachedLayers`."""
        if q not in self._row_quantiles:
            if isinstance(self._layers, RowSubset):
                self._row_quantiles[q] = self._layers.stack.prh_row_quantiles(q)[self._layers.index]
            elif isinstance(self._layers, CachedLayers):
                n = self.n_samples()
                self._row_quantiles[q] = self._layers.statistic(
                    "prh_row_quantiles", q, lambda: _row_quantiles(self, q),
                    valid=lambda v: v.shape == (n,) and v.dtype == self.converted(0).dtype)
            else:
                self._row_quantiles[q] = _row_quantiles(self, q)
        return self._row_quantiles[q]


class RowSubset(Sequence):
    """The layers of `stack` with their rows taken at `index` [M] (a subset or a permutation of the
    samples), read lazily. A `LayerStack` over it reuses `stack`'s per-sample prh quantiles."""

    def __init__(self, stack: LayerStack, index: torch.Tensor) -> None:
        self.stack = stack
        self.index = index

    def __len__(self) -> int:
        return len(self.stack)

    def __getitem__(self, i: int) -> torch.Tensor:  # type: ignore[override]
        return self.stack[i][self.index]


def _row_chunks(x: torch.Tensor) -> list[slice]:
    """Slices of x's rows of about `_CHUNK_BYTES` each (at least 2 rows)."""
    rows = max(2, _CHUNK_BYTES // (x.shape[1] * x.element_size()))
    return [slice(lo, min(lo + rows, x.shape[0])) for lo in range(0, x.shape[0], rows)]


def _scale_(x: torch.Tensor, e: int) -> torch.Tensor:
    """x *= 2^-e in place, with `pow2_scale`'s factors (so the same numbers); returns x."""
    if e == 0:
        return x
    if abs(e) < 100:
        return x.mul_(2.0**-e)
    a = -e // 2
    return x.mul_(2.0**a).mul_(2.0 ** (-e - a))


def _unit_layer(stack: LayerStack, i: int, c: torch.Tensor | None = None) -> torch.Tensor:
    """Layer i clamped to [-c, c] (when c is given), each row divided by its Euclidean norm, and the
    layer brought to max |x| in [0.5, 1) by a power of two: `pow2_unit(F.normalize(pow2_unit(x)))` of
    the clamped layer, op for op and so bit for bit (the inner `pow2_unit` keeps the squared norms of
    tiny or huge rows from underflowing or overflowing; the outer one is what every metric does first).
    Its max |x| is recorded (`mark_unit`), so neither `pow2_unit` nor `api.check_varies` reads it again.

    Two passes over the layer, in chunks of rows that stay in the CPU caches, each step in place: the
    first checks the values (UserError as `as_features`), takes each row's peak |x| and norm (scaled
    by the chunk's own power of two, redone for a chunk whose power differs from the layer's) and
    leaves the clamped, scaled rows in the result, the second divides them by their norms. The outer power of two and the result's peak come from the row peaks: the
    largest |x_ij| / norm_i of a row is the rounded quotient of its peak (rounding is monotone)."""
    x = stack.converted(i)
    _check_rows(stack, x, i)
    c = None if c is None else float(c.to(x.dtype))  # a float bound: torch's clamp is faster with one
    chunks = _row_chunks(x)
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)

    def scaled(r: slice, e: int) -> torch.Tensor:
        """Rows r of the clamped layer times 2^-e, written into out[r] (or a view of x when unchanged)."""
        if c is not None:
            return _scale_(torch.clamp(x[r], -c, c, out=out[r]), e)
        if e == 0:
            return x[r]
        if abs(e) < 100:
            return torch.mul(x[r], 2.0**-e, out=out[r])
        return _scale_(out[r].copy_(x[r]), e)

    peaks, norms, powers = [], [], []
    for r in chunks:
        peak = torch.maximum(-x[r].amin(dim=1), x[r].amax(dim=1))  # max |x| of each row; NaN propagates
        if not torch.isfinite(peak).all():
            stack[i]  # raises as_features' error for the layer
        peak = peak if c is None else peak.clamp(max=c)
        powers.append(pow2_exponent(float(peak.max())))
        norms.append(scaled(r, powers[-1]).norm(2, -1, keepdim=True))
        peaks.append(peak)
    peak = torch.cat(peaks)
    e1 = pow2_exponent(float(peak.max()))
    for j, r in enumerate(chunks):
        if powers[j] != e1:
            norms[j] = scaled(r, e1).norm(2, -1, keepdim=True)
    denom = torch.cat(norms).clamp_min_(1e-12)
    top = (pow2_scale(peak, e1) / denom[:, 0]).max()  # max |x_ij| / norm_i
    e2 = pow2_exponent(float(top))
    for r in chunks:  # out[r] holds the rows times 2^-e1 already, unless they are x's own (l2, e1 = 0)
        _scale_(torch.div(x[r], denom[r], out=out[r]) if c is None and e1 == 0 else out[r].div_(denom[r]), e2)
    return mark_unit(out, float(pow2_scale(top, e2)))


def _top_abs(buf: torch.Tensor | None, values: torch.Tensor, m: int) -> torch.Tensor:
    """Merge |values| [R, D] into the running buffer of the m largest |x| per row (unsorted)."""
    merged = values.abs() if buf is None else torch.cat([buf, values.abs()], dim=1)
    if merged.shape[1] <= m:
        return merged
    return merged.topk(m, dim=1, sorted=False).values


def _check_rows(stack: LayerStack, layer: torch.Tensor, i: int) -> None:
    if layer.shape[0] != stack.n_samples():
        raise UserError(
            f"{stack.label(i)} has {layer.shape[0]} samples but {stack.label(0)} has {stack.n_samples()}; "
            "every layer of a model must hold the same samples"
        )


def _quantile_rank(n: int, q: float, dtype: torch.dtype) -> float:
    """The rank torch.quantile interpolates at in a row of n values of `dtype`: q rounded to `dtype`,
    times n - 1 in float64 (exact for n < 2^29), as the installed torch (2.14) forms it."""
    return float(torch.tensor(q, dtype=dtype)) * (n - 1)


def _ascending(rows: torch.Tensor, rank: int, count: int = 1) -> torch.Tensor:
    """The values at ascending positions rank, ..., rank + count - 1 (count 1 or 2) of every row of
    rows [R, W]: [R, count]; rows is reordered in place. On the CPU numpy's introselect at one position
    (`ndarray.partition`; several times faster than torch's selection there, and than numpy's at two),
    the next value being the smallest of those it leaves above; elsewhere `_ascending_torch`. Both give
    the order statistics themselves, so the same numbers."""
    if rows.device.type != "cpu":
        return _ascending_torch(rows, rank, count)
    rows.numpy().partition(rank, axis=1)
    parts = [rows[:, rank]] + ([rows[:, rank + 1 :].amin(dim=1)] if count == 2 else [])
    return torch.stack(parts, dim=1)


def _ascending_torch(rows: torch.Tensor, rank: int, count: int) -> torch.Tensor:
    """`_ascending` by `torch.kthvalue`, for tensors off the CPU."""
    return torch.stack([rows.kthvalue(rank + 1 + j, dim=1).values for j in range(count)], dim=1)


def _above(x: torch.Tensor, lo: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, bool]:
    """The values of |x| [N, D] that are not <= lo [N] in their row, as [N, C] with C the largest count
    of a row and zeros after each row's own values (row order kept), the counts [N], and whether they
    are all finite (a NaN is not <= lo, so NaN and inf are among them: this stands for `as_features`'
    check); in chunks of rows that stay in the CPU caches. On the CPU all in numpy, single-threaded: several
    times faster than torch's comparison and nonzero there, and no parallel region to wait on, which
    on a loaded machine costs more than the work; elsewhere `_above_torch`."""
    if x.device.type != "cpu":
        return _above_torch(x, lo)
    n, d = x.shape
    chunks = _row_chunks(x)
    buf = np.empty((chunks[0].stop, d), dtype=x.numpy().dtype)
    mask = np.empty((chunks[0].stop, d), dtype=bool)
    low, flats, values = lo.numpy()[:, None], [], []
    for r in chunks:
        a, view = buf[: r.stop - r.start], mask[: r.stop - r.start]
        np.abs(x[r].numpy(), out=a)
        np.logical_not(np.less_equal(a, low[r], out=view), out=view)
        at = np.flatnonzero(view)
        values.append(a.ravel().take(at))
        flats.append(at + r.start * d)
    flat, kept = np.concatenate(flats), np.concatenate(values)
    bounds = np.searchsorted(flat, np.arange(n + 1) * d)
    counts = bounds[1:] - bounds[:-1]
    slot = np.arange(counts.max() if len(flat) else 0)
    src = np.minimum(bounds[:-1, None] + slot, max(len(flat) - 1, 0))
    out = np.where(slot < counts[:, None], kept[src] if len(flat) else 0, 0).astype(kept.dtype)
    return torch.from_numpy(out), torch.from_numpy(counts), not len(kept) or bool(np.isfinite(kept.max()))


def _above_torch(x: torch.Tensor, lo: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, bool]:
    """`_above` by torch's own operations, for tensors off the CPU."""
    n, d = x.shape
    a = x.abs()
    flat = torch.le(a, lo[:, None]).logical_not_().view(-1).nonzero().squeeze(1)
    values = a.view(-1).take(flat)
    bounds = torch.searchsorted(flat, torch.arange(n + 1, device=x.device) * d)
    counts = bounds[1:] - bounds[:-1]
    slot = torch.arange(int(counts.max()) if len(flat) else 0, device=x.device)
    src = (bounds[:-1, None] + slot).clamp_(max=max(len(flat) - 1, 0))
    finite = not len(values) or math.isfinite(float(values.max()))
    return torch.where(slot < counts[:, None], values[src], 0), counts, finite


def _row_tail(stack: LayerStack, sample: torch.Tensor, n: int, t: int) -> torch.Tensor:
    """The t-th and (t-1)-th largest |x| of every sample over every layer (the (t-1)-th only when
    t >= 2): [N, 1 or 2] in the dtype of `sample`, exact. sample [N, S]: |x| at the same strided columns
    of every layer (`LayerStack.columns`); n: the values per sample, sum D_l.

    The sample gives a threshold lo that lies, with a margin of `_MARGIN` sampling standard deviations,
    below the t-th largest value; one pass over the layers keeps the values above lo (`_above`), which
    hold the t largest when there are at least t of them (the values left out when lo = 0 are zeros, as
    the padding). A sample with fewer has lo among its t largest values (ties at lo, counted in one more
    pass over its rows) or, rarely, was misjudged by its strided values and is recomputed by streaming
    `topk`. Memory: the kept values, about t / n + 2 _MARGIN / sqrt(S) of each sample's n values."""
    size, share = sample.shape[1], t / n
    keep = min(size, math.ceil(share * size + _MARGIN * math.sqrt(size * share * (1 - share)) + 1))
    lo = _ascending(sample, size - keep)[:, 0]
    kept, above = [], 0
    for i in range(len(stack)):
        layer = stack.converted(i)
        _check_rows(stack, layer, i)
        values, counts, finite = _above(layer.to(sample.dtype), lo)
        if not finite:
            stack[i]  # raises as_features' error for the layer
        kept.append(values)
        above = above + counts
    width = sum(v.shape[1] for v in kept)
    kept.append(lo.new_zeros(len(lo), max(0, t - width)))  # at least t columns; zeros stand for the rest
    pack = torch.cat(kept, dim=1)
    count = min(t, 2)
    tail = _ascending(pack, pack.shape[1] - t, count)
    short = ((above < t) & (lo > 0)).nonzero().squeeze(1)
    if len(short) == 0:
        return tail
    at_lo = sum((stack.converted(i).to(sample.dtype)[short].abs() == lo[short, None]).sum(1)
                for i in range(len(stack)))
    tied = above[short] + at_lo >= t  # lo is the t-th largest value
    rows = short[tied]
    tail[rows, 0] = lo[rows]
    if count == 2:  # the (t-1)-th largest is lo too, unless exactly t - 1 values exceed lo
        tail[rows, 1] = torch.where(above[rows] < t - 1, lo[rows], tail[rows, 1])
    rows = short[~tied]
    if len(rows):
        buf = None
        for i in range(len(stack)):
            buf = _top_abs(buf, stack.converted(i).to(sample.dtype)[rows], t)
        tail[rows] = _ascending(buf, 0, count)
    return tail


def _row_quantiles(stack: LayerStack, q: float) -> torch.Tensor:
    """Per sample, torch.quantile(|x_n|, q) over its n = sum D_l values, by torch's own arithmetic: the
    rank r = `_quantile_rank`, the order statistics at floor(r) and ceil(r) (`_row_tail`), and
    `torch.lerp` with the weight r - floor(r) rounded to the dtype. [N] in layer 0's dtype."""
    n = sum(stack.widths())
    step = max(1, n // _SAMPLE)
    parts = []
    for i in range(len(stack)):
        part = stack.columns(i, step)
        _check_rows(stack, part, i)
        parts.append(part.to(parts[0].dtype if parts else part.dtype))
    sample = torch.cat(parts, dim=1).abs_()
    rank = _quantile_rank(n, q, sample.dtype)
    below, above = math.floor(rank), math.ceil(rank)
    tail = _row_tail(stack, sample, n, n - below)
    low = tail[:, 0]
    high = tail[:, 1] if above > below else low
    return torch.lerp(low, high, torch.full_like(low, rank - below))


def prh_clamp_value(stack: LayerStack, q: float = PRH_QUANTILE) -> torch.Tensor:
    """The reference's default clamp value (`remove_outliers(..., exact=False)`): the mean over samples
    of `torch.quantile(|x_n|, q, dim=1)` (linear interpolation), x_n = sample n's values over every layer.

    Returns a 0-d tensor in the stack's dtype, equal to the reference bit for bit: the per-sample
    quantiles (`LayerStack.prh_row_quantiles`, computed once per stack) follow torch's arithmetic, and
    their mean is torch's mean of the same [N] vector."""
    return stack.prh_row_quantiles(q).mean()


def prh_exact_clamp_value(stack: LayerStack, q: float = PRH_QUANTILE) -> torch.Tensor:
    """The reference's `exact=True` clamp value: `sort(|x|.flatten())[int(q * numel)]` over every value
    of every layer (no interpolation; the index is truncated, as in the reference). 0-d tensor."""
    numel = stack.n_samples() * sum(stack.widths())
    index = int(q * numel)
    m = numel - index
    buf = None
    for i, layer in enumerate(stack):
        _check_rows(stack, layer, i)
        buf = _top_abs(buf, (layer if buf is None else layer.to(buf.dtype)).reshape(1, -1), m)
    return buf.topk(m, dim=1).values[0, m - 1]


def prepared_layers(stack: LayerStack, mode: str, indices: Sequence[int] | None = None) -> Iterator[torch.Tensor]:
    """Yield the stack's layers (all, or those at `indices`, in that order), preprocessed per `mode`,
    one at a time. Stack-level statistics (the prh clamp value) always use every layer. The l2 and
    prh layers come brought to max |x| in [0.5, 1) by a power of two (`_unit_layer`), as every metric
    brings them first: exact, so scores are those of the unit-norm rows."""
    order = range(len(stack)) if indices is None else indices
    if mode == "none":
        for i in order:
            yield stack[i]
    elif mode == "l2":
        for i in order:
            yield _unit_layer(stack, i)
    elif mode in ("prh", "prh_exact"):
        c = prh_clamp_value(stack) if mode == "prh" else prh_exact_clamp_value(stack)
        for i in order:
            yield _unit_layer(stack, i, c)
    else:
        raise ValueError(f"preprocess must be one of {sorted(PREPROCESS_MODES)}, got {mode!r}")
