"""Keep freed tensor memory in the process on CPU, so forward passes stop paying the kernel for it.

glibc serves every allocation above its mmap threshold (32 MiB at most on 64-bit Linux) with a fresh
`mmap` and hands it back with `munmap` when freed. A CPU forward pass frees and reallocates its largest
activation maps on every batch (EfficientNet-Lite0's [32, 96, 112, 112] float32 map is 154 MB), so the
kernel faults and zeroes those pages again each time. Measured on EfficientNet-Lite0, 32 images of
224 px, one thread: 1.89 s per batch, 0.89 s of it system time; 0.99 s (0.00 s system) with freed blocks
kept; peak resident memory of that process 1.32 -> 1.56 GB (`benchmarks/cpu_memory.py`).

`keep_freed_memory` sets glibc's M_MMAP_MAX to 0 (large blocks come from the heap) and M_TRIM_THRESHOLD
to its maximum (the heap is not shrunk), the settings mallopt(3) documents. It changes where buffers live,
never a computed value. No-op off glibc, on a second call, and when PLATOBENCH_MALLOC=system.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

ENV_VAR = "PLATOBENCH_MALLOC"
M_TRIM_THRESHOLD = -1  # mallopt(3) parameter numbers, from glibc's <malloc.h>
M_MMAP_MAX = -4
_MAX_INT = 2**31 - 1

_applied: bool | None = None


def keep_freed_memory() -> bool:
    """Tune glibc malloc once per process as the module docstring says; True when the tuning is in force."""
    global _applied
    if _applied is None:
        _applied = os.environ.get(ENV_VAR, "").strip().lower() != "system" and _mallopt_glibc()
    return _applied


def _mallopt_glibc() -> bool:
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except OSError:
        return False
    if not hasattr(libc, "gnu_get_libc_version"):  # only glibc has it; musl and macOS tune malloc otherwise
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(M_MMAP_MAX, 0)) and bool(mallopt(M_TRIM_THRESHOLD, _MAX_INT))
