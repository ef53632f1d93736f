"""A tiny image encoder of the simple protocol: colour histograms at two resolutions, numpy + PIL.

platobench calls `ColourHistograms().encode(images)` on batches of RGB PIL images (any size); it returns
[N, 2, 64]: the joint RGB histogram (4 levels per channel, normalised to sum 1) of the image shrunk to
8x8 pixels (layer 0) and to 64x64 pixels (layer 1). Wiring only: colour, not content.
"""

from __future__ import annotations

import numpy as np
import PIL.Image

LEVELS = 4


def histogram(image: PIL.Image.Image, size: int) -> np.ndarray:
    """Joint RGB histogram of `image` resized to size x size: [LEVELS**3] floats summing to 1."""
    pixels = np.asarray(image.convert("RGB").resize((size, size), PIL.Image.Resampling.BILINEAR), dtype=np.int64)
    q = pixels * LEVELS // 256  # [size, size, 3] in 0..LEVELS-1
    codes = (q[..., 0] * LEVELS + q[..., 1]) * LEVELS + q[..., 2]
    return np.bincount(codes.ravel(), minlength=LEVELS**3) / codes.size


class ColourHistograms:
    """Two "layers": the colour histogram of a coarse (8 px) and of a finer (64 px) version of the image."""

    def encode(self, images: list[PIL.Image.Image]) -> np.ndarray:
        """N images -> float64 array [N, 2, LEVELS**3]."""
        return np.stack([np.stack([histogram(im, 8), histogram(im, 64)]) for im in images])
