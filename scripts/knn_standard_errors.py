"""Other standard errors for the kNN family, measured against the score's actual spread (docs/statistics.md).

The half-subset interval of the kNN metrics over-covers (its standard error runs 1.1-1.4x the spread of the
score across datasets). This script measures alternatives on the calibration populations of
`platobench.metrics.calibration` (best of grid, k = 10, `prh` preprocessing), each on the selected layer pair
of every dataset; the first three are for mutual kNN only (`--metric mutual_knn`, the default):

  per-sample   sd(o_i) / sqrt(N), o_i = |N_X(i) ∩ N_Y(i)| / k: ignores that a sample's neighbour lists
               depend on the other samples;
  delete-1     the delete-one jackknife, exact: removing sample j replaces j by the (k+1)-th neighbour in the
               lists that held it (Efron & Stein 1981);
  HAC          a dependency-graph variance (1/N^2) sum_i sum_{j in G(i)} d_i d_j, d = o - mean(o), G(i) = i and
               the samples in either of i's lists or listing i (a neighbourhood version of Newey & West 1987);
  half         the current interval's: B = 20 half-subsets, s = sd of their selected scores (delete-d factor 1);
  rate         the same half-subsets and B = 20 quarter-subsets: with Var(score at n) ~ n^-a the variance ratio
               of the two is 2^a + 1, pooled over every cell of the grid; s^2 = var(half scores) / (2^a - 1)
               (Bertail, Politis & Romano 1999), a estimated per dataset and kept in [1, 2]: a kNN score's
               variance falls like 1/N far from chance and like 1/N^2 at chance, and the per-dataset ratio
               is too noisy to be read outside that range. This is the first form of the interval scheme
               "rate" that mutual kNN and CKNNA now use, which also averages in the quarter-subsets' own
               variance; `python -m platobench.metrics.calibration` measures that one.

Prints, per (population, N): the known value (mean of 400 datasets), the score's sd, and per estimator its mean
standard error over that sd and the coverage of score ± q·se (q = 1.96, or t_{B-1} for the subset ones).
Usage: python scripts/knn_standard_errors.py [--metric mutual_knn|cycle_knn|cknna] [--datasets 100] [--n 256 644]
"""

from __future__ import annotations

import argparse
import math

import numpy as np
import torch

from platobench.metrics.api import summarize_layers
from platobench.metrics.calibration import case_by_label, known_value, make_population
from platobench.metrics.knn_search import knn_sets
from platobench.metrics.preprocess import LayerStack, prepared_layers
from platobench.metrics.resampling import t_quantile
from platobench.metrics.selection import select
from platobench.metrics.validation import pow2_unit

K = 10
B = 20


def lists(layers: list[torch.Tensor], index: int, k: int) -> np.ndarray:
    """[N, k] neighbour lists of one layer after the stack's `prh` preprocessing."""
    x = next(prepared_layers(LayerStack(layers, "layers"), "prh", [index]))
    return knn_sets(pow2_unit(x), k).idx.numpy()


def overlaps(ix: np.ndarray, iy: np.ndarray) -> np.ndarray:
    """[N] |N_X(i) ∩ N_Y(i)| / k."""
    return (ix[:, :, None] == iy[:, None, :]).any(-1).sum(-1) / ix.shape[1]


def delete_one(lx: np.ndarray, ly: np.ndarray) -> float:
    """Delete-one jackknife standard error from (k+1)-neighbour lists [N, k+1]."""
    n = lx.shape[0]
    o = overlaps(lx[:, :K], ly[:, :K]) * K
    listed_by: list[set[int]] = [set() for _ in range(n)]
    for i in range(n):
        for j in (*lx[i, :K], *ly[i, :K]):
            listed_by[j].add(i)
    theta = np.empty(n)
    for j in range(n):
        total = o.sum() - o[j]
        for i in listed_by[j]:
            xi, yi = [v for v in lx[i] if v != j][:K], [v for v in ly[i] if v != j][:K]
            total += len(set(xi) & set(yi)) - o[i]
        theta[j] = total / ((n - 1) * K)
    return math.sqrt((n - 1) / n * float(((theta - theta.mean()) ** 2).sum()))


def hac(o: np.ndarray, ix: np.ndarray, iy: np.ndarray) -> float:
    """Dependency-graph standard error over the neighbourhoods of the two lists."""
    n = len(o)
    d = o - o.mean()
    g = np.zeros((n, n), bool)
    g[np.arange(n)[:, None], ix] = True
    g[np.arange(n)[:, None], iy] = True
    g |= g.T
    np.fill_diagonal(g, True)
    return math.sqrt(max(float(d @ (g @ d)), 0.0)) / n


def subset_ses(metric: str, xs: list[torch.Tensor], ys: list[torch.Tensor], n: int,
               rng: np.random.Generator) -> tuple[float, float]:
    """(half, rate) standard errors of the best-of-grid score from B half- and B quarter-subsets."""
    def grids(m: int) -> np.ndarray:
        out = []
        for _ in range(B):
            idx = torch.from_numpy(np.sort(rng.choice(n, m, replace=False)))
            out.append(summarize_layers(metric, [x[idx] for x in xs], [y[idx] for y in ys], preprocess="prh",
                                        k=K).grid().numpy())
        return np.array(out)

    half, quarter = grids(n // 2), grids(n // 4)
    ratio = quarter.var(0, ddof=1).sum() / half.var(0, ddof=1).sum()
    a = min(2.0, max(1.0, math.log2(max(ratio - 1, 1e-12))))
    v = float(half.reshape(B, -1).max(1).var(ddof=1))
    return math.sqrt(v), math.sqrt(v / (2**a - 1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--metric", choices=("mutual_knn", "cycle_knn", "cknna"), default="mutual_knn")
    ap.add_argument("--datasets", type=int, default=100)
    ap.add_argument("--n", type=int, nargs="+", default=[256, 644])
    ap.add_argument("--populations", nargs="+", default=["distinct", "flat"])
    args = ap.parse_args()
    torch.set_num_threads(1)
    case = case_by_label(args.metric)
    t = t_quantile(0.95, B - 1)
    names = (["per-sample", "delete-1", "HAC"] if args.metric == "mutual_knn" else []) + ["half", "rate"]
    q = {name: t if name in ("half", "rate") else 1.96 for name in names}
    print(f"{args.metric}, best of grid, {args.datasets} datasets per row")
    print("| population | N | known value | score sd | " + " | ".join(f"{k}: se/sd, coverage" for k in q) + " |")
    print("|---|---|---|---|" + "---|" * len(q))
    for kind in args.populations:
        pop = make_population(kind)
        for n in args.n:
            truth = known_value(case, pop, n, 400).value
            rng = np.random.default_rng(0)
            scores, ses = [], {k: [] for k in q}
            for _ in range(args.datasets):
                xs, ys = pop.draw(n, rng)
                best = select(summarize_layers(args.metric, xs, ys, preprocess="prh", k=K).grid(), "best", True)
                scores.append(best.score)
                if args.metric == "mutual_knn":
                    lx, ly = lists(xs, best.x_layer, K + 1), lists(ys, best.y_layer, K + 1)
                    o = overlaps(lx[:, :K], ly[:, :K])
                    ses["per-sample"].append(float(o.std(ddof=1)) / math.sqrt(n))
                    ses["delete-1"].append(delete_one(lx, ly))
                    ses["HAC"].append(hac(o, lx[:, :K], ly[:, :K]))
                half, rate = subset_ses(args.metric, xs, ys, n, rng)
                ses["half"].append(half)
                ses["rate"].append(rate)
            sc = np.array(scores)
            sd = float(sc.std(ddof=1))
            cells = [f"{np.mean(s) / sd:.2f}, {np.mean(np.abs(sc - truth) <= q[k] * np.array(s)):.3f}"
                     for k, s in ses.items()]
            print(f"| {kind} | {n} | {truth:.4f} | {sd:.4f} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
