"""Text JEPAs trained from scratch on caption pairs: good views (two captions of one image) versus bad views
(two corruptions of one caption), after Balestriero & LeCun, "Proving and Improving the Platonic
Representation Hypothesis with JEPAs" (2026).

Public API: `train(corpus, config) -> TrainResult`, `export_run(...)` (checkpoint + zoo entry),
`CaptionCorpus`, `TrainConfig`, `parse_views`, `ViewSampler`, `SIZES`, `jepa_loss`, `effective_rank`.
"""

from platobench.jepa.export import export_run
from platobench.jepa.losses import LossWeights, effective_rank, jepa_loss
from platobench.jepa.model import SIZES, TextJEPA
from platobench.jepa.train import CaptionCorpus, TrainConfig, TrainResult, is_heldout, split, train
from platobench.jepa.views import ViewMode, ViewPair, ViewSampler, parse_views

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
