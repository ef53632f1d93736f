"""Floats of a derived report rounded so that it is rebuilt to the same bytes on any CPU.

A report written from records (a fitted law, an interpolated ratio, a t-interval) passes through libm and
BLAS, whose last bits differ between CPUs; `platobench reports` rebuilds reports and compares them byte
for byte, so their derived floats are rounded to 9 significant digits (far below any figure they state).
"""

from __future__ import annotations

from typing import Any

DIGITS = 9


def round_floats(value: Any, digits: int = DIGITS) -> Any:
    """`value` with every float inside (dicts, lists and tuples walked; tuples become lists, as JSON has
    them) rounded to `digits` significant digits; other values unchanged."""
    if isinstance(value, float):
        return float(f"{value:.{digits}g}")
    if isinstance(value, dict):
        return {k: round_floats(v, digits) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [round_floats(v, digits) for v in value]
    return value
