"""Image transforms from a checkpoint's processor: sizes (incl. the PRH 518 px override), RGB conversion,
normalisation, picklability (DataLoader workers)."""

import pickle

import PIL.Image
import torch
from torchvision.transforms import InterpolationMode
from transformers import BitImageProcessor

from platobench.encoders.preprocess import ToRGB, from_hf_processor

DINOV2 = BitImageProcessor(  # facebook/dinov2-* settings
    size={"shortest_edge": 256}, crop_size={"height": 224, "width": 224}, resample=3, do_center_crop=True,
    image_mean=[0.485, 0.456, 0.406], image_std=[0.229, 0.224, 0.225],
)


def steps(transform):
    return {type(t).__name__: t for t in transform.transforms}


def test_dinov2_processor_settings():
    t = steps(from_hf_processor(DINOV2))
    assert t["Resize"].size == 256 and t["Resize"].interpolation == InterpolationMode.BICUBIC
    assert t["CenterCrop"].size == (224, 224)
    assert t["Normalize"].mean == [0.485, 0.456, 0.406]


def test_prh_518_override_keeps_the_resize_ratio():
    transform = from_hf_processor(DINOV2, image_size=518)
    t = steps(transform)
    assert t["Resize"].size == round(518 * 256 / 224) and t["CenterCrop"].size == (518, 518)
    assert transform(PIL.Image.new("RGB", (700, 600))).shape == (3, 518, 518)


def test_rgba_becomes_rgb_on_white_and_is_normalised():
    transparent = PIL.Image.new("RGBA", (300, 260), (0, 0, 0, 0))
    assert ToRGB()(transparent).getpixel((5, 5)) == (255, 255, 255)
    transform = pickle.loads(pickle.dumps(from_hf_processor(DINOV2)))
    x = transform(transparent)
    expected = (1 - torch.tensor([0.485, 0.456, 0.406])) / torch.tensor([0.229, 0.224, 0.225])
    torch.testing.assert_close(x[:, 100, 100], expected)
    assert transform(PIL.Image.new("L", (250, 250), 255)).shape == (3, 224, 224)
