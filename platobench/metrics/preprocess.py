"""Feature preprocessing applied to a model's whole layer stack before scoring.

Modes:
  none  features as given.
  l2    each row (sample) of each layer divided by its Euclidean norm.
  prh   the PRH protocol (Huh et al. 2024): clamp every value to [-q, q], q the 0.95 quantile of |x|
        over the model's whole [N, L, D] stack, then l2-normalise each row of each layer.
        (Initial version; to be checked line by line against the reference protocol.)
"""

from __future__ import annotations

from typing import Any, Iterator, Sequence

import torch
import torch.nn.functional as F

from platobench.metrics.validation import as_features

PREPROCESS_MODES = frozenset({"none", "l2", "prh"})


class LayerStack:
    """A read-only view of a model's layers, validated one layer at a time (lazy sequences stay lazy)."""

    def __init__(self, layers: Sequence[Any], name: str) -> None:
        self._layers = layers
        self.name = name
        self._n: int | None = None

    def __len__(self) -> int:
        return len(self._layers)

    def __getitem__(self, i: int) -> torch.Tensor:
        return as_features(self._layers[i], f"{self.name}[{i}]")

    def __iter__(self) -> Iterator[torch.Tensor]:
        for i in range(len(self)):
            yield self[i]

    def n_samples(self) -> int:
        if self._n is None:
            self._n = int(self[0].shape[0])
        return self._n


def l2_rows(x: torch.Tensor) -> torch.Tensor:
    """Row-normalise [N, D] to unit Euclidean norm (zero rows stay zero)."""
    return F.normalize(x, p=2, dim=-1)


def prh_clamp_value(stack: LayerStack, q: float = 0.95) -> float:
    """The q-quantile of |x| over every value of every layer of the stack."""
    values = torch.cat([layer.abs().flatten() for layer in stack])
    k = max(1, min(values.numel(), int(round(q * (values.numel() - 1))) + 1))
    return float(values.kthvalue(k).values)


def prepared_layers(stack: LayerStack, mode: str) -> Iterator[torch.Tensor]:
    """Yield the stack's layers, preprocessed per `mode`, one at a time."""
    if mode == "none":
        yield from stack
    elif mode == "l2":
        for layer in stack:
            yield l2_rows(layer)
    elif mode == "prh":
        c = prh_clamp_value(stack)
        for layer in stack:
            yield l2_rows(layer.clamp(-c, c))
    else:
        raise ValueError(mode)
