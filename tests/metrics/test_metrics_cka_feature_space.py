"""Linear CKA in feature space (platobench.metrics.linear_cka): equal to the literal N×N estimators
(biased HSIC_0, Song et al. 2012 unbiased HSIC_1) to 1e-9 relative for N < D and N > D, the dispatch
in platobench.metrics.kernel (feature space, Gram, mixed grids), invariances, the permutation hook, and
N = 100,000 without any N×N matrix."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from platobench.metrics import layer_grid, score, summarize_layers
from platobench.metrics.kernel import FLOAT32_PRODUCT_MIN, feature_space, self_product
from platobench.metrics.linear_cka import FeatureSummary, combine, summarize


def hsic_literal(k: np.ndarray, l: np.ndarray, estimator: str) -> float:
    """N×N estimators written out: tr(KHLH) / (n-1)^2, or Song et al. 2012 eq. 5 on zero-diagonal kernels."""
    n = k.shape[0]
    if estimator == "biased":
        h = np.eye(n) - 1.0 / n
        return np.trace(k @ h @ l @ h) / (n - 1) ** 2
    kt, lt, one = k.copy(), l.copy(), np.ones(n)
    np.fill_diagonal(kt, 0)
    np.fill_diagonal(lt, 0)
    value = (np.trace(kt @ lt) + (one @ kt @ one) * (one @ lt @ one) / ((n - 1) * (n - 2))
             - 2.0 / (n - 2) * (one @ kt @ lt @ one))
    return value / (n * (n - 3))


def cka_of_kernels(k: np.ndarray, l: np.ndarray, estimator: str) -> float:
    return hsic_literal(k, l, estimator) / np.sqrt(hsic_literal(k, k, estimator) * hsic_literal(l, l, estimator))


def cka_literal(x: np.ndarray, y: np.ndarray, estimator: str) -> float:
    return cka_of_kernels(x @ x.T, y @ y.T, estimator)


def pair(n: int, dx: int, dy: int, seed: int, shift: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Correlated X [n, dx], Y [n, dy] (CKA well away from 0), X translated by `shift`."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, dx)) * rng.uniform(0.2, 3.0, dx)
    y = rng.standard_normal((n, dy))
    m = min(dx, dy, 4)
    y[:, :m] += 1.5 * x[:, :m]
    return x + shift, y


def feature_cka(x: np.ndarray, y: np.ndarray, estimator: str) -> float:
    sx, sy = summarize(torch.from_numpy(x), estimator), summarize(torch.from_numpy(y), estimator)
    return float(combine([sx], [sy])[0, 0])


@pytest.mark.parametrize("estimator", ["biased", "unbiased"])
@pytest.mark.parametrize("n,dx,dy", [(6, 3, 2), (20, 50, 70), (64, 64, 9), (300, 12, 40), (500, 3, 200)])
def test_feature_space_equals_the_literal_n_by_n_estimators(n, dx, dy, estimator):
    x, y = pair(n, dx, dy, seed=n + dx, shift=3.0)
    expected = cka_literal(x, y, estimator)
    assert abs(expected) > 0.05
    assert feature_cka(x, y, estimator) == pytest.approx(expected, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("estimator", ["biased", "unbiased"])
@pytest.mark.parametrize("n,dx,dy", [(400, 10, 20), (40, 60, 80), (400, 10, 120)])  # feature, Gram, mixed
def test_dispatch_scores_equal_literal_and_grid_equals_score(n, dx, dy, estimator):
    x, y = pair(n, dx, dy, seed=7, shift=-2.0)
    x2, y2 = pair(n, dx, dy, seed=8)
    kinds = {feature_space(n, dx), feature_space(n, dy)}
    assert kinds == {(400, 10, 20): {True}, (40, 60, 80): {False}, (400, 10, 120): {True, False}}[(n, dx, dy)]
    assert score("cka", x, y, estimator=estimator) == pytest.approx(cka_literal(x, y, estimator), rel=1e-9)
    grid = layer_grid("cka", [x, x2], [y, y2, x], estimator=estimator)
    for i, a in enumerate([x, x2]):
        for j, b in enumerate([y, y2, x]):
            assert float(grid[i, j]) == pytest.approx(cka_literal(a, b, estimator), rel=1e-9, abs=1e-12)


def test_feature_space_rule():
    assert feature_space(100_000, 256) and feature_space(1024, 32)
    assert not feature_space(1024, 33) and not feature_space(1024, 1024)
    assert feature_space(20_000, 4096)  # an N×N float64 Gram (3.2 GB) is over the budget


@pytest.mark.parametrize("estimator", ["biased", "unbiased"])
def test_feature_space_invariances(estimator):
    x, _ = pair(500, 12, 3, seed=3)
    q, r = np.linalg.qr(np.random.default_rng(4).standard_normal((12, 12)))
    rotated = 7.5 * (x @ (q * np.sign(np.diag(r)))) + 11.0
    y, _ = pair(500, 9, 3, seed=5)
    y[:, :3] += x[:, :3]
    assert isinstance(summarize_layers("cka", [x], [y], estimator=estimator).x[0], FeatureSummary)
    assert score("cka", x, x, estimator=estimator) == pytest.approx(1.0, abs=1e-12)
    assert score("cka", x, rotated, estimator=estimator) == pytest.approx(1.0, abs=1e-12)
    base = score("cka", x, y, estimator=estimator)
    assert score("cka", rotated, 0.01 * y, estimator=estimator) == pytest.approx(base, abs=1e-12)
    assert score("cka", y, x, estimator=estimator) == pytest.approx(base, abs=1e-12)


@pytest.mark.parametrize("dy", [5, 90])  # Y in feature space, or Y as Grams mixed with feature-space X
def test_permutation_hook_on_feature_summaries(dy):
    x, y = pair(200, 6, dy, seed=9)
    perm = torch.from_numpy(np.random.default_rng(1).permutation(200))
    s = summarize_layers("cka", [x], [y])
    expected = score("cka", x, y[perm.numpy()])
    assert float(s.grid(perm=perm)[0, 0]) == pytest.approx(expected, rel=1e-9, abs=1e-12)


def test_degenerate_layer_is_refused():
    x = np.zeros((50, 3))
    x[:, 0] = np.arange(50) % 2  # varies, so the layer passes check_varies
    with pytest.raises(Exception, match="centred Gram matrix is zero"):
        summarize(torch.from_numpy(np.ones((50, 3))), "unbiased")
    assert score("cka", x, x) == pytest.approx(1.0)


LARGE_N = """
import json, resource, sys, time, torch
from platobench.metrics import layer_grid
n, d = 100_000, 256
g = torch.Generator().manual_seed(0)
x = torch.randn(n, d, generator=g)
y = x[:, :128] @ torch.randn(128, 192, generator=g) + torch.randn(n, 192, generator=g)
t = time.perf_counter()
out = {e: layer_grid("cka", [x], [y, 3 * x + 1], estimator=e)[0].tolist() for e in ("biased", "unbiased")}
out["seconds"] = time.perf_counter() - t
out["peak_gib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
print(json.dumps(out))
"""


def test_large_n_runs_without_an_n_by_n_matrix():
    """N = 100,000, D = 256: an N×N float64 Gram alone would be 80 GB; peak RSS stays under 4 GiB."""
    root = Path(__file__).resolve().parents[2]  # this checkout's platobench
    run = subprocess.run([sys.executable, "-c", LARGE_N], capture_output=True, text=True, check=True,
                         timeout=300, cwd=root)
    out = json.loads(run.stdout)
    assert out["peak_gib"] < 4.0  # the large-N memory target; ~1.9 GiB on 1 thread, ~3.0 GiB on 2
    for est in ("biased", "unbiased"):
        related, same = out[est]
        assert 0.2 < related < 0.9 and same == pytest.approx(1.0, abs=1e-9)
    assert out["biased"][0] == pytest.approx(out["unbiased"][0], abs=0.01)  # estimators agree at large N


def rbf_literal(x: np.ndarray, frac: float = 1.0) -> np.ndarray:
    """exp(-d^2 / (2 sigma^2)), sigma = frac x the lower median pair distance, all in float64."""
    d2 = np.maximum(((x**2).sum(1)[:, None] + (x**2).sum(1)[None, :] - 2 * x @ x.T), 0.0)
    pairs = np.sort(d2[np.triu_indices(len(x), 1)])
    return np.exp(-d2 / (2 * frac**2 * pairs[(len(pairs) - 1) // 2]))


@pytest.mark.parametrize("estimator", ["biased", "unbiased"])
@pytest.mark.parametrize("n,tol", [(256, 1e-9), (512, 1e-6)])  # float64, float32 Gram product
def test_gram_path_on_a_dominant_dimension_equals_float64(n, tol, estimator):
    """The Gram path (N < D^2) on features with a large common offset and one dimension 100x the others
    against the literal float64 estimators; at N = D = 512 the product is float32."""
    d = n
    assert not feature_space(n, d) and (n * n * d >= FLOAT32_PRODUCT_MIN) == (n == 512)
    x, y = pair(n, d, d, seed=11, shift=1e3)
    x[:, 0] *= 100.0
    xc, yc = x - x.mean(0), y - y.mean(0)  # CKA is translation invariant; the literal forms are not stable
    assert score("cka", x, y, estimator=estimator) == pytest.approx(cka_literal(xc, yc, estimator), rel=tol)
    k, l = rbf_literal(xc), rbf_literal(yc)
    expected = cka_of_kernels(k, l, estimator)
    assert score("cka", x, y, kernel="rbf", estimator=estimator) == pytest.approx(expected, rel=tol)


def test_self_product_is_the_gram():
    x = torch.from_numpy(pair(700, 40, 1, seed=2)[0])
    assert torch.allclose(self_product(x), x @ x.T, rtol=1e-12, atol=1e-10)
    assert self_product(x[:5]).shape == (5, 5) and torch.allclose(self_product(x[:5]), x[:5] @ x[:5].T)
    assert torch.allclose(self_product(x.float()), x @ x.T, rtol=1e-5, atol=1e-3)


@pytest.mark.parametrize("estimator", ["biased", "unbiased"])
def test_float32_features_with_an_offset_equal_float64(estimator):
    """float32 features with a common offset of 1e3 and one dimension 100x the others (float32 product,
    float32 centring by the rounded float64 mean) against the literal estimator on the same values."""
    x, y = pair(512, 512, 512, seed=12, shift=1e3)
    x[:, 0] *= 100.0
    x32, y32 = torch.from_numpy(x).float(), torch.from_numpy(y).float()
    x64, y64 = x32.double().numpy(), y32.double().numpy()
    want = cka_literal(x64 - x64.mean(0), y64 - y64.mean(0), estimator)
    assert score("cka", x32, y32, estimator=estimator) == pytest.approx(want, rel=1e-6)
