"""The text-JEPA size presets (kept free of heavy imports: the CLI lists them)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SizeConfig:
    """Encoder geometry: `layers` blocks of width `hidden`, `heads` heads, MLP width `intermediate`;
    `max_tokens` = longest input (position table size); `projection` = projector output width;
    `lr` = default peak AdamW learning rate (lower for the deeper models, as in BERT pre-training)."""

    layers: int
    hidden: int
    heads: int
    intermediate: int
    max_tokens: int
    projection: int
    lr: float


# tiny: trains on 2 CPU cores in minutes. 33m: the 33M-parameter BERT geometry of MiniLM-L12-H384
# (12 x 384; 33.4M parameters with the 30,522-token uncased vocabulary). 109m: BERT-base (12 x 768, 109.5M).
SIZES: dict[str, SizeConfig] = {
    "tiny": SizeConfig(
        layers=2, hidden=128, heads=2, intermediate=512, max_tokens=32, projection=128, lr=1e-3
    ),
    "33m": SizeConfig(
        layers=12, hidden=384, heads=12, intermediate=1536, max_tokens=128, projection=256, lr=5e-4
    ),
    "109m": SizeConfig(
        layers=12, hidden=768, heads=12, intermediate=3072, max_tokens=128, projection=512, lr=3e-4
    ),
}
