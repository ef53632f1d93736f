"""Model kinds and their modality: plain data, importable without pydantic (the CLI's `--kind` choices)."""

from __future__ import annotations

MODALITY_OF_KIND: dict[str, str] = {
    "causal_lm": "text",
    "text_encoder": "text",
    "clip_text": "text",
    "text_jepa": "text",
    "vision_vit": "vision",
    "vision_cnn": "vision",
    "clip_image": "vision",
}
