"""Calibration of the intervals and the permutation test on synthetic populations with known values
(platobench/metrics/calibration.py; figures in docs/statistics.md).

The fast tests check the known values themselves (closed-form CKA against a large sample, the null
population's CKA is 0) and the counting. The `calibration` tests run the project's own `subsample_ci`
on `DATASETS` = 1,000 datasets per coverage cell and `permutation_null` on `NULL_DATASETS` = 200, with
the offline settings' sizes, and assert the coverage within [.93, .97] and the null rejection at
alpha = .05 at most .07. 1,000 datasets, because the band is only a test at that size: an interval that
covers exactly 95% lands in [.93, .97] in 86% of cells of 200 datasets (binomial sd .015) and in 99.7% of
cells of 1,000 (sd .007); at 200, unbiased CKA measured .920 and .980 in cells where 1,000 datasets give
.949 and .951. A cell known to lie outside the band is marked xfail(strict=True) with its measured
figure: the suite says which intervals do not yet cover as they claim, and fails as soon as one of them
changes. Every cell is one test, so `make calibrate` spreads them over its workers (`--dist load`).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from platobench.metrics import score
from platobench.metrics.calibration import (
    CASES,
    Case,
    Population,
    coverage,
    known_value,
    make_population,
    null_size,
)

DATASETS = 1000  # per coverage cell (module docstring)
NULL_DATASETS = 200  # per null-size cell
BAND = (0.93, 0.97)
MAX_NULL_REJECTION = 0.07


def test_closed_form_cka_matches_a_large_sample():
    """The closed-form population CKA (the known value of the CKA cases) equals linear CKA on 200,000
    samples of the population, cell by cell, to the large sample's own error."""
    pop = make_population("distinct", layers=2, width=6, rank=4)
    xs, ys = pop.draw(200_000, np.random.default_rng(5))
    closed = pop.linear_cka()
    for i in range(2):
        for j in range(2):
            big = score("cka", xs[i].double(), ys[j].double(), estimator="biased")
            assert big == pytest.approx(closed[i, j], abs=3e-3)


def test_null_population_is_independent_and_scores_zero():
    pop = make_population("null")
    assert np.all(pop.linear_cka() == 0)
    xs, ys = pop.draw(4000, np.random.default_rng(0))
    assert abs(score("cka", xs[-1], ys[-1])) < 0.01


def test_population_kinds_and_shapes():
    pop = make_population("flat", layers=2, width=5, rank=3)
    xs, ys = pop.draw(7, np.random.default_rng(0))
    assert [tuple(x.shape) for x in xs + ys] == [(7, 5)] * 4 and xs[0].dtype == torch.float32
    assert np.all(pop.spectrum == 1) and not np.all(make_population("distinct").spectrum == 1)
    with pytest.raises(ValueError, match="population kind"):
        make_population("wide")


@pytest.mark.parametrize(("truth", "side"), [(-1.0, "below"), (2.0, "above")])
def test_coverage_counts_misses_on_each_side(monkeypatch, truth, side):
    """A known value outside every possible interval (kNN scores lie in [0, 1]) is missed on its side in
    every dataset; the real known value is covered in most."""
    from platobench.metrics import calibration

    case = Case("mutual kNN", "mutual_knn", {"k": 3}, "last", "none", 5, n_sub=4)
    pop = make_population("distinct", layers=1, width=4, rank=2)
    real = coverage(case, pop, 60, 6, truth_draws=20)
    assert real.datasets == 6 and real.coverage >= 0.5 and real.half_width > 0 and real.score_sd > 0
    monkeypatch.setattr(calibration, "known_value", lambda *a, **k: calibration.Truth(truth, 0.0, "rigged"))
    missed = coverage(case, pop, 60, 6)
    assert (missed.below, missed.above) == ((6, 0) if side == "below" else (0, 6)) and missed.coverage == 0


def test_null_size_counts_rejections_and_intervals_above_chance():
    case = Case("mutual kNN", "mutual_knn", {"k": 3}, "best", "none", 9, n_sub=4)
    size = null_size(case, 40, 6, intervals=True)
    assert size.datasets == 6 and 0 <= size.rejected <= 6 and size.rate == size.rejected / 6
    assert size.above_chance is not None and size.above_mean is not None
    assert size.above_mean <= size.above_chance  # the best-of-grid null mean lies above chance k / (N - 1)
    assert null_size(case, 40, 2).above_chance is None


def test_calibration_command_prints_a_table(capsys):
    from platobench.metrics.calibration import main

    assert main(["--datasets", "0", "--null-datasets", "2", "--n", "30", "--cases", "mutual_knn"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("| statistic |") and out[2].startswith("| mutual kNN | null | 30 |")


def test_known_value_of_a_selected_layer_pair():
    pop = make_population("distinct")
    cka = next(c for c in CASES if c.label == "CKA, unbiased")
    assert known_value(cka, pop, 100, 0).value == pytest.approx(pop.linear_cka().max())
    last = dataclasses.replace(cka, selection="last")
    assert known_value(last, pop, 100, 0).value == pytest.approx(pop.linear_cka()[-1, -1])
    biased = next(c for c in CASES if c.label == "CKA, biased")
    mc = known_value(biased, pop, 64, 30)
    assert mc.stderr > 0 and "mean of 30" in mc.how  # the biased estimator's interval is for E[score at N]


def _population_for(n: int) -> Population:
    """The flat-spectrum population at N = 256 and the distinct-spectrum one at N = 644 (the docs table
    has both at both)."""
    return make_population("flat" if n == 256 else "distinct")


#: Cells outside BAND with the coverage measured by this suite (1,000 datasets; docs/statistics.md).
OUTSIDE_BAND: dict[tuple[str, int], str] = {
    ("CKA, unbiased, held-out selection", 256): "coverage 0.980 (flat spectrum; truth below lo / above hi 0.010 / "
                                                "0.010), mean se / sd 1.13",
}


def _cells() -> list:
    out = []
    for case in CASES:
        for n in (256, 644):
            why = OUTSIDE_BAND.get((case.label, n))
            marks = [pytest.mark.calibration]
            if why:
                marks.append(pytest.mark.xfail(strict=True, reason=why))
            out.append(pytest.param(case, n, marks=marks, id=f"{case.key}-{n}"))
    return out


@pytest.mark.parametrize(("case", "n"), _cells())
def test_interval_covers_its_estimand(case: Case, n: int):
    torch.set_num_threads(1)
    cov = coverage(case, _population_for(n), n, DATASETS)
    assert BAND[0] <= cov.coverage <= BAND[1], (
        f"{case.label} at N={n}: coverage {cov.coverage:.3f} (truth below lo {cov.below}, above hi {cov.above} "
        f"of {cov.datasets}), known value {cov.truth.value:.4f} ({cov.truth.how})")


@pytest.mark.calibration
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.key)
def test_permutation_test_keeps_its_size(case: Case):
    torch.set_num_threads(1)
    size = null_size(case, 256, NULL_DATASETS)
    assert size.rate <= MAX_NULL_REJECTION, f"{case.label}: rejected {size.rejected}/{size.datasets} at alpha .05"
