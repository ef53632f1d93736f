"""Synthetic "vision" features with a planted answer: a random rotation of the text embeddings.

If a vision encoder's features were an exact rotation of the text encoder's caption embeddings, a
Procrustes map fitted on pairs would undo the rotation and the stitched captioner would match the text->text
upper bound; a random orthonormal map would not. The quick run (`platobench stitch --quick`) measures the
pipeline on such features, labelled synthetic in every record, so a broken map, decoder or scorer shows.
"""

from __future__ import annotations

import torch

from platobench.api import ModelRef
from platobench.experiments.stitch.maps import random_map

PLANTED_NAME = "synthetic/planted-rotation"


def planted_features(text: torch.Tensor, *, seed: int, noise: float) -> torch.Tensor:
    """text [N, D] -> text @ R + noise * s * eps, float32 [N, D]: R a seeded Haar-random orthogonal [D, D];
    s the RMS row norm of the centred text rows; eps standard Gaussian per entry scaled by 1/sqrt(D) (so the
    noise's expected row norm is `noise` times the features' own)."""
    t = text.to(torch.float64)
    rotation = random_map(t.shape[1], t.shape[1], seed)
    scale = float((t - t.mean(dim=0)).pow(2).sum(dim=1).mean().sqrt())
    gen = torch.Generator().manual_seed(seed + 1)
    eps = torch.randn(t.shape, generator=gen, dtype=torch.float64) / t.shape[1] ** 0.5
    return (t @ rotation + noise * scale * eps).to(torch.float32)


def planted_ref(seed: int, noise: float, text_model: str) -> ModelRef:
    """The record's vision side for planted features (kind "synthetic": never a real model)."""
    return ModelRef(name=PLANTED_NAME, revision=f"rotation of {text_model}; seed={seed}; noise={noise:g}",
                    kind="synthetic")
