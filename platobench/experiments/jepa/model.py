"""The text JEPA: a BERT-style encoder trained from scratch, mean pooling, projector, optional predictor.

The encoder is a plain transformers `BertModel` (Devlin et al. 2019), so a checkpoint is an ordinary
transformers folder that `AutoModel` loads. The representation handed to the benchmark is the masked mean
of the encoder's token states ("avg" pooling, as PRH pools language models); the projector (and predictor)
exist only for the training objective and are not exported, as in SimCLR/VICReg/LeJEPA practice.
"""

from __future__ import annotations

from dataclasses import asdict

import torch
from torch import nn
from transformers import BertConfig, BertModel

from platobench.api import masked_mean
from platobench.experiments.jepa.sizes import SIZES, SizeConfig  # noqa: F401  (re-exported)


def bert_config(
    size: str,
    vocab_size: int,
    pad_token_id: int,
    *,
    max_position_embeddings: int | None = None,
    is_decoder: bool = False,
) -> BertConfig:
    """transformers `BertConfig` of size `size` (a key of SIZES) for a tokenizer of `vocab_size` tokens.
    max_position_embeddings: position table size (default the size's `max_tokens`); is_decoder: causal
    self-attention (BERT as a left-to-right language model)."""
    if size not in SIZES:
        raise ValueError(f"unknown size {size!r}; expected one of {', '.join(SIZES)}")
    geometry = SIZES[size]
    return BertConfig(
        vocab_size=vocab_size,
        hidden_size=geometry.hidden,
        num_hidden_layers=geometry.layers,
        num_attention_heads=geometry.heads,
        intermediate_size=geometry.intermediate,
        max_position_embeddings=max_position_embeddings or geometry.max_tokens,
        pad_token_id=pad_token_id,
        is_decoder=is_decoder,
    )


def mlp(width_in: int, width_hidden: int, width_out: int) -> nn.Sequential:
    """Two-layer MLP head: Linear -> BatchNorm -> GELU -> Linear (the SimCLR/VICReg projector shape)."""
    return nn.Sequential(
        nn.Linear(width_in, width_hidden),
        nn.BatchNorm1d(width_hidden),
        nn.GELU(),
        nn.Linear(width_hidden, width_out),
    )


class TextJEPA(nn.Module):
    """Encoder + projector (+ predictor). `embed` gives the exported `[B, hidden]` features; `forward`
    gives the projected embeddings of two views and, with a predictor, each view's prediction of the other.

    BERT's pooler layer is kept (so the saved folder loads into `BertModel` without missing weights) but
    frozen at its initialisation: no output of this model uses it.
    """

    def __init__(self, config: BertConfig, projection: int, predictor: bool):
        super().__init__()
        self.encoder = BertModel(config)
        self.encoder.pooler.requires_grad_(False)
        hidden = config.hidden_size
        self.projector = mlp(hidden, hidden, projection)
        self.predictor = mlp(projection, projection, projection) if predictor else None

    def embed(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Masked mean of the last layer's token states: ids/mask `[B, T]` -> `[B, hidden]` float32."""
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        return masked_mean(hidden, attention_mask)

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """Both views in one padded batch `[2B, T]`, rows 0..B-1 view a and rows B..2B-1 view b ->
        (z_a, z_b, p_a, p_b), each `[B, projection]`; p_a, p_b are None without a predictor."""
        z_a, z_b = self.projector(self.embed(input_ids, attention_mask)).chunk(2)
        if self.predictor is None:
            return z_a, z_b, None, None
        return z_a, z_b, self.predictor(z_a), self.predictor(z_b)


def count_parameters(size: str, vocab_size: int) -> int:
    """Parameters of the exported encoder (BertModel, pooler included) of `size`, counted without
    allocating weights (built on the meta device)."""
    with torch.device("meta"):
        encoder = BertModel(bert_config(size, vocab_size, pad_token_id=0))
    return sum(p.numel() for p in encoder.parameters())


def size_summary(size: str) -> dict[str, int]:
    """The geometry of `size` as a plain dict (for metadata files)."""
    return asdict(SIZES[size])
