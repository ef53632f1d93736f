"""Alignment metrics: `score`, `layer_grid`, `list_metrics` (see platobench.metrics.api).

Every metric is registered before the first lookup (`registry.BUILTIN_MODULES`): the kNN family (knn),
CKA (kernel), rotation residuals (procrustes) and SVCCA (cca). The names below are imported (with torch)
on first access, so that importing `platobench.bench.metric_commands` to build the CLI parser stays light.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from platobench.metrics.api import LayerSummaries, layer_grid, score, summarize_layers
    from platobench.metrics.registry import Metric, get_metric, list_metrics
    from platobench.metrics.validation import DegenerateFeaturesError, UndefinedScoreError

#: Exported name -> the submodule that defines it.
_HOMES: dict[str, str] = {
    "LayerSummaries": "api", "layer_grid": "api", "score": "api", "summarize_layers": "api",
    "Metric": "registry", "get_metric": "registry", "list_metrics": "registry",
    "DegenerateFeaturesError": "validation", "UndefinedScoreError": "validation",
}


def __getattr__(name: str) -> Any:
    """An exported name, imported from its submodule on first access."""
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
    globals()[name] = value
    return value


__all__ = [
    "DegenerateFeaturesError", "LayerSummaries", "Metric", "UndefinedScoreError", "get_metric", "layer_grid",
    "list_metrics", "score", "summarize_layers",
]
