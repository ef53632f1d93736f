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


def test_fixed_pair_ci_equals_scoring_the_whole_grid_per_subset():
    """A fixed layer pair's CI summarises only that pair per subset; it must equal taking that entry of the
    full grid of each subset (same seeded subsets, same interval formula)."""
    import math

    from platobench.metrics import layer_grid

    g = torch.Generator().manual_seed(3)
    xs = [torch.randn(40, 6, generator=g) for _ in range(3)]
    ys = [torch.randn(40, 5, generator=g) for _ in range(2)]
    ys[1] = ys[1] + xs[2][:, :5]
    lo, hi = subsample_ci("cka", xs, ys, selection="last", n_sub=8, frac=0.5, seed=4, preprocess="prh")
    gen = torch.Generator().manual_seed(4)
    subs = []
    for _ in range(8):
        idx = torch.randperm(40, generator=gen)[:20].sort().values
        subs.append(float(layer_grid("cka", [x[idx] for x in xs], [y[idx] for y in ys], preprocess="prh")[-1, -1]))
    s = torch.tensor(subs, dtype=torch.float64)
    spread = (s - s.mean()) * math.sqrt(20 / 20)
    q_lo, q_hi = torch.quantile(spread, torch.tensor([0.025, 0.975], dtype=torch.float64)).tolist()
    obs = float(layer_grid("cka", xs, ys, preprocess="prh")[-1, -1])
    assert lo == pytest.approx(max(obs - q_hi, -1.0), abs=1e-9) and hi == pytest.approx(min(obs - q_lo, 1.0), abs=1e-9)
