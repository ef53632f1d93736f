"""Timing helpers of benchmarks/gpu_check.py: device-synchronised wall clock, a per-section budget that skips
what would overrun it (recorded), figures from timed runs, and the dense bf16 peak table for MFU."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

#: Dense (no sparsity) bf16 tensor-core peaks in TFLOP/s from NVIDIA's datasheets; the first key that is a
#: substring of the upper-cased device name wins (H100 SXM reports itself as "NVIDIA H100 80GB HBM3").
PEAK_BF16_TFLOPS = (("H200", 989.0), ("H100 PCIE", 756.0), ("H100 NVL", 835.0), ("H100", 989.0),
                    ("A100", 312.0))

class Section:
    """Wall-clock budget of one section. Once a step does not fit, it and every later step are skipped."""

    def __init__(self, budget_s: float) -> None:
        self.budget_s, self.t0 = budget_s, time.perf_counter()
        self.skipped: list[str] = []

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def fits(self, estimate_s: float, what: str) -> bool:
        """True if a step expected to take `estimate_s` seconds still fits; else records `what` as skipped."""
        left = self.budget_s - self.elapsed()
        if self.skipped:
            self.skipped.append(f"{what}: skipped (budget exhausted earlier in the section)")
            return False
        if estimate_s <= left and left > 0:
            return True
        self.skipped.append(f"{what}: skipped (expected {estimate_s:.2f} s, {max(left, 0.0):.2f} s of the "
                            f"section's {self.budget_s:.1f} s budget left)")
        return False


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_once(fn: Callable[[], Any], device: torch.device) -> float:
    """Seconds of one call of `fn`, the device synchronised before and after."""
    sync(device)
    t = time.perf_counter()
    fn()
    sync(device)
    return time.perf_counter() - t


def time_repeats(fn: Callable[[], Any], device: torch.device, section: Section, what: str, *,
                 warmup: int, repeats: int, estimate: float = 0.0) -> list[float]:
    """`warmup` untimed calls, then up to `repeats` timed calls (seconds), each only if the last call's time
    (`estimate` before the first) still fits the section's budget."""
    for i in range(warmup):
        if not section.fits(estimate, f"{what} warm-up {i + 1}"):
            return []
        estimate = time_once(fn, device)
    times: list[float] = []
    for i in range(repeats):
        if not section.fits(estimate, f"{what} run {i + 1}/{repeats}"):
            break
        times.append(time_once(fn, device))
        estimate = times[-1]
    return times


def peak_tflops(device: torch.device, override: float | None) -> tuple[float | None, str]:
    """The dense bf16 peak (TFLOP/s) for MFU and where it came from; None (MFU null) when unknown."""
    if override is not None:
        return override, "--peak-tflops"
    if device.type != "cuda":
        return None, f"no bf16 peak for a {device.type} device: MFU is null (give --peak-tflops)"
    name = torch.cuda.get_device_name(device)
    for key, value in PEAK_BF16_TFLOPS:
        if key in name.upper():
            return value, f"table: {key} dense bf16"
    return None, f"GPU {name!r} is not in the peak table: MFU is null (give --peak-tflops)"


def timing(times: list[float], items: int, unit: str,
           reason: str = "not run: section budget (see skipped)") -> dict[str, Any]:
    """Median and minimum seconds and items/s of timed runs; nulls and `reason` when none ran."""
    if not times:
        return {"seconds_median": None, "timed_runs": 0, f"{unit}_per_s": None, "reason": reason}
    s = statistics.median(times)
    return {"seconds_median": s, "seconds_min": min(times), "timed_runs": len(times), f"{unit}_per_s": items / s}


def figures(times: list[float], flops: float, items: int, unit: str, peak: float | None) -> dict[str, Any]:
    """`timing` plus model FLOPs per call, achieved TFLOP/s and MFU (null without a peak or a run)."""
    out = {**timing(times, items, unit), "model_flops": flops, "tflops": None, "mfu": None}
    if times:
        s = out["seconds_median"]
        out.update(tflops=flops / s / 1e12, mfu=None if peak is None else flops / s / (peak * 1e12))
    return out
