"""Learning-curve analysis, recipes and example counts: known answers."""

from __future__ import annotations

import math

import pytest

from platobench.errors import UserError
from platobench.experiments.jepa.curve_analysis import (
    CurveSet,
    efficiency,
    examples_to_reach,
    format_efficiency,
    parse_level,
    resolve_level,
    t_interval,
)
from platobench.experiments.jepa.recipes import log_spaced, parse_recipe, parse_recipes


def test_recipes_parse_and_label():
    assert parse_recipe("ntp").objective == "ntp" and parse_recipe("ntp").p_good == 0.0
    mix = parse_recipe("jepa-mix:0.25")
    assert (mix.objective, mix.label, mix.p_good) == ("jepa", "jepa-mix:0.25", 0.25)
    assert [r.label for r in parse_recipes("jepa-good, jepa-bad,ntp")] == ["jepa-good", "jepa-bad", "ntp"]
    for bad in ("jepa", "jepa-mix:2", "gpt", "jepa-good,jepa-good", ""):
        with pytest.raises(UserError):
            parse_recipes(bad)


def test_log_spaced_counts_are_batch_multiples():
    assert log_spaced(64, 4096, 4, 64) == [64, 256, 1024, 4096]
    counts = log_spaced(100, 10_000, 5, 64)
    assert all(c % 64 == 0 for c in counts) and counts == sorted(set(counts))
    assert counts[0] >= 100 and counts[-1] >= 10_000
    with pytest.raises(UserError):
        log_spaced(10, 5, 3, 1)


def test_examples_to_reach_interpolates_in_log_examples():
    curve = [(100, 0.1), (1000, 0.3), (10_000, 0.5)]
    # 0.2 lies halfway between 100 and 1000 in score, so halfway in log10: 10 ** 2.5
    assert examples_to_reach(curve, 0.2, True) == pytest.approx(10**2.5)
    assert examples_to_reach(curve, 0.5, True) == pytest.approx(10_000)
    assert examples_to_reach(curve, 0.05, True) == 100.0  # already reached at the first checkpoint
    assert examples_to_reach(curve, 0.6, True) is None
    falling = [(100, 0.9), (1000, 0.7), (10_000, 0.5)]  # a lower-is-better metric
    assert examples_to_reach(falling, 0.8, False) == pytest.approx(10**2.5)


def _set(runs):
    return CurveSet("s", "v", "mutual_knn", True, 0.01, runs)


def test_efficiency_ratio_of_a_shifted_curve_is_the_shift():
    # the bad curve is the good one shifted right by 8x in examples: every ratio is 8
    good = {s: [(2**k, 0.1 * k + 0.01 * s) for k in range(4, 12)] for s in range(3)}
    bad = {s: [(2**k, 0.1 * (k - 3) + 0.01 * s) for k in range(4, 12)] for s in range(3)}
    table = efficiency(_set({"jepa-good": good, "jepa-bad": bad}), "jepa-good", "frac:0.5")
    row = table["recipes"]["jepa-bad"]
    assert row["ratio"] == pytest.approx(8.0)
    assert all(r["ratio"] == pytest.approx(8.0) for r in row["per_seed"].values())
    assert row["difference"]["mean"] == pytest.approx(0.3)  # good - bad at the last checkpoint
    assert row["difference"]["ci95"][0] == pytest.approx(0.3) and row["difference"]["ci95"][1] == pytest.approx(0.3)
    assert "8x" in format_efficiency([table])


def test_efficiency_never_reached_gives_a_lower_bound():
    good = {0: [(100, 0.1), (1000, 0.5)]}
    flat = {0: [(100, 0.1), (1000, 0.15)]}
    row = efficiency(_set({"jepa-good": good, "ntp": flat}), "jepa-good", "final")["recipes"]["ntp"]
    assert row["ratio"] is None and row["lower_bound"] == pytest.approx(1.0)
    assert "not reached" in format_efficiency([efficiency(_set({"jepa-good": good, "ntp": flat}), "jepa-good", "final")])
    # a reference seed that never reaches the level leaves that seed's ratio undefined, said so
    table = efficiency(_set({"jepa-good": {0: [(100, 0.1), (1000, 0.5)], 1: [(100, 0.1), (1000, 0.2)]},
                             "ntp": {0: flat[0], 1: flat[0]}}), "jepa-good", "final")
    assert table["recipes"]["ntp"]["per_seed"][1]["ratio"] is None
    assert "s1: n/a (the reference does not reach L)" in format_efficiency([table])
    with pytest.raises(UserError):
        efficiency(_set({"ntp": flat}), "jepa-good", "final")


def test_levels():
    ref = [(10, 0.2), (100, 0.6), (1000, 0.5)]
    assert resolve_level(parse_level("final"), ref, True) == 0.5
    assert resolve_level(parse_level("frac:0.5"), ref, True) == pytest.approx(0.4)  # halfway to the best, 0.6
    assert resolve_level(parse_level("0.33"), ref, True) == 0.33
    for bad in ("frac:0", "frac:1.5", "best", "frac:x"):
        with pytest.raises(UserError):
            parse_level(bad)


def test_t_interval_matches_the_closed_form():
    lo, hi = t_interval([1.0, 2.0, 3.0])
    half = 4.302652729911275 * 1.0 / math.sqrt(3)  # t(0.975, 2) * sd / sqrt(n), sd = 1
    assert (lo, hi) == (pytest.approx(2 - half), pytest.approx(2 + half))
    assert t_interval([1.0]) is None
