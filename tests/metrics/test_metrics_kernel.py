"""CKA (platobench.metrics.kernel): closed forms (biased HSIC, Song et al. unbiased HSIC, RBF with the
median heuristic), invariances, grid == per pair, permutation hook, errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from platobench.errors import UserError
from platobench.metrics import get_metric, layer_grid, score
from platobench.metrics.kernel import gram


def rand(n: int, d: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, d))


def hsic_biased(k: np.ndarray, l: np.ndarray) -> float:
    n = k.shape[0]
    h = np.eye(n) - 1.0 / n
    return np.trace(k @ h @ l @ h) / (n - 1) ** 2


def hsic_song(k: np.ndarray, l: np.ndarray) -> float:
    """Song et al. 2012, eq. 5, written out literally."""
    n = k.shape[0]
    kt, lt = k.copy(), l.copy()
    np.fill_diagonal(kt, 0)
    np.fill_diagonal(lt, 0)
    one = np.ones(n)
    value = (
        np.trace(kt @ lt)
        + (one @ kt @ one) * (one @ lt @ one) / ((n - 1) * (n - 2))
        - 2.0 / (n - 2) * (one @ kt @ lt @ one)
    )
    return value / (n * (n - 3))


def cka_direct(k: np.ndarray, l: np.ndarray, hsic) -> float:
    return hsic(k, l) / np.sqrt(hsic(k, k) * hsic(l, l))


def random_orthogonal(d: int, seed: int) -> np.ndarray:
    q, r = np.linalg.qr(np.random.default_rng(seed).standard_normal((d, d)))
    return q * np.sign(np.diag(r))


@pytest.mark.parametrize("estimator,hsic", [("biased", hsic_biased), ("unbiased", hsic_song)])
def test_linear_cka_matches_direct_hsic_formula(estimator, hsic):
    x, y = rand(30, 7, 0), rand(30, 11, 1)
    y[:, :3] += 2 * x[:, :3]
    expected = cka_direct(x @ x.T, y @ y.T, hsic)
    assert score("cka", x, y, estimator=estimator) == pytest.approx(expected, abs=1e-10)


def test_rbf_cka_matches_direct_formula_with_median_bandwidth():
    n = 10  # 45 pairs: an odd count, so the median is a single pair distance
    x, y = rand(n, 4, 2), rand(n, 6, 3)
    y[:, :2] += x[:, :2]

    def rbf(a, frac):
        d2 = ((a[:, None, :] - a[None, :, :]) ** 2).sum(-1)
        med = np.median(np.sqrt(d2[np.triu_indices(n, 1)]))
        return np.exp(-d2 / (2 * (frac * med) ** 2))

    for frac in (0.5, 1.0, 2.0):
        expected = cka_direct(rbf(x, frac), rbf(y, frac), hsic_song)
        assert score("cka", x, y, kernel="rbf", sigma_frac=frac) == pytest.approx(expected, abs=1e-10)
    assert np.allclose(gram(torch.from_numpy(x), "rbf", 1.0).numpy(), rbf(x, 1.0), atol=1e-12)


def test_identical_inputs_score_one_and_independent_near_zero():
    x = rand(200, 20, 4)
    for est in ("biased", "unbiased"):
        for kernel in ("linear", "rbf"):
            assert score("cka", x, x, estimator=est, kernel=kernel) == pytest.approx(1.0, abs=1e-10)
    assert abs(score("cka", x, rand(200, 20, 5))) < 0.03  # unbiased: E = 0 under independence
    # the biased estimator is inflated on independent data (why unbiased is the default)
    assert score("cka", x, rand(200, 20, 5), estimator="biased") > 0.05


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    c=st.floats(0.1, 10.0),
    shift=st.floats(-5.0, 5.0),
    kernel=st.sampled_from(["linear", "rbf"]),
    estimator=st.sampled_from(["biased", "unbiased"]),
)
def test_invariant_to_rotation_scaling_translation(seed, c, shift, kernel, estimator):
    x, z = rand(24, 6, seed), rand(24, 5, seed + 1)
    x2 = c * x @ random_orthogonal(6, seed + 2) + shift
    kw = {"kernel": kernel, "estimator": estimator}
    assert score("cka", x, x2, **kw) == pytest.approx(1.0, abs=1e-8)
    assert score("cka", x2, z, **kw) == pytest.approx(score("cka", x, z, **kw), abs=1e-8)


def test_symmetric_deterministic_and_float64():
    x, y = rand(40, 5, 6).astype(np.float32), rand(40, 9, 7).astype(np.float32)
    assert score("cka", x, y) == score("cka", x, y)
    assert score("cka", x, y) == pytest.approx(score("cka", y, x), abs=1e-12)
    assert layer_grid("cka", [x], [y]).dtype == torch.float64


@pytest.mark.parametrize("kw", [{}, {"estimator": "biased"}, {"kernel": "rbf", "sigma_frac": 0.8}])
def test_grid_equals_per_pair(kw):
    xs = [rand(32, d, 10 + d) for d in (3, 8, 20)]
    ys = [xs[1] @ rand(8, 6, 1) + 0.3 * rand(32, 6, 2), rand(32, 4, 3)]
    grid = layer_grid("cka", xs, ys, **kw)
    pairs = torch.tensor([[score("cka", x, y, **kw) for y in ys] for x in xs], dtype=torch.float64)
    assert torch.allclose(grid, pairs, atol=1e-6, rtol=0)


@pytest.mark.parametrize("estimator", ["biased", "unbiased"])
def test_permute_hook_gives_summary_of_permuted_rows(estimator):
    m = get_metric("cka")
    p = m.resolve_params({"estimator": estimator})
    y = torch.from_numpy(rand(15, 4, 8))
    perm = torch.randperm(15, generator=torch.Generator().manual_seed(0))
    assert torch.allclose(m.extra["permute"](m.summarize_x(y, p), perm), m.summarize_x(y[perm], p), atol=1e-12)


def test_descriptor_states_estimator_and_kernel():
    d = get_metric("cka").describe()
    assert d["params"]["estimator"] == "unbiased" and d["params"]["kernel"] == "linear"
    assert d["higher_is_better"] is True and d["symmetric"] is True


@pytest.mark.parametrize(
    "kw,message",
    [
        ({"kernel": "poly"}, "kernel must be one of"),
        ({"estimator": "debiased"}, "estimator must be one of"),
        ({"sigma_frac": 0.0}, "sigma_frac must be a finite number > 0"),
        ({"sigma_frac": float("nan")}, "sigma_frac must be a finite number > 0"),
        ({"gamma": 1.0}, "unknown parameter"),
    ],
)
def test_bad_parameters_are_named(kw, message):
    x = rand(10, 3, 0)
    with pytest.raises(UserError, match=message):
        score("cka", x, x, **kw)


def test_too_few_samples_and_constant_features():
    x = rand(3, 2, 0)
    with pytest.raises(UserError, match="N >= 4"):
        score("cka", x, x)
    assert score("cka", x, x, estimator="biased") == pytest.approx(1.0)
    with pytest.raises(UserError, match="constant"):
        score("cka", np.ones((10, 3)), rand(10, 3, 1))
