"""Training loop of the text JEPA (view prediction + VICReg variance/covariance), through accelerate.

`train(corpus, config)` trains on the samples outside the held-out split and measures, on a fixed set of
held-out pairs, the loss before and after training (`initial_loss`, `final_loss`) and the effective rank of
the exported features (collapse diagnostic). One `accelerate.Accelerator` wraps the loop: CPU, one GPU or
several (each process takes its slice of a global batch), with bf16 autocast on GPUs that support it.
With the same seed, a CPU run is reproducible bit for bit.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from accelerate import Accelerator
from accelerate.utils import set_seed
from transformers import PreTrainedTokenizerBase, get_cosine_schedule_with_warmup

from platobench.jepa.checkpoint import load_tokenizer
from platobench.jepa.losses import LossWeights, effective_rank, jepa_loss
from platobench.jepa.model import SIZES, TextJEPA, bert_config
from platobench.jepa.views import ViewMode, ViewPair, ViewSampler, distinct_captions


@dataclass(frozen=True)
class CaptionCorpus:
    """Captions of a paired dataset: `views[i]` lists every caption of sample `ids[i]`."""

    name: str
    revision: str
    fingerprint: str
    ids: list[str]
    views: list[list[str]]

    @classmethod
    def from_dataset(cls, dataset) -> CaptionCorpus:  # a platobench.data.PairedDataset
        """Copy the captions of a `PairedDataset` (anything with name, revision, fingerprint, ids,
        caption_views(i))."""
        views = [dataset.caption_views(i) for i in range(len(dataset.ids))]
        return cls(dataset.name, dataset.revision, dataset.fingerprint, list(dataset.ids), views)


def is_heldout(sample_id: str, fraction: float) -> bool:
    """Whether `sample_id` is in the held-out split: sha256(id) read as a number in [0, 1) is below
    `fraction`. Depends on the id alone (not on seed or order), so every run and `compare` holds out the
    same samples of a dataset."""
    digest = hashlib.sha256(sample_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction


def split(corpus: CaptionCorpus, heldout_fraction: float) -> tuple[list[int], list[int]]:
    """(train, held-out) indices of the samples with at least two distinct captions (the only ones that
    give good views; bad-view runs use the same samples so the two differ in their views only)."""
    eligible = [i for i, views in enumerate(corpus.views) if len(distinct_captions(views)) >= 2]
    train = [i for i in eligible if not is_heldout(corpus.ids[i], heldout_fraction)]
    heldout = [i for i in eligible if is_heldout(corpus.ids[i], heldout_fraction)]
    return train, heldout


@dataclass(frozen=True)
class TrainConfig:
    """Hyper-parameters. weights: VICReg coefficients; predictor: add a predictor head (JEPA form);
    batch_size: pairs per process per step; lr: peak learning rate (None: the size's default);
    max_tokens: truncation length (None: the size's maximum);
    eval_pairs: held-out pairs measured before/after training; log_every: steps between progress lines
    (0: steps // 10)."""

    size: str = "tiny"
    views: ViewMode = field(default_factory=lambda: ViewMode("good", 1.0))
    steps: int = 300
    seed: int = 0
    batch_size: int = 64
    lr: float | None = None
    weight_decay: float = 0.05
    warmup_fraction: float = 0.1
    weights: LossWeights = field(default_factory=LossWeights)
    predictor: bool = False
    heldout_fraction: float = 0.2
    eval_pairs: int = 256
    max_tokens: int | None = None
    log_every: int = 0


@dataclass
class TrainResult:
    """What a run produced. Losses are on the fixed held-out pairs (eval mode); effective ranks are of the
    exported features of the held-out samples' first captions; `history` has one dict per progress line."""

    model: TextJEPA
    tokenizer: PreTrainedTokenizerBase
    initial_loss: float
    final_loss: float
    initial_effective_rank: float
    effective_rank: float
    train_samples: int
    heldout_samples: int
    heldout_ids: list[str]
    samples_per_s: float  # training pairs per second (all processes), held-out evaluations excluded
    is_main_process: bool = True  # False on the other processes of a multi-GPU run (which must not export)
    history: list[dict[str, float]] = field(default_factory=list)


def _tokenize(tokenizer: PreTrainedTokenizerBase, texts: list[str], max_tokens: int, device) -> dict:
    batch = tokenizer(texts, padding=True, truncation=True, max_length=max_tokens, return_tensors="pt")
    return {"input_ids": batch["input_ids"].to(device), "attention_mask": batch["attention_mask"].to(device)}


class _Evaluator:
    """Fixed held-out pairs and captions; measures loss and effective rank of an unwrapped model."""

    def __init__(
        self, corpus: CaptionCorpus, heldout: list[int], config: TrainConfig, tokenizer, max_tokens, device
    ):
        views = [corpus.views[i] for i in heldout]
        sampler = ViewSampler(views, config.views, seed=config.seed, mask_token=tokenizer.mask_token)
        pairs = [sampler.pair(i) for i in range(min(config.eval_pairs, len(heldout)))]
        self.pairs_batch = _tokenize(
            tokenizer, [p.a for p in pairs] + [p.b for p in pairs], max_tokens, device
        )
        self.captions_batch = _tokenize(
            tokenizer, [distinct_captions(v)[0] for v in views], max_tokens, device
        )
        self.config = config

    @torch.no_grad()
    def __call__(self, model: TextJEPA) -> tuple[float, float, float]:
        """(held-out loss, effective rank of the exported features, effective rank of their projections)
        of `model`, in eval mode."""
        was_training = model.training
        model.eval()
        z_a, z_b, p_a, p_b = model(**self.pairs_batch)
        loss = jepa_loss(z_a, z_b, p_a, p_b, self.config.weights)
        features = model.embed(**self.captions_batch)
        ranks = effective_rank(features), effective_rank(model.projector(features))
        model.train(was_training)
        return float(loss.total), *ranks


def train(
    corpus: CaptionCorpus,
    config: TrainConfig,
    progress: Callable[[dict[str, float]], None] | None = None,
) -> TrainResult:
    """Train a text JEPA of `config.size` on `corpus` with `config.views` pairs for `config.steps` steps.

    AdamW with linear warm-up then cosine decay, gradient norm clipped at 1. `progress` receives, on the
    main process every `log_every` steps, {step, loss, invariance, variance, covariance (train means since
    the last line), heldout_loss, effective_rank, projection_effective_rank}. Raises ValueError when the
    corpus has too few usable samples.
    """
    if config.size not in SIZES:
        raise ValueError(f"unknown size {config.size!r}; expected one of {', '.join(SIZES)}")
    use_bf16 = torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    accelerator = Accelerator(mixed_precision="bf16" if use_bf16 else "no", cpu=not torch.cuda.is_available())
    set_seed(config.seed)
    train_idx, heldout_idx = split(corpus, config.heldout_fraction)
    global_batch = config.batch_size * accelerator.num_processes
    if len(train_idx) < global_batch or len(heldout_idx) < 2:
        raise ValueError(
            f"{corpus.name}: {len(train_idx)} training and {len(heldout_idx)} held-out samples have two distinct "
            f"captions; need at least {global_batch} (the global batch) and 2"
        )
    tokenizer = load_tokenizer()
    max_tokens = config.max_tokens or SIZES[config.size].max_tokens
    model = TextJEPA(
        bert_config(config.size, len(tokenizer), tokenizer.pad_token_id),
        projection=SIZES[config.size].projection,
        predictor=config.predictor,
    )
    evaluate = _Evaluator(corpus, heldout_idx, config, tokenizer, max_tokens, accelerator.device)
    trainable = [p for p in model.parameters() if p.requires_grad]
    lr = config.lr or SIZES[config.size].lr
    optimizer = torch.optim.AdamW(trainable, lr=lr, weight_decay=config.weight_decay, fused=True)
    schedule = get_cosine_schedule_with_warmup(
        optimizer, int(config.warmup_fraction * config.steps), config.steps
    )
    model, optimizer = accelerator.prepare(model, optimizer)
    unwrapped: TextJEPA = accelerator.unwrap_model(model)
    initial_loss, initial_rank, _ = evaluate(unwrapped)

    sampler = ViewSampler(
        [corpus.views[i] for i in train_idx], config.views, config.seed, tokenizer.mask_token
    )
    batches = sampler.batches(global_batch)
    rank, size = accelerator.process_index, config.batch_size
    log_every = config.log_every or max(1, config.steps // 10)
    history: list[dict[str, float]] = []
    sums = torch.zeros(4)
    eval_seconds = 0.0
    start = time.perf_counter()
    for step in range(1, config.steps + 1):
        pairs: list[ViewPair] = next(batches)[rank * size : (rank + 1) * size]
        batch = _tokenize(
            tokenizer, [p.a for p in pairs] + [p.b for p in pairs], max_tokens, accelerator.device
        )
        with accelerator.autocast():
            z_a, z_b, p_a, p_b = model(**batch)
            parts = jepa_loss(z_a, z_b, p_a, p_b, config.weights)
        accelerator.backward(parts.total)
        accelerator.clip_grad_norm_(trainable, 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad(set_to_none=True)
        sums += (
            torch.stack([parts.total, parts.invariance, parts.variance, parts.covariance])
            .detach()
            .float()
            .cpu()
        )
        if step % log_every == 0 or step == config.steps:
            n = step - (history[-1]["step"] if history else 0)
            loss, invariance, variance, covariance = (sums / n).tolist()
            sums.zero_()
            eval_start = time.perf_counter()
            heldout_loss, erank, projection_erank = (
                evaluate(unwrapped) if accelerator.is_main_process else (float("nan"),) * 3
            )
            eval_seconds += time.perf_counter() - eval_start
            line = {
                "step": step,
                "loss": loss,
                "invariance": invariance,
                "variance": variance,
                "covariance": covariance,
                "heldout_loss": heldout_loss,
                "effective_rank": erank,
                "projection_effective_rank": projection_erank,
            }
            history.append(line)
            if progress is not None and accelerator.is_main_process:
                progress(line)
    train_seconds = time.perf_counter() - start - eval_seconds
    final_loss, final_rank = history[-1]["heldout_loss"], history[-1]["effective_rank"]
    return TrainResult(
        model=unwrapped,
        tokenizer=tokenizer,
        initial_loss=initial_loss,
        final_loss=final_loss,
        initial_effective_rank=initial_rank,
        effective_rank=final_rank,
        train_samples=len(train_idx),
        heldout_samples=len(heldout_idx),
        heldout_ids=[corpus.ids[i] for i in heldout_idx],
        samples_per_s=config.steps * global_batch / train_seconds,
        is_main_process=accelerator.is_main_process,
        history=history,
    )
