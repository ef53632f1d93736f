"""`--tiny`, which every script of benchmarks/ honours: the script's code paths at problem sizes of seconds,
so that CI runs each of them (tests/bench/test_benchmarks_tiny.py) and none rots unnoticed. Figures taken
at tiny sizes mean nothing: BENCHMARKS.md reports full-size runs only."""

from __future__ import annotations

import argparse
from typing import Any


def parse_tiny(ap: argparse.ArgumentParser, argv: list[str] | None = None, **sizes: Any) -> argparse.Namespace:
    """`ap.parse_args(argv)` with `--tiny` added: when it is given, `sizes` (option dest -> value) are the
    defaults instead (an option given explicitly still wins)."""
    shown = " ".join(f"--{dest.replace('_', '-')} {value}" for dest, value in sizes.items())
    ap.add_argument("--tiny", action="store_true",
                    help=f"tiny sizes, seconds in all (what CI runs; the figures mean nothing): {shown}".strip())
    args = ap.parse_args(argv)
    if args.tiny:
        ap.set_defaults(**sizes)
        args = ap.parse_args(argv)
    return args
