"""Causal language models through transformers (loader "hf_causal"): Qwen2.5, Llama, OLMo, BLOOMZ, ...

As in PRH (Huh et al. 2024): hidden states of the embedding layer and every block, averaged over valid
tokens ("avg") or taken at the last valid token ("last"); left padding with `position_ids` from the
attention mask so a padded sample sees the positions it would see alone. dtype "auto" is bf16 on GPUs of
compute capability >= 8 and fp32 on CPU; on CUDA the model is placed with `device_map="auto"` so a 72B
model shards across the visible GPUs; 4/8-bit loading through bitsandbytes only when the spec asks.
"""

from __future__ import annotations

from pathlib import Path

import torch

from platobench.encoders.hf_text import HFTextEncoder, load_text_model
from platobench.zoo.spec import ModelSpec


def load(spec: ModelSpec, *, device: torch.device, dtype: str | None = None, home: Path | None = None) -> HFTextEncoder:
    """Load a causal LM's base model (no LM head) and tokenizer, padded on the left."""
    return load_text_model(spec, device, dtype, home, causal=True)
