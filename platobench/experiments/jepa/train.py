"""Training loop shared by the text JEPA and its next-token-prediction twin, through accelerate.

`train(corpus, config)` builds the objective `config.objective` names (`JepaObjective`: view pairs, VICReg;
`NtpObjective`: caption documents, causal LM loss), trains on the samples outside the held-out split and
measures, on fixed held-out pairs or documents, the loss before and during training and the effective rank
of the exported features (collapse diagnostic). One `accelerate.Accelerator` wraps the loop: CPU, one GPU or
several (each process takes its slice of a global batch), with bf16 autocast on GPUs that support it.
With the same seed, a CPU run is reproducible bit for bit, with or without checkpoint callbacks.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable

import torch
from accelerate import Accelerator
from accelerate.utils import set_seed
from transformers import get_constant_schedule_with_warmup, get_cosine_schedule_with_warmup

from platobench.api import keep_freed_memory
from platobench.experiments.jepa.checkpoint import load_tokenizer
from platobench.experiments.jepa.config import CaptionCorpus, TrainConfig, TrainResult, split
from platobench.experiments.jepa.model import SIZES
from platobench.experiments.jepa.ntp import NtpObjective
from platobench.experiments.jepa.objective import JepaObjective, Objective

OBJECTIVES = {"jepa": JepaObjective, "ntp": NtpObjective}
SCHEDULES = ("cosine", "constant")

__all__ = ["OBJECTIVES", "CaptionCorpus", "TrainConfig", "TrainResult", "split", "train"]


def _check_config(config: TrainConfig) -> None:
    if config.size not in SIZES:
        raise ValueError(f"unknown size {config.size!r}; expected one of {', '.join(SIZES)}")
    if config.objective not in OBJECTIVES:
        raise ValueError(f"unknown objective {config.objective!r}; expected one of {', '.join(OBJECTIVES)}")
    if config.schedule not in SCHEDULES:
        raise ValueError(f"unknown schedule {config.schedule!r}; expected one of {', '.join(SCHEDULES)}")
    if config.objective == "ntp" and config.predictor:
        raise ValueError("a predictor head applies to the jepa objective only, not ntp")


def checkpoint_steps(counts: tuple[int, ...], steps: int, global_batch: int) -> dict[int, list[int]]:
    """{step: the example counts it reaches first}: count c is due after step ceil(c / global_batch);
    count 0 is "step 0", the model at initialisation, before any update. Raises ValueError for a
    negative count or one beyond `steps * global_batch`."""
    due: dict[int, list[int]] = {}
    for count in sorted(set(counts)):
        if not 0 <= count <= steps * global_batch:
            raise ValueError(
                f"checkpoint at {count} examples: expected 0 to {steps * global_batch} "
                f"({steps} steps x {global_batch} examples per step)"
            )
        due.setdefault(math.ceil(count / global_batch), []).append(count)
    return due


def _schedule(optimizer: torch.optim.Optimizer, config: TrainConfig) -> torch.optim.lr_scheduler.LambdaLR:
    """Linear warm-up over `warmup_fraction` of the steps, then cosine decay to 0 or a constant LR."""
    warmup = int(config.warmup_fraction * config.steps)
    if config.schedule == "constant":
        return get_constant_schedule_with_warmup(optimizer, warmup)
    return get_cosine_schedule_with_warmup(optimizer, warmup, config.steps)


def _call_preserving_state(
    model: torch.nn.Module, device: torch.device, callback: Callable[[TrainResult], None], snapshot: TrainResult
) -> None:
    """Call `callback(snapshot)` with `model` in eval mode, then restore its mode and the torch and Python
    RNG states, so a callback cannot change what training does next."""
    was_training, python_state = model.training, random.getstate()
    devices = [device] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        model.eval()
        try:
            callback(snapshot)
        finally:
            model.train(was_training)
            random.setstate(python_state)


def train(
    corpus: CaptionCorpus,
    config: TrainConfig,
    progress: Callable[[dict[str, float]], None] | None = None,
    on_checkpoint: Callable[[TrainResult], None] | None = None,
) -> TrainResult:
    """Train a model of `config.size` on `corpus` by `config.objective` for `config.steps` steps.

    AdamW with linear warm-up then cosine decay (or a constant LR), gradient norm clipped at 1. `progress`
    receives, on the main process every `log_every` steps, {step, loss (train mean since the last line),
    the objective's loss parts (jepa: invariance, variance, covariance), heldout_loss, effective_rank
    (jepa also projection_effective_rank)}. `on_checkpoint` receives, on the main process, a snapshot
    `TrainResult` after the first step whose examples seen (step * global batch) reach each count of
    `config.checkpoints` (once per count; the live model, in eval mode during the call). Raises ValueError
    when the corpus has too few usable samples or a checkpoint count lies beyond the run.
    """
    _check_config(config)
    use_bf16 = torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    accelerator = Accelerator(mixed_precision="bf16" if use_bf16 else "no", cpu=not torch.cuda.is_available())
    if accelerator.device.type == "cpu":
        keep_freed_memory()  # each step's freed activations are reused, not returned to the kernel
    set_seed(config.seed)
    train_idx, heldout_idx = split(corpus, config.heldout_fraction)
    global_batch = config.batch_size * accelerator.num_processes
    if len(train_idx) < global_batch or len(heldout_idx) < 2:
        raise ValueError(
            f"{corpus.name}: {len(train_idx)} training and {len(heldout_idx)} held-out samples have two distinct "
            f"captions; need at least {global_batch} (the global batch) and 2"
        )
    due = checkpoint_steps(config.checkpoints, config.steps, global_batch)
    tokenizer = load_tokenizer()
    max_tokens = config.max_tokens or SIZES[config.size].max_tokens
    objective: Objective = OBJECTIVES[config.objective](
        corpus, train_idx, heldout_idx, config, tokenizer, max_tokens, accelerator.device
    )
    model = objective.model
    trainable = [p for p in model.parameters() if p.requires_grad]
    lr = config.lr or SIZES[config.size].lr
    optimizer = torch.optim.AdamW(trainable, lr=lr, weight_decay=config.weight_decay, fused=True)
    schedule = _schedule(optimizer, config)
    model, optimizer = accelerator.prepare(model, optimizer)
    unwrapped = accelerator.unwrap_model(model)
    initial = objective.evaluate(unwrapped)

    def result(measured: dict[str, float], step: int, train_seconds: float) -> TrainResult:
        return TrainResult(
            model=unwrapped,
            tokenizer=tokenizer,
            initial_loss=initial["heldout_loss"],
            final_loss=measured["heldout_loss"],
            initial_effective_rank=initial["effective_rank"],
            effective_rank=measured["effective_rank"],
            train_samples=len(train_idx),
            heldout_samples=len(heldout_idx),
            heldout_ids=[corpus.ids[i] for i in heldout_idx],
            samples_per_s=step * global_batch / train_seconds,
            is_main_process=accelerator.is_main_process,
            history=list(history),
            examples_seen=step * global_batch,
            objective=config.objective,
        )

    batches = objective.batches(global_batch)
    rank, size = accelerator.process_index, config.batch_size
    log_every = config.log_every or max(1, config.steps // 10)
    history: list[dict[str, float]] = []
    sums: torch.Tensor | None = None
    eval_seconds = 0.0
    if 0 in due and on_checkpoint is not None and accelerator.is_main_process:
        _call_preserving_state(unwrapped, accelerator.device, on_checkpoint, result(initial, 0, 1.0))
    start = time.perf_counter()
    for step in range(1, config.steps + 1):
        inputs = objective.batch(next(batches)[rank * size : (rank + 1) * size], accelerator.device)
        with accelerator.autocast():
            total, parts = objective.loss(model, inputs)
        accelerator.backward(total)
        accelerator.clip_grad_norm_(trainable, 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad(set_to_none=True)
        stacked = torch.stack([total, *parts.values()]).detach().float().cpu()
        sums = stacked if sums is None else sums + stacked
        eval_start = time.perf_counter()
        measured = None
        if step % log_every == 0 or step == config.steps:
            n = step - (history[-1]["step"] if history else 0)
            means = (sums / n).tolist()
            sums = None
            measured = (
                objective.evaluate(unwrapped)
                if accelerator.is_main_process
                else dict.fromkeys(initial, float("nan"))
            )
            line = {"step": step, "loss": means[0], **dict(zip(parts, means[1:])), **measured}
            history.append(line)
            if progress is not None and accelerator.is_main_process:
                progress(line)
        if step in due and on_checkpoint is not None and accelerator.is_main_process:
            snapshot = result(
                measured or objective.evaluate(unwrapped), step, eval_start - start - eval_seconds
            )
            for _ in due[step]:
                _call_preserving_state(unwrapped, accelerator.device, on_checkpoint, snapshot)
        eval_seconds += time.perf_counter() - eval_start
    train_seconds = time.perf_counter() - start - eval_seconds
    return result(history[-1], config.steps, train_seconds)
