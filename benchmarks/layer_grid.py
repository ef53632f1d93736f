"""Benchmark of the layer-grid engine (platobench.metrics.layer_grid) against a per-pair baseline.

Part 1 (speed-up, same run, same features): N samples, model X with 33 layers of width 4096 and model
Y with 25 layers of width 1024 (random float32 features). The engine computes the whole [33, 25] grid
with preprocess="l2";
the baseline does what minyoungg/platonic-rep does for every layer pair — recompute both similarity
matrices and full argsorts (mutual_knn), or both Gram matrices and three dense unbiased HSICs (CKA,
Song et al. 2012) — and its total is measured on `--baseline-pairs` pairs and extrapolated to the
grid (or measured in full with `--full-baseline`). Values must agree to 1e-6. In the same run, the
grid with preprocess="prh" (its ratio to the l2 grid: the cost of the clamp statistics), the prh grid
over `CachedLayers` whose statistics were computed once beforehand (the hot path: the feature store keeps
them beside each entry; that one computation timed on its own), and the floor,
one bare symmetric product x x^T per layer of the same 58 layers (the faster of `products.self_product`
and numpy's float32 `x @ x.T`, OpenBLAS syrk; its ratio: what the grid costs beyond its products), and
the grid's ratio to `self_product` alone (MKL's halving: the products the engine itself makes);
floor, l2, prh and cached prh are interleaved, best of `--repeats`.

Part 2 (scale): the PRH "val" grid, 454 language-model layers (12 LLMs, hidden states including the
embeddings) x 352 ViT layers (17 models, block outputs), true widths, N samples, random features
generated layer by layer (never the whole stack in memory), mutual_knn. Reports wall time, peak RSS
(resource.getrusage, run in its own process), and the reference's time extrapolated from measured
per-pair costs. `--scale s` keeps a fraction s of each model's layers (at least one) and extrapolates
the engine time to the full grid (per-layer work scales with the summed widths, the combination with
the number of layer pairs).

    .venv/bin/python benchmarks/layer_grid.py                  # both parts, part 2 at full scale
    .venv/bin/python benchmarks/layer_grid.py --part 2 --scale 0.1
    .venv/bin/python benchmarks/layer_grid.py --part 1 --threads 1 --repeats 3
    .venv/bin/python benchmarks/layer_grid.py --tiny           # N = 64, part 2 at scale 0.02
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import resource
import subprocess
import sys
import time
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from threadpoolctl import threadpool_limits
from tiny import parse_tiny

from platobench.metrics import layer_grid, summarize_layers
from platobench.metrics.cached_layers import CachedLayers
from platobench.metrics.preprocess import LayerStack
from platobench.metrics.products import self_product

# PRH "val" models (minyoungg/platonic-rep tasks.py / results/features/.../wit_1024): (name, blocks, width).
# Language models contribute blocks + 1 hidden states (the embedding output is one of them).
LLMS = [
    ("bigscience/bloomz-560m", 24, 1024), ("bigscience/bloomz-1b1", 24, 1536),
    ("bigscience/bloomz-1b7", 24, 2048), ("bigscience/bloomz-3b", 30, 2560),
    ("bigscience/bloomz-7b1", 30, 4096), ("openlm-research/open_llama_3b", 26, 3200),
    ("openlm-research/open_llama_7b", 32, 4096), ("openlm-research/open_llama_13b", 40, 5120),
    ("huggyllama/llama-7b", 32, 4096), ("huggyllama/llama-13b", 40, 5120),
    ("huggyllama/llama-30b", 60, 6656), ("huggyllama/llama-65b", 80, 8192),
]
VITS = [
    ("vit_tiny_patch16_224.augreg_in21k", 12, 192), ("vit_small_patch16_224.augreg_in21k", 12, 384),
    ("vit_base_patch16_224.augreg_in21k", 12, 768), ("vit_large_patch16_224.augreg_in21k", 24, 1024),
    ("vit_small_patch14_dinov2.lvd142m", 12, 384), ("vit_base_patch14_dinov2.lvd142m", 12, 768),
    ("vit_large_patch14_dinov2.lvd142m", 24, 1024), ("vit_giant_patch14_dinov2.lvd142m", 40, 1536),
    ("vit_base_patch16_224.mae", 12, 768), ("vit_large_patch16_224.mae", 24, 1024),
    ("vit_huge_patch14_224.mae", 32, 1280),
    ("vit_base_patch16_clip_224.laion2b", 12, 768), ("vit_large_patch14_clip_224.laion2b", 24, 1024),
    ("vit_huge_patch14_clip_224.laion2b", 32, 1280),
    ("vit_base_patch16_clip_224.laion2b_ft_in12k", 12, 768),
    ("vit_large_patch14_clip_224.laion2b_ft_in12k", 24, 1024),
    ("vit_huge_patch14_clip_224.laion2b_ft_in12k", 32, 1280),
]


def llm_widths(scale: float = 1.0) -> list[int]:
    return [w for _, blocks, w in LLMS for _ in range(_keep(blocks + 1, scale))]


def vit_widths(scale: float = 1.0) -> list[int]:
    return [w for _, blocks, w in VITS for _ in range(_keep(blocks, scale))]


def _keep(layers: int, scale: float) -> int:
    return max(1, round(layers * scale))


class RandomLayers(Sequence):
    """Random float32 layers [n, width] generated on access from a per-layer seed (streaming)."""

    def __init__(self, n: int, widths: list[int], seed: int) -> None:
        self.n, self.widths, self.seed = n, widths, seed
        self.gen_seconds = 0.0

    def __len__(self) -> int:
        return len(self.widths)

    def __getitem__(self, i: int) -> torch.Tensor:
        if not 0 <= i < len(self):
            raise IndexError(i)
        t = time.perf_counter()
        g = torch.Generator().manual_seed(self.seed * 100_003 + i)
        x = torch.randn(self.n, self.widths[i], generator=g)
        self.gen_seconds += time.perf_counter() - t
        return x


# ---- per-pair baselines (the reference's procedure, written here from its description) ------------


def baseline_mutual_knn(a: torch.Tensor, b: torch.Tensor, k: int) -> float:
    """Per pair: l2-normalise both layers, both similarity matrices, diagonal pushed down, full
    descending argsort, 0/1 masks (the reference's `compute_score` + `AlignmentMetrics.mutual_knn`)."""
    a, b = F.normalize(a, dim=-1), F.normalize(b, dim=-1)
    n = a.shape[0]
    rows = torch.arange(n).unsqueeze(1)
    overlap = torch.ones(n, n)
    for f in (a, b):
        order = (f @ f.T).fill_diagonal_(-1e8).argsort(dim=1, descending=True)[:, :k]
        mask = torch.zeros(n, n)
        mask[rows, order] = 1.0
        overlap = overlap * mask
    return float(overlap.sum(dim=1).div(k).mean())


def _hsic_unbiased(kk: torch.Tensor, ll: torch.Tensor) -> torch.Tensor:
    n = kk.shape[0]
    kt, lt = kk.clone().fill_diagonal_(0), ll.clone().fill_diagonal_(0)
    value = (kt * lt.T).sum() + kt.sum() * lt.sum() / ((n - 1) * (n - 2)) - 2 * (kt @ lt).sum() / (n - 2)
    return value / (n * (n - 3))


def baseline_cka(a: torch.Tensor, b: torch.Tensor) -> float:
    """Per pair: l2-normalise both layers, both Gram matrices (float64) and three dense unbiased HSICs
    (the reference's `compute_score` + `AlignmentMetrics.unbiased_cka`, without its 1e-6)."""
    a, b = F.normalize(a.double(), dim=-1), F.normalize(b.double(), dim=-1)
    kk, ll = a @ a.T, b @ b.T
    return float(_hsic_unbiased(kk, ll) / torch.sqrt(_hsic_unbiased(kk, kk) * _hsic_unbiased(ll, ll)))


BASELINES = {
    "mutual_knn": (lambda a, b: baseline_mutual_knn(a, b, 10), {"k": 10}),
    "cka": (baseline_cka, {"kernel": "linear", "estimator": "unbiased"}),
}


def _spread_pairs(lx: int, ly: int, count: int, seed: int) -> list[tuple[int, int]]:
    pairs = [(i, j) for i in range(lx) for j in range(ly)]
    return sorted(random.Random(seed).sample(pairs, min(count, len(pairs))))


def _floor_seconds(layers: list[torch.Tensor]) -> dict[str, float]:
    """Seconds of one bare x x^T per layer by torch's `self_product` (MKL, the products the engine makes)
    and by numpy's syrk (OpenBLAS)."""
    times = {}
    for name, fn in (("self_product", lambda x: self_product(x, out_dtype=x.dtype)),
                     ("numpy syrk", lambda x: x.numpy() @ x.numpy().T)):
        with threadpool_limits(limits=torch.get_num_threads()):  # numpy's BLAS on torch's thread count
            t = time.perf_counter()
            for x in layers:
                fn(x)
            times[name] = time.perf_counter() - t
    return times


def part1(n: int, metrics: list[str], baseline_pairs: int, full: bool, repeats: int) -> list[dict]:
    xs = [RandomLayers(n, [4096] * 33, 1)[i] for i in range(33)]
    ys = [RandomLayers(n, [1024] * 25, 2)[i] for i in range(25)]
    rows = []
    for metric in metrics:
        fn, params = BASELINES[metric]
        best = {"self_product": math.inf, "numpy syrk": math.inf, "l2": math.inf, "prh": math.inf,
                "prh_cached": math.inf, "statistics": math.inf}
        engine_cpu = math.inf
        for _ in range(repeats):  # interleaved, so that a change of machine load hits all four
            for kind, seconds in _floor_seconds(xs + ys).items():
                best[kind] = min(best[kind], seconds)
            t, c = time.perf_counter(), time.process_time()
            grid = layer_grid(metric, xs, ys, preprocess="l2", **params)
            best["l2"], engine_cpu = min(best["l2"], time.perf_counter() - t), min(engine_cpu, time.process_time() - c)
            t = time.perf_counter()
            prh = layer_grid(metric, xs, ys, preprocess="prh", **params)
            best["prh"] = min(best["prh"], time.perf_counter() - t)
            # The hot path: statistics computed once per model x dataset (as the feature store keeps
            # them beside each entry), then every grid, interval and null over the same layers.
            cx, cy = CachedLayers(xs), CachedLayers(ys)
            t = time.perf_counter()
            LayerStack(cx, "X").prh_row_quantiles(), LayerStack(cy, "Y").prh_row_quantiles()
            best["statistics"] = min(best["statistics"], time.perf_counter() - t)
            t = time.perf_counter()
            cached = layer_grid(metric, cx, cy, preprocess="prh", **params)
            best["prh_cached"] = min(best["prh_cached"], time.perf_counter() - t)
            if not torch.equal(cached, prh):
                raise AssertionError("the grid over cached statistics differs from the grid without")
        engine = best["l2"]
        floor_kind = min(("self_product", "numpy syrk"), key=best.__getitem__)
        pairs = [(i, j) for i in range(33) for j in range(25)] if full else _spread_pairs(33, 25, baseline_pairs, 0)
        t, c = time.perf_counter(), time.process_time()
        values = [fn(xs[i], ys[j]) for i, j in pairs]
        per_pair, per_pair_cpu = (time.perf_counter() - t) / len(pairs), (time.process_time() - c) / len(pairs)
        err = max(abs(v - float(grid[i, j])) for v, (i, j) in zip(values, pairs))
        rows.append({
            "metric": metric, "n": n, "grid": "33x4096 vs 25x1024", "engine_s": engine,
            "baseline_pairs_measured": len(pairs), "baseline_per_pair_s": per_pair,
            "baseline_s": per_pair * 33 * 25, "baseline_extrapolated": not full,
            "speedup": per_pair * 33 * 25 / engine, "max_abs_diff": err, "equal_1e-6": err <= 1e-6,
            "engine_cpu_s": engine_cpu, "baseline_cpu_s": per_pair_cpu * 33 * 25,
            "speedup_cpu": per_pair_cpu * 33 * 25 / engine_cpu,
            "prh_s": best["prh"], "prh_over_l2": best["prh"] / engine,
            "prh_cached_s": best["prh_cached"], "prh_cached_over_l2": best["prh_cached"] / engine,
            "prh_statistics_s": best["statistics"],
            "floor_s": best[floor_kind], "floor": floor_kind, "l2_over_floor": engine / best[floor_kind],
            "self_product_s": best["self_product"], "l2_over_self_product": engine / best["self_product"],
            "repeats": repeats, "threads": torch.get_num_threads(),
        })
    return rows


def part2(n: int, scale: float, baseline_pairs: int) -> dict:
    xs, ys = RandomLayers(n, llm_widths(scale), 3), RandomLayers(n, vit_widths(scale), 4)
    c0, t0 = time.process_time(), time.perf_counter()
    summaries = summarize_layers("mutual_knn", xs, ys, preprocess="l2", k=10)
    t1, c1 = time.perf_counter(), time.process_time()
    grid = summaries.grid()
    t2, c2 = time.perf_counter(), time.process_time()
    peak_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    summarize_s, combine_s, gen_s = t1 - t0, t2 - t1, xs.gen_seconds + ys.gen_seconds
    full_x, full_y = llm_widths(), vit_widths()
    width_ratio = (sum(full_x) + sum(full_y)) / (sum(xs.widths) + sum(ys.widths))
    pair_ratio = len(full_x) * len(full_y) / (len(xs) * len(ys))
    engine_full = summarize_s * width_ratio + combine_s * pair_ratio
    engine_full_cpu = (c1 - c0) * width_ratio + (c2 - c1) * pair_ratio
    # Reference cost per pair, on pairs drawn from the full grid (widths as in the real grid).
    rng = random.Random(0)
    picks = [(rng.choice(full_x), rng.choice(full_y)) for _ in range(baseline_pairs)]
    elapsed = elapsed_cpu = 0.0
    for dx, dy in picks:
        a, b = torch.randn(n, dx), torch.randn(n, dy)
        t, c = time.perf_counter(), time.process_time()
        baseline_mutual_knn(a, b, 10)
        elapsed, elapsed_cpu = elapsed + time.perf_counter() - t, elapsed_cpu + time.process_time() - c
    per_pair, per_pair_cpu = elapsed / len(picks), elapsed_cpu / len(picks)
    return {
        "metric": "mutual_knn", "n": n, "scale": scale, "grid": f"{len(xs)}x{len(ys)}",
        "engine_s": t2 - t0, "engine_cpu_s": c2 - c0, "summarize_s": summarize_s, "combine_s": combine_s,
        "feature_generation_s": gen_s, "peak_rss_gib": peak_gib,
        "engine_full_grid_s": engine_full if scale != 1.0 else t2 - t0,
        "engine_full_extrapolated": scale != 1.0, "engine_full_grid_cpu_s": engine_full_cpu,
        "reference_per_pair_cpu_s": per_pair_cpu, "reference_full_grid_cpu_s": per_pair_cpu * len(full_x) * len(full_y),
        "threads": torch.get_num_threads(),
        "reference_per_pair_s": per_pair, "reference_pairs_measured": len(picks),
        "reference_full_grid_s": per_pair * len(full_x) * len(full_y),
        "full_grid": f"{len(full_x)}x{len(full_y)}", "grid_mean": float(grid.mean()),
    }


def _markdown(rows1: list[dict], row2: dict | None) -> str:
    out = []
    if rows1:
        out += ["| metric | N | grid | engine, l2 (s) | baseline (s) | speed-up | CPU-time speed-up | max abs diff | "
                "prh (s) | prh / l2 | prh, statistics cached (s) | its / l2 | statistics, once (s) | floor (s) | "
                "l2 / floor | self_product (s) | l2 / self_product |",
                "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in rows1:
            est = f" (extrapolated from {r['baseline_pairs_measured']} pairs)" if r["baseline_extrapolated"] else ""
            out.append(f"| {r['metric']} | {r['n']} | {r['grid']} | {r['engine_s']:.2f} | "
                       f"{r['baseline_s']:.1f}{est} | {r['speedup']:.0f}x | {r['speedup_cpu']:.0f}x | {r['max_abs_diff']:.1e} | "
                       f"{r['prh_s']:.2f} | {r['prh_over_l2']:.2f}x | {r['prh_cached_s']:.2f} | "
                       f"{r['prh_cached_over_l2']:.2f}x | {r['prh_statistics_s']:.2f} | {r['floor_s']:.2f} ({r['floor']}) | "
                       f"{r['l2_over_floor']:.2f}x | {r['self_product_s']:.2f} | {r['l2_over_self_product']:.2f}x |")
    if row2:
        r = row2
        header = ("| grid (LLM x ViT layers) | N | engine (s) | engine CPU time (s) | "
                  "of which kNN / combine / feature gen (s) | "
                  "peak RSS (GiB) | engine, full grid (s) | reference, full grid (s) | "
                  "full grid CPU time: engine / reference (s) |")
        row = (f"| {r['grid']} (scale {r['scale']}) | {r['n']} | {r['engine_s']:.1f} | {r['engine_cpu_s']:.1f} | "
               f"{r['summarize_s']:.1f} / {r['combine_s']:.1f} / {r['feature_generation_s']:.1f} | "
               f"{r['peak_rss_gib']:.2f} | {r['engine_full_grid_s']:.0f}"
               f"{' (extrapolated)' if r['engine_full_extrapolated'] else ''} | "
               f"{r['reference_full_grid_s']:.0f} ({r['reference_per_pair_s']:.3f} s/pair x "
               f"{r['full_grid']}, {r['reference_pairs_measured']} pairs measured) | "
               f"{r['engine_full_grid_cpu_s']:.0f} / {r['reference_full_grid_cpu_s']:.0f} |")
        out += ["", header, "|---|---|---|---|---|---|---|---|---|", row]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", choices=["1", "2", "all"], default="all", help="which part to run (default all)")
    ap.add_argument("--n", type=int, default=1024, help="samples per layer (default 1024)")
    ap.add_argument("--metrics", default="mutual_knn,cka", help="part 1 metrics (mutual_knn, cka)")
    ap.add_argument("--baseline-pairs", type=int, default=6, help="baseline pairs measured (default 6)")
    ap.add_argument("--full-baseline", action="store_true", help="part 1: run the baseline on every pair")
    ap.add_argument("--scale", type=float, default=1.0, help="part 2: fraction of each model's layers")
    ap.add_argument("--repeats", type=int, default=2, help="part 1: floor, l2 and prh runs, best kept (default 2)")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    ap.add_argument("--json", action="store_true", help="print JSON instead of markdown")
    args = parse_tiny(ap, argv, n=64, baseline_pairs=2, scale=0.02, repeats=1)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    if not 0 < args.scale <= 1:
        ap.error("--scale must be in (0, 1]")
    metrics = [m for m in args.metrics.split(",") if m]
    unknown = sorted(set(metrics) - set(BASELINES))
    if unknown:
        ap.error(f"--metrics: unknown {unknown}; expected a subset of {sorted(BASELINES)}")
    rows1 = part1(args.n, metrics, args.baseline_pairs, args.full_baseline, args.repeats) if args.part in ("1", "all") else []
    row2 = None
    if args.part == "2":
        row2 = part2(args.n, args.scale, args.baseline_pairs)
    elif args.part == "all":  # own process, so that peak RSS is part 2's alone
        cmd = [sys.executable, __file__, "--part", "2", "--json", "--n", str(args.n),
               "--scale", str(args.scale), "--baseline-pairs", str(args.baseline_pairs),
               "--threads", str(torch.get_num_threads())]
        row2 = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)["part2"]
    load = f"load average {os.getloadavg()[0]:.1f} at the end (1 min)"
    if args.json:
        print(json.dumps({"part1": rows1, "part2": row2, "load": load}, indent=1))
    else:
        print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {load}\n")
        print(_markdown(rows1, row2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
