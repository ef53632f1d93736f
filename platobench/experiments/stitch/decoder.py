"""Text-only prefix captioner: a mapping network turns a caption's normalised text embedding z [D_t] into
a prefix of P vectors [P, H] that a causal LM continues into the caption.

ClipCap (Mokady, Hertz & Bermano 2021, "ClipCap: CLIP Prefix for Image Captioning"): an MLP
Linear(D_t, P*H/2) - Tanh - Linear(P*H/2, P*H) maps the embedding to the prefix of a (frozen) LM; the LM's
loss on the caption tokens trains it. CapDec (Nukrai, Mokady & Globerson 2022, "Text-Only Training for Image
Captioning using Noise-Injected CLIP"): trained on text embeddings only, with Gaussian noise added to z
(`decoder_train.train_captioner`), the decoder tolerates the gap between text embeddings and the mapped
image embeddings it is run on. `train_captioner` (defined in decoder_train.py) is re-exported here.

Two decoders: `load_captioner` (a zoo causal LM, e.g. demo/smollm2-135m, frozen unless `tune_lm`) and
`tiny_captioner` (a small random-init Llama with a word-level tokenizer fitted on the train captions, all
weights trained; for tests and quick runs, never a pretrained model). Captions are fed as plain text (no
chat template, no BOS: the prefix starts the sequence), with a leading space when the tokenizer marks
word starts (byte-level BPE: " a" is the in-sentence token of "a"), then EOS. The LM stays float32.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from platobench.api import UserError, hub_errors, pretrained_args
from platobench.experiments.stitch.decoder_train import train_captioner

__all__ = ["PrefixCaptioner", "Recipe", "load_captioner", "tiny_captioner", "train_captioner", "word_tokenizer"]

MAX_CAPTION_TOKENS = 64  # longer captions are truncated (before EOS) when training
TINY_NAME = "tiny-llama (random init, trained on the train captions)"
SPECIALS = ("[UNK]", "[PAD]", "[EOS]")


@dataclass(frozen=True)
class Recipe:
    """Training defaults of a decoder kind (see `decoder_train.train_captioner`): epochs over the
    captions, AdamW learning rate, and the CapDec noise level (RMS norm of the injected Gaussian,
    relative to the mean squared row norm 1 of the normalised embeddings)."""

    epochs: float
    lr: float
    noise: float


# Frozen pretrained LM: only the mapper (~3M parameters for SmolLM2) learns, so a high learning rate;
# tuned LM: a lower one for the 100M+ LM weights; tiny LM from scratch: many epochs at a small-model rate.
FROZEN_RECIPE = Recipe(epochs=10.0, lr=1e-3, noise=1.0)
TUNED_RECIPE = Recipe(epochs=5.0, lr=5e-5, noise=1.0)
TINY_RECIPE = Recipe(epochs=30.0, lr=3e-3, noise=1.0)


def token_ids(tokenizer: Any, text: str) -> list[int]:
    """Token ids of `text` without special tokens."""
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def needs_leading_space(tokenizer: Any) -> bool:
    """True when a word inside a sentence is tokenised as " word" but not as "word" (byte-level BPE)."""
    inside = token_ids(tokenizer, "x a")[len(token_ids(tokenizer, "x")):]
    return token_ids(tokenizer, "a") != inside and token_ids(tokenizer, " a") == inside


class PrefixCaptioner(nn.Module):
    """A causal LM, its tokenizer and a mapper MLP z [B, D_t] -> prefix [B, P, H] (ClipCap).

    name / revision: what `describe` reports; tune_lm: the LM's weights train too (else frozen and kept
    in eval mode); recipe: the training defaults of this kind of decoder."""

    def __init__(self, lm: nn.Module, tokenizer: Any, d_text: int, *, prefix_len: int, tune_lm: bool,
                 name: str, revision: str | None, recipe: Recipe) -> None:
        super().__init__()
        if d_text < 1 or prefix_len < 1:
            raise UserError(f"d_text and prefix_len must be positive, got d_text={d_text}, prefix_len={prefix_len}")
        if tokenizer.eos_token_id is None:
            raise UserError(f"decoder {name}: its tokenizer has no EOS token")
        self.lm, self.tokenizer = lm, tokenizer
        self.d_text, self.prefix_len, self.tune_lm = d_text, prefix_len, tune_lm
        self.name, self.revision, self.recipe = name, revision, recipe
        self.hidden = int(lm.get_input_embeddings().weight.shape[1])
        width = prefix_len * self.hidden
        self.mapper = nn.Sequential(nn.Linear(d_text, width // 2), nn.Tanh(), nn.Linear(width // 2, width))
        self.leading_space = needs_leading_space(tokenizer)
        self.eos_id = int(tokenizer.eos_token_id)
        pad = tokenizer.pad_token_id
        self.pad_id = self.eos_id if pad is None else int(pad)
        self.lm.requires_grad_(tune_lm)
        self.train(False)

    @property
    def device(self) -> torch.device:
        return self.mapper[0].weight.device

    def train(self, mode: bool = True) -> PrefixCaptioner:
        """Training mode for the mapper (and the LM only when it is tuned: a frozen LM keeps eval mode)."""
        super().train(mode)
        self.lm.train(mode and self.tune_lm)
        return self

    def prefix(self, z: torch.Tensor) -> torch.Tensor:
        """Prefix embeddings [B, P, H] of normalised text embeddings z [B, D_t]."""
        if z.ndim != 2 or z.shape[1] != self.d_text:
            raise UserError(f"expected embeddings of shape [n, {self.d_text}], got {list(z.shape)}")
        return self.mapper(z.to(self.device, torch.float32)).view(len(z), self.prefix_len, self.hidden)

    def caption_ids(self, captions: list[str]) -> list[list[int]]:
        """Token ids of each caption (leading space if the tokenizer needs it; at most MAX_CAPTION_TOKENS)
        followed by EOS. UserError for a blank caption."""
        blank = [i for i, c in enumerate(captions) if not isinstance(c, str) or not c.strip()]
        if blank:
            raise UserError(f"captions: caption {blank[0]} is blank (every training caption needs text)")
        lead = " " if self.leading_space else ""
        encoded = self.tokenizer([lead + c.strip() for c in captions], add_special_tokens=False)["input_ids"]
        return [list(ids[:MAX_CAPTION_TOKENS]) + [self.eos_id] for ids in encoded]

    def batch(self, z: torch.Tensor, captions: list[str]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Teacher-forcing inputs, right-padded: (inputs_embeds [B, P+T, H], attention_mask [B, P+T],
        labels [B, P+T]: the token at each position, -100 on the prefix and the padding)."""
        if len(captions) != len(z):
            raise UserError(f"got {len(z)} embeddings but {len(captions)} captions")
        ids = self.caption_ids(captions)
        width = max(len(x) for x in ids)
        tokens = torch.full((len(ids), width), self.pad_id, dtype=torch.long)
        labels = torch.full((len(ids), self.prefix_len + width), -100, dtype=torch.long)
        mask = torch.zeros(len(ids), self.prefix_len + width, dtype=torch.long)
        for row, seq in enumerate(ids):
            tokens[row, : len(seq)] = torch.tensor(seq)
            labels[row, self.prefix_len: self.prefix_len + len(seq)] = torch.tensor(seq)
            mask[row, : self.prefix_len + len(seq)] = 1
        device = self.device
        embeds = self.lm.get_input_embeddings()(tokens.to(device))
        inputs = torch.cat([self.prefix(z).to(embeds.dtype), embeds], dim=1)
        return inputs, mask.to(device), labels.to(device)

    def loss(self, z: torch.Tensor, captions: list[str]) -> torch.Tensor:
        """Mean next-token cross-entropy (float32) over the caption tokens and EOS, given the prefix of z."""
        inputs, mask, labels = self.batch(z, captions)
        logits = self.lm(inputs_embeds=inputs, attention_mask=mask).logits
        return nn.functional.cross_entropy(logits[:, :-1].float().flatten(0, 1), labels[:, 1:].flatten(),
                                           ignore_index=-100)

    @torch.no_grad()
    def generate(self, z: torch.Tensor, *, max_new_tokens: int = 24, batch_size: int = 64) -> list[str]:
        """Greedy captions (one stripped string per row of z [n, D_t]), `batch_size` rows at a time with the
        LM's KV cache; a caption ends at EOS, at its first line break (captions are one line; a pretrained LM
        may go on with a new paragraph) or after `max_new_tokens` tokens."""
        if max_new_tokens < 1 or batch_size < 1:
            raise UserError(f"max_new_tokens and batch_size must be positive, got {max_new_tokens}, {batch_size}")
        was_training = self.training
        self.eval()
        texts: list[str] = []
        for start in range(0, len(z), batch_size):
            prefix = self.prefix(z[start: start + batch_size])
            mask = torch.ones(prefix.shape[:2], dtype=torch.long, device=prefix.device)
            with torch.autocast(prefix.device.type, dtype=torch.bfloat16, enabled=prefix.device.type == "cuda"):
                out = self.lm.generate(inputs_embeds=prefix, attention_mask=mask, do_sample=False, num_beams=1,
                                       max_new_tokens=max_new_tokens, eos_token_id=self.eos_id,
                                       pad_token_id=self.pad_id)
            for row in out.tolist():
                row = row[: row.index(self.eos_id)] if self.eos_id in row else row
                text = self.tokenizer.decode(row, skip_special_tokens=True).strip()
                texts.append(text.split("\n", 1)[0].strip())
        self.train(was_training)
        return texts

    def trainable_parameters(self) -> int:
        """Number of parameters that training updates (the mapper, plus the LM when tuned)."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)

    def describe(self) -> dict[str, Any]:
        """JSON-ready summary for records and reports."""
        model = getattr(self.tokenizer, "backend_tokenizer", None)
        kind = type(model.model).__name__ if model is not None else type(self.tokenizer).__name__
        return {
            "name": self.name,
            "revision": self.revision,
            "lm_params": sum(p.numel() for p in self.lm.parameters()),
            "trained_params": self.trainable_parameters(),
            "prefix_len": self.prefix_len,
            "tune_lm": self.tune_lm,
            "tokenizer": f"{kind} ({len(self.tokenizer):,} tokens)",
            "leading_space": self.leading_space,
            "mapper": f"MLP {self.d_text}-{self.prefix_len * self.hidden // 2}-{self.prefix_len * self.hidden} tanh",
        }


def _seeded_mapper(args: dict[str, Any], seed: int) -> PrefixCaptioner:
    """A PrefixCaptioner whose mapper is initialised from `seed` without touching the global RNG."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return PrefixCaptioner(**args)


def load_captioner(name: str, d_text: int, *, prefix_len: int = 4, tune_lm: bool = False, seed: int = 0,
                   home: Path | None = None, zoo: Any = None) -> PrefixCaptioner:
    """Prefix captioner over the zoo causal LM `name` (loader hf_causal: packaged, local or a pinned hub
    revision, HF_HUB_OFFLINE respected), in float32 on CPU; its weights are frozen unless `tune_lm`.
    zoo: a `platobench.zoo.Zoo` (default: the built-in zoo)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if zoo is None:
        from platobench.api import load_zoo

        zoo = load_zoo()
    spec = zoo.get(name)
    if spec.kind != "causal_lm" or spec.loader != "hf_causal":
        raise UserError(f"decoder {spec.name}: expected a causal language model (kind causal_lm, loader hf_causal), "
                        f"got kind {spec.kind} with loader {spec.loader}")
    location, kwargs = pretrained_args(spec, home)
    with hub_errors(spec):
        tokenizer = AutoTokenizer.from_pretrained(location, **kwargs)
        lm = AutoModelForCausalLM.from_pretrained(location, **kwargs, dtype=torch.float32)
    args = {"lm": lm, "tokenizer": tokenizer, "d_text": d_text, "prefix_len": prefix_len, "tune_lm": tune_lm,
            "name": spec.name, "revision": spec.revision, "recipe": TUNED_RECIPE if tune_lm else FROZEN_RECIPE}
    return _seeded_mapper(args, seed)


def word_tokenizer(captions: list[str]) -> Any:
    """Lower-cased word-level tokenizer (words and punctuation runs) over the words of `captions`, with
    [UNK], [PAD] and [EOS]; the vocabulary is sorted, so it depends on the set of words only."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    normalizer, splitter = normalizers.Lowercase(), pre_tokenizers.Whitespace()
    words = {w for c in captions for w, _ in splitter.pre_tokenize_str(normalizer.normalize_str(c))}
    vocab = {token: i for i, token in enumerate([*SPECIALS, *sorted(words - set(SPECIALS))])}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    backend.normalizer, backend.pre_tokenizer = normalizer, splitter
    return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]", pad_token="[PAD]",
                                   eos_token="[EOS]", clean_up_tokenization_spaces=True)


def tiny_captioner(train_captions: list[str], d_text: int, *, prefix_len: int = 4, width: int = 128,
                   layers: int = 2, heads: int = 4, seed: int = 0) -> PrefixCaptioner:
    """Prefix captioner over a small random-init Llama (`layers` blocks of `width`, `heads` heads) with a
    word-level tokenizer fitted on `train_captions`; all weights train (never a pretrained model)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    if not train_captions:
        raise UserError("train_captions is empty: the tiny decoder's vocabulary comes from the train captions")
    if width % heads:
        raise UserError(f"width {width} must be a multiple of heads {heads}")
    tokenizer = word_tokenizer(train_captions)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=width, intermediate_size=4 * width,
                         num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=heads,
                         max_position_embeddings=prefix_len + MAX_CAPTION_TOKENS + 256, tie_word_embeddings=True,
                         bos_token_id=None, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        lm = LlamaForCausalLM(config)
    args = {"lm": lm, "tokenizer": tokenizer, "d_text": d_text, "prefix_len": prefix_len, "tune_lm": True,
            "name": TINY_NAME, "revision": None, "recipe": TINY_RECIPE}
    return _seeded_mapper(args, seed + 1)
