"""Held-out layer selection (platobench/metrics/heldout.py): the split, the cross-fit on known grids, known
answers (identical inputs, rotations), no selection optimism on a population whose cells are all alike, its
null and interval, and the record it writes (consistency rules and `check`'s comparison)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from platobench.errors import UserError
from platobench.metrics.heldout import HalfSplit, cross_fit, halves
from platobench.metrics.preprocess import LayerStack
from platobench.metrics.selection import parse_selection, reduce_grids, select
from platobench.metrics.stats import permutation_null, subset_draws


def _latent_layers(n: int, seed: int, noises: tuple[float, ...], width: int = 12) -> tuple[list, list]:
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(n, 6, generator=g, dtype=torch.float64)
    xs = [z @ torch.randn(6, width, generator=g, dtype=torch.float64) + s * torch.randn(n, width, generator=g,
                                                                                           dtype=torch.float64)
          for s in noises]
    ys = [z @ torch.randn(6, width, generator=g, dtype=torch.float64) + s * torch.randn(n, width, generator=g,
                                                                                           dtype=torch.float64)
          for s in noises]
    return xs, ys


def test_halves_split_every_sample_once_and_depend_only_on_n_and_seed():
    a, b = halves(101, 0)
    assert len(a) == 50 and len(b) == 51
    assert sorted(torch.cat([a, b]).tolist()) == list(range(101))
    assert torch.equal(a, a.sort().values) and torch.equal(b, b.sort().values)
    again = halves(101, 0)
    assert torch.equal(a, again[0]) and torch.equal(b, again[1])
    assert not torch.equal(halves(101, 1)[0], a)
    # its own stream: not the first permutation the null or the interval draws from the same seed
    first_perm = torch.randperm(101, generator=torch.Generator().manual_seed(0))
    assert not torch.equal(first_perm[:50].sort().values, a)
    with pytest.raises(UserError, match="too few"):
        halves(5, 0)


def test_cross_fit_scores_each_half_s_choice_on_the_other_half():
    grid_a = torch.tensor([[0.1, 0.9], [0.3, 0.2]], dtype=torch.float64)
    grid_b = torch.tensor([[0.4, 0.5], [0.8, 0.1]], dtype=torch.float64)
    fit = cross_fit(grid_a, grid_b, higher_is_better=True)
    # A chooses (0, 1) -> 0.5 on B; B chooses (1, 0) -> 0.3 on A
    assert [(f.chosen_on, f.x_layer, f.y_layer, f.score, f.in_sample) for f in fit.folds] == [
        ("A", 0, 1, 0.5, 0.9), ("B", 1, 0, 0.3, 0.8)]
    assert fit.score == pytest.approx(0.4) and fit.in_sample == pytest.approx(0.85)
    sel = fit.selection()
    assert (sel.mode, sel.x_layer, sel.y_layer, sel.score) == ("heldout", 0, 1, fit.score)
    low = cross_fit(grid_a, grid_b, higher_is_better=False)  # a residual: the minimum is chosen
    assert [(f.x_layer, f.y_layer, f.score) for f in low.folds] == [(0, 0, 0.4), (1, 1, 0.2)]


def test_one_grid_cannot_apply_heldout():
    assert parse_selection("heldout") == "heldout"
    with pytest.raises(UserError, match="needs the samples"):
        select(torch.zeros(2, 2), "heldout", True)
    with pytest.raises(UserError, match="needs the samples"):
        reduce_grids(torch.zeros(3, 2, 2), "heldout", True)


def test_identical_inputs_score_perfectly_and_rotations_change_nothing():
    xs, _ = _latent_layers(80, 1, (0.5, 1.0, 2.0))
    null = permutation_null("mutual_knn", xs, xs, selection="heldout", n_perm=9, seed=0, k=5)
    assert null.observed == 1.0 and null.p_value == pytest.approx(0.1)
    q = torch.linalg.qr(torch.randn(12, 12, generator=torch.Generator().manual_seed(2), dtype=torch.float64))[0]
    xs, ys = _latent_layers(80, 3, (0.5, 1.0, 2.0))
    base = permutation_null("cka", xs, ys, selection="heldout", n_perm=5, seed=0)
    turned = permutation_null("cka", xs, [2.5 * y @ q for y in ys], selection="heldout", n_perm=5, seed=0)
    assert turned.observed == pytest.approx(base.observed, abs=1e-10)
    assert torch.allclose(turned.values, base.values, atol=1e-10)
    # shuffling the samples of both sides alike moves the split, not the population: the score is the
    # same function of the halves it reads
    stacks = LayerStack(xs, "Xs"), LayerStack(ys, "Ys")
    fit = HalfSplit.of("cka", stacks, 80, seed=0, preprocess="none").cross_fit()
    assert fit.score == pytest.approx(base.observed, abs=1e-12)


def test_no_selection_optimism_where_every_cell_is_alike():
    """Three layer pairs of the same expected CKA: the in-sample best of each half lies above the cells'
    common expected value by the selection's optimism; the held-out score does not (its mean over datasets
    equals a fixed cell's mean at the same half size, within Monte Carlo error)."""
    from platobench.metrics.api import score

    maps = torch.randn(2, 6, 8, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    heldout, inside, fixed = [], [], []
    for d in range(40):
        g = torch.Generator().manual_seed(100 + d)
        z = torch.randn(96, 6, generator=g, dtype=torch.float64)
        # every layer the same map plus noise of its own: the nine cells share one expected score
        xs, ys = ([z @ a + 1.5 * torch.randn(96, 8, generator=g, dtype=torch.float64) for _ in range(3)] for a in maps)
        fit = HalfSplit.of("cka", (LayerStack(xs, "Xs"), LayerStack(ys, "Ys")), 96, seed=d, preprocess="none").cross_fit()
        heldout.append(fit.score)
        inside.append(fit.in_sample)
        a, _ = halves(96, d)
        fixed.append(score("cka", xs[0][a], ys[0][a]))
    heldout, inside, fixed = map(np.asarray, (heldout, inside, fixed))
    se = np.std(heldout - fixed, ddof=1) / np.sqrt(len(fixed))
    assert abs(heldout.mean() - fixed.mean()) < 3 * se
    optimism = inside - heldout
    assert optimism.mean() > 4 * np.std(optimism, ddof=1) / np.sqrt(len(optimism))


def test_null_and_interval_cross_fit_inside_every_draw():
    xs, ys = _latent_layers(120, 5, (0.8, 1.6))
    null = permutation_null("mutual_knn", xs, ys, selection="heldout", n_perm=30, seed=4, k=5)
    again = permutation_null("mutual_knn", xs, ys, selection="heldout", n_perm=30, seed=4, k=5)
    assert torch.equal(null.values, again.values) and null.selection.mode == "heldout"
    assert null.observed > null.values.max() and null.p_value == pytest.approx(1 / 31)
    # unrelated Y: the null's mean is the chance level of the half size, k / (60 - 1), to within its error
    g = torch.Generator().manual_seed(6)
    noise = [torch.randn(120, 12, generator=g, dtype=torch.float64) for _ in range(2)]
    null_of_noise = permutation_null("mutual_knn", xs, noise, selection="last", n_perm=60, seed=0, k=5)
    held = permutation_null("mutual_knn", xs[-1:], noise[-1:], selection="heldout", n_perm=60, seed=0, k=5)
    assert held.mean == pytest.approx(5 / 59, abs=4 * held.std / np.sqrt(60))
    assert null_of_noise.mean == pytest.approx(5 / 119, abs=4 * null_of_noise.std / np.sqrt(60))
    draws = subset_draws("mutual_knn", xs, ys, selection="heldout", n_sub=6, frac=0.5, seed=0, k=5)
    assert draws.observed == null.observed or draws.observed == pytest.approx(
        HalfSplit.of("mutual_knn", (LayerStack(xs, "Xs"), LayerStack(ys, "Ys")), 120, seed=0, preprocess="none",
                     k=5).cross_fit().score)
    assert draws.scheme == "arcsine_rate" and len(draws.scores) == 12 and draws.size == 60  # 6 halves, 6 quarters
    lo, hi = draws.interval(0.95)
    assert lo <= draws.observed <= hi


def _record(n_ci: int = 4):
    from platobench.bench.scoring import score_paired
    from platobench.bench.settings import Setting
    from platobench.results import DatasetRef
    from platobench.zoo import load_zoo

    xs, ys = _latent_layers(64, 9, (0.6, 1.2, 2.4))
    setting = Setting(id="t", dataset="d", metric="mutual_knn", params={"k": 4}, selection="heldout", n_perm=5,
                      n_ci=n_ci)
    zoo = load_zoo()
    return score_paired(setting, zoo.get("demo/minilm-l6"), zoo.get("demo/dinov2-s-imgfocus"),
                        [x.float() for x in xs], [torch.ones(64, 8), *(y.float() for y in ys)],
                        DatasetRef(name="d", revision="r", n=64, fingerprint="f" * 64), inputs={})


def test_a_heldout_record_states_its_folds_and_in_sample_best_and_keeps_its_own_rules():
    from platobench.bench.check_fields import compare
    from platobench.leaderboard.consistency import inconsistencies

    record = _record()
    held = record.details["heldout_selection"]
    assert record.metric.selection == "heldout" and held["halves"] == [32, 32]
    folds = held["folds"]
    assert record.score == pytest.approx((folds[0]["score"] + folds[1]["score"]) / 2)
    assert list(record.layers) == folds[0]["layers"] and all(f["layers"][1] >= 1 for f in folds)  # y layer 0 constant
    best = held["full_grid_best"]
    assert record.grid[best["layers"][0]][best["layers"][1]] == pytest.approx(best["score"], abs=1e-8)
    assert best["score"] == max(c for row in record.grid for c in row if c is not None)
    assert record.chance == pytest.approx(4 / 31)
    assert inconsistencies(record) == []

    edited = record.model_copy(deep=True)
    edited.score = record.score + 0.01
    assert any("mean of its held-out folds" in p for p in inconsistencies(edited))
    edited = record.model_copy(deep=True)
    edited.details["heldout_selection"]["in_sample"] += 0.01
    assert any("in_sample" in p for p in inconsistencies(edited))
    moved = {d.field: d for d in compare(edited, record)}
    assert moved["details.heldout_selection.in_sample"].moved(1e-3)
    edited.details["heldout_selection"] = "none"
    assert any("needs details.heldout_selection" in p for p in inconsistencies(edited))


def test_a_zero_shot_setting_refuses_heldout_and_a_paired_one_checks_its_halves():
    from platobench.bench.settings import Setting

    with pytest.raises(Exception, match="heldout"):
        Setting(id="z", kind="zeroshot", dataset="fashion-mnist", metric="zeroshot_matching", selection="heldout")
    from platobench.bench.setting_rules import _check_samples

    small = Setting(id="s", dataset="d", metric="mutual_knn", params={"k": 10}, selection="heldout", n_ci=0)
    _check_samples(small, 24)  # halves of 12 samples hold k = 10 neighbours
    with pytest.raises(UserError, match="held-out selection scores halves of 10"):
        _check_samples(small, 20)


def test_the_score_command_applies_heldout_with_its_seed(tmp_path, capsys):
    import json

    from platobench.cli import main

    xs, ys = _latent_layers(90, 11, (0.5, 1.5))
    x, y = tmp_path / "x.npy", tmp_path / "y.npy"
    np.save(x, torch.stack(xs).numpy())
    np.save(y, torch.stack(ys).numpy())
    args = ["score", "--metric", "mutual_knn", "--param", "k=5", "--x", str(x), "--y", str(y), "--selection", "heldout"]
    assert main([*args, "--json", "--seed", "3", "--null", "4"]) == 0
    out = json.loads(capsys.readouterr().out)
    stacks = LayerStack(xs, "Xs"), LayerStack(ys, "Ys")
    expected = HalfSplit.of("mutual_knn", stacks, 90, seed=3, preprocess="none", k=5).cross_fit()
    assert out["selection"]["mode"] == "heldout" and out["score"] == expected.score
    assert out["chance"] == pytest.approx((5 / 44 + 5 / 44) / 2)
    assert main(args) == 0
    assert "each half of the N = 90 samples" in capsys.readouterr().out


def test_a_subset_keeps_every_sample_in_its_half_and_resamples_half_subsets():
    """An interval subset is cross-fitted on the full sample's halves restricted to it (a new random split
    per subset would add the split's own noise to every subset score), and a held-out interval draws
    half-subsets where the metric declares the jackknife (which overstates the spread of a choice that flips
    by jumps)."""
    from platobench.metrics.stats import interval_scheme

    xs, ys = _latent_layers(40, 12, (0.5, 1.5))
    stacks = LayerStack(xs, "Xs"), LayerStack(ys, "Ys")
    a, b = halves(40, 7)
    within = torch.arange(0, 40, 3)
    split = HalfSplit.of("cka", stacks, 40, seed=7, preprocess="none", within=within)
    assert torch.equal(split.rows[0], a[torch.isin(a, within)]) and torch.equal(split.rows[1], b[torch.isin(b, within)])
    assert interval_scheme("svcca", "heldout") == "subsample" and interval_scheme("svcca", "best") == "jackknife"
    assert interval_scheme("cka", "heldout") == "subsample"
    draws = subset_draws("cka", xs, ys, selection="heldout", n_sub=4, frac=0.5, seed=7)
    assert draws.scheme == "subsample" and draws.size == 20


def test_a_held_out_rate_interval_reads_its_exponent_from_both_halves_grids():
    """Mutual kNN keeps its arcsine_rate scheme under held-out selection; each subset's draw is the cross-fit of
    its halves, and the exponent is the rate schemes' pooled ratio over every cell of both halves' grids of
    the B half- and B quarter-subsets (one cross-fitted value per subset is too noisy a ratio), recomputed
    here from its definition."""
    from platobench.metrics.heldout import cross_fit_value
    from platobench.metrics.stats import _pooled_rate, interval_scheme, interval_subsets

    xs, ys = _latent_layers(160, 5, (0.6, 1.0, 1.6))
    assert interval_scheme("mutual_knn", "heldout", 160, params={"k": 5}) == "arcsine_rate"
    # quarter-subsets of 40 are cross-fitted on halves of about 20: too few for k = 20
    assert interval_scheme("mutual_knn", "heldout", 160, params={"k": 20}) == "subsample"
    assert interval_scheme("mutual_knn", "best", 160, params={"k": 20}) == "arcsine_rate"
    draws = subset_draws("mutual_knn", xs, ys, selection="heldout", n_sub=5, frac=0.5, seed=3, preprocess="l2", k=5)
    assert draws.scheme == "arcsine_rate" and len(draws.scores) == 10 and draws.size == 80
    stacks = LayerStack(xs, "Xs"), LayerStack(ys, "Ys")
    grids, scores = [], []
    for idx in interval_subsets("mutual_knn", 160, n_sub=5, frac=0.5, seed=3, scheme="arcsine_rate"):
        a, b = (s.grid() for s in HalfSplit.of("mutual_knn", stacks, 160, seed=3, preprocess="l2", within=idx,
                                                k=5).summaries)
        grids.append(torch.stack([a, b]))
        scores.append(cross_fit_value(a, b, True))
    np.testing.assert_array_equal(draws.scores, scores)
    assert draws.rate == _pooled_rate(torch.stack(grids[:5]), torch.stack(grids[5:]), 160, 80, on_arcsine=True)
    assert 1 <= draws.rate <= 2
