"""platobench: measure how alike the internal representations of different models are.

Stages (one direction): zoo -> encoders -> features (cache) -> metrics -> bench (results, leaderboard).
See README.md and docs/ (protocol.md, statistics.md) for the contracts. From Python: `platobench.evaluate(...)` (what
`platobench run` does, returning `Results`), `platobench.AlignmentProbe` and `platobench.AlignmentCallback`
(`platobench.api`; imported on first use).
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_API = ("AlignmentCallback", "AlignmentProbe", "ProbeScore", "Results", "evaluate")


def __getattr__(name: str) -> Any:
    if name not in _API:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import platobench.api

    return getattr(platobench.api, name)
