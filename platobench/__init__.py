"""platobench: measure how alike the internal representations of different models are.

Stages (one direction): zoo -> encoders -> features (cache) -> metrics -> bench (results, leaderboard);
experiments (jepa, stitch, theory, scaling-n) sit beside them and use the core through `platobench.api`.
See README.md and docs/ (architecture.md, protocol.md, statistics.md) for the contracts. From Python: `platobench.evaluate(...)` (what
`platobench run` does, returning `Results`), `platobench.AlignmentProbe` and `platobench.AlignmentCallback`
(`platobench.api`; imported on first use).
"""

from __future__ import annotations

from typing import Any

from platobench.version import __version__

_API = ("AlignmentCallback", "AlignmentProbe", "ProbeScore", "Results", "evaluate")


__all__ = ["__version__", *_API]


def __getattr__(name: str) -> Any:
    if name not in _API:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import platobench.api

    return getattr(platobench.api, name)
