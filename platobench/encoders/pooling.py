"""Pooling of one layer's token (or spatial) features into one vector per sample.

Token pooling is mask-aware: padded positions never enter a sample's vector, whichever side the padding
is on (causal LMs pad on the left). Pad positions are excluded with `torch.where`, not by multiplying with
the mask, so a NaN or Inf produced at a fully masked position cannot leak in. Sums are taken in float32.
PRH (Huh et al. 2024) averages language-model tokens ("avg") and takes the ViT CLS token ("cls").
"""

from __future__ import annotations

import torch


def masked_mean(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over valid tokens. hidden `[B, T, D]`, mask `[B, T]` (1 = token) -> `[B, D]` float32."""
    valid = mask.to(device=hidden.device, dtype=torch.bool).unsqueeze(-1)
    total = torch.where(valid, hidden.float(), 0.0).sum(dim=1)
    count = valid.sum(dim=1).clamp(min=1)
    return total / count


def last_valid(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The last valid token of each row (works for left and right padding). `[B, T, D]` -> `[B, D]`."""
    mask = mask.to(device=hidden.device)
    positions = torch.arange(mask.shape[1], device=hidden.device).expand_as(mask)
    index = torch.where(mask.bool(), positions, -1).amax(dim=1).clamp(min=0)
    return hidden[torch.arange(hidden.shape[0], device=hidden.device), index].float()


def first_token(hidden: torch.Tensor) -> torch.Tensor:
    """The first token ([CLS] of BERT-style encoders, the class token of ViTs). `[B, T, D]` -> `[B, D]`."""
    return hidden[:, 0].float()


def mean_patch(hidden: torch.Tensor, num_prefix: int) -> torch.Tensor:
    """Mean over patch tokens, skipping `num_prefix` leading CLS/register tokens. `[B, T, D]` -> `[B, D]`."""
    return hidden[:, num_prefix:].float().mean(dim=1)


def global_average(feature_map: torch.Tensor) -> torch.Tensor:
    """Global average pool of a CNN feature map `[B, C, H, W]` -> `[B, C]`."""
    return feature_map.float().mean(dim=(2, 3))


def pool_text(hidden: torch.Tensor, mask: torch.Tensor, pooling: str) -> torch.Tensor:
    """Pool text tokens by the spec's `pooling`: avg (masked mean), last (last valid token), cls (first)."""
    if pooling == "avg":
        return masked_mean(hidden, mask)
    if pooling == "last":
        return last_valid(hidden, mask)
    if pooling == "cls":
        return first_token(hidden)
    raise ValueError(f"pooling {pooling!r} does not apply to text tokens (expected avg, last or cls)")


def pool_vision_tokens(hidden: torch.Tensor, pooling: str, num_prefix: int) -> torch.Tensor:
    """Pool ViT tokens `[B, T, D]`: cls (class token), mean_patch (patches only), avg (every token)."""
    if pooling == "cls":
        return first_token(hidden)
    if pooling == "mean_patch":
        return mean_patch(hidden, num_prefix)
    if pooling == "avg":
        return hidden.float().mean(dim=1)
    raise ValueError(f"pooling {pooling!r} does not apply to ViT tokens (expected cls, mean_patch or avg)")
