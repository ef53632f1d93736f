"""Public metric API: `score` (one pair of feature matrices) and `layer_grid` (all layer pairs).

Contracts: X [N, Dx], Y [N, Dy], row i of X and Y is the same sample. With a per-layer `preprocess`
(`none`, `l2`) `layer_grid` entry (i, j) equals `score(metric, Xs[i], Ys[j])` to 1e-6. The stack-level
modes (`prh`, `prh_exact`) clamp with a quantile taken over every layer passed in, so entry (i, j) of a
grid equals the score of layers i and j clamped *with their stacks* — `summarize_layers(metric, Xs, Ys,
preprocess="prh", x_layers=[i], y_layers=[j]).grid()[0, 0]` — not `score(metric, Xs[i], Ys[j],
preprocess="prh")`, which clamps one layer by its own quantile (tests/metrics/test_score_vs_grid.py). Per-layer
work is done once per layer and layers are combined with batched products. Peak memory: one layer's features at a time plus the per-layer
summaries.

Degenerate input is refused, for every metric: a layer whose N rows are all identical, as given or
after the preprocessing (e.g. all-zero rows, or rows that are positive multiples of one vector under
l2), raises `DegenerateFeaturesError` naming the side and the layer; no metric is defined on it (the
kNN family would rank every sample by index and report perfect or chance alignment, CKA and the
rotation residuals divide by zero). A grid cell that is undefined for another reason (cknna when a
layer's unbiased self-HSIC is <= 0) raises `UndefinedScoreError`. Both are `UserError`s. Every finite
score lies in the metric's `Metric.range` (None: unbounded, cknna only).

Scale: every registered metric is invariant to isotropic scaling, and each one brings a layer to
max |x| in [0.5, 1) by a power of two before any product (`validation.pow2_unit`): exact in binary
floating point, so normal inputs score bit-identically, while 1e-30 float32 or 1e300 float64 features
no longer underflow (every kNN distance tied) or overflow.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from platobench.errors import UserError
from platobench.metrics.preprocess import PREPROCESS_MODES, LayerStack, prepared_layers
from platobench.metrics.registry import Metric, get_metric
from platobench.metrics.validation import (
    DegenerateFeaturesError,
    UndefinedScoreError,
    check_pair,
    unit_peak,
)

LayersLike = "Sequence[torch.Tensor | np.ndarray] | torch.Tensor | np.ndarray"


def _as_stack(xs: Any, name: str, label: str | None = None) -> LayerStack:
    """Accept a [L, N, D] tensor/array or a sequence of [N, D_l] layers (widths may differ)."""
    if isinstance(xs, (torch.Tensor, np.ndarray)):
        if xs.ndim != 3:
            raise UserError(f"{name} must be [L, N, D] or a list of [N, D_l] layers, got shape {tuple(xs.shape)}")
        xs = [xs[i] for i in range(xs.shape[0])]
    if not isinstance(xs, Sequence) or isinstance(xs, (str, bytes)):
        raise UserError(f"{name} must be a list of [N, D_l] layers or a [L, N, D] tensor, got {type(xs).__name__}")
    if len(xs) == 0:
        raise UserError(f"{name} has no layers; expected at least one [N, D] layer")
    return LayerStack(xs, name, label)


def _check_preprocess(preprocess: str) -> None:
    if preprocess not in PREPROCESS_MODES:
        raise UserError(f"preprocess must be one of {sorted(PREPROCESS_MODES)}, got {preprocess!r}")


def score(metric: str, X: Any, Y: Any, *, preprocess: str = "none", **params: Any) -> float:
    """Score one pair of feature matrices X [N, Dx], Y [N, Dy] with the metric `metric` (a float in the
    metric's range; DegenerateFeaturesError / UndefinedScoreError as in the module docstring)."""
    grid = summarize_layers(metric, [X], [Y], preprocess=preprocess, labels=("X", "Y"), **params).grid()
    return float(grid[0, 0])


@dataclass(frozen=True)
class LayerSummaries:
    """Per-layer summaries of both models for one metric (the expensive, per-layer half of a grid).

    `grid()` combines them into the [Lx, Ly] score grid. Permutation nulls re-use them: when the
    metric has `extra["permute"]`, `grid(perm=p)` scores X against Y[p] (row a of Y[p] is row p[a] of Y)
    without recomputing any per-layer work.
    """

    metric: Metric
    params: dict[str, Any]
    n: int
    x: list[Any]
    y: list[Any]
    labels: tuple[str, str] = ("Xs[{i}]", "Ys[{i}]")

    def grid(self, perm: Any = None) -> torch.Tensor:
        """Scores of every layer pair, float64 [Lx, Ly]; with `perm`, the pairing of Y is permuted."""
        sy = self.y
        if perm is not None:
            permute = self.metric.extra.get("permute")
            if permute is None:
                raise UserError(f"metric {self.metric.id!r} has no cheap permutation of its summaries")
            sy = [permute(s, perm) for s in sy]
        return _checked(self.metric, self.metric.combine(self.x, sy, self.params), (len(self.x), len(sy)),
                        self.labels)


def _checked(metric: Metric, grid: torch.Tensor, shape: tuple[int, int], labels: tuple[str, str]) -> torch.Tensor:
    """The combined grid as float64 [Lx, Ly]; UndefinedScoreError naming the first non-finite cell."""
    if grid.shape != shape:
        raise AssertionError(f"metric {metric.id} returned grid {tuple(grid.shape)}, expected {shape}")
    bad = (~torch.isfinite(grid)).nonzero()
    if len(bad):
        i, j = (int(v) for v in bad[0])
        raise UndefinedScoreError(
            f"metric {metric.id} is undefined for {len(bad)} layer pair(s), first "
            f"({labels[0].replace('{i}', str(i))}, {labels[1].replace('{i}', str(j))}): "
            "its normaliser is zero or negative on these features (cknna: a layer's self-HSIC <= 0)"
        )
    return grid.to(torch.float64)


#: Bytes of X-layer summaries `layer_grid` holds at once (every Y summary is held).
GRID_BLOCK_BYTES = 512 * 2**20

#: Rows that differ by at most this many float epsilons of the layer's largest |value| count as identical:
#: float rounding, e.g. of l2-normalised rows that are positive multiples of one vector.
IDENTICAL_ULPS = 4


def check_varies(layer: torch.Tensor, label: str, preprocess: str = "none") -> None:
    """Refuse a prepared layer [N, D] whose N rows are all identical up to rounding (every |x_ij - x_0j|
    <= IDENTICAL_ULPS eps max|x|, eps of its dtype): DegenerateFeaturesError naming the layer.

    Cheap in the usual case: max|x| is the one the preprocessing recorded (`validation.mark_unit`), else
    one pass; a row among the next few that differs from row 0 by more than the tolerance settles it
    (each |x_ij - x_0j| is at most the column range's), and only otherwise are the column ranges read."""
    known = unit_peak(layer)
    if known is None:
        low, high = torch.aminmax(layer)
        known = max(-float(low), float(high))
    tolerance = IDENTICAL_ULPS * torch.finfo(layer.dtype).eps * known
    if float((layer[1:9] - layer[0]).abs().max()) > tolerance:
        return
    low, high = layer.amin(dim=0), layer.amax(dim=0)  # per column, no [N, D] temporary
    if float(torch.maximum(high - layer[0], layer[0] - low).amax()) <= tolerance:  # = max |x_ij - x_0j|
        after = "" if preprocess == "none" else f" after preprocess {preprocess!r}"
        raise DegenerateFeaturesError(
            f"{label} is degenerate: all {layer.shape[0]} rows are identical{after} (constant across samples, "
            "up to rounding), so no alignment score is defined on it; drop the layer "
            "(`platobench run` excludes constant layers)"
        )


def _iter_summaries(
    summarize: Any, stack: LayerStack, preprocess: str, n: int, params: dict[str, Any], indices: Sequence[int] | None
) -> Iterator[Any]:
    """Each layer's summary in turn (one layer's features in memory at a time)."""
    for i, layer in zip(indices or range(len(stack)), prepared_layers(stack, preprocess, indices)):
        if layer.shape[0] != n:
            raise UserError(f"{stack.label(i)} has {layer.shape[0]} samples, expected N={n} like the other layers")
        try:  # the metric's own checks (a fit half of constant rows, ...) included
            check_varies(layer, stack.label(i), preprocess)
            summary = summarize(layer, params)
        except DegenerateFeaturesError as exc:
            raise DegenerateFeaturesError(str(exc), side=stack.name, layer=i, on_subset=exc.on_subset) from None
        yield summary


def _prepare(metric: str, Xs: Any, Ys: Any, preprocess: str, labels: tuple[str, str],
             params: dict[str, Any]) -> tuple[Metric, dict[str, Any], LayerStack, LayerStack, int]:
    """Validated (metric, resolved params, X stack, Y stack, N)."""
    m = get_metric(metric)
    p = m.resolve_params(params)
    _check_preprocess(preprocess)
    xs, ys = _as_stack(Xs, "Xs", labels[0]), _as_stack(Ys, "Ys", labels[1])
    n = xs.n_samples()
    if ys.n_samples() != n:
        raise UserError(f"{xs.label(0)} has {n} samples but {ys.label(0)} has {ys.n_samples()}; "
                        "rows must be paired samples")
    if n < 2:
        raise UserError(f"{xs.label(0)} and {ys.label(0)} need at least 2 samples, got {n}")
    if m.validate is not None:
        m.validate(n, p)
    return m, p, xs, ys, n


def summarize_layers(
    metric: str,
    Xs: Any,
    Ys: Any,
    *,
    preprocess: str = "none",
    x_layers: Sequence[int] | None = None,
    y_layers: Sequence[int] | None = None,
    labels: tuple[str, str] = ("Xs[{i}]", "Ys[{i}]"),
    **params: Any,
) -> LayerSummaries:
    """Validate the inputs and compute every layer's summary, one layer at a time (streaming).

    Xs, Ys: a sequence of [N, D_l] layers (torch or numpy; widths may differ; a lazy sequence is read
    one layer at a time) or a [L, N, D] tensor. `preprocess` applies to each model's whole stack.
    x_layers / y_layers: summarise only these layer positions (the stack-level preprocessing statistics
    still use every layer), e.g. to rescore one fixed layer pair.
    labels: how errors name layer i of each side, "{i}" standing for the index.
    Peak memory: one layer's features (plus what the preprocess mode keeps) and the summaries.
    """
    m, p, xs, ys, n = _prepare(metric, Xs, Ys, preprocess, labels, params)
    sx = list(_iter_summaries(m.summarize_x, xs, preprocess, n, p, x_layers))
    sy = list(_iter_summaries(m.summarize_y or m.summarize_x, ys, preprocess, n, p, y_layers))
    return LayerSummaries(m, p, n, sx, sy, labels)


def summarize_side(
    metric: str,
    layers: Any,
    *,
    side: str,
    preprocess: str = "none",
    label: str = "layers[{i}]",
    **params: Any,
) -> list[Any]:
    """Every layer's summary of one model only, as `summarize_layers` computes it for side `side` ("x" or
    "y": the metric's `summarize_x` or `summarize_y`): a model scored again and again against the same
    other model (an alignment probe during training) summarises the fixed one once and builds each grid as
    `LayerSummaries(get_metric(metric), params, n, sx, sy).grid()`, bit for bit the grid of
    `summarize_layers` on the two stacks. `layers` as in `summarize_layers`; `label` names layer i in errors."""
    if side not in ("x", "y"):
        raise ValueError(f"side must be 'x' or 'y', got {side!r}")
    m = get_metric(metric)
    p = m.resolve_params(params)
    _check_preprocess(preprocess)
    stack = _as_stack(layers, "layers", label)
    n = stack.n_samples()
    if n < 2:
        raise UserError(f"{stack.label(0)} needs at least 2 samples, got {n}")
    if m.validate is not None:
        m.validate(n, p)
    summarize = m.summarize_x if side == "x" else (m.summarize_y or m.summarize_x)
    return list(_iter_summaries(summarize, stack, preprocess, n, p, None))


def _nbytes(summary: Any) -> int:
    """Bytes of the tensors a summary holds (a tensor, or tuples, lists and objects of tensors)."""
    if isinstance(summary, torch.Tensor):
        return summary.numel() * summary.element_size()
    if isinstance(summary, (tuple, list)):
        return sum(_nbytes(v) for v in summary)
    return sum(_nbytes(v) for v in getattr(summary, "__dict__", {}).values())


def layer_grid(metric: str, Xs: Any, Ys: Any, *, preprocess: str = "none", **params: Any) -> torch.Tensor:
    """Scores of every layer pair: a float64 tensor [Lx, Ly] with entry (i, j) = score(Xs[i], Ys[j]).

    Xs, Ys: a sequence of [N, D_l] layers (torch or numpy; widths may differ; a lazy sequence is read
    one layer at a time) or a [L, N, D] tensor. `preprocess` applies to each model's whole stack
    (`prh` clamps with a quantile over the stack, then l2-normalises each layer). Per-layer work is
    done once per layer; layer pairs are combined with batched products (see `Metric`).
    Peak memory: every Y summary, and X summaries only up to `GRID_BLOCK_BYTES` at a time (their
    rows of the grid are combined, then they are dropped).
    """
    labels = ("Xs[{i}]", "Ys[{i}]")
    m, p, xs, ys, n = _prepare(metric, Xs, Ys, preprocess, labels, params)
    sy = list(_iter_summaries(m.summarize_y or m.summarize_x, ys, preprocess, n, p, None))
    rows, block, size = [], [], 0
    for i, s in enumerate(_iter_summaries(m.summarize_x, xs, preprocess, n, p, None)):
        block.append(s)
        size += _nbytes(s)
        if size >= GRID_BLOCK_BYTES or i == len(xs) - 1:
            rows.append(m.combine(block, sy, p))
            block, size = [], 0
    return _checked(m, torch.cat(rows), (len(xs), len(sy)), labels)


__all__ = ["LayerSummaries", "check_pair", "check_varies", "layer_grid", "score", "summarize_layers", "summarize_side"]
