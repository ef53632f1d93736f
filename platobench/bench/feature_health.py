"""Warnings of `submit`'s mock pass about features that score, but would score badly, counted per layer.

A layer is flagged for rows that are exactly zero (every feature 0), rows that equal an earlier nonzero row
(duplicate rows: the mock samples are distinct inputs, so equal features mean the encoder ignores part of
its input), and for being near-constant across the samples: the rule of `varying_layers` in
platobench/metrics/validation.py (largest deviation from the per-feature mean at most CONSTANT_RTOL x the
largest magnitude), under which scoring leaves the layer out of the grid. None of these is fatal on its
own; `submit` refuses an encoder only when every layer is near-constant (nothing left to score).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import torch

from platobench.metrics.validation import CONSTANT_RTOL, varying_layers


@dataclass(frozen=True)
class LayerFlag:
    """What is wrong with one layer's features [rows, D] in the mock pass."""

    layer: int
    rows: int
    zero_rows: int
    duplicate_rows: int
    near_constant: bool

    def message(self) -> str:
        parts = []
        if self.near_constant:
            parts.append(f"near-constant across the {self.rows} samples (relative spread <= {CONSTANT_RTOL:g}); "
                         "scoring leaves it out")
        if self.zero_rows:
            parts.append(f"{self.zero_rows} of {self.rows} rows are exactly zero")
        if self.duplicate_rows and not self.near_constant:  # a constant layer's rows repeat: no news
            parts.append(f"{self.duplicate_rows} duplicate rows (equal to an earlier nonzero row)")
        return f"layer {self.layer}: " + "; ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "message": self.message()}


def zero_rows(x: torch.Tensor) -> torch.Tensor:
    """Boolean mask of the rows of [N, D] `x` whose every entry is 0."""
    return (x == 0).all(dim=1)


def duplicate_rows(x: torch.Tensor) -> int:
    """How many nonzero rows of [N, D] `x` equal an earlier nonzero row."""
    rest = x[~zero_rows(x)]
    return int(rest.shape[0] - torch.unique(rest, dim=0).shape[0]) if rest.shape[0] else 0


def layer_flags(layer_ids: Sequence[int], layers: Sequence[torch.Tensor]) -> list[LayerFlag]:
    """The flagged layers among finite [N, D] `layers` (ids `layer_ids`), in order; unflagged ones are left out."""
    varying = set(varying_layers(layers))
    out = []
    for i, (layer, x) in enumerate(zip(layer_ids, layers)):
        flag = LayerFlag(layer=layer, rows=int(x.shape[0]), zero_rows=int(zero_rows(x).sum()),
                         duplicate_rows=duplicate_rows(x), near_constant=i not in varying)
        if flag.near_constant or flag.zero_rows or flag.duplicate_rows:
            out.append(flag)
    return out
