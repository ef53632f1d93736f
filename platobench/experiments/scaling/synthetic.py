"""Synthetic paired features with a shared latent, for alignment curves beyond a real set's size.

X = Z A + σ E_x and Y = Z B + σ E_y with Z [N, r] standard Gaussian (the shared "world"), A [r, Dx] and
B [r, Dy] Gaussian maps scaled so that each feature of Z A has unit variance, E standard Gaussian
noise. The maps are fixed by the seed (one population); every draw takes fresh samples from it, so the
spread over draws is the sampling spread of the score at that N.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from platobench.api import UserError


@dataclass(frozen=True)
class LatentModel:
    """A fixed population: widths dx, dy, latent rank r, noise σ (per feature, signal variance 1)."""

    dx: int
    dy: int
    rank: int = 32
    noise: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("dx", "dy", "rank"):
            if int(getattr(self, name)) < 1:
                raise UserError(f"synthetic features: {name} must be >= 1, got {getattr(self, name)}")
        if not self.noise >= 0:
            raise UserError(f"synthetic features: noise must be >= 0, got {self.noise}")

    def maps(self) -> tuple[torch.Tensor, torch.Tensor]:
        """A [r, dx], B [r, dy] float32, entries N(0, 1/r)."""
        g = torch.Generator().manual_seed(self.seed)
        scale = self.rank ** -0.5
        return (torch.randn(self.rank, self.dx, generator=g) * scale,
                torch.randn(self.rank, self.dy, generator=g) * scale)

    def label(self) -> str:
        return f"synthetic/latent-r{self.rank}-noise{self.noise:g}"


def latent_pair(model: LatentModel, n: int, draw: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Sample `draw` (0, 1, ...) of n pairs: X [n, dx], Y [n, dy] float32."""
    if n < 2:
        raise UserError(f"synthetic features need n >= 2 samples, got {n}")
    a, b = model.maps()
    g = torch.Generator().manual_seed(model.seed * 1_000_003 + 7919 * draw + n)
    z = torch.randn(n, model.rank, generator=g)
    x = z @ a + model.noise * torch.randn(n, model.dx, generator=g)
    y = z @ b + model.noise * torch.randn(n, model.dy, generator=g)
    return x, y
