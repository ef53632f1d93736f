"""The two encoder interfaces every loader returns.

Layer convention (PRH, Huh et al. 2024): index 0 is the embedding output (token/patch embeddings, or a
CNN's stem), index i >= 1 the output of block (or stage) i. `layer_ids` lists the indices an encoder
returns, `widths` the feature width of each; `encode` returns one pooled `[B, D_l]` float32 CPU tensor per
entry of `layer_ids`, in that order.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence

import PIL.Image
import torch

from platobench.errors import UserError
from platobench.zoo.spec import ModelSpec


class EncoderOutputError(UserError):
    """An encoder returned another number of layers, or other widths, than it declares."""


class TextEncoder(ABC):
    """A text model that maps a batch of strings to pooled per-layer features."""

    spec: ModelSpec
    layer_ids: list[int]
    widths: list[int]
    device: torch.device

    @abstractmethod
    def tokenize(self, texts: list[str]) -> dict[str, torch.Tensor]:
        """Padded batch (left padding for causal LMs): at least `input_ids` and `attention_mask`, [B, T]."""

    @abstractmethod
    def token_lengths(self, texts: list[str]) -> list[int]:
        """Number of tokens of each text (special tokens included, no padding), for length bucketing."""

    @abstractmethod
    def encode(self, batch: dict[str, torch.Tensor]) -> list[torch.Tensor]:
        """Pooled features of a `tokenize` batch: one `[B, D_l]` float32 CPU tensor per `layer_ids` entry."""


class VisionEncoder(ABC):
    """An image model that maps a batch of preprocessed images to pooled per-layer features."""

    spec: ModelSpec
    layer_ids: list[int]
    widths: list[int]
    device: torch.device
    transform: Callable[[PIL.Image.Image], torch.Tensor]

    @abstractmethod
    def encode(self, pixels: torch.Tensor) -> list[torch.Tensor]:
        """`[B, 3, H, W]` output of `transform` -> one `[B, D_l]` float32 CPU tensor per `layer_ids` entry."""


def to_output(features: torch.Tensor) -> torch.Tensor:
    """Detach a pooled `[B, D]` tensor into the contract's form: float32, contiguous, on the CPU."""
    return features.detach().to(device="cpu", dtype=torch.float32).contiguous()


def owned(outputs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """A copy of each of an encoder's `outputs`, taken before its next call: hand-written inference code
    often returns views of one buffer it overwrites on every call, which would turn every batch already
    returned into the last one."""
    return [out.clone() for out in outputs]
