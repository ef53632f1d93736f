"""Device and dtype policy shared by the loaders.

dtype "auto": bfloat16 on CUDA GPUs of compute capability >= 8 (Ampere and later, which have
bf16 tensor cores), float32 everywhere else, CPU included. The PRH reference code checks >= 7, which
picks bf16 on V100s where it is emulated; we do not.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

from platobench.dtypes import DTYPE_NAMES, torch_dtype
from platobench.errors import UserError


def resolve_device(device: str | torch.device) -> torch.device:
    """Parse `device` ("cpu", "cuda", "cuda:1", ...); UserError when CUDA is asked for but absent."""
    try:
        dev = torch.device(device)
    except RuntimeError as exc:
        raise UserError(f"--device: {device!r} is not a torch device (expected cpu, cuda or cuda:N)") from exc
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise UserError(f"--device: {device!r} was asked for but torch sees no CUDA GPU (use --device cpu)")
    return dev


def resolve_dtype(policy: str, device: torch.device) -> torch.dtype:
    """The compute dtype for a policy ("auto" or a name in DTYPE_NAMES) on `device`."""
    if policy == "auto":
        if device.type == "cuda" and torch.cuda.get_device_capability(device)[0] >= 8:
            return torch.bfloat16
        return torch.float32
    if policy not in DTYPE_NAMES:
        raise UserError(f"--dtype: {policy!r} is not one of auto, {', '.join(DTYPE_NAMES)}")
    return torch_dtype(policy)


@contextmanager
def quiet_weight_loading() -> Iterator[None]:
    """Silence transformers' own "Loading weights" / "Loading checkpoint shards" bars while a model loads
    (they would nest inside the caller's extraction bar); the hub's download bars stay as they were, and
    transformers' setting is restored afterwards."""
    from huggingface_hub.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars
    from transformers.utils import logging as hf_logging

    was_on, hub_off = hf_logging.is_progress_bar_enabled(), are_progress_bars_disabled()
    hf_logging.disable_progress_bar()  # also turns the hub's bars off: turned back on below
    if not hub_off:
        enable_progress_bars()
    try:
        yield
    finally:
        if was_on:
            hf_logging.enable_progress_bar()  # also turns the hub's bars on
            if hub_off:
                disable_progress_bars()
