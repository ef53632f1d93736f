"""Calibration of the statistics on synthetic populations with known values.

Does a 95% interval of `stats.subsample_ci` contain the value it is an interval for (`Metric.estimand`) in
95% of datasets, and does `stats.permutation_null` reject at alpha = .05 in at most 5% of datasets when X
and Y are independent? Measured, not argued: draw many datasets of N samples from one population, run the
project's own functions with the offline settings' sizes, count.

Populations (`make_population`): a latent z [r] with scales `spectrum` (geometric 0.75^i: "distinct"
eigenvalues; all 1: "flat"), layer l of each model x_l = z A_l + noise_l e (A_l [r, D] Gaussian, noise
levels differ per layer, so one layer pair is clearly best, as in a real grid); "null" draws Y from a
latent of its own. Known values:
  population   linear CKA of layers (i, j) in closed form, ||S_xy||_F^2 / (||S_xx||_F ||S_yy||_F) with
               S_xx = A_i^T diag(spectrum^2) A_i + noise_i^2 I (Kornblith et al. 2019); the selected pair's.
  expected_at_n  the mean of the selected score over `truth_draws` independent datasets of the same N
               (Monte Carlo; its own standard error is reported and is a small fraction of the interval).
Run `python -m platobench.metrics.calibration --help`; docs/statistics.md holds the figures.

Two tiers (tests/metrics/test_calibration.py): `make calibrate` (CI) runs the *sentinel*, one cell per case
on `SENTINEL_DATASETS` datasets, which a broken scheme cannot pass (`sentinel_passes`); `make calibrate-full`
runs every cell on 1,000 datasets and then stamps docs/statistics.md with `code_digest()`, the digest of the
code the figures describe (`CALIBRATED_CODE`, docstrings and comments left out), so that a test fails while
the committed table is older than that code.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import hashlib
import math
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from platobench.metrics.api import summarize_layers
from platobench.metrics.heldout import HalfSplit
from platobench.metrics.preprocess import LayerStack
from platobench.metrics.registry import INTERVAL_SCHEMES, get_metric
from platobench.metrics.resampling import t_quantile
from platobench.metrics.selection import HELDOUT, select, select_index
from platobench.metrics.stats import chance_level, permutation_null, subsample_ci


@dataclass(frozen=True)
class Population:
    """A Gaussian latent-factor population of two models' layers (module docstring)."""

    name: str
    spectrum: np.ndarray  # [r] latent scales
    x_maps: tuple[np.ndarray, ...]  # per layer [r, D]
    y_maps: tuple[np.ndarray, ...]
    x_noise: tuple[float, ...]
    y_noise: tuple[float, ...]
    independent: bool = False  # Y driven by a latent of its own: the null

    def draw(self, n: int, rng: np.random.Generator) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """One dataset: X layers and Y layers, each float32 [n, D]."""
        r = len(self.spectrum)
        z = rng.standard_normal((n, r)) * self.spectrum
        zy = rng.standard_normal((n, r)) * self.spectrum if self.independent else z

        def layers(latent: np.ndarray, maps: Sequence[np.ndarray], noise: Sequence[float]) -> list[torch.Tensor]:
            return [torch.from_numpy((latent @ a + s * rng.standard_normal((n, a.shape[1]))).astype(np.float32))
                    for a, s in zip(maps, noise)]

        return layers(z, self.x_maps, self.x_noise), layers(zy, self.y_maps, self.y_noise)

    def linear_cka(self) -> np.ndarray:
        """Population linear CKA of every layer pair, [Lx, Ly] (0 for the null)."""
        s = np.diag(self.spectrum**2)

        def cov(a: np.ndarray, noise: float) -> np.ndarray:
            return a.T @ s @ a + noise**2 * np.eye(a.shape[1])

        out = np.zeros((len(self.x_maps), len(self.y_maps)))
        if self.independent:
            return out
        for i, (a, nx) in enumerate(zip(self.x_maps, self.x_noise)):
            for j, (b, ny) in enumerate(zip(self.y_maps, self.y_noise)):
                out[i, j] = float(((a.T @ s @ b) ** 2).sum() / math.sqrt((cov(a, nx) ** 2).sum() * (cov(b, ny) ** 2).sum()))
        return out


POPULATION_KINDS = ("distinct", "flat", "null")


def make_population(kind: str, *, layers: int = 3, width: int = 16, rank: int = 8, strength: float = 0.4,
                    seed: int = 0) -> Population:
    """A population of `kind` ("distinct", "flat" or "null"); `strength` scales the noise (lower: closer
    alignment; 0.4 puts mutual kNN k=10 at about .12-.20 at N = 644, the range of the offline board)."""
    if kind not in POPULATION_KINDS:
        raise ValueError(f"population kind must be one of {POPULATION_KINDS}, got {kind!r}")
    g = np.random.default_rng(seed)
    spectrum = 0.75 ** np.arange(rank) if kind == "distinct" else np.ones(rank)
    maps = tuple(tuple(g.standard_normal((rank, width)) / math.sqrt(rank) for _ in range(layers)) for _ in range(2))
    x_noise = tuple(strength * v for v in np.linspace(2.0, 0.8, layers))
    y_noise = tuple(strength * v for v in np.roll(np.linspace(1.8, 1.0, layers), -1))
    return Population(kind, spectrum, maps[0], maps[1], x_noise, y_noise, independent=kind == "null")


@dataclass(frozen=True)
class Case:
    """One statistic to calibrate: a metric with its parameters, preprocessing and layer selection, and
    the null and interval sizes of the offline settings (platobench/bench/settings.yaml)."""

    label: str
    metric: str
    params: dict[str, Any]
    selection: str
    preprocess: str
    n_perm: int
    n_sub: int = 20
    frac: float = 0.5
    scheme: str | None = None  # None: the metric's own `Metric.interval`

    @property
    def key(self) -> str:
        """How `--cases` names it: the metric id, "/estimator" for CKA, "@heldout" for a held-out selection."""
        estimator = self.params.get("estimator")
        return self.metric + (f"/{estimator}" if estimator else "") + ("@heldout" if self.selection == HELDOUT else "")

    def score(self, xs: Any, ys: Any, seed: int = 0) -> float:
        """The selected score of one dataset (`seed`: the halves of a held-out selection)."""
        m = get_metric(self.metric)
        if self.selection == HELDOUT:
            stacks = LayerStack(xs, "Xs"), LayerStack(ys, "Ys")
            return HalfSplit.of(self.metric, stacks, len(xs[0]), seed=seed, preprocess=self.preprocess,
                                **self.params).cross_fit().score
        grid = summarize_layers(self.metric, xs, ys, preprocess=self.preprocess, **self.params).grid()
        return select(grid, self.selection, m.higher_is_better).score


CASES = (
    Case("mutual kNN", "mutual_knn", {"k": 10}, "best", "prh", 100),
    Case("cycle kNN", "cycle_knn", {"k": 10}, "best", "prh", 100),
    Case("CKNNA", "cknna", {"k": 10}, "best", "prh", 100),
    Case("CKA, unbiased", "cka", {"kernel": "linear", "estimator": "unbiased"}, "best", "none", 50),
    Case("CKA, biased", "cka", {"kernel": "linear", "estimator": "biased"}, "best", "none", 50),
    Case("held-out rotation residual", "rotation_residual_heldout", {}, "last", "prh", 20),
    Case("mutual kNN, held-out selection", "mutual_knn", {"k": 10}, HELDOUT, "prh", 100),
    Case("CKA, unbiased, held-out selection", "cka", {"kernel": "linear", "estimator": "unbiased"}, HELDOUT, "none",
         50),
)


def case_by_label(label: str) -> Case:
    for case in CASES:
        if case.label == label or case.metric == label:
            return case
    raise ValueError(f"no calibration case {label!r}; known: {[c.label for c in CASES]}")


@dataclass(frozen=True)
class Truth:
    value: float
    stderr: float  # Monte Carlo standard error (0 for a closed form)
    how: str


def known_value(case: Case, pop: Population, n: int, truth_draws: int, seed: int = 10**6) -> Truth:
    """The value the case's interval is for (module docstring): closed-form population linear CKA when
    the metric's estimand is the population value (preprocess "none"), else the Monte Carlo mean of the
    selected score over `truth_draws` datasets of n samples."""
    m = get_metric(case.metric)
    if m.estimand_for(m.resolve_params(case.params), case.selection) == "population":
        if case.metric != "cka" or case.params.get("kernel", "linear") != "linear" or case.preprocess != "none":
            raise ValueError(f"no closed-form population value for {case.label} with preprocess {case.preprocess!r}")
        grid = pop.linear_cka()
        fixed = select_index(grid.shape, case.selection)
        return Truth(float(grid.max() if fixed is None else grid[fixed]), 0.0, "closed form")
    rng = np.random.default_rng(seed)
    values = np.array([case.score(*pop.draw(n, rng)) for _ in range(truth_draws)])
    return Truth(float(values.mean()), float(values.std(ddof=1) / math.sqrt(truth_draws)),
                 f"mean of {truth_draws} datasets")


@dataclass(frozen=True)
class Coverage:
    case: str
    population: str
    n: int
    datasets: int
    truth: Truth
    below: int  # datasets whose interval lies above the truth (truth below lo)
    above: int  # truth above hi
    half_width: float  # mean half-width of the intervals (for an unclipped t interval, t_{B-1} x the mean se)
    score_sd: float  # sd of the observed score over the datasets (what the interval should reflect)

    @property
    def coverage(self) -> float:
        return 1 - (self.below + self.above) / self.datasets


def coverage(case: Case, pop: Population, n: int, datasets: int, *, truth_draws: int = 400, level: float = 0.95,
             seed: int = 0, progress: bool = False) -> Coverage:
    """Coverage of `subsample_ci` over `datasets` datasets of n samples from `pop`."""
    truth = known_value(case, pop, n, truth_draws)
    rng = np.random.default_rng(seed)
    below = above = 0
    widths, scores = [], []
    for d in range(datasets):
        xs, ys = pop.draw(n, rng)
        lo, hi = subsample_ci(case.metric, xs, ys, selection=case.selection, n_sub=case.n_sub, frac=case.frac,
                              level=level, seed=d, preprocess=case.preprocess, scheme=case.scheme, **case.params)
        below += truth.value < lo
        above += truth.value > hi
        widths.append((hi - lo) / 2)
        scores.append(case.score(xs, ys, seed=d))
        if progress:
            print(f"\r{case.label} {pop.name} N={n}: {d + 1}/{datasets}", end="", file=sys.stderr, flush=True)
    if progress:
        print(file=sys.stderr)
    return Coverage(case.label, pop.name, n, datasets, truth, below, above, float(np.mean(widths)),
                    float(np.std(scores, ddof=1)))


@dataclass(frozen=True)
class NullSize:
    case: str
    n: int
    datasets: int
    alpha: float
    rejected: int  # datasets with p <= alpha
    above_chance: int | None = None  # datasets whose interval lies above the closed-form chance level
    above_mean: int | None = None  # datasets whose interval lies above the null mean

    @property
    def rate(self) -> float:
        return self.rejected / self.datasets


def null_size(case: Case, n: int, datasets: int, *, alpha: float = 0.05, seed: int = 0, population: Population | None = None,
              intervals: bool = False, progress: bool = False) -> NullSize:
    """How often the permutation test rejects at `alpha` when X and Y are independent ("null" population);
    with `intervals`, also how often the interval lies entirely above the metric's closed-form chance level
    (None without one) and above the null mean: reading "above chance" off a best-of-grid interval."""
    pop = population or make_population("null")
    chance = chance_level(case.metric, n, **case.params) if intervals else None
    rng = np.random.default_rng(seed)
    rejected = 0
    above_chance = 0 if chance is not None else None
    above_mean = 0 if intervals else None
    for d in range(datasets):
        xs, ys = pop.draw(n, rng)
        res = permutation_null(case.metric, xs, ys, selection=case.selection, n_perm=case.n_perm, seed=d,
                               preprocess=case.preprocess, **case.params)
        rejected += res.p_value <= alpha
        if intervals:
            lo, _ = subsample_ci(case.metric, xs, ys, selection=case.selection, n_sub=case.n_sub, frac=case.frac,
                                 seed=d, preprocess=case.preprocess, scheme=case.scheme, **case.params)
            above_mean += lo > res.mean
            if chance is not None:
                above_chance += lo > chance
        if progress:
            print(f"\rnull {case.label} N={n}: {d + 1}/{datasets}", end="", file=sys.stderr, flush=True)
    if progress:
        print(file=sys.stderr)
    return NullSize(case.label, n, datasets, alpha, rejected, above_chance, above_mean)


#: Datasets of one sentinel cell, and the misses (intervals that do not contain the known value) a sentinel
#: cell allows: at least 2 and at most 22 of 200, coverage in [.89, .99]. A correct scheme (coverage .95)
#: fails one cell with probability .0006 (binomial; .007 at .965, .013 at .93), so a sentinel run of 8 cells
#: fails a correct suite with probability under 5%; the cells are seeded, so one that passed once passes
#: every time on the same code. A broken scheme fails: coverage .85 in 94% of cells, .80 in all, .999 (an
#: interval twice as wide) in 98%.
SENTINEL_DATASETS = 200
SENTINEL_MISSES = (2, 22)


def sentinel_passes(misses: int, datasets: int = SENTINEL_DATASETS) -> bool:
    """Whether a sentinel cell with `misses` of `datasets` intervals missing their known value passes."""
    if datasets != SENTINEL_DATASETS:
        raise ValueError(f"the sentinel's bounds are for {SENTINEL_DATASETS} datasets, got {datasets}")
    return SENTINEL_MISSES[0] <= misses <= SENTINEL_MISSES[1]


#: The code whose behaviour the committed calibration figures describe (docs/statistics.md): the metrics
#: and their statistics, and the verdict rule the power figures are of. `code_digest` hashes it.
CALIBRATED_CODE = (
    "platobench/metrics/api.py", "platobench/metrics/cached_layers.py", "platobench/metrics/calibration.py",
    "platobench/metrics/cca.py", "platobench/metrics/heldout.py", "platobench/metrics/kernel.py",
    "platobench/metrics/knn.py", "platobench/metrics/knn_search.py", "platobench/metrics/linear_cka.py",
    "platobench/metrics/preprocess.py", "platobench/metrics/procrustes.py", "platobench/metrics/products.py",
    "platobench/metrics/registry.py", "platobench/metrics/resampling.py", "platobench/metrics/selection.py",
    "platobench/metrics/stats.py", "platobench/metrics/validation.py", "platobench/bench/scoring.py",
    "platobench/bench/verdict_power.py", "platobench/leaderboard/baselines.py", "platobench/leaderboard/paired.py",
    "platobench/leaderboard/verdicts.py",
)
STAMP = re.compile(r"<!-- calibration digest: ([0-9a-f]{64}) -->")


def _without_docstrings(source: str) -> str:
    """The code of `source` as `ast.unparse` writes it, docstrings and comments left out: edits to prose
    and formatting leave it unchanged."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return ast.unparse(tree)


def code_digest(root: Path | None = None) -> str:
    """sha256 of `CALIBRATED_CODE` under `root` (default: this checkout), docstrings and comments left out."""
    root = Path(__file__).resolve().parents[2] if root is None else root
    h = hashlib.sha256()
    for name in CALIBRATED_CODE:
        h.update(name.encode() + b"\0" + _without_docstrings((root / name).read_text(encoding="utf-8")).encode() + b"\0")
    return h.hexdigest()


def stamped_digest(text: str) -> str | None:
    """The digest a calibration stamp in `text` (docs/statistics.md) names, None without one."""
    found = STAMP.search(text)
    return found.group(1) if found else None


def stamp(path: Path, digest: str) -> None:
    """Write `digest` into the calibration stamp of `path` (added at the end when it has none)."""
    text = path.read_text(encoding="utf-8")
    line = f"<!-- calibration digest: {digest} -->"
    text = STAMP.sub(line, text) if STAMP.search(text) else text.rstrip("\n") + "\n\n" + line + "\n"
    path.write_text(text, encoding="utf-8")


def _binomial_se(p: float, k: int) -> float:
    return math.sqrt(max(p * (1 - p), 1e-12) / k)


def _null_text(size: NullSize | None) -> str:
    if size is None:
        return "-"
    text = f"{size.rate:.3f} ({size.rejected}/{size.datasets})"
    if size.above_mean is not None:
        text += f"; CI above null mean {size.above_mean / size.datasets:.3f}"
        if size.above_chance is not None:
            text += f", above chance {size.above_chance / size.datasets:.3f}"
    return text


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m platobench.metrics.calibration",
        description="Coverage of the confidence intervals and size of the permutation test on synthetic "
        "populations with known values (module docstring); prints a markdown table.",
    )
    ap.add_argument("--datasets", type=int, default=200, help="datasets per coverage cell (default 200; 0: only the null column)")
    ap.add_argument("--n", type=int, nargs="+", default=[256, 644], help="sample counts (default 256 644)")
    ap.add_argument("--cases", nargs="+", default=[c.key for c in CASES], choices=[c.key for c in CASES],
                    metavar="CASE", help="metric ids (cka/unbiased, cka/biased for the two CKA estimators; a suffix "
                    f"@heldout for held-out layer selection): {', '.join(c.key for c in CASES)}")
    ap.add_argument("--populations", nargs="+", default=["distinct", "flat"], choices=POPULATION_KINDS[:2])
    ap.add_argument("--truth-draws", type=int, default=400, help="datasets behind a Monte Carlo known value")
    ap.add_argument("--scheme", choices=INTERVAL_SCHEMES, help="resample every case this way instead of "
                    "as its metric declares (to compare the schemes)")
    ap.add_argument("--frac", type=float, help="subset fraction of the subsample scheme (default: the case's, 0.5)")
    ap.add_argument("--null-intervals", action="store_true", help="on the null datasets, also count intervals "
                    "above the chance level and above the null mean (one interval per dataset more)")
    ap.add_argument("--null-datasets", type=int, default=200, help="datasets of the null-size column (0: skip)")
    ap.add_argument("--stamp", type=Path, metavar="DOC", help="write this code's digest into DOC's calibration "
                    "stamp and stop (`make calibrate-full` does, after its cells pass)")
    args = ap.parse_args(argv)
    if args.stamp is not None:
        stamp(args.stamp, code_digest())
        print(f"{args.stamp}: calibration digest {code_digest()}")
        return 0
    torch.set_num_threads(1)
    cases = []
    for spec in args.cases:
        case = next(c for c in CASES if c.key == spec)
        cases.append(dataclasses.replace(case, scheme=args.scheme, frac=args.frac or case.frac))
    print("| statistic | population | N | known value | coverage (±SE) | truth below lo / above hi | "
          "mean se / sd of score | null rejection at .05 | s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for case in cases:
        for n in args.n:
            size = (null_size(case, n, args.null_datasets, intervals=args.null_intervals, progress=True)
                    if args.null_datasets else None)
            if not args.datasets:
                print(f"| {case.label} | null | {n} | - | - | - | - | {_null_text(size)} | - |", flush=True)
            for kind in args.populations if args.datasets else ():
                t0 = time.perf_counter()
                cov = coverage(case, make_population(kind), n, args.datasets, truth_draws=args.truth_draws, progress=True)
                t = cov.truth
                known = f"{t.value:.4f}" + (f" ± {t.stderr:.4f}" if t.stderr else "") + f" ({t.how})"
                null = _null_text(size)
                print(f"| {case.label} | {kind} | {n} | {known} | {cov.coverage:.3f} ± {_binomial_se(cov.coverage, cov.datasets):.3f} | "
                      f"{cov.below / cov.datasets:.3f} / {cov.above / cov.datasets:.3f} | "
                      f"{cov.half_width / (t_quantile(0.95, case.n_sub - 1) * cov.score_sd):.2f} | {null} | {time.perf_counter() - t0:.0f} |", flush=True)
                size = None  # printed once per (case, N)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
