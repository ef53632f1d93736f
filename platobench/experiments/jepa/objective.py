"""The training objectives the loop in `platobench.experiments.jepa.train` runs, and the JEPA one.

An objective owns its model, its training examples and its held-out measurement; the loop owns the
optimiser, schedule, accelerate, bf16 autocast, clipping, logging and checkpoints. JEPA: pairs of views
(`platobench.experiments.jepa.views`), VICReg loss (`platobench.experiments.jepa.losses`). Next-token prediction:
`platobench.experiments.jepa.ntp`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

import torch
from torch import nn
from transformers import PreTrainedTokenizerBase

from platobench.experiments.jepa.config import CaptionCorpus, TrainConfig
from platobench.experiments.jepa.losses import effective_rank, jepa_loss
from platobench.experiments.jepa.model import SIZES, TextJEPA, bert_config
from platobench.experiments.jepa.views import ViewPair, ViewSampler, distinct_captions


class Objective(Protocol):
    """One training objective. `model` is built (from the global torch RNG) by the constructor."""

    model: nn.Module

    def batches(self, global_batch: int) -> Iterator[list[Any]]:
        """Endless seeded stream of training examples, `global_batch` per step."""
        ...

    def batch(self, items: list[Any], device: torch.device) -> dict[str, torch.Tensor]:
        """Model inputs of this process's share of a step's examples."""
        ...

    def loss(self, model: nn.Module, inputs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """(total loss, named unweighted parts logged beside it) of one batch, under the loop's autocast."""
        ...

    def evaluate(self, model: nn.Module) -> dict[str, float]:
        """heldout_loss, effective_rank (+ objective-specific entries) of the unwrapped model, eval mode."""
        ...


def tokenize(tokenizer: PreTrainedTokenizerBase, texts: list[str], max_tokens: int, device) -> dict:
    """Right-padded `input_ids` and `attention_mask` `[len(texts), T]` on `device`, truncated at max_tokens."""
    batch = tokenizer(texts, padding=True, truncation=True, max_length=max_tokens, return_tensors="pt")
    return {"input_ids": batch["input_ids"].to(device), "attention_mask": batch["attention_mask"].to(device)}


class JepaObjective:
    """Text JEPA: both views of a pair in one padded batch, VICReg loss; held-out pairs and captions fixed
    at construction."""

    def __init__(
        self,
        corpus: CaptionCorpus,
        train_idx: list[int],
        heldout_idx: list[int],
        config: TrainConfig,
        tokenizer: PreTrainedTokenizerBase,
        max_tokens: int,
        device: torch.device,
    ):
        self.model = TextJEPA(
            bert_config(config.size, len(tokenizer), tokenizer.pad_token_id),
            projection=SIZES[config.size].projection,
            predictor=config.predictor,
        )
        self.corpus, self.train_idx, self.config = corpus, train_idx, config
        self.tokenizer, self.max_tokens = tokenizer, max_tokens
        views = [corpus.views[i] for i in heldout_idx]
        sampler = ViewSampler(views, config.views, seed=config.seed, mask_token=tokenizer.mask_token)
        pairs = [sampler.pair(i) for i in range(min(config.eval_pairs, len(heldout_idx)))]
        self.heldout_pairs = self.batch(pairs, device)
        self.heldout_captions = tokenize(tokenizer, [distinct_captions(v)[0] for v in views[: config.eval_captions]], max_tokens, device)

    def batches(self, global_batch: int) -> Iterator[list[ViewPair]]:
        """Seeded view pairs of the training samples (`ViewSampler.batches`)."""
        views = [self.corpus.views[i] for i in self.train_idx]
        sampler = ViewSampler(views, self.config.views, self.config.seed, self.tokenizer.mask_token)
        return sampler.batches(global_batch)

    def batch(self, items: list[ViewPair], device: torch.device) -> dict[str, torch.Tensor]:
        """Views a then views b, `[2B, T]`."""
        return tokenize(self.tokenizer, [p.a for p in items] + [p.b for p in items], self.max_tokens, device)

    def loss(self, model: nn.Module, inputs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """VICReg total and its invariance, variance and covariance terms."""
        parts = jepa_loss(*model(**inputs), self.config.weights)
        return parts.total, {
            "invariance": parts.invariance,
            "variance": parts.variance,
            "covariance": parts.covariance,
        }

    @torch.no_grad()
    def evaluate(self, model: TextJEPA) -> dict[str, float]:
        """Held-out VICReg loss, effective rank of the exported features and of their projections."""
        was_training = model.training
        model.eval()
        total, _ = self.loss(model, self.heldout_pairs)
        features = model.embed(**self.heldout_captions)
        ranks = effective_rank(features), effective_rank(model.projector(features))
        model.train(was_training)
        return {"heldout_loss": float(total), "effective_rank": ranks[0], "projection_effective_rank": ranks[1]}
