"""Benchmark of the CKA Gram path at the floor (platobench.metrics.kernel) against the previous engine.

Part 1 (same run, same features): N samples, model X with 33 layers and model Y with 25 layers of width
`--width` (random float32 features), preprocess "l2", the [33, 25] `layer_grid` of unbiased linear CKA and
of mutual kNN (k=10). "before" is the engine of the last commit: the metric modules as `git show HEAD:`
prints them, loaded into temporary modules and swapped into the registry for the timing; "after" is this
checkout. Best of `--repeats` runs each, the two engines interleaved; ratio and max abs difference of the
two grids. mutual kNN is a control when knn.py has not changed since the last commit (ratio ~1).

Part 2 (the Gram product, one layer [N, width]): torch float64 `x @ x.T` (gemm; the previous engine),
`kernel.self_product` (upper block triangle; this engine), numpy `x @ x.T` (OpenBLAS syrk), each in
float64 and float32, followed by float64 U-centring; time per product and the unbiased CKA difference
against the float64 gemm on random features and on features with one dimension 100x the others.
Numpy runs last: its OpenBLAS threads compete with torch's on the same cores.

    python benchmarks/gram_floor.py                     # 2 threads (torch and BLAS), N = width = 1024
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import types
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from platobench.metrics import layer_grid, registry
from platobench.metrics.kernel import self_product, u_centre_

ROOT = Path(__file__).resolve().parents[1]
METRICS = {"cka": {"kernel": "linear", "estimator": "unbiased"}, "mutual_knn": {"k": 10}}
MODULES = {"cka": "kernel", "mutual_knn": "knn"}


def head_metric(metric: str) -> registry.Metric:
    """The `Metric` of the last commit's module (its `register` calls are not applied)."""
    name = MODULES[metric]
    src = subprocess.run(["git", "show", f"HEAD:platobench/metrics/{name}.py"], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    module, found = types.ModuleType(f"head_{name}"), {}
    register = registry.register
    registry.register = lambda m: found.setdefault(m.id, m)
    try:
        exec(compile(src, f"HEAD:{name}.py", "exec"), module.__dict__)
    finally:
        registry.register = register
    return found[metric]


def best_of(fn: Callable[[], torch.Tensor], repeats: int) -> tuple[float, torch.Tensor]:
    times, out = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def part1(n: int, width: int, repeats: int) -> list[dict]:
    g = torch.Generator().manual_seed(0)
    xs = [torch.randn(n, width, generator=g) for _ in range(33)]
    ys = [torch.randn(n, width, generator=g) for _ in range(25)]
    rows = []
    for metric, params in METRICS.items():
        engines = {"after": registry.get_metric(metric), "before": head_metric(metric)}
        run = partial(layer_grid, metric, xs, ys, preprocess="l2", **params)
        seconds, grids = {"before": [], "after": []}, {}
        for _ in range(repeats):  # interleaved, so that a change of machine load hits both engines
            for which, engine in engines.items():
                registry._REGISTRY[metric] = engine
                try:
                    t, grids[which] = best_of(run, 1)
                finally:
                    registry._REGISTRY[metric] = engines["after"]
                seconds[which].append(t)
        before, after = min(seconds["before"]), min(seconds["after"])
        old_grid, new_grid = grids["before"], grids["after"]
        rows.append({"metric": metric, "n": n, "grid": f"33x{width} vs 25x{width}", "before_s": before,
                     "after_s": after, "speedup": before / after,
                     "max_abs_diff": float((old_grid - new_grid).abs().max())})
    return rows


def _cka(gram: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, y: torch.Tensor) -> float:
    """Unbiased linear CKA from the Gram products `gram` of column-centred x, y (float64 centring)."""
    u, v = (u_centre_(gram(a - a.mean(dim=0)).double()) for a in (x, y))
    return float((u * v).sum() / (torch.linalg.vector_norm(u) * torch.linalg.vector_norm(v)))


def _numpy_product(a: torch.Tensor) -> torch.Tensor:
    b = a.numpy()
    return torch.from_numpy(b @ b.T)  # OpenBLAS: syrk


def part2(n: int, width: int, repeats: int) -> list[dict]:
    g = torch.Generator().manual_seed(1)
    x = torch.randn(n, width, generator=g, dtype=torch.float64)
    y = x[:, : width // 2].repeat(1, 2) + torch.randn(n, width, generator=g, dtype=torch.float64)
    x_dom = x.clone()
    x_dom[:, 0] *= 100.0  # one dominant dimension, like a language model's massive activations
    variants = {
        "torch float64 x @ x.T (gemm; previous engine)": lambda a: a @ a.T,
        "torch float64 self_product (upper block triangle)": self_product,
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
    ap.add_argument("--width", type=int, default=1024, help="width of every layer (default 1024)")
    ap.add_argument("--threads", type=int, default=2, help="torch and BLAS threads (default 2)")
    ap.add_argument("--repeats", type=int, default=3, help="runs per engine, best kept (default 3)")
    ap.add_argument("--json", action="store_true", help="print JSON instead of markdown")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    with threadpool_limits(limits=args.threads):
        rows1, rows2 = part1(args.n, args.width, args.repeats), part2(args.n, args.width, args.repeats)
    if args.json:
        print(json.dumps({"part1": rows1, "part2": rows2}, indent=1))
    else:
        print(f"torch {torch.__version__}, numpy {np.__version__}, {args.threads} threads\n")
        print(_markdown(rows1, rows2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
