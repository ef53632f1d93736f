"""CPU forward passes with glibc's default malloc against `keep_freed_memory` (platobench.encoders.cpu_memory),
same run, same model, same input, each side in a process of its own (the tuning is process-wide).

Per model: seconds per batch (wall, user, system), the process's peak resident memory, and the largest
absolute difference between the two sides' features (the tuning moves buffers, never values: expected 0).
Usage: python benchmarks/cpu_memory.py [--models demo/efficientnet-lite0 demo/dinov2-s-imgfocus]
       [--batch 32] [--repeats 3] [--threads 1] [--tiny]
(`--tiny`: the random-initialised EfficientNet-Lite0 baseline, no weights, on a batch of 2, one pass.)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tiny import parse_tiny


def side(model: str, batch: int, repeats: int, threads: int, out: str) -> None:
    """One side, in this process: encode one seeded batch `repeats` times after a warm-up; JSON to stdout."""
    import torch
    from PIL import Image

    from platobench.encoders import load_encoder
    from platobench.encoders.cpu_memory import keep_freed_memory
    from platobench.zoo import load_zoo

    torch.set_num_threads(threads)
    tuned = keep_freed_memory()
    encoder = load_encoder(load_zoo().get(model))
    shape = encoder.transform(Image.new("RGB", (256, 256))).shape  # [3, H, W] as the model's transform makes it
    pixels = torch.randn(batch, *shape, generator=torch.Generator().manual_seed(0))
    encoder.encode(pixels)
    t0, w0 = os.times(), time.perf_counter()
    for _ in range(repeats):
        outs = encoder.encode(pixels)
    t1, w1 = os.times(), time.perf_counter()
    torch.save(outs, out)
    print(json.dumps({"tuned": tuned, "wall": (w1 - w0) / repeats, "user": (t1.user - t0.user) / repeats,
                      "sys": (t1.system - t0.system) / repeats,
                      "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=["demo/efficientnet-lite0", "demo/efficientnet-lite2",
                                                    "demo/dinov2-s-imgfocus"])
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--side", nargs=2, metavar=("MODEL", "OUT"), help=argparse.SUPPRESS)
    args = parse_tiny(ap, models=["baseline/random-init-efficientnet-lite0"], batch=2, repeats=1)
    if args.side:
        side(args.side[0], args.batch, args.repeats, args.threads, args.side[1])
        return
    import torch

    print(f"batch {args.batch}, {args.threads} thread(s), mean of {args.repeats} passes after a warm-up\n")
    print("| model | malloc | s / batch | user s | system s | peak RSS (GiB) | speed-up | max abs diff |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for model in args.models:
            rows = {}
            for name, env in (("glibc default", {"PLATOBENCH_MALLOC": "system"}), ("kept", {"PLATOBENCH_MALLOC": ""})):
                out = str(Path(tmp) / f"{name[:4]}.pt")
                cmd = [sys.executable, __file__, "--side", model, out, "--batch", str(args.batch),
                       "--repeats", str(args.repeats), "--threads", str(args.threads)]
                done = subprocess.run(cmd, env={**os.environ, **env}, capture_output=True, text=True, check=True)
                rows[name] = (json.loads(done.stdout.strip().splitlines()[-1]), torch.load(out))
            (base, base_out), kept_out = rows["glibc default"], rows["kept"][1]
            diff = max(float((a - b).abs().max()) for a, b in zip(base_out, kept_out))
            for name, (r, _) in rows.items():
                ratio = f"{base['wall'] / r['wall']:.2f}×" if name == "kept" else ""
                print(f"| {model} | {name}{'' if r['tuned'] == (name == 'kept') else ' (tuning not applied)'} | "
                      f"{r['wall']:.3f} | {r['user']:.3f} | {r['sys']:.3f} | {r['peak_rss_gib']:.2f} | {ratio} | "
                      f"{diff:.1e} |")


if __name__ == "__main__":
    main()
