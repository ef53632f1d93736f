"""Feature preprocessing applied to a model's whole layer stack before scoring.

Modes:
  none       features as given.
  l2         each row (sample) of each layer divided by its Euclidean norm (`F.normalize`, eps 1e-12).
  prh        the PRH protocol as published (Huh et al. 2024; minyoungg/platonic-rep): clamp every value
             of the stack to [-c, c], then l2-normalise each row of each layer. c is computed as in
             `metrics.remove_outliers(feats, q=0.95, exact=False)`, which `measure_alignment.py` runs on
             the [N, L, D] stack by default (its `--precise` flag is off in the README's commands):
             for each sample n, the linearly interpolated `torch.quantile` (q = 0.95) of |x| over all of
             that sample's L*D values, then the mean of these N per-sample quantiles.
  prh_exact  the reference's `exact=True` branch (`measure_alignment.py --precise`, and
             `platonic.Alignment.score`): c = sort(|x| over the whole [N, L, D] stack)[int(0.95 * numel)]
             with no interpolation; then clamp and l2 as in `prh`.

Both prh modes mirror the reference's order of operations: clamp the whole stack first, l2-normalise
each layer second (`compute_score(..., normalize=True)` normalises each layer pair just before scoring).
The design notes describe `prh` as "0.95 quantile over the whole stack"; that is the `prh_exact` branch,
while the published default is the per-sample mean, so `prh` follows the reference.

Differences from the reference, on purpose: the stack's layers may differ in width (each sample's
values are then the concatenation of its layers; the reference clamps a list-of-layers file layer by
layer); float64 inputs stay float64 (the reference casts to float32 first). For float32 inputs c is the
float32 number the reference's `remove_outliers` returns under the installed torch, bit for bit (torch
versions differ in the last bit of `torch.quantile`: 2.14 forms the rank q (n - 1) in float64, older
releases in float32; `prh` calls `torch.quantile` itself, so it follows the installed one). The clamp value is computed streaming: one
layer at a time, keeping only the top (1 - q) share of |x| (per sample for `prh`, overall for
`prh_exact`) that the order statistics need, so the whole stack is never held in memory.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

import torch
import torch.nn.functional as F

from platobench.errors import UserError
from platobench.metrics.validation import as_features, pow2_unit

PREPROCESS_MODES = frozenset({"none", "l2", "prh", "prh_exact"})
PRH_QUANTILE = 0.95
_QUANTILE_BLOCK = 1 << 24  # values per torch.quantile call (bounds the padded block's memory)


class LayerStack:
    """A read-only view of a model's layers, validated one layer at a time (lazy sequences stay lazy)."""

    def __init__(self, layers: Sequence[Any], name: str, label: str | None = None) -> None:
        """label: how error messages name layer i, "{i}" standing for the index (default "name[{i}]")."""
        self._layers = layers
        self.name = name
        self._label = label if label is not None else name + "[{i}]"
        self._n: int | None = None

    def label(self, i: int) -> str:
        """The name of layer i in error messages, e.g. "Xs[3]"."""
        return self._label.replace("{i}", str(i))

    def __len__(self) -> int:
        return len(self._layers)

    def __getitem__(self, i: int) -> torch.Tensor:
        return as_features(self._layers[i], self.label(i))

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


def l2_rows(x: torch.Tensor) -> torch.Tensor:
    """Row-normalise [N, D] to unit Euclidean norm (zero rows stay zero). The layer is first brought to
    max |x| in [0.5, 1) by a power of two (`pow2_unit`, exact), so that the squared norms of tiny or
    huge rows neither underflow nor overflow; on normal inputs the result is bit-identical."""
    return F.normalize(pow2_unit(x), p=2, dim=-1)


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


def prh_clamp_value(stack: LayerStack, q: float = PRH_QUANTILE) -> torch.Tensor:
    """The reference's default clamp value (`remove_outliers(..., exact=False)`): the mean over samples
    of `torch.quantile(|x_n|, q, dim=1)` (linear interpolation), x_n = sample n's values over every layer.

    Returns a 0-d tensor in the stack's dtype. A quantile depends only on the row length and the order
    statistics at its two interpolation ranks, which lie among the row's m largest values; so each row
    keeps its m largest |x| while the layers stream by, and `torch.quantile` itself is then run on rows
    holding those values padded with zeros (|x| >= 0) to the full length, a block of rows at a time.
    The result is torch's own arithmetic on the same numbers: equal to the reference, bit for bit.
    """
    n_values = sum(stack.widths())
    below = math.floor(q * (n_values - 1))
    m = min(n_values, n_values - below + 1)  # one spare against rounding of the rank
    buf = None
    for i, layer in enumerate(stack):
        _check_rows(stack, layer, i)
        buf = _top_abs(buf, layer if buf is None else layer.to(buf.dtype), m)
    rows = max(1, _QUANTILE_BLOCK // n_values)
    per_sample = []
    for start in range(0, buf.shape[0], rows):
        top = buf[start:start + rows]
        padded = torch.cat([top.new_zeros(top.shape[0], n_values - top.shape[1]), top], dim=1)
        per_sample.append(torch.quantile(padded, q, dim=1))
    return torch.cat(per_sample).mean()


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
    one at a time. Stack-level statistics (the prh clamp value) always use every layer."""
    order = range(len(stack)) if indices is None else indices
    if mode == "none":
        for i in order:
            yield stack[i]
    elif mode == "l2":
        for i in order:
            yield l2_rows(stack[i])
    elif mode in ("prh", "prh_exact"):
        c = prh_clamp_value(stack) if mode == "prh" else prh_exact_clamp_value(stack)
        for i in order:
            layer = stack[i]
            yield l2_rows(layer.clamp(-c.to(layer.dtype), c.to(layer.dtype)))
    else:
        raise ValueError(f"preprocess must be one of {sorted(PREPROCESS_MODES)}, got {mode!r}")
