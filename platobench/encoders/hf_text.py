"""Text models through transformers: BERT-style encoders, sentence-transformers folders, text-JEPA
checkpoints (loader "hf_text"), and the shared encoder class that causal LMs (hf_causal) reuse.

Per layer, `output_hidden_states=True` gives the embedding output (index 0) and every block's output
(index i); each is pooled by the spec ("cls" = first token, "avg" = mask-aware mean, "last" = last valid
token). Padding never changes a sample's features: pad positions are excluded from pooling, and for
left-padded causal LMs `position_ids` are computed from the attention mask, as in `generate`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import torch

from platobench.encoders.base import TextEncoder, to_output
from platobench.encoders.pooling import pool_text
from platobench.encoders.runtime import resolve_dtype
from platobench.encoders.sources import hub_errors, pretrained_args
from platobench.errors import UserError
from platobench.zoo.spec import ModelSpec

MAX_TOKENS = 8192  # cap for tokenizers that declare no usable model_max_length


class HFTextEncoder(TextEncoder):
    """A transformers `AutoModel` plus its tokenizer, pooled per layer as `spec.pooling` says."""

    def __init__(self, spec: ModelSpec, model: Any, tokenizer: Any, device: torch.device, *, causal: bool) -> None:
        self.spec = spec
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.device = device
        self.causal = causal
        config = model.config.get_text_config()
        num_blocks = config.num_hidden_layers
        self.layer_ids = spec.layer_ids(num_blocks)
        self.widths = [config.hidden_size] * len(self.layer_ids)
        positions = getattr(config, "max_position_embeddings", None)
        if spec.max_tokens is not None:
            if positions and spec.max_tokens > positions:
                raise UserError(f"model {spec.name}: max_tokens {spec.max_tokens} is more than the model's "
                                f"{positions} positions (max_position_embeddings)")
            self.max_length = spec.max_tokens
        else:
            self.max_length = min(int(x) for x in [tokenizer.model_max_length, positions, MAX_TOKENS] if x)

    @property
    def input_device(self) -> torch.device:
        """Where inputs go: the device of the input embeddings (the first shard under device_map="auto")."""
        return self.model.get_input_embeddings().weight.device

    def tokenize(self, texts: list[str]) -> dict[str, torch.Tensor]:
        """Padded batch `[B, T]` (input_ids, attention_mask, ...), truncated at `max_length` tokens (the
        entry's `max_tokens`, else the tokenizer's limit)."""
        return dict(self.tokenizer(list(texts), padding=True, truncation=True, max_length=self.max_length, return_tensors="pt"))

    def token_lengths(self, texts: list[str]) -> list[int]:
        """Tokens per text (special tokens included, truncated as `tokenize` does)."""
        ids = self.tokenizer(list(texts), truncation=True, max_length=self.max_length)["input_ids"]
        return [len(x) for x in ids]

    @torch.inference_mode()
    def encode(self, batch: dict[str, torch.Tensor]) -> list[torch.Tensor]:
        """Pooled `[B, hidden_size]` float32 CPU features, one per entry of `layer_ids`."""
        device = self.input_device
        inputs = {k: v.to(device) for k, v in batch.items()}
        mask = inputs["attention_mask"]
        if self.causal:
            inputs["position_ids"] = (mask.long().cumsum(-1) - 1).clamp(min=0)
        hidden = self.model(**inputs, output_hidden_states=True).hidden_states
        return [to_output(pool_text(hidden[i], mask, self.spec.pooling)) for i in self.layer_ids]


def model_kwargs(spec: ModelSpec, device: torch.device, dtype: torch.dtype, *, shard: bool) -> dict[str, Any]:
    """`from_pretrained` options: dtype, optional bitsandbytes quantisation, and placement.

    shard: on CUDA without an explicit index, `device_map="auto"` spreads a large model over every
    visible GPU (accelerate); quantised models are always placed by transformers.
    """
    kwargs: dict[str, Any] = {"dtype": dtype}
    if spec.quantization != "none":
        import importlib.util

        if device.type != "cuda":
            raise UserError(f"model {spec.name}: {spec.quantization} quantisation needs a CUDA device (got {device})")
        if importlib.util.find_spec("bitsandbytes") is None:
            raise UserError(f"model {spec.name}: {spec.quantization} quantisation needs bitsandbytes, which is not "
                            "installed: pip install 'platobench[gpu]'")
        from transformers import BitsAndBytesConfig

        if spec.quantization == "8bit":
            kwargs["quantization_config"] = BitsAndBytesConfig(load_in_8bit=True)
        else:
            kwargs["quantization_config"] = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_compute_dtype=dtype)
    if device.type == "cuda" and (shard or spec.quantization != "none"):
        kwargs["device_map"] = "auto" if device.index is None else {"": device.index}
    return kwargs


def load_text_model(
    spec: ModelSpec, device: torch.device, dtype: str | None, home: Path | None, *, causal: bool
) -> HFTextEncoder:
    """Load tokenizer and `AutoModel` for a text spec (shared by hf_text and hf_causal)."""
    from transformers import AutoModel, AutoTokenizer

    torch_dtype = resolve_dtype(dtype or spec.dtype, device)
    location, kwargs = pretrained_args(spec, home)
    options = model_kwargs(spec, device, torch_dtype, shard=causal)
    with hub_errors(spec):
        tokenizer = AutoTokenizer.from_pretrained(location, **kwargs)
        model = AutoModel.from_pretrained(location, **kwargs, **options)
    if "device_map" not in options:
        model = model.to(device)
    _note_sentence_transformers_limit(spec, location)
    if causal:
        tokenizer.padding_side = "left"
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
    return HFTextEncoder(spec, model, tokenizer, device, causal=causal)


def _note_sentence_transformers_limit(spec: ModelSpec, location: str) -> None:
    """One line on stderr when a local sentence-transformers folder truncates at another length than the
    entry's `max_tokens` (sentence-transformers reads `max_seq_length` from sentence_bert_config.json)."""
    config = Path(location) / "sentence_bert_config.json"
    if not config.is_file():
        return
    try:
        limit = json.loads(config.read_text(encoding="utf-8")).get("max_seq_length")
    except (OSError, ValueError, AttributeError):
        return
    if isinstance(limit, int) and limit != spec.max_tokens:
        print(f"note: model {spec.name}: sentence-transformers truncates this model at {limit} tokens "
              f"(max_seq_length) but the zoo entry says max_tokens: {spec.max_tokens}; set max_tokens: {limit} "
              "to embed as sentence-transformers does", file=sys.stderr, flush=True)


def load(spec: ModelSpec, *, device: torch.device, dtype: str | None = None, home: Path | None = None) -> HFTextEncoder:
    """Text encoder (BERT family, sentence-transformers folder, text JEPA) with right padding."""
    return load_text_model(spec, device, dtype, home, causal=False)
