"""Benchmark: permutation null with permuted per-layer summaries vs recomputing every draw.

Same run, same features: `platobench.metrics.stats.permutation_null` (summaries computed once, then
permuted through `Metric.extra["permute"]`) against the naive null that re-scores X against Y[perm]
from the features for every draw (`layer_grid` per draw, best pair inside each draw). The null values
must agree to 1e-9; the table reports both times and the speed-up.

Usage: .venv/bin/python benchmarks/permutation_null.py [--n 1024] [--draws 10] [--metrics cka mutual_knn] [--tiny]
"""

from __future__ import annotations

import argparse
import time

import torch
from tiny import parse_tiny

from platobench.metrics import layer_grid
from platobench.metrics.stats import permutation_null


def features(n: int, widths: list[int], seed: int, latent: torch.Tensor) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [latent @ torch.randn(latent.shape[1], d, generator=g) + 2 * torch.randn(n, d, generator=g) for d in widths]


def naive_null(metric: str, xs: list[torch.Tensor], ys: list[torch.Tensor], draws: int, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(draws):
        perm = torch.randperm(xs[0].shape[0], generator=gen)
        out.append(layer_grid(metric, xs, [y[perm] for y in ys]).max())
    return torch.stack(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1024, help="samples N")
    ap.add_argument("--draws", type=int, default=10, help="permutation draws B")
    ap.add_argument("--metrics", nargs="+", default=["cka", "mutual_knn"])
    args = parse_tiny(ap, n=64, draws=2)
    latent = torch.randn(args.n, 16, generator=torch.Generator().manual_seed(0))
    xs = features(args.n, [768] * 6, 1, latent)
    ys = features(args.n, [512] * 4, 2, latent)
    print(f"N={args.n}, grid 6x768 vs 4x512, B={args.draws} draws, best pair inside each draw, "
          f"{torch.get_num_threads()} threads\n")
    print("| metric | naive null (s) | platobench null (s) | speed-up | max abs diff |")
    print("|---|---|---|---|---|")
    for metric in args.metrics:
        t0 = time.perf_counter()
        ref = naive_null(metric, xs, ys, args.draws, seed=3)
        t_naive = time.perf_counter() - t0
        t0 = time.perf_counter()
        res = permutation_null(metric, xs, ys, n_perm=args.draws, seed=3)
        t_fast = time.perf_counter() - t0
        diff = float((res.values - ref).abs().max())
        assert diff < 1e-9, f"{metric}: null values differ by {diff}"
        print(f"| {metric} | {t_naive:.2f} | {t_fast:.2f} | {t_naive / t_fast:.1f}x | {diff:.1e} |")


if __name__ == "__main__":
    main()
