"""Thread limits for the theory lab's many small linear-algebra calls."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from threadpoolctl import threadpool_limits


@contextlib.contextmanager
def single_threaded() -> Iterator[None]:
    """One BLAS / torch thread inside the block (restored after): the matrices here are at most about
    120 x 120, where threading only adds synchronisation cost (over 10x on a loaded 2-core machine)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with threadpool_limits(limits=1):
            yield
    finally:
        torch.set_num_threads(before)
