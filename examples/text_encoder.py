"""A tiny text encoder of the simple protocol: hashed character n-grams, two layers, numpy only.

platobench calls `CharNgrams().encode(texts)` on batches of captions; it returns [N, 2, 128]:
layer 0 the L2-normalised counts of the character 1- to 3-grams hashed into 128 bins (crc32, so the
same on every run, unlike Python's salted `hash`), layer 1 a fixed random map of layer 0 through tanh.
Wiring only: a negative-control-like encoder, not a language model.
"""

from __future__ import annotations

import zlib

import numpy as np

BINS = 128


class CharNgrams:
    """Bag of hashed character n-grams (layer 0) and one fixed random tanh layer on top (layer 1)."""

    def __init__(self) -> None:
        rng = np.random.default_rng(0)
        self.weights = rng.standard_normal((BINS, BINS)) / np.sqrt(BINS)

    def encode(self, texts: list[str]) -> np.ndarray:
        """N captions -> float64 array [N, 2, BINS]."""
        counts = np.zeros((len(texts), BINS))
        for row, text in enumerate(texts):
            padded = f" {text.lower()} "
            for n in (1, 2, 3):
                for i in range(len(padded) - n + 1):
                    counts[row, zlib.crc32(padded[i : i + n].encode()) % BINS] += 1
        counts /= np.maximum(np.linalg.norm(counts, axis=1, keepdims=True), 1e-12)
        return np.stack([counts, np.tanh(counts @ self.weights)], axis=1)
