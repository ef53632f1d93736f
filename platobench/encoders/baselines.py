"""Negative-control encoders (loader "baseline", zoo family `baseline/`): what a score is worth when the
model knows nothing, or only one shallow cue. `spec.source` names the baseline (see `BASELINE_SOURCES`):

| source                          | modality | layers | feature                                                      |
|---------------------------------|----------|--------|--------------------------------------------------------------|
| random-init:minilm-l6           | text     | 0..6   | all-MiniLM-L6-v2 architecture, seeded random weights, avg    |
| random-init:efficientnet-lite0  | vision   | 0..8   | EfficientNet-Lite0 architecture, seeded random weights       |
| bag-of-words:wordllama          | text     | 0      | mean of static 256-d token embeddings (pip wordllama)        |
| caption-length                  | text     | 0      | Gaussian bumps over log(1 + characters) and log(1 + words)   |
| colour-histogram                | vision   | 0      | joint 8x8x8 RGB histogram on white, square-rooted (Hellinger)|

Random-init baselines reuse the real encoders (`hf_text.HFTextEncoder`, `efficientnet_lite.
EfficientNetLiteEncoder`) with weights from the architecture's own initialiser under `SEED`, drawn on the
CPU so they are identical on every device. `revision(source)` is the cache key's model revision: bump the
source's entry in `VERSIONS` whenever its features change.
"""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import torch
from torchvision import transforms
from torchvision.transforms import InterpolationMode

from platobench.encoders import packaged
from platobench.encoders.base import TextEncoder, VisionEncoder, to_output
from platobench.encoders.preprocess import ToRGB
from platobench.encoders.runtime import resolve_dtype
from platobench.errors import UserError
from platobench.zoo.spec import BASELINE_SOURCES, ModelSpec

SEED = 0
VERSIONS: dict[str, int] = {source: 1 for source in BASELINE_SOURCES}

WORDLLAMA_PIN = "wordllama==0.4.0.post1"
WORDLLAMA_WEIGHTS = "weights/l2_supercat_256.safetensors"
WORDLLAMA_TOKENIZER = "tokenizers/l2_supercat_tokenizer_config.json"
WORDLLAMA_SHA256 = "64b47a2dc493cb8e85944076601189739852d7b64e0e1eedcb1937a251cd9fd5"

# caption-length: bump centres over log(1 + count); the bump width equals the centre spacing.
CHAR_CENTRES = torch.linspace(0.0, 7.0, 24)  # up to ~1,100 characters
WORD_CENTRES = torch.linspace(0.0, 5.0, 16)  # up to ~150 words

HIST_BINS = 8  # per channel: 8 x 8 x 8 = 512 joint RGB bins
HIST_SIZE = 128  # images are resampled (nearest) to 128 x 128 before counting


def revision(source: str) -> str:
    """The cache key's model revision of a baseline, e.g. "baseline:caption-length@v1"."""
    return f"baseline:{source}@v{VERSIONS[source]}"


T = TypeVar("T")


def seeded(build: Callable[[], T]) -> T:
    """Call `build()` with the CPU generator seeded by `SEED`, leaving the global RNG state untouched."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(SEED)
        return build()


# ----------------------------------------------------------------------------------- random-init models


def random_minilm(spec: ModelSpec, device: torch.device, dtype: str | None, home: Path | None) -> TextEncoder:
    """all-MiniLM-L6-v2's config and tokenizer (packaged asset "minilm-l6"), seeded random weights."""
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    from platobench.encoders.hf_text import HFTextEncoder

    folder = packaged.prepare("minilm-l6", home)
    config = AutoConfig.from_pretrained(folder)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = seeded(lambda: AutoModel.from_config(config))
    model = model.to(device, resolve_dtype(dtype or spec.dtype, device))
    return HFTextEncoder(spec, model, tokenizer, device, causal=False)


def random_efficientnet(spec: ModelSpec, device: torch.device, dtype: str | None) -> VisionEncoder:
    """EfficientNet-Lite0 with PyTorch's default initialisation under `SEED` (BN running stats 0 / 1)."""
    from efficientnet_lite_pytorch import EfficientNet

    from platobench.encoders.efficientnet_lite import EfficientNetLiteEncoder

    model = seeded(lambda: EfficientNet.from_name("efficientnet-lite0", num_classes=1000))
    torch_dtype = resolve_dtype(dtype or spec.dtype, device)
    return EfficientNetLiteEncoder(spec, model.to(device, torch_dtype), device, torch_dtype)


# ---------------------------------------------------------------------------------------- static text


class BagOfWordsEncoder(TextEncoder):
    """Mean of WordLlama's static token embeddings (`[V, 256]`) over a caption's tokens; one layer (0)."""

    def __init__(self, spec: ModelSpec, embedding: torch.Tensor, tokenizer: object, device: torch.device) -> None:
        self.spec = spec
        self.device = device
        self.embedding = embedding.to(device)  # [V, D] float32
        self.tokenizer = tokenizer
        self.layer_ids = spec.layer_ids(0)
        self.widths = [int(embedding.shape[1])]

    def _encode(self, texts: list[str]) -> list:
        return self.tokenizer.encode_batch(list(texts), add_special_tokens=False)  # type: ignore[attr-defined]

    def tokenize(self, texts: list[str]) -> dict[str, torch.Tensor]:
        """`input_ids` and `attention_mask`, `[B, T]` (right padding, no special tokens)."""
        encs = self._encode(texts)
        width = max([len(e.ids) for e in encs] + [1])
        ids = torch.zeros(len(encs), width, dtype=torch.long)
        mask = torch.zeros(len(encs), width, dtype=torch.long)
        for i, e in enumerate(encs):
            ids[i, : len(e.ids)] = torch.tensor(e.ids, dtype=torch.long)
            mask[i, : len(e.ids)] = 1
        return {"input_ids": ids, "attention_mask": mask}

    def token_lengths(self, texts: list[str]) -> list[int]:
        return [len(e.ids) for e in self._encode(texts)]

    @torch.inference_mode()
    def encode(self, batch: dict[str, torch.Tensor]) -> list[torch.Tensor]:
        """`[B, 256]`: masked mean of the token embeddings (zeros for a caption without tokens)."""
        ids = batch["input_ids"].to(self.device).clamp(0, self.embedding.shape[0] - 1)
        mask = batch["attention_mask"].to(self.device, torch.float32).unsqueeze(-1)
        total = (self.embedding[ids] * mask).sum(1)
        return [to_output(total / mask.sum(1).clamp(min=1.0))]


def wordllama_folder() -> Path:
    """The installed `wordllama` package folder, found without importing it."""
    found = importlib.util.find_spec("wordllama")
    if found is None or not found.submodule_search_locations:
        raise UserError(f"baseline bag-of-words:wordllama needs the package: pip install {WORDLLAMA_PIN}")
    return Path(list(found.submodule_search_locations)[0])


def bag_of_words(spec: ModelSpec, device: torch.device) -> TextEncoder:
    """Read WordLlama's L2-supercat 256-d token embeddings (sha256-checked) and its tokenizer."""
    from safetensors.torch import load_file
    from tokenizers import Tokenizer

    folder = wordllama_folder()
    weights = folder / WORDLLAMA_WEIGHTS
    if not weights.is_file() or hashlib.sha256(weights.read_bytes()).hexdigest() != WORDLLAMA_SHA256:
        raise UserError(f"baseline bag-of-words: {weights} is missing or not the pinned file; pip install {WORDLLAMA_PIN}")
    embedding = load_file(str(weights))["embedding.weight"].float()
    tokenizer = Tokenizer.from_file(str(folder / WORDLLAMA_TOKENIZER))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return BagOfWordsEncoder(spec, embedding, tokenizer, device)


def length_features(counts: torch.Tensor) -> torch.Tensor:
    """`[B, 2]` (characters, words) -> `[B, 40]` Gaussian bumps over log(1 + count), 24 for characters
    and 16 for words. After row l2-normalisation the inner product falls with the difference in log
    length, so a caption's nearest neighbours are the captions of the most similar length."""
    parts = []
    for column, centres in ((0, CHAR_CENTRES), (1, WORD_CENTRES)):
        x = torch.log1p(counts[:, column:column + 1].double()).clamp(max=float(centres[-1]))
        width = float(centres[1] - centres[0])
        parts.append(torch.exp(-0.5 * ((x - centres.double()) / width) ** 2))
    return torch.cat(parts, dim=1).float()


class CaptionLengthEncoder(TextEncoder):
    """A text feature that knows only the caption's length in characters and in words; one layer (0)."""

    def __init__(self, spec: ModelSpec, device: torch.device) -> None:
        self.spec = spec
        self.device = device
        self.layer_ids = spec.layer_ids(0)
        self.widths = [len(CHAR_CENTRES) + len(WORD_CENTRES)]

    def tokenize(self, texts: list[str]) -> dict[str, torch.Tensor]:
        """`counts` `[B, 2]` (characters of the stripped text, whitespace-separated words), plus one
        placeholder token per text (`input_ids`, `attention_mask`, `[B, 1]`)."""
        counts = torch.tensor([[len(t.strip()), len(t.split())] for t in texts], dtype=torch.float64).reshape(-1, 2)
        ones = torch.ones(len(texts), 1, dtype=torch.long)
        return {"input_ids": ones * 0, "attention_mask": ones, "counts": counts}

    def token_lengths(self, texts: list[str]) -> list[int]:
        return [1] * len(texts)

    def encode(self, batch: dict[str, torch.Tensor]) -> list[torch.Tensor]:
        """`[B, 40]` length features."""
        return [to_output(length_features(batch["counts"]))]


# ---------------------------------------------------------------------------------------- static image


class ColourHistogramEncoder(VisionEncoder):
    """Joint RGB histogram (8 bins per channel) of the image composited on white, as bin shares, square-
    rooted (Hellinger: inner products of the rows are Bhattacharyya coefficients); one layer (0)."""

    def __init__(self, spec: ModelSpec, device: torch.device) -> None:
        self.spec = spec
        self.device = device
        self.layer_ids = spec.layer_ids(0)
        self.widths = [HIST_BINS**3]
        # uint8 [3, 128, 128]; nearest resampling keeps the image's own colours (no blended edges).
        self.transform = transforms.Compose([
            ToRGB(), transforms.Resize((HIST_SIZE, HIST_SIZE), interpolation=InterpolationMode.NEAREST),
            transforms.PILToTensor(),
        ])

    @torch.inference_mode()
    def encode(self, pixels: torch.Tensor) -> list[torch.Tensor]:
        """uint8 `[B, 3, H, W]` (0..255) -> `[B, 512]`: sqrt of the share of pixels in each bin r*64+g*8+b."""
        step = 256 // HIST_BINS
        q = pixels.to(self.device).long().div(step, rounding_mode="floor").clamp(0, HIST_BINS - 1)
        index = (q[:, 0] * HIST_BINS + q[:, 1]) * HIST_BINS + q[:, 2]  # [B, H, W]
        flat = index.flatten(1)
        counts = torch.zeros(flat.shape[0], HIST_BINS**3, device=flat.device, dtype=torch.float64)
        counts.scatter_add_(1, flat, torch.ones_like(flat, dtype=torch.float64))
        return [to_output((counts / flat.shape[1]).sqrt())]


# ----------------------------------------------------------------------------------------------- loader


def load(spec: ModelSpec, *, device: torch.device, dtype: str | None = None, home: Path | None = None) -> TextEncoder | VisionEncoder:
    """Build the baseline `spec.source` names, ready to encode."""
    source = spec.source
    if source not in VERSIONS:
        raise UserError(f"model {spec.name}: unknown baseline {source!r} (known: {', '.join(VERSIONS)})")
    if source == "random-init:minilm-l6":
        return random_minilm(spec, device, dtype, home)
    if source == "random-init:efficientnet-lite0":
        return random_efficientnet(spec, device, dtype)
    if source == "bag-of-words:wordllama":
        return bag_of_words(spec, device)
    if source == "caption-length":
        return CaptionLengthEncoder(spec, device)
    return ColourHistogramEncoder(spec, device)


__all__ = ["BASELINE_SOURCES", "SEED", "VERSIONS", "load", "length_features", "revision"]
