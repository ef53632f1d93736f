"""Alignment at large N: time and peak memory of last-layer mutual kNN and linear CKA against N.

For each N (default 1,024 … 100,000) a fresh process draws paired features X [N, D] and Y = X R + noise
(R a random rotation, so the scores are far from chance), scores mutual kNN (k=10, l2 preprocessing) with
the torch backend and with faiss (IndexFlatIP, exact), and unbiased and biased linear CKA, and reports
wall seconds per metric and the process's peak RSS (resource.getrusage). Then fits time ∝ N^a (least
squares in log-log) per metric. Both kNN backends must give the same score (they share the tie rule).

    .venv/bin/python benchmarks/large_n.py                         # the full sweep, D = 1024
    .venv/bin/python benchmarks/large_n.py --sizes 1024,4096 --dim 256 --json
    .venv/bin/python benchmarks/large_n.py --tiny         # N = 64 and 128, D = 16
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np
import torch
from tiny import parse_tiny

DEFAULT_SIZES = "1024,4096,16384,65536,100000"
METRICS = {
    "mutual_knn[torch]": ("mutual_knn", {"k": 10, "backend": "torch"}, "l2"),
    "mutual_knn[faiss]": ("mutual_knn", {"k": 10, "backend": "faiss"}, "l2"),
    "cka[unbiased]": ("cka", {"kernel": "linear", "estimator": "unbiased"}, "none"),
    "cka[biased]": ("cka", {"kernel": "linear", "estimator": "biased"}, "none"),
}


def features(n: int, d: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """X [n, d] Gaussian and Y = X R + 0.5 noise (float32), R a seeded random orthogonal [d, d]."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=gen)
    r, _ = torch.linalg.qr(torch.randn(d, d, generator=gen))
    return x, x @ r + 0.5 * torch.randn(n, d, generator=gen)


def one_size(n: int, d: int, metrics: list[str], seed: int) -> dict:
    """Run inside a fresh process: every metric at one N; seconds, scores and the peak RSS in GiB."""
    from platobench.metrics import score

    x, y = features(n, d, seed)
    out: dict = {"n": n, "dim": d, "seconds": {}, "scores": {}}
    for label in metrics:
        metric, params, preprocess = METRICS[label]
        t0 = time.perf_counter()
        out["scores"][label] = score(metric, x, y, preprocess=preprocess, **params)
        out["seconds"][label] = round(time.perf_counter() - t0, 3)
    out["peak_rss_gib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 3)
    return out


def exponent(ns: list[int], seconds: list[float]) -> float | None:
    """Slope of log(seconds) against log(N) (None with fewer than two sizes)."""
    if len(ns) < 2:
        return None
    return float(np.polyfit(np.log(ns), np.log(seconds), 1)[0])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default=DEFAULT_SIZES, help=f"comma-separated N (default {DEFAULT_SIZES})")
    p.add_argument("--dim", type=int, default=1024, help="feature width D (default 1024)")
    p.add_argument("--metrics", default=",".join(METRICS), help=f"subset of {', '.join(METRICS)}")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=2, help="torch threads of each worker process (default 2)")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)  # one size, in a child process
    args = parse_tiny(p, argv, sizes="64,128", dim=16)
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
    unknown = sorted(set(metrics) - set(METRICS))
    if unknown:
        p.error(f"--metrics: unknown {unknown}; choose from {list(METRICS)}")
    if args.worker is not None:
        torch.set_num_threads(args.threads)
        print(json.dumps(one_size(args.worker, args.dim, metrics, args.seed)))
        return 0
    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        cmd = [sys.executable, __file__, "--worker", str(n), "--dim", str(args.dim), "--metrics", ",".join(metrics),
               "--seed", str(args.seed), "--threads", str(args.threads)]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
        rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        if not args.json:
            row = rows[-1]
            times = ", ".join(f"{m} {row['seconds'][m]:.1f} s" for m in metrics)
            print(f"N={n:>7,}: {times}; peak RSS {row['peak_rss_gib']:.2f} GiB", flush=True)
    pair = ("mutual_knn[torch]", "mutual_knn[faiss]")
    for row in rows:
        if all(m in row["scores"] for m in pair) and row["scores"][pair[0]] != row["scores"][pair[1]]:
            print(f"N={row['n']:,}: the kNN backends disagree: {row['scores'][pair[0]]} vs {row['scores'][pair[1]]}")
    fits = {m: exponent([r["n"] for r in rows], [r["seconds"][m] for r in rows]) for m in metrics}
    if args.json:
        print(json.dumps({"rows": rows, "exponents": fits}, indent=1))
    else:
        print("time ~ N^a: " + ", ".join(f"{m} a={a:.2f}" for m, a in fits.items() if a is not None))
    return 0


if __name__ == "__main__":
    sys.exit(main())
