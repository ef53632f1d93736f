"""Text-only training of a `PrefixCaptioner` (CapDec: Nukrai, Mokady & Globerson 2022, with ClipCap's
prefix mapper, Mokady et al. 2021): teacher forcing on the captions, given their own normalised text
embeddings with Gaussian noise injected, so that the decoder tolerates the mapped image embeddings.

Noise: z + noise * eps / sqrt(D_t), eps ~ N(0, I): the injected vector has RMS norm `noise`, in units of
the RMS row norm 1 of the normalised train embeddings (so noise=1 is as large as the signal). CapDec's
variance eps on unit-norm D-dimensional CLIP embeddings is noise = sqrt(eps * D) here (0.016 on 512-d
gives 2.9). Shuffles and noise come from one seeded torch.Generator; AdamW updates trainable parameters
only (gradient norm clipped at 1); bf16 autocast on CUDA, float32 on CPU. Torch threads are the caller's.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any

import torch
from tqdm.auto import tqdm

from platobench.api import UserError

if TYPE_CHECKING:
    from platobench.experiments.stitch.decoder import PrefixCaptioner


def _check(captioner: PrefixCaptioner, Z: torch.Tensor, captions: list[str], batch_size: int, epochs: float,
           lr: float, noise: float) -> None:
    if not captions:
        raise UserError("captions is empty: the decoder needs training captions")
    if Z.ndim != 2 or Z.shape != (len(captions), captioner.d_text):
        raise UserError(f"Z: expected shape [{len(captions)}, {captioner.d_text}] (one embedding per caption), "
                        f"got {list(Z.shape)}")
    if batch_size < 1 or not epochs > 0 or not lr > 0 or not noise >= 0:
        raise UserError(f"batch_size, epochs and lr must be positive and noise >= 0, got batch_size={batch_size}, "
                        f"epochs={epochs}, lr={lr}, noise={noise}")
    captioner.caption_ids(captions)  # refuses blank captions before any step runs


def _order(n: int, steps: int, batch_size: int, generator: torch.Generator) -> list[torch.Tensor]:
    """Index batches of `steps` steps: consecutive seeded permutations of range(n), cut into batches that
    never cross an epoch boundary (the last batch of an epoch may be smaller)."""
    batches: list[torch.Tensor] = []
    while len(batches) < steps:
        batches.extend(torch.randperm(n, generator=generator).split(batch_size))
    return batches[:steps]


def train_captioner(captioner: PrefixCaptioner, Z: torch.Tensor, captions: list[str], *,
                    epochs: float | None = None, batch_size: int = 32, lr: float | None = None,
                    noise: float | None = None, seed: int = 0, progress: bool = True,
                    max_seconds: float | None = None) -> dict[str, Any]:
    """Train the captioner on (Z [N, D_t] float32 normalised text embeddings, their N captions).

    epochs / lr / noise: None takes the captioner's recipe (`decoder.FROZEN_RECIPE`, `TUNED_RECIPE`,
    `TINY_RECIPE`); a fractional epoch count runs that share of the last epoch. max_seconds: stop after
    the step that passes this wall-clock budget. Returns the history (JSON-ready): steps, examples,
    seconds, examples_per_s, loss_per_epoch (mean batch loss of each started epoch), last_loss, stopped_early
    and the settings used."""
    recipe = captioner.recipe
    epochs = recipe.epochs if epochs is None else epochs
    lr = recipe.lr if lr is None else lr
    noise = recipe.noise if noise is None else noise
    _check(captioner, Z, captions, batch_size, epochs, lr, noise)
    n, device = len(captions), captioner.device
    per_epoch = math.ceil(n / batch_size)
    steps = math.ceil(epochs * per_epoch)
    generator = torch.Generator().manual_seed(seed)
    params = [p for p in captioner.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=lr)
    Z = Z.detach().to(torch.float32).cpu()
    scale = noise / math.sqrt(Z.shape[1])
    epoch_losses: list[list[float]] = []
    start, examples, stopped = time.perf_counter(), 0, False
    captioner.train()
    bar = tqdm(total=steps, desc="decoder", unit="step", disable=not progress, leave=False)
    try:
        for step, index in enumerate(_order(n, steps, batch_size, generator)):
            z = Z[index] + scale * torch.randn(len(index), Z.shape[1], generator=generator)
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
                loss = captioner.loss(z.to(device), [captions[i] for i in index.tolist()])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            optimizer.step()
            if step % per_epoch == 0:
                epoch_losses.append([])
            epoch_losses[-1].append(loss.item())
            examples += len(index)
            bar.update(1)
            bar.set_postfix(loss=f"{epoch_losses[-1][-1]:.3f}")
            if max_seconds is not None and time.perf_counter() - start > max_seconds and step + 1 < steps:
                stopped = True
                break
    finally:
        bar.close()
        captioner.eval()
    seconds = time.perf_counter() - start
    return {
        "steps": sum(len(e) for e in epoch_losses),
        "examples": examples,
        "seconds": round(seconds, 3),
        "examples_per_s": round(examples / seconds, 2) if seconds > 0 else None,
        "loss_per_epoch": [round(sum(e) / len(e), 5) for e in epoch_losses],
        "last_loss": round(epoch_losses[-1][-1], 5),
        "stopped_early": stopped,
        "epochs": epochs, "batch_size": batch_size, "lr": lr, "noise": noise, "seed": seed,
    }
