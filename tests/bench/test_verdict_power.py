"""The board's paired verdicts by simulation (platobench/bench/verdict_power.py; figures in
docs/statistics.md): power at a difference of about 3 standard deviations and the false-positive rate
under a board-wide null, through the project's own scoring and verdict rule. The `calibration` tests run
100 boards for the power (binomial standard error about .04 at .8) and 200 for the false-positive rate
(about .015 at .05)."""

from __future__ import annotations

import pytest
import torch

from platobench.bench.verdict_power import NOISE, Board, main, verdict_rates

BOARDS = 100  # power
NULL_BOARDS = 200  # the false-positive rate is near its bound for CKA: .06 on the first 100 boards, .040 on 200


def test_one_small_board_counts_its_verdicts(capsys):
    rates = verdict_rates("cka", Board(k=2, noise=0.8, strong_noise=0.3), 96, 2)
    assert rates.power == 1.0 and rates.false_positive in (0.0, 0.5, 1.0) and rates.effect > 1
    null = verdict_rates("cka", Board(k=2, noise=0.8), 96, 2)
    assert null.power is None and null.effect is None
    assert main(["--metric", "cka", "--n", "64", "--datasets", "1", "--k", "1"]) == 0
    assert "| cka | 64 | 1 |" in capsys.readouterr().out


@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.calibration
def test_cka_verdicts_have_power_at_three_sd():
    base, strong = NOISE["cka"]
    rates = verdict_rates("cka", Board(noise=base, strong_noise=strong), 256, BOARDS)
    assert 2.7 <= rates.effect <= 3.5, rates
    assert rates.power >= 0.8, rates


@pytest.mark.calibration
@pytest.mark.parametrize("metric", ["cka", "mutual_knn"])
def test_no_false_verdict_under_a_board_wide_null(metric):
    rates = verdict_rates(metric, Board(noise=NOISE[metric][0]), 256, NULL_BOARDS, seed=1)
    assert rates.false_positive <= 0.05, rates
