"""Alignment metrics: `score`, `layer_grid`, `list_metrics` (see platobench.metrics.api).

Importing this package registers every metric: the kNN family (knn), CKA (kernel), rotation residuals
(procrustes) and SVCCA (cca).
"""

from __future__ import annotations

from platobench.metrics import cca, kernel, knn, procrustes  # noqa: F401  (registration)
from platobench.metrics.api import LayerSummaries, layer_grid, score, summarize_layers
from platobench.metrics.registry import Metric, get_metric, list_metrics
from platobench.metrics.validation import DegenerateFeaturesError, UndefinedScoreError

__all__ = [
    "DegenerateFeaturesError", "LayerSummaries", "Metric", "UndefinedScoreError", "get_metric", "layer_grid",
    "list_metrics", "score", "summarize_layers",
]
