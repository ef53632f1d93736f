"""Timing of the features cache (platobench.features.store) against the reference code's format.

Baseline (measured in the same run): what platonic-rep does, one `torch.save` of a dict holding the whole
[N, L, D] float32 stack, read back with `torch.load` (pickle). platobench writes resumable chunks
(temp file, fsync, rename), joins them into one safetensors file per layer with a sha256 each, and reads
a layer back with its checksum checked. Also timed: the openclipart catalogue, built by parsing ~7,000
SVGs cold versus read from its cached JSON (what a warm `get_dataset("openclipart-1024")` costs).

Usage: .venv/bin/python benchmarks/store.py [--repeats 3] [--n 1024] [--tiny]
(`--tiny`: N = 64, chunks of 16, one repeat, the catalogue left out: parsing its SVGs takes a minute.)
Prints a markdown table (median wall seconds over repeats; ratio = baseline / platobench, > 1 is faster).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch
from tiny import parse_tiny

from platobench.data import ids_hash, openclipart
from platobench.features.store import FeatureKey, FeatureStore

SHAPES = {"SmolLM2-135M (31 x 576)": (31, 576), "DINOv2-S (13 x 384)": (13, 384)}
N = 1024
CHUNK = 256


def median_time(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench_shape(n: int, chunk: int, layers: int, width: int, repeats: int, tmp: Path) -> dict[str, float]:
    ids = [f"s{i:05d}" for i in range(n)]
    stack = torch.randn(n, layers, width)
    per_layer = [stack[:, i].contiguous() for i in range(layers)]
    counter = iter(range(10**6))

    def write_store() -> FeatureStore:
        store = FeatureStore(tmp / f"store{next(counter)}")
        key = FeatureKey("bench", "r", "float32", "mean", tuple(range(layers)), "bench", "r", ids_hash(ids))
        with store.writer(key, ids, range(layers), [width] * layers) as w:
            for a, b in w.pending(chunk):
                w.write_chunk(a, [x[a:b] for x in per_layer])
            w.finalize()
        return store

    def write_baseline() -> None:
        torch.save({"feats": stack, "num_params": 0}, tmp / "baseline.pt")

    store = write_store()
    key = FeatureKey("bench", "r", "float32", "mean", tuple(range(layers)), "bench", "r", ids_hash(ids))

    def read_store() -> list[torch.Tensor]:
        return list(store.get(key).layers)

    def read_baseline() -> torch.Tensor:
        return torch.load(tmp / "baseline.pt")["feats"]

    return {
        "write": median_time(write_store, repeats),
        "write_base": median_time(write_baseline, repeats),
        "read": median_time(read_store, repeats),
        "read_base": median_time(read_baseline, repeats),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--n", type=int, default=N, help=f"samples per entry (default {N})")
    parser.add_argument("--chunk", type=int, default=CHUNK, help=f"samples per chunk (default {CHUNK})")
    args = parse_tiny(parser, repeats=1, n=64, chunk=16)
    print(f"N={args.n}, chunks of {args.chunk}, float32; {os.cpu_count()} CPUs; median of {args.repeats}\n")
    print("| entry | op | platobench s | baseline s | ratio |")
    print("|---|---|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, (layers, width) in SHAPES.items():
            r = bench_shape(args.n, args.chunk, layers, width, args.repeats, Path(tmp))
            print(
                f"| {name} | write (chunked, fsync, sha256) | {r['write']:.3f} | {r['write_base']:.3f} | "
                f"{r['write_base'] / r['write']:.2f} |"
            )
            print(
                f"| {name} | warm read, all layers | {r['read']:.3f} | {r['read_base']:.3f} | "
                f"{r['read_base'] / r['read']:.2f} |"
            )
        if not args.tiny and (openclipart.DEFAULT_ROOT / "svg").is_dir():
            os.environ["PLATOBENCH_HOME"] = tmp
            openclipart.catalogue.cache_clear()
            t0 = time.perf_counter()
            openclipart.catalogue()
            cold = time.perf_counter() - t0

            def warm() -> None:
                openclipart.catalogue.cache_clear()
                openclipart.catalogue()

            hot = median_time(warm, args.repeats)
            print(
                f"| openclipart catalogue | cached JSON vs SVG parse | {hot:.3f} | {cold:.3f} | {cold / hot:.1f} |"
            )


if __name__ == "__main__":
    main()
