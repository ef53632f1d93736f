"""Extractor benchmark: platobench's batched extractor against a reference-style baseline, same
run, same model, same data, on CPU; plus warm-cache reuse.

Baseline = what the PRH reference code does: text batches of 4 padded to the whole dataset's longest caption;
images transformed one at a time in a Python loop, batches of 4. Features of both paths are compared.
Usage: python benchmarks/extract.py [--limit 1024] [--text-model demo/smollm2-135m] [--vision-model demo/dinov2-s-imgfocus]
       [--tiny]  (random-initialised baselines, no weights, on 8 samples)
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path

import torch
from tiny import parse_tiny

from platobench.data import get_dataset
from platobench.encoders import load_encoder
from platobench.features.extract import encode_images, encode_texts, extract
from platobench.features.store import FeatureStore
from platobench.zoo import load_zoo

BASELINE_BATCH = 4


def baseline_texts(encoder, texts: list[str]) -> list[torch.Tensor]:
    """Batches of 4, each padded to the longest caption of the whole dataset."""
    longest = max(encoder.token_lengths(texts))
    outs = []
    for i in range(0, len(texts), BASELINE_BATCH):
        batch = dict(encoder.tokenizer(texts[i : i + BASELINE_BATCH], padding="max_length", max_length=longest,
                                       truncation=True, return_tensors="pt"))
        outs.append(encoder.encode(batch))
    return [torch.cat([o[l] for o in outs]) for l in range(len(encoder.layer_ids))]


def baseline_images(encoder, dataset, n: int) -> list[torch.Tensor]:
    """Images decoded and transformed one at a time in a Python loop, batches of 4."""
    outs = []
    for i in range(0, n, BASELINE_BATCH):
        pixels = torch.stack([encoder.transform(dataset.image(j)) for j in range(i, min(n, i + BASELINE_BATCH))])
        outs.append(encoder.encode(pixels))
    return [torch.cat([o[l] for o in outs]) for l in range(len(encoder.layer_ids))]


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def max_diff(a: list[torch.Tensor], b: list[torch.Tensor]) -> float:
    return max(float((x - y).abs().max()) for x, y in zip(a, b))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=1024)
    ap.add_argument("--dataset", default="openclipart-1024")
    ap.add_argument("--text-model", default="demo/smollm2-135m")
    ap.add_argument("--vision-model", default="demo/dinov2-s-imgfocus")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--workers", type=int, default=2)
    args = parse_tiny(ap, limit=8, text_model="baseline/random-init-minilm-l6",
                      vision_model="baseline/random-init-efficientnet-lite0", batch_size=4, workers=0)
    zoo = load_zoo()
    ds = get_dataset(args.dataset, limit=args.limit)
    n = len(ds)
    rows = []

    text_enc = load_encoder(zoo.get(args.text_model))
    texts = ds.captions(0)
    base, t_base = timed(lambda: baseline_texts(text_enc, texts))
    ours, t_ours = timed(lambda: encode_texts(text_enc, texts, args.batch_size))
    rows.append((args.text_model, f"{n} captions", n / t_base, n / t_ours, max_diff(base, ours)))

    vis_enc = load_encoder(zoo.get(args.vision_model))
    base, t_base = timed(lambda: baseline_images(vis_enc, ds, n))
    ours, t_ours = timed(lambda: encode_images(vis_enc, ds, range(n), args.batch_size, args.workers))
    rows.append((args.vision_model, f"{n} images", n / t_base, n / t_ours, max_diff(base, ours)))

    with tempfile.TemporaryDirectory() as tmp:
        store = FeatureStore(Path(tmp))
        spec = zoo.get(args.text_model)
        _, cold = timed(lambda: extract(spec, ds, store=store, batch_size=args.batch_size, progress=False))
        entry, warm = timed(lambda: extract(spec, ds, store=store, batch_size=args.batch_size, progress=False)[0])
        _, read = timed(lambda: list(entry.layers))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f"## Extractor vs reference-style baseline (CPU, {os.cpu_count()} cores, N={n}, batch {args.batch_size} vs 4)\n")
    print("| model | data | baseline samples/s | platobench samples/s | speed-up | max abs diff |")
    print("|---|---|---:|---:|---:|---:|")
    for model, data, b, o, d in rows:
        print(f"| {model} | {data} | {b:.1f} | {o:.1f} | {o / b:.2f}x | {d:.1e} |")
    print(f"\nWarm cache ({args.text_model}): cold extract {cold:.1f} s, warm lookup {warm * 1e3:.1f} ms "
          f"({cold / warm:.0f}x), warm lookup + reading every layer {read * 1e3:.1f} ms ({cold / (warm + read):.0f}x).")
    print(f"Peak RSS: {peak:.2f} GiB")


if __name__ == "__main__":
    main()
