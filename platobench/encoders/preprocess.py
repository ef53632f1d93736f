"""Picklable image transforms (they cross into DataLoader worker processes).

Built from a checkpoint's own preprocessing settings (a transformers image processor, timm's data config,
open_clip's transform): RGB conversion, resize, centre crop, to tensor, normalise -> `[3, H, W]` float32.
"""

from __future__ import annotations

from collections.abc import Sequence

import PIL.Image
from torchvision import transforms
from torchvision.transforms import InterpolationMode

# PIL resample codes used in processor configs.
PIL_TO_MODE = {
    0: InterpolationMode.NEAREST,
    1: InterpolationMode.LANCZOS,
    2: InterpolationMode.BILINEAR,
    3: InterpolationMode.BICUBIC,
    4: InterpolationMode.BOX,
    5: InterpolationMode.HAMMING,
}


class ToRGB:
    """Convert any PIL image (palette, RGBA, greyscale) to RGB; transparent pixels become white."""

    def __call__(self, image: PIL.Image.Image) -> PIL.Image.Image:
        if image.mode == "RGB":
            return image
        if image.mode in {"RGBA", "LA", "P"}:
            rgba = image.convert("RGBA")
            background = PIL.Image.new("RGBA", rgba.size, (255, 255, 255, 255))
            return PIL.Image.alpha_composite(background, rgba).convert("RGB")
        return image.convert("RGB")


def image_transform(
    resize: int | tuple[int, int],
    crop: tuple[int, int] | None,
    mean: Sequence[float],
    std: Sequence[float],
    interpolation: InterpolationMode = InterpolationMode.BICUBIC,
) -> transforms.Compose:
    """RGB -> resize (int: shorter side; (h, w): exact) -> optional centre crop -> tensor -> normalise."""
    steps: list = [ToRGB(), transforms.Resize(resize, interpolation=interpolation)]
    if crop is not None:
        steps.append(transforms.CenterCrop(crop))
    steps += [transforms.ToTensor(), transforms.Normalize(list(mean), list(std))]
    return transforms.Compose(steps)


def from_hf_processor(processor, image_size: int | None = None) -> transforms.Compose:
    """The transform a transformers image processor describes, optionally at another input size.

    image_size (PRH runs DINOv2 lvd142m at 518 px): the crop becomes image_size and the resize scales
    with it (256/224 ratio kept); without a crop the image is resized to image_size x image_size.
    """
    size = dict(processor.size)
    crop_cfg = dict(processor.crop_size) if getattr(processor, "do_center_crop", False) and processor.crop_size else None
    resample = processor.resample
    mode = resample if isinstance(resample, InterpolationMode) else PIL_TO_MODE[int(resample)]
    resize: int | tuple[int, int] = (
        size["shortest_edge"] if "shortest_edge" in size else (size["height"], size["width"])
    )
    crop = (crop_cfg["height"], crop_cfg["width"]) if crop_cfg else None
    if image_size is not None:
        if crop is not None and isinstance(resize, int):
            resize = round(image_size * resize / crop[0])
            crop = (image_size, image_size)
        else:
            resize, crop = (image_size, image_size), None
    return image_transform(resize, crop, processor.image_mean, processor.image_std, mode)
