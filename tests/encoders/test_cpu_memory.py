"""`keep_freed_memory`: once on, a large tensor comes from the heap (not a fresh mmap of its own); off by request."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="the tuning is glibc's"
)

PROBE = """
import json, torch
from platobench.encoders.cpu_memory import keep_freed_memory
tuned = keep_freed_memory()
big = torch.empty(50_000_000, dtype=torch.uint8)  # 50 MB: above glibc's largest mmap threshold (32 MiB)
pointer = big.data_ptr()
heap = []
for line in open("/proc/self/maps"):
    if line.rstrip().endswith("[heap]"):
        lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
        heap.append((lo, hi))
print(json.dumps({"tuned": tuned, "again": keep_freed_memory(), "in_heap": any(lo <= pointer < hi for lo, hi in heap)}))
"""


def _probe(setting: str) -> dict:
    env = {**os.environ, "PLATOBENCH_MALLOC": setting}
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def test_large_blocks_come_from_the_heap_once_tuned():
    assert _probe("") == {"tuned": True, "again": True, "in_heap": True}


def test_platobench_malloc_system_leaves_glibc_as_it_is():
    assert _probe("system") == {"tuned": False, "again": False, "in_heap": False}


def test_loading_a_model_on_the_cpu_switches_it_on(monkeypatch):
    from platobench.encoders import cpu_memory, load_encoder
    from platobench.zoo import load_zoo

    monkeypatch.setattr(cpu_memory, "_applied", None)
    monkeypatch.setenv(cpu_memory.ENV_VAR, "system")  # this test process keeps glibc's defaults
    load_encoder(load_zoo().get("baseline/caption-length"))
    assert cpu_memory._applied is False  # asked, and refused by the environment variable
