"""The stitching map (platobench.experiments.stitch.maps): planted maps recovered from pairs and without pairs,
semi-orthogonality of every fit, the seeded random map, the shuffled control, counts and refusals."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from platobench.errors import UserError
from platobench.experiments.stitch.maps import METHODS, Normaliser, fit_map, random_map

WIDTHS = [(5, 8), (6, 6), (8, 5)]


def planted(n: int, d_v: int, d_t: int, seed: int = 0, n_train: int | None = None):
    """(X [n, d_v], Z [n, d_t], Q0 [d_v, d_t]) with Z = Normaliser.fit(X[:n_train])(X) @ Q0 exactly (float64).
    Latent scales decay from 1 to 0.3 (a well-separated spectrum). When d_v > d_t, X lies (up to an
    offset) in the column span of Q0: otherwise no semi-orthogonal map reproduces Z from x_norm in the
    zero-padded Procrustes sense."""
    rng = np.random.default_rng(seed)
    q0 = random_map(d_v, d_t, seed + 100).numpy()
    d = min(d_v, d_t)
    latent = rng.standard_normal((n, d)) * np.linspace(1.0, 0.3, d)
    x = (latent if d_v <= d_t else latent @ q0.T) + rng.standard_normal(d_v) * 3.0
    norm = Normaliser.fit(x[: n_train or n])
    z = norm.normalise(x).numpy() @ q0
    return x, z, q0


def semi_orthogonal_error(q: torch.Tensor) -> float:
    g = q @ q.T if q.shape[0] <= q.shape[1] else q.T @ q
    return float((g - torch.eye(g.shape[0], dtype=q.dtype)).abs().max())


def relative_error(pred: torch.Tensor, target: np.ndarray) -> float:
    t = torch.as_tensor(target, dtype=torch.float64)
    return float((pred.double() - t).square().sum() / t.square().sum())


def test_normaliser_known_answer():
    x = np.array([[1.0, 2.0], [3.0, 2.0], [5.0, 8.0]])
    norm = Normaliser.fit(x)
    np.testing.assert_allclose(norm.mean.numpy(), [3.0, 4.0])
    assert norm.mean.dtype == torch.float64
    # centred rows (-2,-2), (0,-2), (2,4): squared norms 8, 4, 20 -> mean 32/3
    assert norm.scale == pytest.approx(np.sqrt(32 / 3), rel=1e-12)
    out = norm(x)
    assert out.dtype == torch.float32 and out.shape == (3, 2)
    assert out.double().square().sum(dim=1).mean().item() == pytest.approx(1.0, abs=1e-6)
    np.testing.assert_allclose(out.numpy(), (x - [3.0, 4.0]) / np.sqrt(32 / 3), atol=1e-6)


@pytest.mark.parametrize("d_v, d_t", WIDTHS)
def test_paired_recovers_the_planted_map(d_v, d_t):
    x, z, q0 = planted(80, d_v, d_t, n_train=60)
    for k in (max(d_v, d_t), 60):
        fitted = fit_map("paired", x[:60], z[:60], k=k, seed=1)
        np.testing.assert_allclose(fitted.weight.numpy(), q0, atol=1e-8)
        pred = fitted.apply(x[60:])
        assert pred.dtype == torch.float32 and pred.shape == (20, d_t)
        np.testing.assert_allclose(pred.numpy(), z[60:], atol=1e-5)
        assert fitted.k == k and fitted.method == "paired"


@pytest.mark.parametrize("d_v, d_t", WIDTHS)
@pytest.mark.parametrize("method", METHODS)
def test_every_map_is_semi_orthogonal(method, d_v, d_t):
    x, z, _ = planted(30, d_v, d_t, seed=2)
    k = 3 if method in ("paired", "shuffled") else None  # k < D: an underdetermined Procrustes fit
    fitted = fit_map(method, x, z, k=k, seed=4)
    assert fitted.weight.dtype == torch.float64 and fitted.weight.shape == (d_v, d_t)
    assert semi_orthogonal_error(fitted.weight) < 1e-10


def test_random_map_is_seeded_and_ignores_the_data():
    x, z, _ = planted(40, 6, 9)
    a = fit_map("random", x, z, seed=3)
    b = fit_map("random", x[::-1].copy() * 5.0, np.zeros_like(z), seed=3)
    assert torch.equal(a.weight, b.weight) and torch.equal(a.weight, random_map(6, 9, 3))
    assert not torch.allclose(a.weight, fit_map("random", x, z, seed=4).weight)
    assert a.k == 0 and a.extra == {}


def test_random_map_is_haar():
    """Haar on O(3): every entry is symmetric about 0 with E[q^2] = 1/3, and det = +1 or -1 equally often.
    Unsigned QR factors would bias the entries' signs."""
    qs = np.stack([random_map(3, 3, s).numpy() for s in range(2000)])
    assert np.abs(qs.mean(axis=0)).max() < 0.06  # standard error of a mean ~ 0.013
    np.testing.assert_allclose((qs**2).mean(axis=0), 1 / 3, atol=0.03)
    assert abs(np.mean(np.linalg.det(qs) > 0) - 0.5) < 0.05


def test_shuffled_control_breaks_the_pairing():
    x, z, q0 = planted(100, 6, 8, n_train=80)
    paired = fit_map("paired", x[:80], z[:80], k=40, seed=5)
    shuffled = fit_map("shuffled", x[:80], z[:80], k=40, seed=5)
    assert shuffled.k == 40 and shuffled.method == "shuffled"
    assert relative_error(paired.apply(x[80:]), z[80:]) < 1e-10
    assert relative_error(shuffled.apply(x[80:]), z[80:]) > 0.5
    assert not np.allclose(shuffled.weight.numpy(), q0, atol=0.1)


@pytest.mark.parametrize("d_v, d_t", WIDTHS)
def test_unpaired_recovers_the_planted_map_without_pairs(d_v, d_t):
    x, z, q0 = planted(130, d_v, d_t, seed=1, n_train=100)
    fitted = fit_map("unpaired", x[:100], z[:100], seed=2, unpaired_n=60)
    assert fitted.k == 0 and fitted.method == "unpaired"
    assert fitted.extra["diagnostic"]["true_partner_share"] == 1.0
    assert fitted.extra["n_matched"] == 60 and fitted.extra["solver"] == "gw" and fitted.extra["restarts"] == 0
    assert fitted.extra["kernel_correlation"] == pytest.approx(1.0, abs=1e-9)
    np.testing.assert_allclose(fitted.weight.numpy(), q0, atol=1e-8)
    np.testing.assert_allclose(fitted.apply(x[100:]).numpy(), z[100:], atol=1e-5)


def test_unpaired_fails_on_unrelated_sides():
    x, _, _ = planted(60, 5, 5, seed=0)
    _, z, _ = planted(60, 5, 5, seed=7)
    fitted = fit_map("unpaired", x, z, seed=0)
    assert fitted.extra["diagnostic"]["true_partner_share"] < 0.2
    assert fitted.extra["kernel_correlation"] < 0.9


def test_counts_and_describe():
    rng = np.random.default_rng(0)
    square = fit_map("random", rng.standard_normal((3, 384)), rng.standard_normal((3, 384)))
    assert (square.n_entries, square.n_free) == (147456, 73536)  # 384^2 and dim O(384) = 384 * 383 / 2
    assert semi_orthogonal_error(square.weight) < 1e-10
    x, z, _ = planted(20, 4, 6)
    fitted = fit_map("paired", x, z, k=10, seed=3)
    assert (fitted.n_entries, fitted.n_free) == (24, 14)  # 4 * 6 - 4 * 5 / 2
    transposed = fit_map("random", z, x)
    assert (transposed.n_entries, transposed.n_free) == (24, 14)
    assert transposed.describe()["widths"] == {"d_v": 6, "d_t": 4}
    desc = json.loads(json.dumps(fit_map("unpaired", x, z, seed=1).describe()))
    assert set(desc) == {"method", "k", "seed", "n_entries", "n_free", "widths", "extra"}
    assert desc["method"] == "unpaired" and desc["k"] == 0 and desc["seed"] == 1 and desc["n_entries"] == 24
    assert desc["extra"]["n_matched"] == 20


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"method": "ridge"}, r"method must be one of \['paired', 'shuffled', 'unpaired', 'random'\]"),
        ({"k": 0}, "k must be an integer >= 1"),
        ({"k": 21}, "k must be at most the number of train samples N=20"),
        ({"method": "shuffled", "k": 1}, "k must be >= 2 for method 'shuffled'"),
        ({"method": "unpaired", "k": 5}, "k .* applies to methods 'paired' and 'shuffled' only"),
        ({"method": "unpaired", "unpaired_n": 2}, "unpaired_n must be an integer >= 3"),
        ({"method": "unpaired", "solver": "sinkhorn"}, "solver must be one of"),
        ({"seed": -1}, "seed must be an integer >= 0"),
        ({"Z": np.zeros((19, 6))}, "X_train has 20 rows but Z_train has 19"),
        ({"X": np.zeros((2, 4)), "Z": np.zeros((2, 6))}, "at least 3 train samples"),
        ({"X": np.ones((20, 4))}, "X_train is constant"),
    ],
)
def test_refusals_name_the_option(kwargs, message):
    x, z, _ = planted(20, 4, 6)
    args = {"method": "paired", "X": x, "Z": z, **kwargs}
    method, X, Z = args.pop("method"), args.pop("X"), args.pop("Z")
    with pytest.raises(UserError, match=message):
        fit_map(method, X, Z, **args)


def test_apply_and_normaliser_refusals():
    x, z, _ = planted(20, 4, 6)
    fitted = fit_map("paired", x, z)
    with pytest.raises(UserError, match="X has 5 features but the normaliser was fitted on 4"):
        fitted.apply(np.zeros((3, 5)))
    with pytest.raises(UserError, match="at least 2 rows"):
        Normaliser.fit(np.zeros((1, 4)))
    with pytest.raises(UserError, match="d_t must be an integer >= 1"):
        random_map(3, 0, 0)
