"""What a training run reads and returns: the caption corpus, its held-out split, `TrainConfig` and
`TrainResult` (shared by the JEPA and the next-token-prediction objectives; kept free of transformers)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from platobench.api import is_heldout
from platobench.experiments.jepa.losses import LossWeights
from platobench.experiments.jepa.views import ViewMode, distinct_captions

Objective = Literal["jepa", "ntp"]
Schedule = Literal["cosine", "constant"]


@dataclass(frozen=True)
class CaptionCorpus:
    """Captions of a paired dataset: `views[i]` lists every caption of sample `ids[i]`."""

    name: str
    revision: str
    fingerprint: str
    ids: list[str]
    views: list[list[str]]

    @classmethod
    def from_dataset(cls, dataset) -> CaptionCorpus:  # a platobench.data.PairedDataset
        """Copy the captions of a `PairedDataset` (anything with name, revision, fingerprint, ids,
        caption_views(i))."""
        views = [dataset.caption_views(i) for i in range(len(dataset.ids))]
        return cls(dataset.name, dataset.revision, dataset.fingerprint, list(dataset.ids), views)


def split(corpus: CaptionCorpus, heldout_fraction: float) -> tuple[list[int], list[int]]:
    """(train, held-out) indices of the samples with at least two distinct captions (the only ones that
    give good views; bad-view and next-token runs use the same samples so runs differ in their objective
    and views only)."""
    eligible = [i for i, views in enumerate(corpus.views) if len(distinct_captions(views)) >= 2]
    train = [i for i in eligible if not is_heldout(corpus.ids[i], heldout_fraction)]
    heldout = [i for i in eligible if is_heldout(corpus.ids[i], heldout_fraction)]
    return train, heldout


@dataclass(frozen=True)
class TrainConfig:
    """Hyper-parameters. objective: jepa (view pairs, VICReg) or ntp (next-token prediction on documents
    made of a sample's captions; `views`, `weights` and `predictor` apply to jepa only);
    weights: VICReg coefficients; predictor: add a predictor head (JEPA form);
    batch_size: examples (pairs or documents) per process per step; lr: peak learning rate (None: the
    size's default); schedule: cosine (warm-up then cosine decay to 0) or constant (warm-up then constant,
    so a snapshot matches a shorter run); max_tokens: truncation length of one view (None: the size's
    maximum; an ntp document holds 2 * max_tokens, the token budget of a pair);
    eval_pairs: held-out pairs (documents) measured during training; eval_captions: held-out samples
    (the first ones) whose features give the effective rank (a 109k-item corpus holds out ~22k: encoding
    them all at every evaluation cost more than training between snapshots); log_every: steps between progress
    lines (0: steps // 10); checkpoints: examples seen (step * global batch) after which `train` hands a
    snapshot to its `on_checkpoint` callback."""

    size: str = "tiny"
    views: ViewMode = field(default_factory=lambda: ViewMode("good", 1.0))
    steps: int = 300
    seed: int = 0
    batch_size: int = 64
    lr: float | None = None
    weight_decay: float = 0.05
    warmup_fraction: float = 0.1
    weights: LossWeights = field(default_factory=LossWeights)
    predictor: bool = False
    heldout_fraction: float = 0.2
    eval_pairs: int = 256
    eval_captions: int = 2048
    max_tokens: int | None = None
    log_every: int = 0
    objective: Objective = "jepa"
    schedule: Schedule = "cosine"
    checkpoints: tuple[int, ...] = ()


@dataclass
class TrainResult:
    """What a run (or a snapshot of it) produced. Losses are on the fixed held-out pairs or documents
    (eval mode); effective ranks are of the exported features of the held-out samples' first captions;
    `history` has one dict per progress line so far. `model` is a `TextJEPA` (jepa) or a transformers
    `BertLMHeadModel` (ntp)."""

    model: Any
    tokenizer: Any  # transformers PreTrainedTokenizerBase
    initial_loss: float
    final_loss: float
    initial_effective_rank: float
    effective_rank: float
    train_samples: int
    heldout_samples: int
    heldout_ids: list[str]
    samples_per_s: float  # training examples per second (all processes), evaluations excluded
    is_main_process: bool = True  # False on the other processes of a multi-GPU run (which must not export)
    history: list[dict[str, float]] = field(default_factory=list)
    examples_seen: int = 0  # pairs (jepa) or documents (ntp) trained on, all processes together
    objective: str = "jepa"
