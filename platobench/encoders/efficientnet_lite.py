"""EfficientNet-Lite (Tan & Le 2019; the Lite variants drop squeeze-excitation and use ReLU6) through
`efficientnet_lite_pytorch` (loader "efficientnet_lite"), from a prepared folder holding
`model.safetensors` and `config.json` ({"architecture": "efficientnet-lite0|1|2", "num_classes": 1000,
"image_size": 224|240|260}; see `packaged.py`, assets "efficientnet-lite0/1/2").

Layers are stages, each globally average-pooled: index 0 the stem, 1..7 the seven MBConv stages (a stage
starts where a block changes width; Lite0/1/2 have 16/21/21 blocks), 8 the 1x1 head convolution (1280-d,
the features the classifier reads; the Lite variants do not scale stem and head). Preprocessing, as the
TensorFlow Lite checkpoints were trained: shorter side to image_size + 32 px (bicubic), centre crop
image_size (224/240/260), pixels in [0, 255] mapped to (x - 127) / 128.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from platobench.encoders.base import VisionEncoder, to_output
from platobench.encoders.pooling import global_average
from platobench.encoders.preprocess import image_transform
from platobench.encoders.runtime import resolve_dtype
from platobench.encoders.sources import local_path
from platobench.errors import UserError
from platobench.zoo.spec import ModelSpec

# (x - 127) / 128 on 0..255 pixels, written for ToTensor's 0..1 scale.
LITE_MEAN = (127 / 255,) * 3
LITE_STD = (128 / 255,) * 3
CROP_PADDING = 32  # resize the shorter side to image_size + 32, then centre-crop image_size


def stage_ends(model: Any) -> list[int]:
    """Index of the last block of each stage: a stage's first block changes the channel count."""
    starts = [i for i, block in enumerate(model._blocks) if block._block_args.input_filters != block._block_args.output_filters]
    return [s - 1 for s in starts[1:]] + [len(model._blocks) - 1]


class EfficientNetLiteEncoder(VisionEncoder):
    """EfficientNet-Lite features per stage, global-average pooled."""

    def __init__(
        self, spec: ModelSpec, model: Any, device: torch.device, dtype: torch.dtype, image_size: int | None = None
    ) -> None:
        self.spec = spec
        self.model = model.eval()
        self.device = device
        self.dtype = dtype
        self.ends = stage_ends(model)
        size = image_size or model._global_params.image_size
        self.image_size = size
        self.transform = image_transform(size + CROP_PADDING, (size, size), LITE_MEAN, LITE_STD)
        widths = [model._bn0.num_features] + [model._blocks[i]._block_args.output_filters for i in self.ends]
        widths.append(model._bn1.num_features)
        self.layer_ids = spec.layer_ids(len(widths) - 1)
        self.widths = [widths[i] for i in self.layer_ids]

    @torch.inference_mode()
    def encode(self, pixels: torch.Tensor) -> list[torch.Tensor]:
        """`[B, 3, S, S]` (S = `image_size`) -> one `[B, C_stage]` float32 CPU tensor per entry of `layer_ids`."""
        m = self.model
        x = m._swish(m._bn0(m._conv_stem(pixels.to(self.device, self.dtype))))
        maps = [x]
        for i, block in enumerate(m._blocks):
            x = block(x)
            if i in self.ends:
                maps.append(x)
        maps.append(m._swish(m._bn1(m._conv_head(x))))
        return [to_output(global_average(maps[i])) for i in self.layer_ids]


def load(spec: ModelSpec, *, device: torch.device, dtype: str | None = None, home: Path | None = None) -> EfficientNetLiteEncoder:
    """Build the architecture named in the folder's config.json and load its safetensors (strict)."""
    from efficientnet_lite_pytorch import EfficientNet
    from safetensors.torch import load_file

    folder = local_path(spec, home)
    if folder is None or not (folder / "config.json").is_file():
        raise UserError(f"model {spec.name}: loader efficientnet_lite needs a folder with config.json and model.safetensors")
    config = json.loads((folder / "config.json").read_text())
    model = EfficientNet.from_name(config["architecture"], num_classes=config.get("num_classes", 1000))
    model.load_state_dict(load_file(str(folder / "model.safetensors")), strict=True)
    torch_dtype = resolve_dtype(dtype or spec.dtype, device)
    size = spec.image_size or config.get("image_size")
    return EfficientNetLiteEncoder(spec, model.to(device, torch_dtype), device, torch_dtype, size)
