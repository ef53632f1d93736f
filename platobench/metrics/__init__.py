"""Alignment metrics: `score`, `layer_grid`, `list_metrics` (see platobench.metrics.api).

Importing this package registers every metric module listed in `_METRIC_MODULES`.
"""

from __future__ import annotations

import importlib

from platobench.metrics.api import LayerSummaries, layer_grid, score, summarize_layers
from platobench.metrics.registry import Metric, get_metric, list_metrics

_METRIC_MODULES = ("knn", "kernel", "procrustes", "cca")
for _name in _METRIC_MODULES:
    try:
        importlib.import_module(f"platobench.metrics.{_name}")
    except ModuleNotFoundError as _exc:  # module not written yet
        if _exc.name != f"platobench.metrics.{_name}":
            raise

__all__ = ["score", "layer_grid", "summarize_layers", "LayerSummaries", "list_metrics", "get_metric", "Metric"]
