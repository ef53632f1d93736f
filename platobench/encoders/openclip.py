"""CLIP / OpenCLIP image and text towers through open_clip (loader "openclip"; Radford et al. 2021,
Cherti et al. 2023).

Layers of a tower: index 0 the token sequence entering the first residual block, index i the output of
block i (forward hooks on `transformer.resblocks`), and one more index, num_blocks + 1, for the tower's
projected embedding (`encode_image` / `encode_text`, not normalised). Image tokens are pooled by the spec
("cls" = class token, as PRH); text tokens mask-aware ("last" = the EOT token, as CLIP itself pools;
"avg" = mean over SOT..EOT). Preprocessing is open_clip's eval transform for the checkpoint.

Sources: "ARCH/PRETRAINED" (the weights file of that pretrained tag, fetched from its hub repo at the
pinned revision), or a local folder in open_clip's hub layout (open_clip_config.json + weights), loaded
with `local-dir:`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from platobench.encoders.base import TextEncoder, VisionEncoder, to_output
from platobench.encoders.pooling import pool_text, pool_vision_tokens
from platobench.encoders.runtime import resolve_dtype
from platobench.encoders.sources import hub_errors, local_path
from platobench.errors import UserError
from platobench.hub import hub_offline
from platobench.zoo.spec import ModelSpec

WEIGHT_FILES = ("open_clip_model.safetensors", "open_clip_pytorch_model.bin")
PAD_ID = 0  # open_clip's SimpleTokenizer pads with 0


def run_blocks(blocks: Any, forward: Any) -> tuple[list[torch.Tensor], torch.Tensor]:
    """Run `forward()` capturing the input of the first block and the output of every block.

    Returns ([embeddings, block 1, ..., block L] each `[B, T, D]`, forward's return value)."""
    captured: list[torch.Tensor] = []
    handles = [blocks[0].register_forward_pre_hook(lambda _m, args: captured.append(args[0]))]
    handles += [b.register_forward_hook(lambda _m, _i, out: captured.append(out)) for b in blocks]
    try:
        result = forward()
    finally:
        for handle in handles:
            handle.remove()
    return captured, result


def text_tower(model: Any) -> Any:
    """The module holding the text transformer (CLIP keeps it on the model, CustomTextCLIP in `.text`)."""
    return model.text if hasattr(model, "text") else model


class OpenClipImageEncoder(VisionEncoder):
    """The image tower of an open_clip model, per block plus the projected embedding."""

    def __init__(self, spec: ModelSpec, model: Any, transform: Any, device: torch.device, dtype: torch.dtype) -> None:
        self.spec, self.model, self.transform, self.device, self.dtype = spec, model.eval(), transform, device, dtype
        visual = model.visual
        if not hasattr(visual, "transformer"):
            raise UserError(f"model {spec.name}: only open_clip ViT image towers are supported (got {type(visual).__name__})")
        self.blocks = visual.transformer.resblocks
        self.num_prefix = 1 if getattr(visual, "class_embedding", None) is not None else 0
        self.layer_ids = spec.layer_ids(len(self.blocks) + 1)
        width, projected = visual.transformer.width, model.embed_dim if hasattr(model, "embed_dim") else visual.output_dim
        self.widths = [projected if i == len(self.blocks) + 1 else width for i in self.layer_ids]

    @torch.inference_mode()
    def encode(self, pixels: torch.Tensor) -> list[torch.Tensor]:
        """`[B, 3, H, W]` -> one `[B, D_l]` float32 CPU tensor per entry of `layer_ids`."""
        x = pixels.to(self.device, self.dtype)
        tokens, projected = run_blocks(self.blocks, lambda: self.model.encode_image(x))
        last = len(self.blocks) + 1
        return [
            to_output(projected if i == last else pool_vision_tokens(tokens[i], self.spec.pooling, self.num_prefix))
            for i in self.layer_ids
        ]


class OpenClipTextEncoder(TextEncoder):
    """The text tower of an open_clip model, per block plus the projected embedding."""

    def __init__(self, spec: ModelSpec, model: Any, tokenizer: Any, device: torch.device) -> None:
        self.spec, self.model, self.tokenizer, self.device = spec, model.eval(), tokenizer, device
        transformer = text_tower(model).transformer
        self.blocks = transformer.resblocks
        self.layer_ids = spec.layer_ids(len(self.blocks) + 1)
        projected = model.embed_dim if hasattr(model, "embed_dim") else transformer.width
        self.widths = [projected if i == len(self.blocks) + 1 else transformer.width for i in self.layer_ids]

    def tokenize(self, texts: list[str]) -> dict[str, torch.Tensor]:
        """open_clip tokens `[B, context_length]` (right-padded with 0) and the matching mask."""
        ids = self.tokenizer(list(texts))
        return {"input_ids": ids, "attention_mask": (ids != PAD_ID).long()}

    def token_lengths(self, texts: list[str]) -> list[int]:
        """Tokens per text including SOT/EOT, after truncation to the context length."""
        return (self.tokenizer(list(texts)) != PAD_ID).sum(dim=1).tolist()

    @torch.inference_mode()
    def encode(self, batch: dict[str, torch.Tensor]) -> list[torch.Tensor]:
        """Pooled features, one `[B, D_l]` float32 CPU tensor per entry of `layer_ids`."""
        ids = batch["input_ids"].to(self.device)
        mask = batch["attention_mask"].to(self.device)
        tokens, projected = run_blocks(self.blocks, lambda: self.model.encode_text(ids))
        last = len(self.blocks) + 1
        return [to_output(projected if i == last else pool_text(tokens[i], mask, self.spec.pooling)) for i in self.layer_ids]


def download_first(repo: str, revision: str | None) -> str:
    """Local path of the first of WEIGHT_FILES that `repo` has at `revision` (cache only when offline)."""
    import huggingface_hub
    from huggingface_hub.errors import EntryNotFoundError

    error: Exception | None = None
    for name in WEIGHT_FILES:
        try:
            return huggingface_hub.hf_hub_download(repo, name, revision=revision, local_files_only=hub_offline())
        except EntryNotFoundError as exc:
            error = exc
    assert error is not None
    raise error


def hub_weights(spec: ModelSpec) -> tuple[str, str, dict[str, Any]]:
    """(architecture, local weights file, create_model options) for an "ARCH/PRETRAINED" hub source."""
    import open_clip

    arch, _, tag = spec.source.partition("/")
    cfg = open_clip.get_pretrained_cfg(arch, tag)
    if not cfg or not cfg.get("hf_hub"):
        raise UserError(f"model {spec.name}: open_clip has no hub weights for {spec.source!r} (expected ARCH/PRETRAINED)")
    repo = cfg["hf_hub"].strip("/")
    with hub_errors(spec, repo):
        path = download_first(repo, spec.revision)
    options = {
        "force_quick_gelu": bool(cfg.get("quick_gelu", False)),
        "image_mean": cfg.get("mean"),
        "image_std": cfg.get("std"),
        "image_interpolation": cfg.get("interpolation"),
        "image_resize_mode": cfg.get("resize_mode"),
    }
    return arch, path, {k: v for k, v in options.items() if v is not None}


def load(spec: ModelSpec, *, device: torch.device, dtype: str | None = None, home: Path | None = None):
    """Load the spec's tower: an image encoder for kind clip_image, a text encoder for clip_text."""
    import open_clip

    torch_dtype = resolve_dtype(dtype or spec.dtype, device)
    folder = local_path(spec, home)
    if folder is not None:
        name = f"local-dir:{folder}"
        model, _, transform = open_clip.create_model_and_transforms(name, device=device)
    else:
        arch, weights, options = hub_weights(spec)
        name = arch
        model, _, transform = open_clip.create_model_and_transforms(arch, pretrained=weights, device=device, **options)
    model = model.to(device, torch_dtype)
    if spec.kind == "clip_image":
        return OpenClipImageEncoder(spec, model, transform, device, torch_dtype)
    return OpenClipTextEncoder(spec, model, open_clip.get_tokenizer(name), device)
