"""Property: on ANY input the metric API returns a finite score within the metric's declared range, or
raises a UserError subclass -- never another exception, never NaN/inf, never an out-of-range value.

Inputs: every registered metric with its default parameters, every preprocess mode, N 2..40 (also
N <= k), D 1..16, dtypes float16/bfloat16/float32/float64/int8/int64/bool, scales 1e-30..1e30, NaN/inf
entries, constant columns, constant rows, duplicated rows and rounded (tie-heavy) values."""

from __future__ import annotations

import math

import numpy as np
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from platobench.errors import UserError
from platobench.metrics import get_metric, layer_grid, list_metrics, score

METRICS = [m.id for m in list_metrics()]
MODES = ["none", "l2", "prh", "prh_exact"]
DTYPES = ["float16", "bfloat16", "float32", "float64", "int8", "int64", "bool"]


def rarely(draw: st.DrawFn, one_in: int) -> bool:
    return draw(st.integers(1, one_in)) == 1


@st.composite
def features(draw: st.DrawFn, n: int) -> torch.Tensor | np.ndarray:
    """One [n, D] feature matrix, usually with some damage (ties, constant columns, duplicated rows),
    now and then fatal (a constant layer, a NaN/inf entry)."""
    d = draw(st.integers(1, 16))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    x = rng.standard_normal((n, d))
    if rarely(draw, 4):
        x = np.round(x)  # many exact ties
    if d > 1 and rarely(draw, 4):
        x[:, rng.integers(0, d, size=draw(st.integers(1, d - 1)))] = draw(st.sampled_from([0.0, 1.0, -2.5]))
    if rarely(draw, 4):
        rows = rng.integers(0, n, size=draw(st.integers(1, n)))
        x[rows] = x[rows[0]]  # duplicated rows; now and then all of them
    if rarely(draw, 10):
        x[:] = draw(st.sampled_from([0.0, 1.0]))  # a constant layer
    dtype = draw(st.sampled_from(DTYPES))
    if dtype.startswith("float") or dtype == "bfloat16":
        x = x * 10.0 ** draw(st.integers(-30, 30))
        if rarely(draw, 10):
            x[rng.integers(0, n), rng.integers(0, d)] = draw(st.sampled_from([math.nan, math.inf, -math.inf]))
    if dtype == "bfloat16":
        return torch.from_numpy(x).to(torch.bfloat16)
    if dtype == "bool":
        return x > 0
    if dtype.startswith("int"):
        x = np.clip(np.round(x * 3), -100, 100)
    with np.errstate(over="ignore", invalid="ignore"):
        arr = x.astype(dtype)
    return torch.from_numpy(arr) if draw(st.booleans()) else arr


def _check(metric: str, value: float) -> None:
    lo, hi = get_metric(metric).range or (-math.inf, math.inf)
    assert math.isfinite(value), f"{metric} returned {value}"
    assert lo <= value <= hi, f"{metric} returned {value} outside its range [{lo}, {hi}]"


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, str, list, list]:
    n = draw(st.integers(2, 40))
    xs = [draw(features(n)) for _ in range(draw(st.integers(1, 2)))]
    ys = [draw(features(n)) for _ in range(draw(st.integers(1, 2)))]
    return draw(st.sampled_from(METRICS)), draw(st.sampled_from(MODES)), xs, ys


@settings(max_examples=200, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(cases())
def test_any_input_gives_a_finite_in_range_score_or_a_user_error(case):
    metric, mode, xs, ys = case
    try:
        _check(metric, score(metric, xs[0], ys[0], preprocess=mode))
    except UserError:
        pass
    try:
        grid = layer_grid(metric, xs, ys, preprocess=mode)
    except UserError:
        return
    assert grid.shape == (len(xs), len(ys))
    for value in grid.flatten().tolist():
        _check(metric, value)


def test_every_metric_declares_its_range():
    """A range (lo, hi) for every metric; None only where the score is unbounded (documented)."""
    for m in list_metrics():
        if m.range is None:
            assert "unbounded" in m.description, m.id
        else:
            assert m.range[0] < m.range[1], m.id
