"""Timing of the blind-matching solvers (platobench.metrics.matching) on planted problems.

Targets: `faq` at N=100 <= 1 s and `gw` at N=1000 <= 5 s on 2 cores. Each solver is timed
against a baseline measured in the same run:
  faq  blind_match (barycenter + 8 seeded restarts, kernels standardised, objective re-scored) versus
       one bare scipy.optimize.quadratic_assignment call from the barycenter;
  gw   blind_match (product coupling, Hungarian rounding) versus one bare
       ot.gromov.gromov_wasserstein call with POT's defaults.
Problem: X [N, 64] Gaussian with scales k^-1/2, Y = X Q + noise (Q a random rotation), rows of Y
shuffled; cosine kernels. Accuracy is the share of rows matched to their planted partner.

Usage: .venv/bin/python benchmarks/zeroshot.py [--repeats 3] [--noise 0.02] [--faq-n 100] [--gw-n 1000] [--tiny]
Prints a markdown table (median wall and process CPU time over repeats). At --noise 0.05 the N=1000
problem is harder: gw then stops in a local optimum (about half the rows right).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

import numpy as np
import ot
from scipy.optimize import quadratic_assignment
from scipy.stats import ortho_group
from tiny import parse_tiny

from platobench.metrics.matching import blind_match, cosine_kernel, standardize_kernel


def planted_kernels(n: int, noise: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cosine kernels of X and of a rotated, noised, shuffled copy; truth[i] = partner of row i."""
    rng = np.random.default_rng(seed)
    d = 64
    X = rng.standard_normal((n, d)) * np.arange(1, d + 1) ** -0.5
    shuffle = rng.permutation(n)
    Y = (X @ ortho_group.rvs(d, random_state=seed) + noise * rng.standard_normal((n, d)))[shuffle]
    return cosine_kernel(X), cosine_kernel(Y), np.argsort(shuffle)


def timed(fn: Callable[[], np.ndarray], repeats: int) -> tuple[float, float, np.ndarray]:
    """Median wall time and median process CPU time (s) over `repeats` calls, and the last result.
    On a loaded machine the wall time grows with the load; the CPU time much less so."""
    walls, cpus, perm = [], [], np.empty(0)
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        perm = fn()
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return statistics.median(walls), statistics.median(cpus), perm


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="timed calls per row (median reported)")
    parser.add_argument("--noise", type=float, default=0.02, help="noise std of the planted copy")
    parser.add_argument("--faq-n", type=int, default=100, help="N of the faq problem (default 100; target at 100)")
    parser.add_argument("--gw-n", type=int, default=1000, help="N of the gw problem (default 1000; target at 1000)")
    args = parse_tiny(parser, repeats=1, faq_n=20, gw_n=40)

    rows = []
    A, B, truth = planted_kernels(args.faq_n, args.noise)
    As, Bs = standardize_kernel(A), standardize_kernel(B)
    base = timed(lambda: quadratic_assignment(As, Bs, method="faq", options={"maximize": True}).col_ind, args.repeats)
    ours = timed(lambda: blind_match(A, B, solver="faq", seed=0).permutation, args.repeats)
    rows.append(("faq", args.faq_n, "scipy QAP, 1 start", base, ours, truth, 1.0))

    A, B, truth = planted_kernels(args.gw_n, args.noise)
    As, Bs = standardize_kernel(A), standardize_kernel(B)
    p = np.full(args.gw_n, 1 / args.gw_n)

    def bare_gw() -> np.ndarray:
        return ot.gromov.gromov_wasserstein(As, Bs, p, p, loss_fun="square_loss").argmax(axis=1)

    base = timed(bare_gw, args.repeats)
    ours = timed(lambda: blind_match(A, B, solver="gw", seed=0).permutation, args.repeats)
    rows.append(("gw", args.gw_n, "POT GW, argmax rows", base, ours, truth, 5.0))

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"cpus: {os.cpu_count()}, load average (1 min) at end: {load:.1f}, noise {args.noise}, "
          f"median of {args.repeats}")
    print()
    print("| solver | N | baseline | baseline wall s (cpu s) | baseline acc | blind_match wall s (cpu s) "
          "| blind_match acc | ratio (wall) | target s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for solver, n, name, (bw, bc, bp), (ow, oc, op), truth, target in rows:
        print(f"| {solver} | {n} | {name} | {bw:.3f} ({bc:.3f}) | {(bp == truth).mean():.3f} | {ow:.3f} ({oc:.3f}) "
              f"| {(op == truth).mean():.3f} | {ow / bw:.2f} | {target:.0f} |")


if __name__ == "__main__":
    main()
