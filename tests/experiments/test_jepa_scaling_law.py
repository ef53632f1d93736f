"""The scaling law: recovery of planted parameters, refusals, and the law-vs-rerun comparison."""

from __future__ import annotations

import numpy as np
import pytest

from platobench.errors import UserError
from platobench.experiments.jepa.scaling import compare_with_reruns, misalignment, share_recipe
from platobench.experiments.jepa.scaling_commands import parse_grid
from platobench.experiments.jepa.scaling_law import LawFit, fit_law

TRUE = LawFit(e=0.6, a=2.0, alpha=0.35, beta=0.05, rmse=0.0, n_points=0)
P = np.repeat([0.0, 0.25, 0.5, 0.75, 1.0], 6)
N = np.tile([256, 512, 1024, 4096, 16384, 65536], 5).astype(float)


def test_fit_recovers_planted_parameters_exactly():
    fit = fit_law(P, N, TRUE.predict(P, N))
    assert (fit.e, fit.a, fit.alpha, fit.beta) == pytest.approx((0.6, 2.0, 0.35, 0.05), rel=1e-6)
    assert fit.rmse < 1e-10 and fit.n_points == 30
    assert fit.as_dict()["good_over_bad_ratio"] == pytest.approx(20.0, rel=1e-6)


def test_fit_with_noise_predicts_new_shares():
    rng = np.random.default_rng(0)
    fit = fit_law(P, N, TRUE.predict(P, N) + rng.normal(0, 0.002, P.shape))
    new_p, new_n = np.array([0.1, 0.6, 0.9]), np.array([2048.0, 2048.0, 2048.0])
    assert np.max(np.abs(fit.predict(new_p, new_n) - TRUE.predict(new_p, new_n))) < 0.005


def test_law_is_monotone_in_share_and_examples():
    assert TRUE.predict(np.array([1.0]), np.array([1e3]))[0] < TRUE.predict(np.array([0.5]), np.array([1e3]))[0]
    assert TRUE.predict(np.array([0.5]), np.array([1e4]))[0] < TRUE.predict(np.array([0.5]), np.array([1e3]))[0]


def test_fit_refuses_unidentified_grids():
    with pytest.raises(UserError, match="2 shares"):
        fit_law(np.full(6, 0.5), N[:6], TRUE.predict(np.full(6, 0.5), N[:6]))
    with pytest.raises(UserError, match=">= 5 points"):
        fit_law(P[:3], N[:3], TRUE.predict(P[:3], N[:3]))
    with pytest.raises(UserError, match="finite"):
        fit_law(P, N, np.full(P.shape, np.nan))


def test_compare_with_reruns_known_answer():
    law = LawFit(e=0.5, a=1e-12, alpha=1.0, beta=1.0, rmse=0.0, n_points=0)  # predicts 0.5 everywhere
    points = [
        {"role": "heldout", "p_good": 0.1, "examples": 64, "seed": 0, "misalignment": 0.4},
        {"role": "heldout", "p_good": 0.1, "examples": 64, "seed": 1, "misalignment": 0.6},
        {"role": "heldout", "p_good": 0.1, "examples": 128, "seed": 0, "misalignment": 0.5},
        {"role": "fit", "p_good": 0.5, "examples": 64, "seed": 0, "misalignment": 0.9},  # not held out
    ]
    c = compare_with_reruns(points, law, (0, 1), fit_seeds=2)
    assert c["pairs"] == 1  # (0.1, 128) lacks its rerun
    assert c["law_rmse"] == pytest.approx(0.1) and c["rerun_rmse"] == pytest.approx(0.2)
    # on the law's footing (fitted on 2 seeds): the mean of 2 reruns errs by sqrt(1.5 / 2) of one rerun's error
    assert c["rerun_rmse_equal_footing"] == pytest.approx(0.2 * 0.75**0.5)
    assert c["noise_floor"] == pytest.approx(0.2 / 2**0.5)
    assert c["as_accurate_as_a_rerun"] and c["law_over_rerun"] == pytest.approx(0.1 / (0.2 * 0.75**0.5))
    one = compare_with_reruns(points, law, (0, 1), fit_seeds=1)  # one fit seed: a rerun on the same footing
    assert one["rerun_rmse_equal_footing"] == pytest.approx(0.2)
    # the constant predictor is the fit points' mean, 0.9: errors 0.5 and 0.3 -> RMSE sqrt(0.17)
    assert c["constant_rmse"] == pytest.approx((0.5**2 / 2 + 0.3**2 / 2) ** 0.5)
    assert c["beats_the_constant"]


def test_shares_grid_and_misalignment():
    assert share_recipe(1.0).label == "jepa-good" and share_recipe(0).label == "jepa-bad"
    assert share_recipe(0.25).label == "jepa-mix:0.25"
    assert parse_grid("0,0.5,1/0.25") == ([0.0, 0.5, 1.0], [0.25])
    with pytest.raises(UserError):
        parse_grid("0,0.5,1")
    assert misalignment(0.3, True) == pytest.approx(0.7) and misalignment(0.3, False) == 0.3


def test_seeds_must_be_two_fit_seeds_and_two_new_heldout_seeds(tmp_path):
    from platobench.experiments.jepa.scaling import ScalingConfig, check_grid

    base = dict(train=None, fit_shares=[0.0, 1.0], heldout_shares=[0.5], examples=[64, 128, 256], vision=None,
                setting=None, out=tmp_path / "o", report=tmp_path / "r")
    check_grid(ScalingConfig(**base))
    with pytest.raises(UserError, match=">= 2 distinct seeds"):
        check_grid(ScalingConfig(**base, fit_seeds=(0,)))
    with pytest.raises(UserError, match="may not be a fit seed"):
        check_grid(ScalingConfig(**base, fit_seeds=(0, 1), heldout_seeds=(1, 2)))
    with pytest.raises(UserError, match="two distinct seeds"):
        check_grid(ScalingConfig(**base, heldout_seeds=(2, 2)))


def test_points_come_in_one_order_whatever_the_records_order():
    from bench_fixtures import make_record

    from platobench.experiments.jepa.scaling import points_of

    records = []
    for role, p, seed, n, score in [("heldout", 0.5, 2, 64, 0.1), ("fit", 1.0, 1, 128, 0.2), ("fit", 0.0, 0, 64, 0.3),
                                    ("fit", 1.0, 0, 64, 0.4)]:
        r = make_record("s", "a/x", "b/y", score)
        r.details["jepa_scaling"] = {"role": role, "p_good": p, "seed": seed, "examples_seen": n}
        records.append(r)
    records.append(make_record("s", "a/x", "b/z", 0.9))  # not a scaling record: left out
    got = points_of(records)
    assert [(q["role"], q["p_good"], q["seed"], q["examples"]) for q in got] == [
        ("fit", 0.0, 0, 64), ("fit", 1.0, 0, 64), ("fit", 1.0, 1, 128), ("heldout", 0.5, 2, 64)]
    assert points_of(records[::-1]) == got and got[0]["misalignment"] == pytest.approx(0.7)
