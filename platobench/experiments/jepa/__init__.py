"""Text JEPAs trained from scratch on caption pairs: good views (two captions of one image) versus bad views
(two corruptions of one caption), after Balestriero & LeCun, "Proving and Improving the Platonic
Representation Hypothesis with JEPAs" (2026).

Next-token prediction with the same backbone (`TrainConfig(objective="ntp")`, `platobench.experiments.jepa.ntp`) is the
baseline the paper reads as a JEPA with bad views (prefix and continuation of one document).

Public API: `train(corpus, config, progress, on_checkpoint) -> TrainResult`, `export_run(...)`
(checkpoint + zoo entry), `CaptionCorpus`, `TrainConfig`, `parse_views`, `ViewSampler`, `SIZES`, `jepa_loss`,
`effective_rank`. Experiments: `run_curve(corpus, CurveConfig)` (alignment against examples seen per
recipe, with the sample-efficiency ratio), `run_scaling(corpus, ScalingConfig)` (the trained scaling law,
predictions written before the held-out runs), `fit_law`, `Recipe`/`parse_recipes`.
"""

import importlib
from typing import Any

_HOMES = {
    "export_run": "export", "LossWeights": "losses", "effective_rank": "losses", "jepa_loss": "losses",
    "SIZES": "sizes", "TextJEPA": "model", "CaptionCorpus": "config", "TrainConfig": "config", "TrainResult": "config",
    "split": "config", "train": "train", "ViewMode": "views", "ViewPair": "views",
    "ViewSampler": "views", "parse_views": "views", "CurveConfig": "curve", "run_curve": "curve",
    "ScalingConfig": "scaling", "run_scaling": "scaling", "fit_law": "scaling_law", "LawFit": "scaling_law",
    "Recipe": "recipes", "parse_recipes": "recipes",
}


def __getattr__(name: str) -> Any:
    """Import the public names on first use (PEP 562): the CLI imports this package, and transformers
    (needed only to train) takes seconds to import."""
    if name not in _HOMES:
        raise AttributeError(f"module 'platobench.experiments.jepa' has no attribute {name!r}")
    return getattr(importlib.import_module(f"platobench.experiments.jepa.{_HOMES[name]}"), name)


__all__ = [
    "SIZES",
    "CaptionCorpus",
    "CurveConfig",
    "LawFit",
    "Recipe",
    "ScalingConfig",
    "LossWeights",
    "TextJEPA",
    "TrainConfig",
    "TrainResult",
    "ViewMode",
    "ViewPair",
    "ViewSampler",
    "effective_rank",
    "export_run",
    "fit_law",
    "jepa_loss",
    "parse_recipes",
    "parse_views",
    "run_curve",
    "run_scaling",
    "split",
    "train",
]
