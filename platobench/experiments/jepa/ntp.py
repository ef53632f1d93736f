"""Next-token prediction (NTP) with the JEPA's backbone: the same BERT geometry, causal self-attention.

Balestriero & LeCun ("Proving and Improving the Platonic Representation Hypothesis with JEPAs", 2026)
read next-token prediction as a JEPA with bad views: a prefix and its continuation, of one document. To
compare like with like, the model is `bert_config(size)` with `is_decoder=True` (BERT's causal mask) and
transformers' LM head (`BertLMHeadModel`), trained from scratch on the same samples as the JEPA:
- a document is one training sample's distinct captions, joined by " ; " in a fresh seeded order at
  each draw, tokenised as the JEPA's views are ([CLS] text [SEP]) and truncated at 2 * max_tokens tokens
  (a JEPA pair holds two views of max_tokens: the same token budget);
- loss: causal LM cross-entropy, mean over the predicted non-pad tokens (float32). The LM head (a
  30,522-way output, most of a tiny model's compute) runs on those positions only: wordnet documents
  hold 24 tokens on average in batches padded to ~60, so this is ~2.5x less work than transformers'
  `labels=` path, at the same value. `NextTokenModel` computes it inside its `forward`, so a model
  wrapped for several processes (DDP through accelerate) still synchronises its gradients;
- exported features: masked mean of the last layer of the base model (no LM head), what the zoo's
  hf_causal loader computes (left padding with position ids from the mask gives the same hidden states).
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence

import torch
import torch.nn.functional as F
from torch import nn
from transformers import BertLMHeadModel, PreTrainedTokenizerBase

from platobench.api import masked_mean
from platobench.experiments.jepa.config import CaptionCorpus, TrainConfig
from platobench.experiments.jepa.losses import effective_rank
from platobench.experiments.jepa.model import bert_config
from platobench.experiments.jepa.objective import tokenize
from platobench.experiments.jepa.views import distinct_captions, epoch_batches

SEPARATOR = " ; "


def document_tokens(max_tokens: int) -> int:
    """Tokens of one document: 2 * `max_tokens`, the two views of a JEPA pair."""
    return 2 * max_tokens


def causal_lm(size: str, tokenizer: PreTrainedTokenizerBase, max_tokens: int) -> BertLMHeadModel:
    """A randomly initialised causal BERT of `size` with an LM head, positions for 2 * max_tokens tokens."""
    config = bert_config(
        size,
        len(tokenizer),
        tokenizer.pad_token_id,
        max_position_embeddings=document_tokens(max_tokens),
        is_decoder=True,
    )
    return BertLMHeadModel(config)


def lm_loss(model: BertLMHeadModel, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of each next token given its prefix, over the non-pad targets of right-padded
    ids/mask `[B, T]`; the LM head runs on the predicting positions only, its logits upcast to float32
    (autocast off for the loss)."""
    hidden = model.bert(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).last_hidden_state
    # position t predicts token t + 1 when t + 1 is a real token; the last position and padding predict nothing
    predicts = attention_mask[:, 1:].bool()
    logits = model.cls(hidden[:, :-1][predicts])
    with torch.autocast(device_type=logits.device.type, enabled=False):
        return F.cross_entropy(logits.float(), input_ids[:, 1:][predicts])


class NextTokenModel(nn.Module):
    """The trained module: `lm` (the `BertLMHeadModel` that is exported) and a `forward` that returns the
    LM loss of a batch, so the whole loss is inside the module a multi-process wrapper calls."""

    def __init__(self, lm: BertLMHeadModel):
        super().__init__()
        self.lm = lm

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """`lm_loss` of right-padded ids/mask `[B, T]` (a scalar)."""
        return lm_loss(self.lm, input_ids, attention_mask)


def features(model: BertLMHeadModel, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Exported features: masked mean of the base model's last layer, ids/mask `[B, T]` -> `[B, hidden]`."""
    hidden = model.bert(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).last_hidden_state
    return masked_mean(hidden, attention_mask)


class DocumentSampler:
    """Seeded stream of documents, one per sample: its distinct captions in a random order, joined by
    `SEPARATOR`. Each epoch visits the samples in a fresh seeded order."""

    def __init__(self, captions: Sequence[Sequence[str]], seed: int):
        self.captions = [distinct_captions(c) for c in captions]
        self.rng = random.Random(seed)

    def document(self, sample: int) -> str:
        """One draw of sample `sample`'s document."""
        order = list(self.captions[sample])
        self.rng.shuffle(order)
        return SEPARATOR.join(order)

    def batches(self, batch_size: int) -> Iterator[list[str]]:
        """Endless batches of `batch_size` documents (`views.epoch_batches` order)."""
        for indices in epoch_batches(len(self.captions), batch_size, self.rng):
            yield [self.document(i) for i in indices]


class NtpObjective:
    """Next-token prediction on caption documents; held-out documents and captions fixed at construction."""

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
        self.model = NextTokenModel(causal_lm(config.size, tokenizer, max_tokens))
        self.corpus, self.train_idx, self.config = corpus, train_idx, config
        self.tokenizer, self.tokens = tokenizer, document_tokens(max_tokens)
        views = [corpus.views[i] for i in heldout_idx]
        sampler = DocumentSampler(views, config.seed)
        documents = [sampler.document(i) for i in range(min(config.eval_pairs, len(heldout_idx)))]
        self.heldout_documents = self.batch(documents, device)
        self.heldout_captions = tokenize(tokenizer, [distinct_captions(v)[0] for v in views[: config.eval_captions]], self.tokens, device)

    def batches(self, global_batch: int) -> Iterator[list[str]]:
        """Seeded documents of the training samples."""
        return DocumentSampler([self.corpus.views[i] for i in self.train_idx], self.config.seed).batches(global_batch)

    def batch(self, items: list[str], device: torch.device) -> dict[str, torch.Tensor]:
        """Right-padded documents `[B, T]`, T <= 2 * max_tokens."""
        return tokenize(self.tokenizer, items, self.tokens, device)

    def loss(self, model: nn.Module, inputs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """LM cross-entropy (no separate parts), through the (possibly wrapped) module's forward."""
        return model(**inputs), {}

    @torch.no_grad()
    def evaluate(self, model: NextTokenModel) -> dict[str, float]:
        """Held-out LM loss and the effective rank of the exported features of the held-out captions."""
        was_training = model.training
        model.eval()
        loss = lm_loss(model.lm, **self.heldout_documents)
        rank = effective_rank(features(model.lm, **self.heldout_captions))
        model.train(was_training)
        return {"heldout_loss": float(loss), "effective_rank": rank}
