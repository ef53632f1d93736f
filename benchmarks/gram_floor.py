"""Benchmark of the layer-grid engine at the floor (Grams and kNN search) against an earlier engine.

Part 1 (same run, same features): N samples, model X with 33 layers and model Y with 25 layers, each
`--width` wide (default 0: the PRH validation shapes, X 4096 wide and Y 1024 wide), random float32
features, preprocess "l2", the [33, 25] `layer_grid` of unbiased linear CKA and of mutual kNN (k=10).
"before" is the whole `platobench` package at git revision `--before` (default de475b6, the engine
before the bounded-memory work), unpacked with `git archive`; "after" is this checkout. Each engine runs
in its own process (PYTHONPATH), the two interleaved, best of `--repeats` timings each; ratio and max
abs difference of the two grids.

Part 2 (the Gram product, one layer [N, width or 1024]): torch float64 `x @ x.T` (gemm),
`products.self_product` (recursive halving; this engine), numpy `x @ x.T` (OpenBLAS syrk), each in
float64 and float32, followed by float64 U-centring; time per product and the unbiased CKA difference
against the float64 gemm on random features and on features with one dimension 100x the others.
Numpy runs last: its OpenBLAS threads compete with torch's on the same cores.

    python benchmarks/gram_floor.py                     # 2 threads, N = 1024, 33x4096 vs 25x1024
    python benchmarks/gram_floor.py --width 1024        # every layer 1024 wide
    python benchmarks/gram_floor.py --tiny              # N = 64, every layer 32 wide, one run each
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
import torch
from threadpoolctl import threadpool_limits
from tiny import parse_tiny

ROOT = Path(__file__).resolve().parents[1]
METRICS = {"cka": {"kernel": "linear", "estimator": "unbiased"}, "mutual_knn": {"k": 10}}
BEFORE = "de475b6"


def best_of(fn: Callable[[], torch.Tensor], repeats: int) -> tuple[float, torch.Tensor]:
    times, out = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def _worker(metric: str, n: int, width: int, out: str) -> None:
    """In a child process: seconds of one [33, 25] grid after a warm-up; the grid saved to `out`."""
    from platobench.metrics import layer_grid

    g = torch.Generator().manual_seed(0)
    xs = [torch.randn(n, 4096 if width == 0 else width, generator=g) for _ in range(33)]
    ys = [torch.randn(n, 1024 if width == 0 else width, generator=g) for _ in range(25)]
    run = partial(layer_grid, metric, xs, ys, preprocess="l2", **METRICS[metric])
    run()  # warm-up
    seconds, grid = best_of(run, 1)
    torch.save(grid, out)
    print(json.dumps({"seconds": seconds}))


def _tree(rev: str, folder: Path) -> Path:
    """The `platobench` package as of git revision `rev`, unpacked under `folder`."""
    archive = subprocess.run(["git", "archive", rev, "platobench"], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def part1(n: int, width: int, repeats: int, before: str, threads: int) -> list[dict]:
    """Both engines in child processes (PYTHONPATH = the old tree or this checkout), interleaved."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"before": _tree(before, Path(tmp)), "after": ROOT}
        for metric in METRICS:
            seconds: dict[str, list[float]] = {"before": [], "after": []}
            for _ in range(repeats):  # interleaved, so that a change of machine load hits both engines
                for which, tree in trees.items():
                    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": str(threads)}
                    cmd = [sys.executable, __file__, "--worker", metric, "--n", str(n), "--width", str(width),
                           "--threads", str(threads), "--grid-out", f"{tmp}/{which}-{metric}.pt"]
                    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
                    seconds[which].append(json.loads(out.strip().splitlines()[-1])["seconds"])
            old, new = (torch.load(f"{tmp}/{w}-{metric}.pt") for w in ("before", "after"))
            before_s, after_s = min(seconds["before"]), min(seconds["after"])
            shape = "33x4096 vs 25x1024" if width == 0 else f"33x{width} vs 25x{width}"
            rows.append({"metric": metric, "n": n, "grid": shape, "before": before, "before_s": before_s,
                         "after_s": after_s, "speedup": before_s / after_s,
                         "max_abs_diff": float((old - new).abs().max())})
    return rows


def _cka(gram: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, y: torch.Tensor) -> float:
    """Unbiased linear CKA from the Gram products `gram` of column-centred x, y (float64 centring)."""
    from platobench.metrics.kernel import u_centre_

    u, v = (u_centre_(gram(a - a.mean(dim=0)).double()) for a in (x, y))
    return float((u * v).sum() / (torch.linalg.vector_norm(u) * torch.linalg.vector_norm(v)))


def _numpy_product(a: torch.Tensor) -> torch.Tensor:
    b = a.numpy()
    return torch.from_numpy(b @ b.T)  # OpenBLAS: syrk


def part2(n: int, width: int, repeats: int) -> list[dict]:
    from platobench.metrics.products import self_product

    width = width or 1024
    g = torch.Generator().manual_seed(1)
    x = torch.randn(n, width, generator=g, dtype=torch.float64)
    y = x[:, : width // 2].repeat(1, 2) + torch.randn(n, width, generator=g, dtype=torch.float64)
    x_dom = x.clone()
    x_dom[:, 0] *= 100.0  # one dominant dimension, like a language model's massive activations
    variants = {
        "torch float64 x @ x.T (gemm; previous engine)": lambda a: a @ a.T,
        "torch float64 self_product (recursive halving)": self_product,
        "numpy float64 x @ x.T (syrk)": _numpy_product,
        "torch float32 x @ x.T": lambda a: a.float() @ a.float().T,
        "torch float32 self_product (this engine at N^2 D >= 2^27)": lambda a: self_product(a.float()),
        "numpy float32 x @ x.T (syrk)": lambda a: _numpy_product(a.float()),
    }
    exact = [_cka(variants["torch float64 x @ x.T (gemm; previous engine)"], a, y) for a in (x, x_dom)]
    rows = []
    for name, fn in variants.items():
        seconds, _ = best_of(partial(fn, x), max(repeats, 5))
        diffs = [abs(_cka(fn, a, y) - e) for a, e in zip((x, x_dom), exact)]
        rows.append({"gram": name, "n": n, "width": width, "seconds": seconds,
                     "cka_diff_random": diffs[0], "cka_diff_dominant_dim": diffs[1]})
    return rows


def _markdown(rows1: list[dict], rows2: list[dict]) -> str:
    out = ["| metric | N | grid | before (s) | after (s) | speed-up | max abs diff |",
           "|---|---|---|---|---|---|---|"]
    out += [f"| {r['metric']} | {r['n']} | {r['grid']} | {r['before_s']:.2f} | {r['after_s']:.2f} | "
            f"{r['speedup']:.2f}x | {r['max_abs_diff']:.1e} |" for r in rows1]
    out += ["",
            "| Gram product [N, width] | N | width | seconds | CKA diff, random | CKA diff, dominant dim |",
            "|---|---|---|---|---|---|"]
    out += [f"| {r['gram']} | {r['n']} | {r['width']} | {r['seconds']:.4f} | {r['cka_diff_random']:.1e} | "
            f"{r['cka_diff_dominant_dim']:.1e} |" for r in rows2]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1024, help="samples per layer (default 1024)")
    ap.add_argument("--width", type=int, default=0,
                    help="width of every layer (default 0: X 4096 wide, Y 1024 wide)")
    ap.add_argument("--before", default=BEFORE, help=f"git revision of the engine compared (default {BEFORE})")
    ap.add_argument("--part", choices=["1", "2", "all"], default="all")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)  # metric: one child timing
    ap.add_argument("--grid-out", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--threads", type=int, default=2, help="torch and BLAS threads (default 2)")
    ap.add_argument("--repeats", type=int, default=3, help="runs per engine, best kept (default 3)")
    ap.add_argument("--json", action="store_true", help="print JSON instead of markdown")
    args = parse_tiny(ap, argv, n=64, width=32, repeats=1, before="HEAD")  # HEAD: in a shallow clone too
    torch.set_num_threads(args.threads)
    if args.worker:
        _worker(args.worker, args.n, args.width, args.grid_out)
        return 0
    rows1 = part1(args.n, args.width, args.repeats, args.before, args.threads) if args.part != "2" else []
    with threadpool_limits(limits=args.threads):
        rows2 = part2(args.n, args.width, args.repeats) if args.part != "1" else []
    if args.json:
        print(json.dumps({"part1": rows1, "part2": rows2}, indent=1))
    else:
        print(f"torch {torch.__version__}, numpy {np.__version__}, {args.threads} threads\n")
        print(_markdown(rows1, rows2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
