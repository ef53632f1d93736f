"""A model's layers together with a cache of the statistics that depend only on them.

`preprocess="prh"` clamps a stack with the mean of per-sample quantiles over all of its values
(`preprocess._row_quantiles`): one extra pass over every value, about as costly as the metric itself
on a 33 x 25 grid. The quantiles depend on the features alone, so a stack given as `CachedLayers`
computes them once: every `LayerStack` over it (each `layer_grid`, `subsample_ci` and
`permutation_null` call, and through a persistent cache every later run) reuses them. The feature
store gives its entries' layers this way (`FeatureEntry.cached_layers`: the statistics are saved beside
the entry); `CachedLayers(layers)` keeps them in memory, e.g. for a fixed reference model scored
against every checkpoint of a model in training.

Cached values equal freshly computed ones bit for bit: they are those values, stored as they were
(tests/metrics/test_metrics_cached_layers.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import torch

#: (statistic name, its parameters, the positions of the layers it was computed over).
StatisticKey = tuple[str, float, tuple[int, ...]]


class StatisticsCache(Protocol):
    """Where `CachedLayers` keeps its statistics: `load` gives None for a value never saved (or one that
    can no longer be trusted), `save` may silently keep nothing (e.g. a read-only cache)."""

    def load(self, key: StatisticKey) -> torch.Tensor | None: ...

    def save(self, key: StatisticKey, value: torch.Tensor) -> None: ...


class MemoryStatistics:
    """A `StatisticsCache` in this process's memory."""

    def __init__(self) -> None:
        self._values: dict[StatisticKey, torch.Tensor] = {}

    def load(self, key: StatisticKey) -> torch.Tensor | None:
        return self._values.get(key)

    def save(self, key: StatisticKey, value: torch.Tensor) -> None:
        self._values[key] = value


class CachedLayers(Sequence):
    """A read-only sequence of a model's layers ([N, D_l] tensors or arrays; widths may differ) whose
    per-stack statistics are computed once and kept in `cache` (default: in memory).

    `take(positions)` is the stack of some of these layers (e.g. without the constant ones), sharing the
    cache under its own keys: a statistic over other layers is another statistic."""

    def __init__(self, layers: Sequence[Any], cache: StatisticsCache | None = None,
                 positions: Sequence[int] | None = None) -> None:
        """positions: where each layer sits in the stack `cache` belongs to (default 0, 1, ...)."""
        self._layers = tuple(layers)
        self._cache = cache if cache is not None else MemoryStatistics()
        self.positions = tuple(range(len(self._layers))) if positions is None else tuple(int(p) for p in positions)
        if len(self.positions) != len(self._layers):
            raise ValueError(f"{len(self.positions)} positions for {len(self._layers)} layers")

    def __len__(self) -> int:
        return len(self._layers)

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return list(self._layers[index])
        return self._layers[index]

    def take(self, positions: Sequence[int]) -> CachedLayers:
        """The layers at `positions` (indices into this sequence), in that order, with the same cache."""
        return CachedLayers([self._layers[i] for i in positions], self._cache, [self.positions[i] for i in positions])

    def statistic(self, name: str, q: float, compute: Callable[[], torch.Tensor],
                  valid: Callable[[torch.Tensor], bool] = lambda _: True) -> torch.Tensor:
        """The statistic `name` at parameter q of these layers: from the cache when there and `valid`,
        else `compute()` (then saved)."""
        key: StatisticKey = (name, float(q), self.positions)
        value = self._cache.load(key)
        if value is None or not valid(value):
            value = compute()
            self._cache.save(key, value)
        return value


def take_layers(layers: Sequence[Any], positions: Sequence[int]) -> Sequence[Any]:
    """The layers at `positions`: `CachedLayers.take` for cached layers (their statistics stay cached),
    else a list."""
    if isinstance(layers, CachedLayers):
        return layers.take(positions)
    return [layers[i] for i in positions]
