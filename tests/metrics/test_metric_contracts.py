"""Contracts of every registered metric, checked on random well-conditioned inputs (preprocess "none").

What a metric declares on its `Metric` descriptor is what is tested, nothing more:
  symmetric          score(X, Y) == score(Y, X);
  invariances        rotation X -> X Q (Q orthogonal, from the QR of a Gaussian matrix), isotropic scaling
                     X -> c X (c in [0.1, 10]), translation X -> X + v, each on either side, and a joint
                     reordering of the samples of X and Y leave the score unchanged;
  range              every score lies in it;
  identity_score     score(X, T(X)) equals it for T composed of all the declared invariances.
Scores are compared to 1e-6. Inputs are standard normal from a drawn seed (float64, N 8..30, D 2..8);
for the kNN family the inner products of every sample with its k + 1 nearest neighbours must be
separated by more than rounding (no near ties), and the neighbour lists are compared exactly.
"""

from __future__ import annotations

import inspect
import math
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from platobench.metrics import UndefinedScoreError, get_metric, list_metrics, score
from platobench.metrics.registry import INVARIANCES, Metric

TOL = 1e-6
#: (metric id, parameters) checked: every metric with its defaults, plus kernel/estimator/dim variants.
CASES = [(m.id, {}) for m in list_metrics()] + [
    ("cka", {"kernel": "rbf"}), ("cka", {"estimator": "biased"}), ("svcca", {"dim": 2}),
]
SETTINGS = settings(max_examples=15, deadline=None, database=None, derandomize=True)


def _is_knn(m: Metric) -> bool:
    return "k" in m.params


def _no_near_ties(x: np.ndarray, k: int) -> bool:
    """True when, for every row, the k + 1 largest inner products with other rows are pairwise separated
    by more than 1e-8 of the largest |inner product| (rounding of a rotation cannot reorder them)."""
    g = x @ x.T
    np.fill_diagonal(g, -np.inf)
    top = -np.sort(-g, axis=1)[:, : k + 1]
    return bool(np.all(-np.diff(top, axis=1) > 1e-8 * np.abs(g[np.isfinite(g)]).max()))


def _orthogonal(rng: np.random.Generator, d: int) -> np.ndarray:
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    return q * np.sign(np.diag(r))


@st.composite
def pairs(draw: st.DrawFn, m: Metric) -> tuple[np.ndarray, np.ndarray, dict[str, Any], np.random.Generator]:
    """(X [N, Dx], Y [N, Dy], extra params, rng for the transforms); Y partly a linear map of X."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n, dx, dy = draw(st.integers(8, 30)), draw(st.integers(2, 8)), draw(st.integers(2, 8))
    x = rng.standard_normal((n, dx))
    mix = draw(st.sampled_from([0.0, 0.5, 1.0]))
    y = mix * x @ rng.standard_normal((dx, dy)) + (1.0 - mix + 0.1) * rng.standard_normal((n, dy))
    params: dict[str, Any] = {}
    if _is_knn(m):
        params["k"] = draw(st.integers(1, min(10, n - 2)))
        assume(_no_near_ties(x, params["k"]) and _no_near_ties(y, params["k"]))
    return x, y, params, rng


def _score(m: Metric, x: np.ndarray, y: np.ndarray, params: dict[str, Any]) -> float:
    """The score, checked finite and in the declared range; an undefined cknna cell rejects the example."""
    try:
        value = score(m.id, x, y, **params)
    except UndefinedScoreError:
        assume(False)
    assert math.isfinite(value), (m.id, value)
    if m.range is not None:
        assert m.range[0] <= value <= m.range[1], (m.id, value, m.range)
    return value


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=TOL, abs_tol=TOL)


def _transforms(m: Metric, rng: np.random.Generator, d: int, c: float) -> dict[str, Any]:
    """name -> one-side transform X -> T(X) for every declared one-side invariance."""
    q, v = _orthogonal(rng, d), 3.0 * rng.standard_normal(d)
    every = {"rotation": lambda a: a @ q, "isotropic_scaling": lambda a: c * a, "translation": lambda a: a + v}
    return {name: t for name, t in every.items() if name in m.invariances}


def _same_lists(m: Metric, a: np.ndarray, b: np.ndarray, params: dict[str, Any]) -> None:
    """kNN family: the neighbour lists (order included) of a and b are identical."""
    p = m.resolve_params(params)
    la = m.summarize_x(torch.from_numpy(a), p).idx
    lb = m.summarize_x(torch.from_numpy(b), p).idx
    assert torch.equal(la, lb), m.id


@pytest.mark.parametrize(("metric_id", "extra"), CASES, ids=[f"{i}{p or ''}" for i, p in CASES])
@SETTINGS
@given(data=st.data(), c=st.floats(0.1, 10.0))
def test_declared_invariances_leave_the_score_unchanged(metric_id, extra, data, c):
    m = get_metric(metric_id)
    x, y, params, rng = data.draw(pairs(m))
    params.update(extra)
    base = _score(m, x, y, params)
    for side in ("X", "Y"):
        for name, t in _transforms(m, rng, (x if side == "X" else y).shape[1], c).items():
            xt, yt = (t(x), y) if side == "X" else (x, t(y))
            if _is_knn(m):
                _same_lists(m, *((x, xt) if side == "X" else (y, yt)), params)
            moved = _score(m, xt, yt, params)
            assert _close(moved, base), f"{metric_id}: {name} of {side} moved {base} to {moved}"
    if "sample_permutation_joint" in m.invariances:
        perm = rng.permutation(x.shape[0])
        moved = _score(m, x[perm], y[perm], params)
        assert _close(moved, base), f"{metric_id}: a joint reordering moved {base} to {moved}"


@pytest.mark.parametrize(("metric_id", "extra"), CASES, ids=[f"{i}{p or ''}" for i, p in CASES])
@SETTINGS
@given(data=st.data())
def test_declared_symmetry_and_range(metric_id, extra, data):
    m = get_metric(metric_id)
    x, y, params, _ = data.draw(pairs(m))
    params.update(extra)
    forward, backward = _score(m, x, y, params), _score(m, y, x, params)  # both range-checked
    if m.symmetric:
        assert _close(forward, backward), f"{metric_id}: {forward} vs {backward} with the sides swapped"


@pytest.mark.parametrize(("metric_id", "extra"), CASES, ids=[f"{i}{p or ''}" for i, p in CASES])
@SETTINGS
@given(data=st.data(), c=st.floats(0.1, 10.0))
def test_a_declared_invariant_image_scores_the_identity_score(metric_id, extra, data, c):
    """Y = c X Q + v, keeping only the parts the metric declares invariant, scores `identity_score`."""
    m = get_metric(metric_id)
    if m.identity_score is None:
        return
    x, _, params, rng = data.draw(pairs(m))
    params.update(extra)
    y = x
    for t in _transforms(m, rng, x.shape[1], c).values():
        y = t(y)
    assert _close(_score(m, x, x, params), m.identity_score), metric_id
    assert _close(_score(m, x, y, params), m.identity_score), metric_id


def test_declarations_are_known_and_consistent():
    for m in list_metrics():
        assert set(m.invariances) <= set(INVARIANCES), m.id
        if m.identity_score is not None and m.range is not None:
            best = m.range[1] if m.higher_is_better else m.range[0]
            assert m.identity_score == best, m.id


def test_every_metric_declares_how_its_interval_is_made_and_what_it_is_for():
    from platobench.metrics.registry import ESTIMANDS, INTERVAL_SCHEMES

    for m in list_metrics():
        assert m.interval in INTERVAL_SCHEMES and m.estimand_for(m.params) in ESTIMANDS, m.id
    cka = get_metric("cka")
    assert [cka.estimand_for(cka.resolve_params({"estimator": e})) for e in ("unbiased", "biased")] == [
        "population", "expected_at_n"]
    assert {m.id for m in list_metrics() if m.interval == "subsample"} == {"lcs_knn", "cka"}
    assert {m.id for m in list_metrics() if m.interval == "rate"} == {"cknna", "rotation_residual_heldout"}
    assert {m.id for m in list_metrics() if m.interval == "arcsine_rate"} == {"mutual_knn", "cycle_knn"}
    fields = {f: getattr(cka, f) for f in cka.__dataclass_fields__}
    with pytest.raises(ValueError, match="proportions"):
        Metric(**{**fields, "interval": "arcsine_rate"})  # CKA lies in [-1, 1]
    with pytest.raises(ValueError, match="bootstrap"):
        Metric(**{**fields, "interval": "bootstrap"})
    with pytest.raises(ValueError, match="population value"):
        Metric(**{**fields, "estimand": "population value"})


def test_a_metric_without_a_declaration_says_why_in_its_module_docstring():
    """Asymmetric metrics, metrics with no invariance and metrics with no identity score are explained."""
    for m in list_metrics():
        doc = (inspect.getmodule(m.combine).__doc__ or "").lower()
        if not m.symmetric:
            assert "not symmetric" in doc, m.id
        if not m.invariances:
            assert "not invariant" in doc, m.id
        if m.identity_score is None:
            assert "equal inputs" in doc, m.id


def test_an_unknown_invariance_name_is_refused():
    base = get_metric("cka")
    fields = {f: getattr(base, f) for f in base.__dataclass_fields__}
    with pytest.raises(ValueError, match="rotaton"):
        Metric(**{**fields, "invariances": ("rotaton",)})


def test_the_torch_free_best_values_restate_every_registered_range():
    from platobench.metrics.best_values import BEST_VALUES, INTERVALS, RANGES

    expected = {m.id: None if m.range is None else (m.range[1] if m.higher_is_better else m.range[0])
                for m in list_metrics()}
    assert BEST_VALUES == expected
    assert RANGES == {m.id: m.range for m in list_metrics()}
    assert INTERVALS == {m.id: m.interval for m in list_metrics()}
