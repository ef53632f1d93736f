"""Statistics (platobench.metrics.stats): chance levels, permutation null (p-value range and
calibration on identical and independent inputs, selection inside each draw, hook == recomputation),
subsampling confidence intervals, errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from platobench.errors import UserError
from platobench.metrics import get_metric, score, summarize_layers
from platobench.metrics.stats import calibrated_score, chance_level, permutation_null, subsample_ci


def rand(n: int, d: int, seed: int) -> torch.Tensor:
    return torch.randn(n, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def related(n: int, seed: int) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Two 'models' whose layers share a latent with strengths that vary by layer."""
    z = rand(n, 4, seed)
    xs = [z @ rand(4, 6, seed + 1 + i) * s + rand(n, 6, seed + 10 + i) for i, s in enumerate((0.2, 1.0, 0.5))]
    ys = [z @ rand(4, 5, seed + 20 + j) * s + rand(n, 5, seed + 30 + j) for j, s in enumerate((1.0, 0.1))]
    return xs, ys


def test_chance_levels():
    assert chance_level("mutual_knn", 101, k=10) == pytest.approx(0.1)
    assert chance_level("cka", 50) == 0.0
    assert chance_level("cka", 50, estimator="biased") is None
    assert chance_level("rotation_residual", 50) is None


@pytest.mark.parametrize("metric", ["cka", "mutual_knn", "svcca", "rotation_residual"])
def test_identical_inputs_p_minimal_and_calibrated_one(metric):
    x = rand(40, 6, 0)
    r = permutation_null(metric, [x], [x], n_perm=19, seed=1)
    assert r.p_value == pytest.approx(1 / 20)
    assert r.calibrated == pytest.approx(1.0, abs=1e-9)
    assert r.values.shape == (19,)
    better = r.values < r.observed if get_metric(metric).higher_is_better else r.values > r.observed
    assert better.all()


def test_independent_inputs_p_values_spread_and_calibrated_near_zero():
    ps, cal = [], []
    for s in range(12):
        r = permutation_null("cka", [rand(30, 5, 100 + s)], [rand(30, 5, 200 + s)], n_perm=19, seed=s)
        assert 1 / 20 <= r.p_value <= 1
        ps.append(r.p_value)
        cal.append(r.calibrated)
    assert 0.25 < np.mean(ps) < 0.75  # uniform on {1/20, ..., 1} has mean 0.525
    assert abs(np.mean(cal)) < 0.05


def test_best_of_grid_null_takes_the_max_inside_each_draw():
    xs, ys = related(40, 1)
    best = permutation_null("mutual_knn", xs, ys, selection="best", n_perm=15, seed=3, k=5)
    cells = [permutation_null("mutual_knn", xs, ys, selection=(i, j), n_perm=15, seed=3, k=5).values
             for i in range(3) for j in range(2)]
    assert torch.equal(best.values, torch.stack(cells).amax(dim=0))
    assert best.selection.mode == "best" and best.observed == score("mutual_knn", xs[best.selection.x_layer],
                                                                     ys[best.selection.y_layer], k=5)


def test_lower_is_better_direction():
    xs, ys = related(40, 2)
    r = permutation_null("rotation_residual", xs, ys, n_perm=9, seed=0)
    assert r.selection.score == pytest.approx(min(score("rotation_residual", x, y) for x in xs for y in ys), abs=1e-12)
    assert (r.values > r.observed).all()  # shuffling the pairing destroys the shared latent
    assert r.p_value == pytest.approx((1 + int((r.values <= r.observed).sum())) / 10)
    assert r.calibrated == pytest.approx(1 - r.observed / r.mean)


def test_hook_and_recomputation_give_the_same_null(monkeypatch):
    xs, ys = related(30, 4)
    fast = permutation_null("cka", xs, ys, n_perm=5, seed=7)
    monkeypatch.delitem(get_metric("cka").extra, "permute")
    slow = permutation_null("cka", xs, ys, n_perm=5, seed=7)
    assert torch.allclose(fast.values, slow.values, atol=1e-12)


def test_null_without_hook_for_heldout_residual_and_determinism():
    xs, ys = related(24, 5)
    a = permutation_null("rotation_residual_heldout", xs, ys, selection="last", n_perm=4, seed=1)
    b = permutation_null("rotation_residual_heldout", xs, ys, selection="last", n_perm=4, seed=1)
    c = permutation_null("rotation_residual_heldout", xs, ys, selection="last", n_perm=4, seed=2)
    assert torch.equal(a.values, b.values) and not torch.equal(a.values, c.values)
    assert a.selection.mode == "last" and (a.selection.x_layer, a.selection.y_layer) == (2, 1)
    json.dumps(a.to_record())


def test_precomputed_summaries_are_reused_and_checked():
    xs, ys = related(30, 8)
    s = summarize_layers("cka", xs, ys)
    assert torch.equal(permutation_null("cka", xs, ys, n_perm=3, summaries=s).values,
                       permutation_null("cka", xs, ys, n_perm=3).values)
    with pytest.raises(UserError, match="summaries were computed for cka"):
        permutation_null("cka", xs, ys, n_perm=3, summaries=s, estimator="biased")


def test_calibrated_score_formula():
    assert calibrated_score(get_metric("cka"), 0.6, 0.2) == pytest.approx(0.5)
    assert calibrated_score(get_metric("rotation_residual"), 0.5, 1.5) == pytest.approx(2 / 3)


def test_subsample_ci_brackets_the_score_and_is_deterministic():
    xs, ys = related(60, 6)
    obs = score("cka", xs[1], ys[0])
    lo, hi = subsample_ci("cka", xs, ys, selection=(1, 0), n_sub=20, seed=0)
    assert lo < obs < hi and hi - lo < 0.5
    assert (lo, hi) == subsample_ci("cka", xs, ys, selection=(1, 0), n_sub=20, seed=0)
    lo2, hi2 = subsample_ci("cka", xs, ys, selection=(1, 0), n_sub=20, seed=0, level=0.5)
    assert lo <= lo2 <= hi2 <= hi


def test_subsample_ci_is_narrower_with_more_samples():
    widths = []
    for n in (40, 160):
        xs, ys = related(n, 7)
        lo, hi = subsample_ci("cka", xs[1:2], ys[:1], n_sub=30, seed=0)
        widths.append(hi - lo)
    assert widths[1] < widths[0]


def test_errors():
    x = rand(20, 3, 0)
    with pytest.raises(UserError, match="n_perm must be an integer >= 1"):
        permutation_null("cka", [x], [x], n_perm=0)
    with pytest.raises(UserError, match="seed must be an integer >= 0"):
        permutation_null("cka", [x], [x], seed=-2)
    with pytest.raises(UserError, match="frac must be a number strictly between 0 and 1"):
        subsample_ci("cka", [x], [x], frac=1.0)
    with pytest.raises(UserError, match="level must be"):
        subsample_ci("cka", [x], [x], level=95)
    with pytest.raises(UserError, match="subsets of 6 samples are too small for mutual_knn"):
        subsample_ci("mutual_knn", [x], [x], frac=0.3, k=10)
    with pytest.raises(UserError, match="layer selection must be"):
        permutation_null("cka", [x], [x], selection="first")
    with pytest.raises(UserError, match="n must be an integer >= 2"):
        chance_level("mutual_knn", 1)


def reference_ci(metric: str, xs, ys, sel, n_sub: int, frac: float, seed: int, preprocess: str, level: float = 0.95,
                 **params) -> tuple[float, float]:
    """The interval from its definition (stats module docstring), every subset's whole grid scored from
    scratch on indexed features: the same seeded subsets, obs +- t s."""
    import math

    from scipy import stats as sps

    from platobench.metrics import get_metric, layer_grid
    from platobench.metrics.resampling import rate_exponent
    from platobench.metrics.selection import select

    m = get_metric(metric)
    n = xs[0].shape[0]
    gen = torch.Generator().manual_seed(seed)
    size = round(frac * n)
    if m.interval == "jackknife":
        groups = torch.tensor_split(torch.randperm(n, generator=gen), n_sub)
        subsets = [torch.tensor(sorted(set(range(n)) - set(g.tolist()))) for g in groups]
    else:  # rate, arcsine_rate: then as many subsets of half as many samples
        sizes = [size] * n_sub + ([round(size / 2)] * n_sub if m.interval in ("rate", "arcsine_rate") else [])
        subsets = [torch.randperm(n, generator=gen)[:k].sort().values for k in sizes]

    def grid(idx=None):
        a = xs if idx is None else [x[idx] for x in xs]
        b = ys if idx is None else [y[idx] for y in ys]
        return layer_grid(metric, a, b, preprocess=preprocess, **params)

    def scored(idx=None):
        return select(grid(idx), sel, m.higher_is_better).score
    s = torch.tensor([scored(idx) for idx in subsets], dtype=torch.float64)
    obs = scored()
    # arcsine_rate: the rate scheme on phi = arcsin(sqrt(score)), mapped back by d score / d phi = sin(2 phi)
    phi = (lambda v: torch.asin(torch.sqrt(v.double()))) if m.interval == "arcsine_rate" else (lambda v: v.double())
    if m.interval == "jackknife":
        se = math.sqrt((n_sub - 1) / n_sub * float(((s - s.mean()) ** 2).sum()))
    elif m.interval == "subsample":
        se = float(s.std()) * math.sqrt(size / (n - size))
    else:  # the exponent from the variances of every cell the implementation scores (one for a fixed pair)
        cells = phi(torch.stack([grid(idx).flatten() if sel == "best" else s[b : b + 1] for b, idx in enumerate(subsets)]))
        small = round(size / 2)
        ratio = float(cells[n_sub:].var(0).sum() / cells[:n_sub].var(0).sum())
        if m.interval == "arcsine_rate":  # the F mean's bias of a variance ratio taken out
            ratio *= (n_sub - 3) / (n_sub - 1)
        a = rate_exponent(ratio, n, size, small)
        t = phi(s)
        se = math.sqrt((float(t[:n_sub].var()) / ((n / size) ** a - 1) + float(t[n_sub:].var()) / ((n / small) ** a - 1)) / 2)
        if m.interval == "arcsine_rate":
            se *= math.sin(2 * math.asin(math.sqrt(obs)))
    half = sps.t.ppf(0.5 + level / 2, n_sub - 1) * se
    lo, hi = obs - half, obs + half
    return (max(lo, m.range[0]), min(hi, m.range[1])) if m.range else (lo, hi)


@pytest.mark.parametrize("metric", ["cka", "mutual_knn", "cycle_knn", "rotation_residual_heldout"])
def test_fixed_pair_ci_equals_scoring_the_whole_grid_per_subset(metric):
    """A fixed layer pair's CI summarises only that pair per subset; it must equal taking that entry of the
    full grid of each subset (same seeded subsets, same interval formula), for both schemes."""
    g = torch.Generator().manual_seed(3)
    xs = [torch.randn(40, 6, generator=g) for _ in range(3)]
    ys = [torch.randn(40, 5, generator=g) for _ in range(2)]
    ys[1] = ys[1] + xs[2][:, :5]
    params = {"k": 5} if metric.endswith("_knn") else {}
    lo, hi = subsample_ci(metric, xs, ys, selection="last", n_sub=8, frac=0.5, seed=4, preprocess="prh", **params)
    ref = reference_ci(metric, xs, ys, "last", 8, 0.5, 4, "prh", **params)
    assert (lo, hi) == pytest.approx(ref, abs=1e-12)


def test_jackknife_leaves_every_sample_out_exactly_once():
    from platobench.metrics.stats import _subsets

    subsets = list(_subsets("jackknife", 23, 5, 0, torch.Generator().manual_seed(0)))
    left_out = [set(range(23)) - set(s.tolist()) for s in subsets]
    assert sorted(v for g in left_out for v in g) == list(range(23))
    assert sorted(len(g) for g in left_out) == [4, 4, 5, 5, 5]


def test_interval_is_symmetric_t_interval_on_the_standard_error():
    """Unclipped, the interval is obs +- t_{B-1} s: its half-width at two levels has the ratio of the t
    quantiles, and B=2 (1 df) is far wider than the normal quantile would give."""
    from scipy import stats as sps

    from platobench.metrics import score

    g = torch.Generator().manual_seed(8)
    x = torch.randn(80, 6, generator=g, dtype=torch.float64)
    y = x @ torch.randn(6, 6, generator=g, dtype=torch.float64) + 2 * torch.randn(80, 6, generator=g, dtype=torch.float64)
    obs = score("cka", x, y)
    lo95, hi95 = subsample_ci("cka", [x], [y], n_sub=10, seed=1)
    lo50, hi50 = subsample_ci("cka", [x], [y], n_sub=10, seed=1, level=0.5)
    assert hi95 - obs == pytest.approx(obs - lo95, abs=1e-12)
    assert (hi95 - lo95) / (hi50 - lo50) == pytest.approx(sps.t.ppf(0.975, 9) / sps.t.ppf(0.75, 9), rel=1e-9)


def prh_case(n: int, widths: list[int], seed: int, dtype: torch.dtype = torch.float32) -> list[torch.Tensor]:
    """Layers with growing scales and an outlier column, so that the prh clamp matters."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for i, w in enumerate(widths):
        x = torch.randn(n, w, generator=g, dtype=torch.float64) * (1 + i)
        x[:, 0] += 20 * torch.rand(n, generator=g, dtype=torch.float64)
        out.append(x.to(dtype))
    return out


#: permutation_null with preprocess="prh" on `prh_case()`, as float.hex, computed by the code before the
#: per-sample quantiles were cached (commit 4c35503; the same on 1 and 2 threads). The intervals of the same
#: calls are checked against `reference_ci`, which clamps every subset from scratch.
PRH_BEFORE = {
    "null/mutual_knn/best": [
        "0x1.d0369d0369d03p-4",
        "0x1.8bf258bf258bfp-4",
        "0x1.7e4b17e4b17e5p-4",
        "0x1.c28f5c28f5c29p-4",
        "0x1.70a3d70a3d70ap-4",
    ],
    "null/mutual_knn/last": [
        "0x1.d0369d0369d03p-4",
        "0x1.62fc962fc9630p-4",
        "0x1.3a06d3a06d3a0p-4",
        "0x1.7e4b17e4b17e5p-4",
        "0x1.1111111111111p-4",
    ],
    "null/cka/best": [
        "0x1.412c46befe5d5p-6",
        "0x1.e5ae177bbe3c9p-6",
        "0x1.7c2f5fdf3259ap-6",
        "0x1.2a72623a157e0p-5",
        "0x1.b6fcb55f5b030p-11",
    ],
    "null/cka/last": [
        "0x1.412c46befe5d2p-6",
        "-0x1.48e1ef6afe38bp-5",
        "-0x1.abd90ea367cb2p-7",
        "0x1.518a85d326ae8p-11",
        "0x1.b6fcb55f5b070p-11",
    ],
    "null/rotation_residual_heldout/best": [
        "0x1.fa5aa1357dcfep+0",
        "0x1.dea3a84ed4b88p+0",
        "0x1.ee0684b90e6fcp+0",
        "0x1.d1c90aaf7cca3p+0",
        "0x1.f8e100d5d748ap+0",
    ],
    "null/rotation_residual_heldout/last": [
        "0x1.fa5aa1357dcfep+0",
        "0x1.0e33427ce220dp+1",
        "0x1.f900854885b11p+0",
        "0x1.fe30665142e65p+0",
        "0x1.f8e100d5d748ap+0",
    ],
    "null/heldout64": [
        "0x1.f7868fa83a420p+0",
        "0x1.f06817cd48621p+0",
        "0x1.96a689aff5b6ap+0",
        "0x1.dca03314bdc93p+0",
    ],
}


@pytest.mark.parametrize("sel", ["best", "last"])
def test_cycle_knn_interval_is_the_rate_scheme_on_the_arcsine_scale(sel):
    """Cycle kNN's interval from its definition (`reference_ci`: every subset's grid from scratch, the exponent
    and the standard error on arcsin(sqrt(score)), back by the delta method)."""
    xs, ys = prh_case(60, [12, 7, 20], 1), prh_case(60, [9, 16], 2)
    ys = [y + 0.5 * xs[2][:, : y.shape[1]] for y in ys]
    lo, hi = subsample_ci("cycle_knn", xs, ys, selection=sel, n_sub=6, frac=0.5, seed=7, preprocess="prh", k=5)
    assert (lo, hi) == pytest.approx(reference_ci("cycle_knn", xs, ys, sel, 6, 0.5, 7, "prh", k=5), abs=1e-12)
    assert lo < hi


def test_prh_intervals_and_nulls_are_unchanged_by_the_cached_quantiles():
    """Subsets and permutations take the per-sample prh quantiles of the whole stack, indexed, instead
    of recomputing them: the same numbers as before (PRH_BEFORE: bit for bit for kNN, to the CPU's rounding
    of float sums for the others), for kNN, CKA and the
    held-out residual (whose null re-summarises Y[perm], clamp included), float32 and float64; the
    intervals equal `reference_ci`, which recomputes every subset's quantiles."""
    xs, ys = prh_case(60, [12, 7, 20], 1), prh_case(60, [9, 16], 2)
    ys = [y + 0.5 * xs[2][:, : y.shape[1]] for y in ys]
    got = {}
    for metric, params in (("mutual_knn", {"k": 5}), ("cka", {}), ("rotation_residual_heldout", {})):
        for sel in ("best", "last"):
            lo, hi = subsample_ci(metric, xs, ys, selection=sel, n_sub=6, frac=0.5, seed=7, preprocess="prh", **params)
            assert (lo, hi) == pytest.approx(reference_ci(metric, xs, ys, sel, 6, 0.5, 7, "prh", **params), abs=1e-12)
            r = permutation_null(metric, xs, ys, selection=sel, n_perm=5, seed=11, preprocess="prh", **params)
            got[f"null/{metric}/{sel}"] = [float(v).hex() for v in r.values]
    xd, yd = prh_case(40, [6, 10], 4, torch.float64), prh_case(40, [5], 5, torch.float64)
    lo, hi = subsample_ci("cka", xd, yd, n_sub=5, seed=3, preprocess="prh")
    assert (lo, hi) == pytest.approx(reference_ci("cka", xd, yd, "best", 5, 0.5, 3, "prh"), abs=1e-12)
    r = permutation_null("rotation_residual_heldout", xd, yd, n_perm=4, seed=2, preprocess="prh")
    got["null/heldout64"] = [float(v).hex() for v in r.values]
    assert got.keys() == PRH_BEFORE.keys()
    for key, values in got.items():
        if key.startswith("null/mutual_knn/"):  # ratios of neighbour counts: exact on every CPU
            assert values == PRH_BEFORE[key], key
        else:  # sums of float products, whose last bits differ between CPUs (AVX2 vs AVX-512 kernels)
            assert [float.fromhex(v) for v in values] == pytest.approx(
                [float.fromhex(v) for v in PRH_BEFORE[key]], abs=1e-12, rel=1e-9), key


def test_prh_quantiles_are_computed_once_per_interval(monkeypatch):
    from platobench.metrics import preprocess as pp

    calls = []
    real = pp._row_quantiles
    monkeypatch.setattr(pp, "_row_quantiles", lambda stack, q: calls.append(stack.name) or real(stack, q))
    xs, ys = prh_case(40, [8, 5], 6), prh_case(40, [6], 7)
    subsample_ci("cka", xs, ys, n_sub=10, seed=0, preprocess="prh")
    assert sorted(calls) == ["Xs", "Xs", "Ys", "Ys"]  # the full-sample grid, then once for all 10 subsets


def test_the_rate_scheme_falls_back_to_half_subsets_where_its_second_subsets_are_too_small():
    """mutual kNN at N = 16, k = 5: quarter-subsets of 4 samples hold no 5 neighbours; the interval is then the
    half-subset one (a small --limit run still gets one), and says so in its scheme."""
    from platobench.metrics.stats import interval_scheme, subset_draws

    assert interval_scheme("mutual_knn", "best") == "arcsine_rate"
    assert interval_scheme("mutual_knn", "best", 644) == "arcsine_rate"
    assert interval_scheme("mutual_knn", "best", 16, 0.5, {"k": 5}) == "subsample"
    assert interval_scheme("mutual_knn", "best", 24, 0.5, {"k": 5}) == "arcsine_rate"  # quarter-subsets of 6
    assert interval_scheme("mutual_knn", "heldout", 644) == "arcsine_rate"
    assert interval_scheme("mutual_knn", "heldout", 24, 0.5, {"k": 5}) == "subsample"  # halves of 6 cross-fit on 3
    g = torch.Generator().manual_seed(0)
    xs, ys = [torch.randn(16, 4, generator=g)], [torch.randn(16, 3, generator=g)]
    draws = subset_draws("mutual_knn", xs, ys, n_sub=4, preprocess="l2", k=5)
    assert draws.scheme == "subsample" and draws.rate is None and len(draws.scores) == 4
