"""One GPU check (≤ 8 minutes on one H200): extraction throughput and MFU of a 7B LLM and a ViT-g, and the
kNN metric engine at scale. Random weights from configs (no hub); figures that did not run are null with
the reason.

Sections (each timed with device synchronisation, after a warm-up, inside its own wall-clock budget; a
step that would overrun the budget is skipped, and so is the rest of its section, with the reason recorded):

  text    A Qwen2.5-7B-shaped `Qwen2Model` (hidden 3584, 28 layers, 28 heads, 4 KV heads, intermediate 18944,
          vocab 152064), random weights, dtype "auto" (bf16 on GPUs of compute capability >= 8). "forward":
          the model with output_hidden_states; "extract": `HFTextEncoder.encode` with the zoo's
          qwen2.5/qwen2.5-7b spec (forward, the spec's mask-aware "avg" pooling of all 29 hidden states,
          float32 copies to the CPU: what `platobench extract` runs per batch). Inputs are random token ids
          (tokenisation is not timed), every position valid.
  vision  A DINOv2 ViT-g/14-shaped `Dinov2Model` (hidden 1536, 40 layers, 24 heads, SwiGLU FFN as
          facebook/dinov2-giant: 2 x 4096 in, 4096 out, the parameter count of an MLP of 6144; patch 14,
          224 px: 256 patches + CLS), random weights and pixels; "extract" is `HFVisionEncoder.encode` with
          the zoo's dinov2-hf/vit-g14 spec (CLS pooling of all 41 hidden states).
  knn     Exact top-k (k = 10) of N = 100,000 random float32 rows of width 1024 by inner product:
          `platobench.metrics.knn.knn_sets` (torch backend, on the device) against faiss-gpu
          (`GpuIndexFlatIP`) when faiss has GPU support, and the project's faiss backend (CPU) when faiss
          is importable; agreement of the neighbour sets; and `score("mutual_knn", X, Y)` end to end.
  grid    `platobench.metrics.layer_grid("mutual_knn", ..., preprocess="l2", k=10)` at N = 1,024 on the
          full PRH validation grid: 454 language-model layers (12 LLMs, 560M to 65B) x 352 ViT layers
          (17 models) at their true widths (benchmarks/layer_grid.py part 2), random features generated
          on the device before timing (~9 GB of float32).

MFU = model FLOP/s / the GPU's dense bf16 peak (`PEAK_BF16_TFLOPS`, or --peak-tflops). Model FLOPs per token
(Kaplan et al. 2020, "Scaling laws", sec. 2.1; attention as in Chowdhery et al. 2022, PaLM, app. B):
2 x (weights of every Linear layer, and the ViT's patch convolution per patch) + 4 x n_layers x T x d_attn
for QKᵀ and AV over the T positions (the causal mask is not halved, as in PaLM). Embedding lookups,
norms, softmax and pooling are not counted.

    .venv/bin/python benchmarks/gpu_check.py --out /tmp/gpu_check          # full shapes on cuda
    .venv/bin/python benchmarks/gpu_check.py --tiny --device cpu [--out /tmp/gpu_check_tiny]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

import torch
from gpu_sections import FULL, TINY, run_grid, run_knn, run_text, run_vision
from gpu_timing import Section, peak_tflops

SECTIONS = ("text", "vision", "knn", "grid")
#: Share of --budget-s each section may take.
BUDGET_SHARE = {"text": 0.35, "vision": 0.2, "knn": 0.3, "grid": 0.15}


def environment(device: torch.device, dtype: torch.dtype) -> dict[str, Any]:
    import transformers

    env: dict[str, Any] = {"device": str(device), "dtype": str(dtype).removeprefix("torch."),
                           "torch": torch.__version__, "transformers": transformers.__version__,
                           "cuda": torch.version.cuda, "python": platform.python_version(),
                           "cpu_threads": torch.get_num_threads()}
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        env.update(device_name=props.name, capability=f"{props.major}.{props.minor}",
                   memory_gib=props.total_memory / 2**30)
    else:
        env["device_name"] = platform.processor() or platform.machine()
    return env


def parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=None,
                    help="folder for gpu_check.json (created; required except with --tiny, which prints only)")
    ap.add_argument("--shapes", choices=["full", "tiny"], default="full", help="problem sizes (default full)")
    ap.add_argument("--tiny", action="store_true", help="same as --shapes tiny (CPU test in seconds)")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu",
                    help="torch device (default cuda when available)")
    ap.add_argument("--dtype", default="auto", help="model dtype: auto (bf16 on GPUs of capability >= 8), "
                    "bfloat16, float16, float32")
    ap.add_argument("--peak-tflops", type=float, default=None, help="dense bf16 peak for MFU (overrides the table)")
    ap.add_argument("--sections", default=",".join(SECTIONS), help=f"comma-separated subset of {','.join(SECTIONS)}")
    ap.add_argument("--budget-s", type=float, default=420.0, help="wall seconds for all sections (default 420), "
                    "shared " + ", ".join(f"{s} {v:.0%}" for s, v in BUDGET_SHARE.items()))
    ap.add_argument("--warmup", type=int, default=2, help="untimed calls before timing a model (default 2)")
    ap.add_argument("--repeats", type=int, default=5, help="timed calls per model shape and grid (default 5)")
    ap.add_argument("--knn-repeats", type=int, default=2, help="timed calls per kNN backend (default 2)")
    args = ap.parse_args(argv)
    if args.out is None and not (args.tiny or args.shapes == "tiny"):
        ap.error("--out is required (except at tiny shapes)")
    args.sections = [s for s in args.sections.split(",") if s]
    unknown = sorted(set(args.sections) - set(SECTIONS))
    if unknown or not args.sections:
        ap.error(f"--sections: expected a non-empty subset of {','.join(SECTIONS)}, got {unknown or 'nothing'}")
    for name in ("budget_s", "peak_tflops"):
        value = getattr(args, name)
        if value is not None and not value > 0:
            ap.error(f"--{name.replace('_', '-')} must be > 0, got {value}")
    if args.warmup < 0 or args.repeats < 1 or args.knn_repeats < 1:
        ap.error("--warmup must be >= 0, --repeats and --knn-repeats >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the selected sections, print the JSON and write it to OUT/gpu_check.json (when --out is given);
    1 if a section failed."""
    from platobench.encoders.runtime import resolve_device, resolve_dtype

    args = parse(argv)
    shapes_name = "tiny" if args.tiny else args.shapes
    shapes = TINY if shapes_name == "tiny" else FULL
    device = resolve_device(args.device)
    dtype = resolve_dtype(args.dtype, device)
    peak, peak_source = peak_tflops(device, args.peak_tflops)
    report: dict[str, Any] = {"script": "benchmarks/gpu_check.py", "shapes": shapes_name,
                              **environment(device, dtype), "peak_tflops": peak, "peak_source": peak_source,
                              "budget_s": args.budget_s, "sections": {}, "notes": []}
    if peak is None:
        report["notes"].append(peak_source)
    if dtype != torch.bfloat16:
        report["notes"].append(f"models ran in {report['dtype']}, not bf16: MFU is against the bf16 peak")
    timed = {"warmup": args.warmup, "repeats": args.repeats}
    runners = {"text": lambda s: run_text(shapes, device, dtype, s, peak, **timed),
               "vision": lambda s: run_vision(shapes, device, dtype, s, peak, **timed),
               "knn": lambda s: run_knn(shapes, device, s, repeats=args.knn_repeats),
               "grid": lambda s: run_grid(shapes, device, s, repeats=args.repeats)}
    t0, failed = time.perf_counter(), False
    for name in SECTIONS:
        if name not in args.sections:
            report["sections"][name] = {"ran": False, "reason": "not selected (--sections)"}
            continue
        section = Section(args.budget_s * BUDGET_SHARE[name])
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        try:
            result: dict[str, Any] = {"ran": True, **runners[name](section)}
        except Exception as exc:  # a failed section (e.g. out of memory) must not lose the others' figures
            failed = True
            result = {"ran": False, "error": f"{type(exc).__name__}: {exc}"}
        result.update(budget_s=section.budget_s, elapsed_s=section.elapsed(), skipped=section.skipped)
        if device.type == "cuda":
            result["peak_memory_gib"] = torch.cuda.max_memory_allocated(device) / 2**30
        report["sections"][name] = result
        if device.type == "cuda":
            torch.cuda.empty_cache()
    report["total_s"] = time.perf_counter() - t0
    text = json.dumps(report, indent=1)
    print(text)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "gpu_check.json").write_text(text + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
