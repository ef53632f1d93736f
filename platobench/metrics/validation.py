"""Input checks shared by every metric: each error names the argument and what was expected."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch.utils.weak import WeakIdKeyDictionary

from platobench.errors import UserError


class DegenerateFeaturesError(UserError):
    """A layer is degenerate: all its rows (samples) are identical as given or after preprocessing, so
    no alignment score says anything about it. The message names the side and the layer; `side` (the
    stack's name, "Xs" or "Ys") and `layer` (its position in the stack scored) say it to code, and
    `on_subset` that it held on a resampling subset of the samples only."""

    def __init__(self, message: str, *, side: str | None = None, layer: int | None = None,
                 on_subset: bool = False) -> None:
        super().__init__(message)
        self.side, self.layer, self.on_subset = side, layer, on_subset


class UndefinedScoreError(UserError):
    """The metric is mathematically undefined on these inputs (e.g. a normaliser <= 0); the message
    names the metric and the layer pair."""


_INTEGER_DTYPES = frozenset(
    getattr(torch, name) for name in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
    if hasattr(torch, name)
)


def to_features(x: Any, name: str) -> torch.Tensor:
    """Convert a torch tensor or numpy array to a 2-D float tensor [N, D] (float32, or float64 when
    given float64; integers and bools become float32), checking its type and shape but not its values
    (`as_features` also checks that they are finite)."""
    if isinstance(x, np.ndarray):
        if x.dtype.kind not in "biuf":
            raise UserError(f"{name} must hold real numbers, got numpy dtype {x.dtype}")
        if not x.dtype.isnative:
            x = x.astype(x.dtype.newbyteorder("="))
        x = torch.from_numpy(np.ascontiguousarray(x))
    if not isinstance(x, torch.Tensor):
        raise UserError(f"{name} must be a torch.Tensor or numpy.ndarray of shape [N, D], got {type(x).__name__}")
    if x.ndim != 2:
        raise UserError(f"{name} must be 2-D [N, D], got shape {tuple(x.shape)}")
    if x.shape[0] == 0 or x.shape[1] == 0:
        raise UserError(f"{name} is empty: shape {tuple(x.shape)}; expected N >= 2 samples and D >= 1 features")
    if not (x.is_floating_point() or x.dtype in _INTEGER_DTYPES or x.dtype == torch.bool):
        raise UserError(f"{name} must hold real numbers, got dtype {x.dtype}")
    return x.to(torch.float64 if x.dtype == torch.float64 else torch.float32)


def as_features(x: Any, name: str) -> torch.Tensor:
    """`to_features`, then a check that every value is finite (UserError counting the others)."""
    x = to_features(x, name)
    if not torch.isfinite(torch.stack(x.aminmax())).all():  # one reduction pass; NaN propagates
        bad = (~torch.isfinite(x)).sum().item()
        raise UserError(f"{name} contains {bad} NaN/inf value(s); expected finite features")
    return x


#: Layers the preprocessing made and already brought to the scale of `pow2_unit` (platobench.metrics.
#: preprocess), each with its version counter then and its max |x|: `pow2_unit` returns them as they
#: are and `api.check_varies` takes their peak without reading them again, unless they were modified
#: in place since (the version counter moved).
_UNIT_LAYERS: WeakIdKeyDictionary = WeakIdKeyDictionary()


def mark_unit(x: torch.Tensor, peak: float) -> torch.Tensor:
    """Record that x [N, D] is at the scale `pow2_unit` gives it, with max |x| = `peak`; returns x."""
    _UNIT_LAYERS[x] = (x._version, peak)
    return x


def unit_peak(x: torch.Tensor) -> float | None:
    """The max |x| recorded by `mark_unit` for x, unmodified since; else None."""
    known = _UNIT_LAYERS.get(x)
    return known[1] if known is not None and known[0] == x._version else None


def pow2_scale(x: torch.Tensor, e: int) -> torch.Tensor:
    """x times 2^-e, as `pow2_unit` multiplies (x itself for e = 0; two exact factors when 2^-e is not
    a normal number of every float dtype)."""
    if e == 0:
        return x
    if abs(e) < 100:
        return x * 2.0**-e
    a = -e // 2
    return x * 2.0**a * 2.0 ** (-e - a)


def pow2_exponent(peak: float) -> int:
    """The e with 2^-e peak in [0.5, 1) (`math.frexp`); 0 for a peak of 0, inf or NaN (left as is)."""
    return math.frexp(peak)[1] if 0.0 < peak < math.inf else 0


def pow2_unit(x: torch.Tensor) -> torch.Tensor:
    """x [N, D] times the power of two 2^-e that brings max |x| into [0.5, 1); all-zero or non-finite x
    is returned as is. Multiplying by a power of two is exact in binary floating point (barring
    underflow of values far below the maximum), so a scale-invariant metric gives bit-identical scores
    on normal inputs, while inner products of tiny (1e-30 in float32) or huge (1e300 in float64)
    features no longer underflow or overflow. The factor is applied in two halves so that each is
    representable even when x is subnormal. A layer `mark_unit` recorded is returned without a pass."""
    if x.numel() == 0 or unit_peak(x) is not None:
        return x
    low, high = torch.aminmax(x)  # one pass, no |x| temporary
    return pow2_scale(x, pow2_exponent(max(-float(low), float(high))))


def check_pair(x: torch.Tensor, y: torch.Tensor, xname: str = "X", yname: str = "Y") -> int:
    """Both sides must have the same number of samples N >= 2 (row i of X and Y is one sample)."""
    if x.shape[0] != y.shape[0]:
        raise UserError(
            f"{xname} has {x.shape[0]} samples but {yname} has {y.shape[0]}; rows must be paired samples"
        )
    if x.shape[0] < 2:
        raise UserError(f"{xname} and {yname} need at least 2 samples, got {x.shape[0]}")
    return int(x.shape[0])


def check_choice(value: Any, allowed: tuple[str, ...], name: str) -> str:
    """`value` must be one of `allowed` (metric parameters such as kernel or estimator)."""
    if value not in allowed:
        raise UserError(f"{name} must be one of {list(allowed)}, got {value!r}")
    return value


def check_positive(value: Any, name: str) -> float:
    """`value` must be a finite real number > 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value) or value <= 0:
        raise UserError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def check_fraction(value: Any, name: str) -> float:
    """`value` must be a real number in the open interval (0, 1)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
        raise UserError(f"{name} must be a number strictly between 0 and 1, got {value!r}")
    return float(value)


def check_int(value: Any, name: str, minimum: int) -> int:
    """`value` must be an integer >= `minimum` (bools are rejected)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise UserError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


#: A layer whose largest deviation from its per-feature mean is at most this x its largest magnitude is
#: constant across the samples up to float rounding (`varying_layers`).
CONSTANT_RTOL = 1e-5


def varying_layers(layers: Sequence[torch.Tensor], rtol: float = CONSTANT_RTOL) -> list[int]:
    """Positions of the layers whose features vary across samples. A layer whose largest deviation from
    its per-feature mean is at most `rtol` x its largest magnitude is constant up to float rounding (e.g.
    a ViT's CLS token at the embedding layer, identical for every image): every metric on it would
    score rounding noise, so such layers are excluded from the grid and named in the record."""
    keep = []
    for i, x in enumerate(layers):
        scale = float(x.abs().max())
        if scale > 0 and float((x - x.mean(0)).abs().max()) > rtol * scale:
            keep.append(i)
    return keep
