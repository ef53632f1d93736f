"""How often the board's paired verdicts are right: power at a known difference and the false-positive rate,
by simulation through the project's own scoring (`score_paired`) and verdict rule
(platobench/leaderboard/verdicts.py).

A simulated board: one y model, one baseline x model (the matched control) and K real x models, all read
the same N samples of a Gaussian latent z [r] (scales 0.75^i): side s has features z A_s + noise_s e
(A_s [r, D] Gaussian, fixed for the board: the models; z and e drawn afresh for every dataset). Every x
row (control and real) shares one map A_x and differs only in its noise level and its own noise draws:
rows of equal noise are equal in truth, and lower noise aligns more with y. The effect of row 0 over the
control is measured, not assumed.
- *power*: real row 0 has less noise than the control, chosen so that its excess over the null exceeds the
  control's by about 3 standard deviations of the paired difference (the effect size a paired test sees,
  Cohen's d_z: mean over sd of row 0's calibrated score minus the control's across the simulated
  datasets; measured and reported, with the same effect in standard deviations of one score); the other
  K - 1 real rows have the control's noise. Power: how often row 0 gets "beats baselines". A verdict is a test
  of its own pair against its own controls, so the other rows never change it (K only adds null rows); with
  an exact standard error and B - 1 = 19 degrees of freedom, Student's t gives .81 at d_z = 3
  (`power_ceiling`).
- *null board*: every real row has the control's noise (its own map and noise draws): the false-positive
  rate is the share of null rows that get "beats baselines" or "below baseline" (each verdict's own error
  rate, at most alpha = .05 by construction); the board-wide rate, how often ANY of the K rows does, is
  reported beside it (at most 1 - (1 - alpha)^K: no adjustment across the board).
Sizes as the offline settings: `paired_setting` (B = 20 interval subsets, 100 permutations).

Run `python -m platobench.bench.verdict_power --help`; docs/statistics.md holds the figures;
tests/metrics/test_calibration.py asserts them (marker `calibration`).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from platobench.bench.scoring import score_paired
from platobench.bench.settings import Setting
from platobench.leaderboard.verdicts import BEATS, BELOW, verdicts
from platobench.results import DatasetRef, ResultRecord
from platobench.zoo import load_zoo

METRICS = {"mutual_knn": ({"k": 10}, "prh"), "cka": ({"estimator": "unbiased"}, "none")}
#: Noise levels of (control / null rows, the stronger row) that put the paired difference near 3 SD at
#: N = 256, width 16, rank 8 (found by running this module; the measured effect is reported with every result).
NOISE = {"mutual_knn": (0.8, 0.43), "cka": (0.8, 0.62)}


def paired_setting(metric: str) -> Setting:
    """The simulated board's setting: the offline settings' sizes for `metric`."""
    params, preprocess = METRICS[metric]
    return Setting(id=f"sim-{metric.replace('_', '-')}", dataset="sim", metric=metric, params=params,
                   preprocess=preprocess, n_perm=100, n_ci=20, ci_fraction=0.5, seed=0)


@dataclass(frozen=True)
class Board:
    """One simulated board's shape: K real rows, noise levels (control and null rows, the stronger row
    or None for a board-wide null), width D and latent rank r."""

    k: int = 4
    noise: float = 0.8
    strong_noise: float | None = None
    width: int = 16
    rank: int = 8


def _maps(board: Board, seed: int) -> list[np.ndarray]:
    """The models of one simulated board, fixed across its datasets: the [r, D] maps of y and of the x
    side (the control and every real row share it: rows of equal noise are equal in truth)."""
    g = np.random.default_rng(10**6 + seed)
    return [g.standard_normal((board.rank, board.width)) / math.sqrt(board.rank) for _ in range(2)]


def _records(setting: Setting, board: Board, maps: list[np.ndarray], n: int,
             rng: np.random.Generator) -> list[ResultRecord]:
    """One dataset of n samples scored as a board: the control's record first, then real rows 0..K-1."""
    zoo = load_zoo()
    real_spec, control_spec, y_spec = (zoo.get(m) for m in ("demo/minilm-l6", "baseline/bag-of-words",
                                                           "demo/efficientnet-lite0"))
    z = rng.standard_normal((n, board.rank)) * 0.75 ** np.arange(board.rank)

    def side(a: np.ndarray, noise: float) -> list[torch.Tensor]:
        return [torch.from_numpy((z @ a + noise * rng.standard_normal((n, board.width))).astype(np.float32))]

    ys = side(maps[0], board.noise)
    ds = DatasetRef(name="sim", revision="sim", n=n, fingerprint="0" * 64)
    rows = [("baseline/sim-control", control_spec, board.noise)]
    rows += [(f"sim/real-{i}", real_spec, board.strong_noise if i == 0 and board.strong_noise is not None
              else board.noise) for i in range(board.k)]
    out = []
    for name, spec, noise in rows:
        record = score_paired(setting, spec.model_copy(update={"name": name}),
                              y_spec.model_copy(update={"name": "sim/y"}), side(maps[1], noise), ys, ds, inputs={})
        record.provenance.setting_config = setting.model_dump(mode="json")
        out.append(record)
    return out


@dataclass(frozen=True)
class VerdictRates:
    """Over `datasets` simulated boards of `k` real rows: `power` (row 0 beats) or None for a null board,
    `false_positive` (the share of null rows with a verdict other than "no evidence"), `board_wide` (the share
    of boards where any null row has one), and the measured effect
    of row 0's calibrated score over the control's: its mean difference in standard deviations of that
    difference (`paired_effect`, d_z) and of one score (`effect`); both None for a board-wide null or a
    single board."""

    metric: str
    n: int
    k: int
    datasets: int
    power: float | None
    false_positive: float
    board_wide: float
    effect: float | None
    paired_effect: float | None
    seconds: float


def verdict_rates(metric: str, board: Board, n: int, datasets: int, *, seed: int = 0) -> VerdictRates:
    """Simulate `datasets` boards (module docstring) and count their verdicts."""
    setting = paired_setting(metric)
    rng = np.random.default_rng(seed)
    maps = _maps(board, seed)
    t0 = time.perf_counter()
    wins = false = any_false = null_rows = 0
    strong, control = [], []
    for _ in range(datasets):
        records = _records(setting, board, maps, n, rng)
        got = {pair: v.text for pair, v in verdicts(records).items()}
        real = [r for r in records if r.x.name.startswith("sim/")]
        nulls = real[1:] if board.strong_noise is not None else real
        wins += got[real[0].pair_id] == BEATS
        wrong = [got[r.pair_id] in (BEATS, BELOW) for r in nulls]
        false += sum(wrong)
        any_false += any(wrong)
        null_rows += len(nulls)
        strong.append(real[0].calibrated)
        control.append(records[0].calibrated)
    effect = paired = None
    if board.strong_noise is not None and datasets > 1:  # a spread needs two boards
        s, c = np.asarray(strong), np.asarray(control)
        effect = float((s - c).mean() / ((s.std(ddof=1) + c.std(ddof=1)) / 2))
        paired = float((s - c).mean() / (s - c).std(ddof=1))
    return VerdictRates(metric, n, board.k, datasets, wins / datasets if board.strong_noise is not None else None,
                        false / null_rows if null_rows else 0.0, any_false / datasets, effect, paired,
                        time.perf_counter() - t0)


def power_ceiling(effect: float, df: int = 19, alpha: float = 0.05) -> float:
    """The power of the verdict's two-sided paired t test with an exact standard error:
    P(t'_{df}(effect) > t_{df, 1 - alpha / 2}), the noncentral t at the effect in paired standard deviations."""
    from scipy import stats

    return float(stats.nct.sf(stats.t.ppf(1 - alpha / 2, df), df, effect))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m platobench.bench.verdict_power", description=__doc__.split("\n\n")[0])
    parser.add_argument("--metric", choices=sorted(METRICS), action="append", help="metric(s) (default: all)")
    parser.add_argument("--n", type=int, default=256, help="samples per simulated dataset")
    parser.add_argument("--datasets", type=int, default=200, help="simulated boards per cell")
    parser.add_argument("--k", type=int, default=4, help="real rows of each null board (default 4)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    print("| metric | N | boards | power (one comparison) | ceiling (exact se) | effect, paired SD (one-score SD) | "
          "false-positive rate per null row (board-wide, K null rows) | seconds (these boards and the null ones) |")
    print("|---|---|---|---|---|---|---|---|")
    for metric in args.metric or sorted(METRICS):
        base, strong = NOISE[metric]
        null = verdict_rates(metric, Board(k=args.k, noise=base), args.n, args.datasets, seed=1)
        alt = verdict_rates(metric, Board(k=1, noise=base, strong_noise=strong), args.n, args.datasets)
        effect, ceiling = "-", "-"
        if alt.paired_effect is not None:
            effect, ceiling = f"{alt.paired_effect:.2f} ({alt.effect:.2f})", f"{power_ceiling(alt.paired_effect):.3f}"
        print(f"| {metric} | {args.n} | {args.datasets} | {alt.power:.3f} | {ceiling} | {effect} | "
              f"{null.false_positive:.3f} ({null.board_wide:.3f}, K = {args.k}) | "
              f"{alt.seconds + null.seconds:.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
