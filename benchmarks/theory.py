"""Benchmark of the theory lab (run: `.venv/bin/python benchmarks/theory.py [--tiny]`).

1. The bound check on 60 worlds (`one_world`), single-threaded BLAS/torch as `run_worlds` does, against
   the same calls under the default thread pools (baseline). Small eigenproblems lose to threading.
2. One JEPA training loss + gradient: the Laplacian form 2 tr(Z^T L̂ Z) used by `train_jepa` against the
   mean over the N sampled pairs it equals (baseline), N = 20000, n = 30.
Prints a markdown table with the ratio baseline / ours (> 1: ours is faster). `--tiny`: 2 worlds, 200
pairs, 2 steps.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from tiny import parse_tiny

from platobench.experiments.theory import worlds as wd
from platobench.experiments.theory.experiments import one_world
from platobench.experiments.theory.threads import single_threaded
from platobench.experiments.theory.training import pairs_laplacian, whitened_outputs


def _time(fn, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def bench_worlds(n_worlds: int = 60) -> tuple[float, float]:
    def run():
        for k in range(n_worlds):
            one_world(0, k)

    one_world(0, 0)  # warm imports
    baseline = _time(run, repeat=1)
    with single_threaded():
        ours = _time(run, repeat=1)
    return baseline, ours


def bench_loss(n: int = 30, n_pairs: int = 20_000, d: int = 3, steps: int = 50) -> tuple[float, float]:
    rng = np.random.default_rng(0)
    world = wd.random_world(n, rng, "sbm")
    i, j = wd.sample_pairs(world.W, n_pairs, rng)
    ti, tj = torch.from_numpy(i), torch.from_numpy(j)
    p = torch.from_numpy(world.p)
    lap = pairs_laplacian((i, j), n)
    F = torch.randn(n, d, dtype=torch.float64, requires_grad=True)

    def per_pair():
        for _ in range(steps):
            Z = whitened_outputs(F, p)
            (Z[ti] - Z[tj]).pow(2).sum(1).mean().backward()

    def laplacian():
        for _ in range(steps):
            Z = whitened_outputs(F, p)
            (2 * torch.einsum("ak,ab,bk->", Z, lap, Z)).backward()

    with single_threaded():
        return _time(per_pair) / steps, _time(laplacian) / steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worlds", type=int, default=60, help="worlds of the bound check (default 60)")
    ap.add_argument("--pairs", type=int, default=20_000, help="sampled pairs N of the JEPA loss (default 20000)")
    ap.add_argument("--steps", type=int, default=50, help="loss + gradient steps timed (default 50)")
    args = parse_tiny(ap, worlds=2, pairs=200, steps=2)
    w_base, w_ours = bench_worlds(args.worlds)
    l_base, l_ours = bench_loss(n_pairs=args.pairs, steps=args.steps)
    print("| task | baseline | platobench | baseline / platobench |")
    print("|---|---:|---:|---:|")
    print(f"| bound check, {args.worlds} worlds (default threads vs 1 thread) | {w_base:.2f} s | {w_ours:.2f} s | "
          f"{w_base / w_ours:.1f}x |")
    print(f"| JEPA loss+grad, N={args.pairs} pairs, n=30 (per-pair mean vs Laplacian) | {l_base * 1e3:.2f} ms | "
          f"{l_ours * 1e3:.2f} ms | {l_base / l_ours:.1f}x |")


if __name__ == "__main__":
    main()
