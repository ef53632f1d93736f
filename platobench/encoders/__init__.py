"""Encoders: load a zoo model and return pooled per-layer features through one interface.

`load_encoder(spec)` returns a `TextEncoder` (tokenize / token_lengths / encode) or a `VisionEncoder`
(transform / encode); `encode` gives one `[B, D_l]` float32 CPU tensor per entry of `layer_ids`
(0 = embeddings or stem, i = block or stage i). One module per family:

- hf_causal: causal LMs via transformers (left padding, avg/last, bf16 on cc>=8 GPUs, device_map="auto")
- hf_text: BERT-style and sentence-transformers encoders, text JEPA checkpoints (cls/avg)
- hf_vision: DINOv2 / DINOv3 via transformers (cls/mean_patch)
- timm_vision: timm ViTs (forward_intermediates) and CNNs (per stage)
- openclip: open_clip image and text towers (per block + projected embedding)
- efficientnet_lite: EfficientNet-Lite via efficientnet_lite_pytorch (per stage)
- packaged: the offline pip weights, prepared once under the cache root (`platobench prepare`)
- baselines: negative controls (random-init architectures, bag of words, caption length, colour histogram)
- python_loader: the user's own code (`loader: python`, "module:name"; the simple `encode` protocol)
- precomputed: embeddings computed elsewhere (`loader: features`), read by sample id from a local file
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from platobench.errors import UserError
from platobench.zoo.support import loader_support

if TYPE_CHECKING:  # torch and PIL load on first use: `platobench prepare --help` lists packaged assets only
    import torch

    from platobench.encoders.base import TextEncoder, VisionEncoder
    from platobench.zoo.spec import ModelSpec

def layer_ids_of(spec: ModelSpec) -> list[int]:
    """The layer indices `load_encoder(spec).layer_ids` will have, known without loading the model (the
    cache key needs them): embeddings + `num_layers` blocks, then the extra layers the loader declares in
    `support.LOADERS` (open_clip towers: the projected embedding as index num_layers + 1), as `spec.top_layer`
    counts them."""
    problem = spec.extraction_problem()
    if problem is not None:
        raise UserError(f"model {spec.name}: {problem}")
    return spec.layer_ids(spec.top_layer)  # type: ignore[arg-type]  # not None once there is no problem


def layer_count_of(spec: ModelSpec) -> int | None:
    """len(layer_ids_of(spec)) without building the list (for planning); None while `num_layers` is unknown."""
    if spec.extraction_problem() is not None:
        return None
    return len(spec.layers) if spec.layers != "all" else spec.top_layer + 1  # type: ignore[operator]  # known


def load_encoder(
    spec: ModelSpec, *, device: str | torch.device = "cpu", dtype: str | None = None, home: Path | None = None,
    encoder_timeout: float | None = None,
) -> TextEncoder | VisionEncoder:
    """Load the model a spec names, ready to encode.

    device: "cpu", "cuda" (all visible GPUs for large causal LMs) or "cuda:N". dtype: overrides the spec's
    dtype policy ("auto", "float32", "bfloat16", "float16"). home: cache root for packaged assets
    (default `platobench.paths.home()`). A "python" spec's "module:name" is a class or object with
    `encode(texts or images) -> [N, L, D]`, or a function (spec, device=, dtype=, home=) returning an
    encoder (see platobench.encoders.python_loader). Loading runs under `platobench.encoders.guard.encoder_call`:
    printed output on stderr, sys.exit an EncoderExitError, and a time limit (`encoder_timeout` seconds, 0
    none; None: the default of `guard.limit_for`, which limits `loader: python` entries only). Inside
    `guard.isolating(True)` (`--isolate-encoders`) a `loader: python` encoder loads in a process of its own
    instead, killed when a call passes that limit (platobench.encoders.isolated). A model loaded onto the
    CPU switches on `cpu_memory.keep_freed_memory` (its batches then reuse freed buffers).
    """
    from platobench.encoders.cpu_memory import keep_freed_memory
    from platobench.encoders.guard import encoder_call, isolates, limit_for
    from platobench.encoders.runtime import quiet_weight_loading, resolve_device

    dev = resolve_device(device)
    limit = limit_for(spec.loader, encoder_timeout)
    if isolates(spec.loader):  # imported by name, as the loaders are: it imports one (python_loader)
        isolated = importlib.import_module("platobench.encoders.isolated")
        return isolated.load(spec, device=dev, dtype=dtype, home=home, timeout=limit)  # type: ignore[no-any-return]
    if dev.type == "cpu":
        keep_freed_memory()
    module = importlib.import_module(loader_support(spec.loader).module)
    # transformers' loading bars would nest inside extraction's own bar
    with encoder_call(spec.name, "loading the encoder", limit), quiet_weight_loading():
        return module.load(spec, device=dev, dtype=dtype, home=home)


def __getattr__(name: str) -> Any:
    """`TextEncoder` and `VisionEncoder`, imported from `base` (torch) on first access."""
    if name in ("TextEncoder", "VisionEncoder"):
        from platobench.encoders import base

        return getattr(base, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["TextEncoder", "VisionEncoder", "layer_count_of", "layer_ids_of", "load_encoder"]
