"""platobench from Python: `evaluate` (pairs x settings -> `Results`, as `platobench run`),
`AlignmentProbe` (a model under training against a cached reference) and `AlignmentCallback` (the probe
as a `transformers.TrainerCallback`). Imported on first use: torch and transformers load only then."""

from __future__ import annotations

import importlib
from typing import Any

_NAMES = {
    "evaluate": "platobench.api.evaluation",
    "Results": "platobench.api.evaluation",
    "AlignmentProbe": "platobench.api.probe",
    "ProbeScore": "platobench.api.probe",
    "AlignmentCallback": "platobench.api.trainer_callback",
}

__all__ = sorted(_NAMES)


def __getattr__(name: str) -> Any:
    if name not in _NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_NAMES[name]), name)
