"""Text JEPAs trained from scratch on caption pairs: good views (two captions of one image) versus bad views
(two corruptions of one caption), after Balestriero & LeCun, "Proving and Improving the Platonic
Representation Hypothesis with JEPAs" (2026).

Public API: `train(corpus, config) -> TrainResult`, `export_run(...)` (checkpoint + zoo entry),
`CaptionCorpus`, `TrainConfig`, `parse_views`, `ViewSampler`, `SIZES`, `jepa_loss`, `effective_rank`.
"""

import importlib
from typing import Any

_HOMES = {
    "export_run": "export", "LossWeights": "losses", "effective_rank": "losses", "jepa_loss": "losses",
    "SIZES": "sizes", "TextJEPA": "model", "CaptionCorpus": "train", "TrainConfig": "train", "TrainResult": "train",
    "is_heldout": "train", "split": "train", "train": "train", "ViewMode": "views", "ViewPair": "views",
    "ViewSampler": "views", "parse_views": "views",
}


def __getattr__(name: str) -> Any:
    """Import the public names on first use (PEP 562): the CLI imports this package, and transformers
    (needed only to train) takes seconds to import."""
    if name not in _HOMES:
        raise AttributeError(f"module 'platobench.jepa' has no attribute {name!r}")
    return getattr(importlib.import_module(f"platobench.jepa.{_HOMES[name]}"), name)


__all__ = [
    "SIZES",
    "CaptionCorpus",
    "LossWeights",
    "TextJEPA",
    "TrainConfig",
    "TrainResult",
    "ViewMode",
    "ViewPair",
    "ViewSampler",
    "effective_rank",
    "export_run",
    "is_heldout",
    "jepa_loss",
    "parse_views",
    "split",
    "train",
]
