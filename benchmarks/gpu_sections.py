"""The four sections of benchmarks/gpu_check.py (see its docstring): a 7B LLM's and a ViT-g's extraction
throughput and MFU, exact kNN at N = 100,000, and the full PRH validation layer grid; random weights and features."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from gpu_timing import Section, figures, sync, time_once, time_repeats, timing
from layer_grid import llm_widths, vit_widths


@dataclass(frozen=True)
class Shapes:
    """Model configs and problem sizes. text_batches: (batch, tokens) pairs; grid_x / grid_y: the width of
    every layer of each side of the grid."""

    text: dict[str, int]
    text_batches: tuple[tuple[int, int], ...]
    vision: dict[str, Any]
    vision_batches: tuple[int, ...]
    knn_n: int
    knn_d: int
    k: int
    grid_n: int
    grid_x: tuple[int, ...]
    grid_y: tuple[int, ...]


FULL = Shapes(
    text=dict(hidden_size=3584, num_hidden_layers=28, num_attention_heads=28, num_key_value_heads=4,
              intermediate_size=18944, vocab_size=152064),
    text_batches=((32, 64), (8, 2048)),  # caption-like batches (extract's default batch 32); long documents
    vision=dict(hidden_size=1536, num_hidden_layers=40, num_attention_heads=24, mlp_ratio=4, patch_size=14,
                image_size=224, use_swiglu_ffn=True),
    vision_batches=(32, 128),
    knn_n=100_000, knn_d=1024, k=10, grid_n=1024,
    grid_x=tuple(llm_widths()), grid_y=tuple(vit_widths()),  # 454 LLM x 352 ViT layers (benchmarks/layer_grid.py)
)
TINY = Shapes(
    text=dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
              intermediate_size=128, vocab_size=1000),
    text_batches=((4, 16),),
    vision=dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, mlp_ratio=4, patch_size=14,
                image_size=56, use_swiglu_ffn=True),
    vision_batches=(4,),
    knn_n=2000, knn_d=32, k=10, grid_n=256, grid_x=(64, 64, 48), grid_y=(32, 16),
)


def linear_weights(model: torch.nn.Module) -> int:
    """Number of weights in the model's Linear layers (each costs 2 FLOPs per token)."""
    return sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))


def build(config: Any, device: torch.device, dtype: torch.dtype) -> torch.nn.Module:
    """`AutoModel.from_config` with seeded random weights, created on `device` in `dtype`, in eval mode."""
    from transformers import AutoModel

    torch.manual_seed(0)
    with torch.device(device):
        model = AutoModel.from_config(config, dtype=dtype)
    return model.to(device).eval()


class _TokenIdsOnly:
    """In place of a tokenizer: the inputs are random token ids, so `HFTextEncoder` only reads the maximum
    length from it; tokenisation is not part of the figures."""

    def __init__(self, max_length: int) -> None:
        self.model_max_length = max_length


@torch.inference_mode()
def _forward(model: torch.nn.Module, inputs: dict[str, torch.Tensor]) -> None:
    model(**inputs, output_hidden_states=True)


def measure(forward: Callable[[], Any], encode: Callable[[], list[torch.Tensor]], section: Section,
            device: torch.device, what: str, *, flops: float, items: int, unit: str, peak: float | None,
            warmup: int, repeats: int) -> list[dict[str, Any]]:
    """Rows for mode "forward" (the bare model with output_hidden_states, inputs on the device) and
    "extract" (the encoder's `encode`: CPU inputs in, pooled float32 CPU features out, one per layer)."""
    pooled: list[list[torch.Tensor]] = []

    def extract() -> None:
        pooled[:] = [encode()]

    rows = []
    for mode, fn in (("forward", forward), ("extract", extract)):
        times = time_repeats(fn, device, section, f"{mode} {what}", warmup=warmup, repeats=repeats)
        row = {"mode": mode, **figures(times, flops, items, unit, peak)}
        if mode == "extract" and pooled:
            row["layers_pooled"] = len(pooled[0])
            row["outputs_finite"] = all(bool(torch.isfinite(x).all()) for x in pooled[0])
        rows.append(row)
    return rows


def run_text(shapes: Shapes, device: torch.device, dtype: torch.dtype, section: Section, peak: float | None,
             *, warmup: int, repeats: int) -> dict[str, Any]:
    """Qwen2.5-7B-shaped model: per (batch, tokens), tokens/s and MFU of "forward" and "extract"."""
    from transformers import Qwen2Config

    from platobench.encoders.hf_text import HFTextEncoder
    from platobench.zoo import load_zoo

    out: dict[str, Any] = {"model": "Qwen2.5-7B-shaped Qwen2Model, random weights", "config": shapes.text, "runs": []}
    if not section.fits(0.0, "build model"):
        return out
    config = Qwen2Config(**shapes.text)
    t = time.perf_counter()
    model = build(config, device, dtype)
    out["build_s"] = time.perf_counter() - t
    out["attn_implementation"] = model.config._attn_implementation
    out["params"] = sum(p.numel() for p in model.parameters())
    linear = linear_weights(model)
    out["linear_weights"] = linear
    max_tokens = max(s for _, s in shapes.text_batches)
    encoder = HFTextEncoder(load_zoo().get("qwen2.5/qwen2.5-7b"), model, _TokenIdsOnly(max_tokens), device,
                            causal=True)
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    layers, d_attn = config.num_hidden_layers, config.num_attention_heads * head_dim
    g = torch.Generator().manual_seed(0)
    for batch, tokens in shapes.text_batches:
        ids = torch.randint(config.vocab_size, (batch, tokens), generator=g)
        cpu_inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
        dev_inputs = {k: v.to(device) for k, v in cpu_inputs.items()}
        flops = batch * tokens * (2 * linear + 4 * layers * tokens * d_attn)
        rows = measure(functools.partial(_forward, model, dev_inputs), functools.partial(encoder.encode, cpu_inputs),
                       section, device, f"batch {batch} x {tokens} tokens", flops=flops, items=batch * tokens,
                       unit="tokens", peak=peak, warmup=warmup, repeats=repeats)
        out["runs"] += [{"batch": batch, "tokens": tokens, **row} for row in rows]
    return out


def run_vision(shapes: Shapes, device: torch.device, dtype: torch.dtype, section: Section, peak: float | None,
               *, warmup: int, repeats: int) -> dict[str, Any]:
    """DINOv2 ViT-g/14-shaped model: per batch, images/s and MFU of "forward" and "extract"."""
    from transformers import Dinov2Config

    from platobench.encoders.hf_vision import HFVisionEncoder
    from platobench.zoo import load_zoo

    out: dict[str, Any] = {"model": "DINOv2 ViT-g/14-shaped Dinov2Model, random weights", "config": shapes.vision,
                           "runs": []}
    if not section.fits(0.0, "build model"):
        return out
    config = Dinov2Config(**shapes.vision)
    t = time.perf_counter()
    model = build(config, device, dtype)
    out["build_s"] = time.perf_counter() - t
    out["attn_implementation"] = model.config._attn_implementation
    out["params"] = sum(p.numel() for p in model.parameters())
    # The pixels are random tensors at the model's input size: no image transform is needed or timed.
    encoder = HFVisionEncoder(load_zoo().get("dinov2-hf/vit-g14"), model, None, device, dtype)
    patches = (config.image_size // config.patch_size) ** 2
    tokens = patches + 1
    conv = model.embeddings.patch_embeddings.projection.weight.numel()
    per_image = (tokens * 2 * linear_weights(model) + patches * 2 * conv
                 + tokens * 4 * config.num_hidden_layers * tokens * config.hidden_size)
    out.update(tokens_per_image=tokens, flops_per_image=per_image)
    g = torch.Generator().manual_seed(0)
    for batch in shapes.vision_batches:
        pixels = torch.randn(batch, 3, config.image_size, config.image_size, generator=g)
        dev_inputs = {"pixel_values": pixels.to(device, dtype)}
        rows = measure(functools.partial(_forward, model, dev_inputs), functools.partial(encoder.encode, pixels),
                       section, device, f"batch {batch}", flops=batch * per_image, items=batch, unit="images",
                       peak=peak, warmup=warmup, repeats=repeats)
        out["runs"] += [{"batch": batch, **row} for row in rows]
    return out


def faiss_gpu_problem(device: torch.device) -> str | None:
    """Why faiss-gpu cannot run here, or None."""
    if device.type != "cuda":
        return f"faiss-gpu not run: the device is {device.type}"
    try:
        import faiss
    except ImportError:
        return "faiss-gpu not installed (faiss is not importable): pip install 'platobench[gpu]'"
    if not hasattr(faiss, "StandardGpuResources") or faiss.get_num_gpus() < 1:
        return f"faiss-gpu not installed (faiss {faiss.__version__} has no GPU support): pip install 'platobench[gpu]'"
    return None


def faiss_gpu_knn(x: torch.Tensor, k: int) -> torch.Tensor:
    """[N, k] neighbour indices by a faiss `GpuIndexFlatIP` (k + 1 found; self dropped, else the last)."""
    import faiss

    xs = x.detach().to("cpu", torch.float32).contiguous().numpy()
    resources = faiss.StandardGpuResources()  # kept alive while the index is used
    index = faiss.GpuIndexFlatIP(resources, xs.shape[1])
    index.add(xs)
    _, found = index.search(xs, k + 1)
    found = torch.from_numpy(found)
    n = found.shape[0]
    self_hit = found == torch.arange(n).unsqueeze(1)
    drop = torch.where(self_hit.any(1), self_hit.to(torch.int8).argmax(1), torch.full((n,), k))
    keep = torch.ones_like(self_hit)
    keep[torch.arange(n), drop] = False
    return found[keep].view(n, k)


def agreement(a: torch.Tensor, b: torch.Tensor) -> dict[str, float]:
    """Neighbour lists [N, k] compared as sets: share of rows with equal sets, mean |A_i ∩ B_i| / k."""
    a, b = a.cpu(), b.cpu()
    shared = (a.unsqueeze(2) == b.unsqueeze(1)).any(2).sum(1)
    return {"rows_identical_sets": float((shared == a.shape[1]).double().mean()),
            "mean_overlap": float(shared.double().mean() / a.shape[1])}


def run_knn(shapes: Shapes, device: torch.device, section: Section, *, repeats: int) -> dict[str, Any]:
    """Exact top-k at N rows: torch backend on the device, faiss-gpu, the project's faiss backend (CPU);
    agreement with the torch lists; `score("mutual_knn")` end to end."""
    from platobench.metrics import score
    from platobench.metrics.knn import knn_sets

    n, d, k = shapes.knn_n, shapes.knn_d, shapes.k
    out: dict[str, Any] = {"n": n, "d": d, "k": k, "features": "random normal float32, generated on the device"}
    g = torch.Generator(device).manual_seed(1)
    x = torch.randn(n, d, device=device, generator=g)
    y = torch.randn(n, d, device=device, generator=g)
    sub = max(k + 2, n // 10)
    scale = (n / sub) ** 2  # exact kNN costs O(N^2 d): warm-up at N/10 times 100 estimates the full run
    found: dict[str, torch.Tensor] = {}

    def backend(name: str, fn: Callable[[torch.Tensor], torch.Tensor], problem: str | None) -> None:
        if problem is not None or not section.fits(0.0, f"{name} warm-up at N={sub}"):
            out[name] = timing([], n, "rows", **({"reason": problem} if problem else {}))
            return
        warm = time_once(lambda: fn(x[:sub]), device)
        times = time_repeats(lambda: found.__setitem__(name, fn(x)), device, section, f"{name} N={n}",
                             warmup=0, repeats=repeats, estimate=warm * scale)
        out[name] = {"warmup_n": sub, "warmup_s": warm, **timing(times, n, "rows")}

    backend("torch", lambda z: knn_sets(z, k).idx, None)
    backend("faiss_gpu", lambda z: faiss_gpu_knn(z, k), faiss_gpu_problem(device))
    if "torch" in found:
        t_knn = out["torch"]["seconds_median"]
        values: list[float] = []
        times = time_repeats(lambda: values.append(score("mutual_knn", x, y, k=k)), device, section,
                             f"score mutual_knn N={n}", warmup=0, repeats=1, estimate=2.2 * t_knn)
        out["mutual_knn_score"] = {**timing(times, n, "rows"), "value": values[-1] if values else None,
                                   "chance": k / (n - 1), "what": "score('mutual_knn', X, Y): both kNN lists "
                                   "and the mutual count, independent random X and Y (value near chance)"}
    try:
        import faiss  # noqa: F401  (the project's faiss backend runs on the CPU)

        cpu_problem = None
    except ImportError:
        cpu_problem = "faiss (CPU) not installed: the project's faiss backend was not run"
    backend("faiss_cpu_project_backend", lambda z: knn_sets(z, k, backend="faiss").idx, cpu_problem)
    if "torch" in found:
        out["agreement_with_torch"] = {name: agreement(found["torch"], idx) for name, idx in found.items()
                                       if name != "torch"}
    return out


def run_grid(shapes: Shapes, device: torch.device, section: Section, *, repeats: int) -> dict[str, Any]:
    """`layer_grid("mutual_knn")` over the whole grid at N = grid_n: seconds per grid."""
    from platobench.metrics import layer_grid

    n, wx, wy, k = shapes.grid_n, shapes.grid_x, shapes.grid_y, shapes.k
    lx, ly = len(wx), len(wy)
    out: dict[str, Any] = {"n": n, "grid": f"{lx}x{ly}", "x": f"{lx} layers, widths {min(wx)}-{max(wx)}",
                           "y": f"{ly} layers, widths {min(wy)}-{max(wy)}", "metric": "mutual_knn", "k": k,
                           "preprocess": "l2"}
    g = torch.Generator(device).manual_seed(2)
    t = time.perf_counter()
    xs = [torch.randn(n, w, device=device, generator=g) for w in wx]
    ys = [torch.randn(n, w, device=device, generator=g) for w in wy]
    sync(device)
    out["feature_generation_s"] = time.perf_counter() - t
    result: list[torch.Tensor] = []
    times: list[float] = []
    if section.fits(0.0, "warm-up on a 2 x 2 sub-grid"):
        warm = time_once(lambda: layer_grid("mutual_knn", xs[:2], ys[:2], preprocess="l2", k=k), device)
        per_layer = warm / (len(xs[:2]) + len(ys[:2]))  # per-layer kNN dominates: scale by the layer count
        times = time_repeats(lambda: result.append(layer_grid("mutual_knn", xs, ys, preprocess="l2", k=k)), device,
                             section, f"grid {lx}x{ly}", warmup=0, repeats=repeats,
                             estimate=per_layer * (lx + ly))
    out.update(timing(times, lx * ly, "layer_pairs"))
    if result:
        out["grid_mean"] = float(result[-1].mean())
    return out
