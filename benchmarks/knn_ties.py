"""Benchmark: mutual kNN with boundary ties counted by expectation vs broken to the lower index.

Same run, same features: `layer_grid("mutual_knn", ...)` with `ties="expected"` (the default: a layer with
a boundary tie makes every cell of its row or column count expected overlaps, platobench/metrics/knn.py) against
`ties="lower_index"` (the PRH reference's rule, the lists as listed). Two grids: one with no tied layer
(both rules give the same counts, so the table shows what the check for ties costs) and one whose first X
layer is tied (rows repeated in blocks of four, as duplicate images or a clamped sparse layer give).

Usage: .venv/bin/python benchmarks/knn_ties.py [--n 644] [--lx 31] [--ly 9] [--k 10] [--repeats 5] [--tiny]
"""

from __future__ import annotations

import argparse
import time

import torch
from tiny import parse_tiny

from platobench.metrics import layer_grid


def layers(n: int, count: int, width: int, seed: int, latent: torch.Tensor) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [latent @ torch.randn(latent.shape[1], width, generator=g) + 2 * torch.randn(n, width, generator=g)
            for _ in range(count)]


def timed(xs: list[torch.Tensor], ys: list[torch.Tensor], k: int, ties: str, repeats: int) -> tuple[float, torch.Tensor]:
    """The fastest of `repeats` calls (seconds) and the grid."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        grid = layer_grid("mutual_knn", xs, ys, k=k, ties=ties)
        best = min(best, time.perf_counter() - t0)
    return best, grid


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=644, help="samples N (the Tux Paint board's)")
    ap.add_argument("--lx", type=int, default=31, help="layers of X")
    ap.add_argument("--ly", type=int, default=9, help="layers of Y")
    ap.add_argument("--k", type=int, default=10, help="neighbours k")
    ap.add_argument("--repeats", type=int, default=5, help="calls per cell; the fastest is reported")
    args = parse_tiny(ap, n=64, lx=3, ly=2, k=5, repeats=1)
    latent = torch.randn(args.n, 16, generator=torch.Generator().manual_seed(0))
    xs = layers(args.n, args.lx, 384, 1, latent)
    ys = layers(args.n, args.ly, 256, 2, latent)
    tied = [xs[0][torch.arange(args.n) // 4 * 4], *xs[1:]]  # rows in blocks of four: ties at every boundary
    layer_grid("mutual_knn", xs[:1], ys[:1], k=args.k)  # warm-up: the first call pays torch's one-time costs
    print(f"N={args.n}, grid {args.lx}x384 vs {args.ly}x256, k={args.k}, {torch.get_num_threads()} threads\n")
    print("| grid | lower_index (s) | expected (s) | expected / lower_index | max |score diff| |")
    print("|---|---|---|---|---|")
    for name, x in (("no tied layer", xs), ("first X layer tied", tied)):
        t_low, low = timed(x, ys, args.k, "lower_index", args.repeats)
        t_exp, exp = timed(x, ys, args.k, "expected", args.repeats)
        diff = float((exp - low).abs().max())
        if name == "no tied layer":
            assert diff == 0, f"without ties the rules must agree, differ by {diff}"
        print(f"| {name} | {t_low:.3f} | {t_exp:.3f} | {t_exp / t_low:.2f}x | {diff:.4f} |")


if __name__ == "__main__":
    main()
