"""The board's paired verdicts by simulation (platobench/bench/verdict_power.py; figures in
docs/statistics.md): the power of one comparison at a difference of about 3 standard deviations of the
paired difference, and the false-positive rate of each verdict on null boards of 4 real rows, through the
project's own scoring and verdict rule. The `calibration_full` tests (`make calibrate-full`) run the docs' 200 boards for both (binomial
standard error about .028 at a power of .8, .008 at a rate of .05 over 800 null rows): on its first 100 boards
CKA's power by half-subsets read .79 (standard error .04), on 200 .830, the figure docs/statistics.md gives."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from platobench.bench.verdict_power import NOISE, Board, main, power_ceiling, verdict_rates

BOARDS = 200  # power
NULL_BOARDS = 200  # the false-positive rate


def test_one_small_board_counts_its_verdicts(capsys):
    rates = verdict_rates("cka", Board(k=2, noise=0.8, strong_noise=0.3), 96, 2)
    assert rates.power == 1.0 and rates.false_positive in (0.0, 0.5, 1.0) and rates.effect > 1 and rates.k == 2
    assert rates.paired_effect > 1
    null = verdict_rates("cka", Board(k=2, noise=0.8), 96, 2)
    assert null.power is None and null.effect is None and null.paired_effect is None
    assert null.false_positive in (0.0, 0.25, 0.5, 0.75, 1.0) and null.board_wide >= null.false_positive
    assert main(["--metric", "cka", "--n", "64", "--datasets", "1", "--k", "1"]) == 0
    assert "| cka | 64 | 1 |" in capsys.readouterr().out


def test_the_power_ceiling_is_the_noncentral_t_of_a_two_sided_test():
    assert power_ceiling(3.0) == pytest.approx(0.812, abs=1e-3)  # t_19 at .975: 2.093
    assert power_ceiling(0.0) == pytest.approx(0.025, abs=1e-9)  # one side of a two-sided .05 test


@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.calibration_full
@pytest.mark.parametrize("metric", ["cka", "mutual_knn"])
def test_one_comparison_has_power_at_three_paired_sd(metric, calibration_log):
    """One real row against its matched control (K = 1), the stronger row 3 SD of the paired difference above."""
    base, strong = NOISE[metric]
    rates = verdict_rates(metric, Board(k=1, noise=base, strong_noise=strong), 256, BOARDS)
    calibration_log(cell=f"power-{metric}", **dataclasses.asdict(rates))
    assert 2.7 <= rates.paired_effect <= 3.5, rates
    assert rates.power >= 0.8, rates


@pytest.mark.calibration_full
@pytest.mark.parametrize("metric", ["cka", "mutual_knn"])
def test_each_verdict_errs_at_most_at_its_level_on_null_boards(metric, calibration_log):
    rates = verdict_rates(metric, Board(noise=NOISE[metric][0]), 256, NULL_BOARDS, seed=1)
    calibration_log(cell=f"null-boards-{metric}", **dataclasses.asdict(rates))
    assert rates.false_positive <= 0.05, rates
