"""The 33 × 25 layer grid at larger N: time and peak memory of `layer_grid` against N = 1,024.

Model X has 33 layers × 4096 wide and model Y 25 layers × 1024 wide (the shapes of
benchmarks/layer_grid.py part 1), random float32 features generated layer by layer on access (never the
whole stack in memory), preprocess "l2". Each (metric, N) runs in a fresh process so that its peak RSS
(resource.getrusage) is its own. `--x-layers`/`--y-layers` shrink the grid (reported as such, never
extrapolated). Time ratios are against the N = 1,024 row of the same run; the exponent is the
least-squares slope of log time against log N.

    .venv/bin/python benchmarks/grid_at_n.py                                    # mutual_knn and cka, N = 1024, 4096, 16384
    .venv/bin/python benchmarks/grid_at_n.py --metrics cka --sizes 1024,4096
    .venv/bin/python benchmarks/grid_at_n.py --tiny        # cka, N = 64 and 128, a 2 x 2 grid
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from layer_grid import RandomLayers  # noqa: E402  (the benchmark's own lazy layer generator)
from tiny import parse_tiny  # noqa: E402

PARAMS = {"mutual_knn": {"k": 10}, "cka": {"kernel": "linear", "estimator": "unbiased"}}


def one(metric: str, n: int, lx: int, ly: int) -> dict:
    from platobench.metrics import layer_grid

    xs, ys = RandomLayers(n, [4096] * lx, 1), RandomLayers(n, [1024] * ly, 2)
    t = time.perf_counter()
    grid = layer_grid(metric, xs, ys, preprocess="l2", **PARAMS[metric])
    seconds = time.perf_counter() - t
    return {"metric": metric, "n": n, "grid": f"{lx}x4096 vs {ly}x1024", "seconds": round(seconds, 2),
            "feature_generation_s": round(xs.gen_seconds + ys.gen_seconds, 2),
            "peak_rss_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
            "grid_mean": float(grid.mean())}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1024,4096,16384", help="comma-separated N (default 1024,4096,16384)")
    ap.add_argument("--metrics", default="mutual_knn,cka", help="mutual_knn and/or cka")
    ap.add_argument("--x-layers", type=int, default=33)
    ap.add_argument("--y-layers", type=int, default=25)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--worker", nargs=2, default=None, help=argparse.SUPPRESS)  # metric, n: one child run
    args = parse_tiny(ap, argv, sizes="64,128", metrics="cka", x_layers=2, y_layers=2)
    if args.worker:
        torch.set_num_threads(args.threads)
        print(json.dumps(one(args.worker[0], int(args.worker[1]), args.x_layers, args.y_layers)))
        return 0
    rows = []
    for metric in [m for m in args.metrics.split(",") if m]:
        if metric not in PARAMS:
            ap.error(f"--metrics: {metric!r} is not one of {sorted(PARAMS)}")
        for n in (int(s) for s in args.sizes.split(",")):
            cmd = [sys.executable, __file__, "--worker", metric, str(n), "--x-layers", str(args.x_layers),
                   "--y-layers", str(args.y_layers), "--threads", str(args.threads)]
            rows.append(json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout))
            if not args.json:
                r = rows[-1]
                print(f"{metric} N={n:,} {r['grid']}: {r['seconds']:.1f} s, peak RSS {r['peak_rss_gib']:.2f} GiB",
                      flush=True)
    for metric in PARAMS:
        mine = [r for r in rows if r["metric"] == metric]
        base = next((r["seconds"] for r in mine if r["n"] == 1024), None)
        for r in mine:
            r["time_vs_1024"] = None if base is None else round(r["seconds"] / base, 2)
        if len(mine) >= 2:
            slope = float(np.polyfit(np.log([r["n"] for r in mine]), np.log([r["seconds"] for r in mine]), 1)[0])
            for r in mine:
                r["exponent"] = round(slope, 2)
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        for r in rows:
            print(f"{r['metric']} N={r['n']:,}: x{r.get('time_vs_1024')} of N=1,024, exponent {r.get('exponent')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
