"""ViTs and CNNs through timm (loader "timm"; Wightman, pytorch-image-models).

ViTs (models with `blocks`): index 0 is the token sequence entering the first block (patch embeddings +
position embeddings + prefix tokens, captured at `norm_pre`), index i the residual stream after block i
from `forward_intermediates` (no final norm), with CLS and register tokens kept so "cls" is the class
token of every block (PRH). CNNs: index i is the i-th `feature_info` entry (the stem for ResNets, then
each stage) from `forward_intermediates`, globally average-pooled.

Sources: a timm name with pretrained tag (weights from its hub repo at the pinned revision), or a local
folder in timm's hub layout (config.json + model.safetensors, as `timm.models.save_for_hf` writes),
loaded with `local-dir:`. Preprocessing is timm's data config for the model (`resolve_data_config`), at
`spec.image_size` when given.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from platobench.encoders.base import VisionEncoder, to_output
from platobench.encoders.pooling import global_average, pool_vision_tokens
from platobench.encoders.preprocess import ToRGB
from platobench.encoders.runtime import resolve_dtype
from platobench.encoders.sources import hub_errors, local_path
from platobench.errors import UserError
from platobench.hub import hub_offline
from platobench.zoo.spec import ModelSpec


def timm_transform(model: Any):
    """timm's eval transform for `model` (its pretrained data config), preceded by RGB conversion."""
    import timm.data
    from torchvision import transforms

    config = timm.data.resolve_data_config(model=model)
    return transforms.Compose([ToRGB(), timm.data.create_transform(**config, is_training=False)])


class TimmEncoder(VisionEncoder):
    """A timm ViT (per-block tokens) or CNN (per-stage maps), pooled per layer."""

    def __init__(self, spec: ModelSpec, model: Any, device: torch.device, dtype: torch.dtype) -> None:
        self.spec = spec
        self.model = model.eval()
        self.device = device
        self.dtype = dtype
        self.transform = timm_transform(model)
        self.is_vit = hasattr(model, "blocks") and hasattr(model, "norm_pre")
        if self.is_vit:
            num_blocks = len(model.blocks)
            self.num_prefix = int(getattr(model, "num_prefix_tokens", 1))
            self.layer_ids = spec.layer_ids(num_blocks)
            self.widths = [model.embed_dim] * len(self.layer_ids)
        else:
            channels = [info["num_chs"] for info in model.feature_info]
            self.layer_ids = spec.layer_ids(len(channels) - 1)
            self.widths = [channels[i] for i in self.layer_ids]

    @torch.inference_mode()
    def encode(self, pixels: torch.Tensor) -> list[torch.Tensor]:
        """`[B, 3, H, W]` -> one `[B, D_l]` float32 CPU tensor per entry of `layer_ids`."""
        x = pixels.to(self.device, self.dtype)
        return self._encode_vit(x) if self.is_vit else self._encode_cnn(x)

    def _encode_vit(self, x: torch.Tensor) -> list[torch.Tensor]:
        captured: list[torch.Tensor] = []
        hook = self.model.norm_pre.register_forward_hook(lambda _m, _i, out: captured.append(out))
        try:
            blocks = [i - 1 for i in self.layer_ids if i > 0]
            outs = self.model.forward_intermediates(
                x, indices=blocks or [0], return_prefix_tokens=True, norm=False, output_fmt="NLC", intermediates_only=True
            )
        finally:
            hook.remove()
        by_block = {b: torch.cat([prefix, tokens], dim=1) for b, (tokens, prefix) in zip(blocks, outs)}
        tokens = [captured[0] if i == 0 else by_block[i - 1] for i in self.layer_ids]
        return [to_output(pool_vision_tokens(t, self.spec.pooling, self.num_prefix)) for t in tokens]

    def _encode_cnn(self, x: torch.Tensor) -> list[torch.Tensor]:
        maps = self.model.forward_intermediates(x, indices=self.layer_ids, intermediates_only=True)
        return [to_output(global_average(m)) for m in maps]


def create(spec: ModelSpec, home: Path | None):
    """Build the timm model of a spec with its weights (hub at the pinned revision, or a local folder)."""
    import timm

    kwargs: dict[str, Any] = {} if spec.image_size is None else {"img_size": spec.image_size}
    folder = local_path(spec, home)
    if folder is not None:
        return timm.create_model(f"local-dir:{folder}", pretrained=True, **kwargs)
    if not timm.is_model_pretrained(spec.source):
        raise UserError(f"model {spec.name}: timm has no pretrained weights called {spec.source!r}")
    hub_id = timm.models.get_pretrained_cfg(spec.source).hf_hub_id
    if not hub_id:
        raise UserError(f"model {spec.name}: timm weights {spec.source!r} are not on the Hugging Face hub")
    if hub_offline():
        import huggingface_hub

        with hub_errors(spec, hub_id):  # timm itself does not honour local_files_only
            huggingface_hub.snapshot_download(hub_id, revision=spec.revision, local_files_only=True)
    with hub_errors(spec, hub_id):
        return timm.create_model(
            spec.source, pretrained=True, pretrained_cfg_overlay={"hf_hub_id": f"{hub_id}@{spec.revision}"}, **kwargs
        )


def load(spec: ModelSpec, *, device: torch.device, dtype: str | None = None, home: Path | None = None) -> TimmEncoder:
    """Load a timm ViT or CNN encoder."""
    torch_dtype = resolve_dtype(dtype or spec.dtype, device)
    model = create(spec, home)
    return TimmEncoder(spec, model.to(device, torch_dtype), device, torch_dtype)
