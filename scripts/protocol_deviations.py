"""Measure how platobench's departures from the PRH reference protocol move real scores (issue 31, item 6).

Offline, on the Tux Paint stamps (N = 644), mutual kNN (k = 10) and unbiased linear CKA, best layer pair,
`prh` preprocessing, with features through the feature cache:

1. constant layers: `score_paired` drops a layer that is constant across the samples (DINOv2's layer 0)
   before the `prh` clamp value is taken over the stack; the reference takes it over every layer. Scored
   here both ways on MiniLM-L6 x DINOv2-S (the clamp of the full stack applied to the same kept layers).
2. one layer's clamp: `platobench scaling-n` scores the last layers alone (`score(..., preprocess="prh")`
   clamps by that layer's quantiles), where a board clamps with the quantiles of the whole stack. Both on
   the last layers of MiniLM-L6 x DINOv2-S.
3. SVCCA: platobench keeps the directions explaining 99% of the variance (Raghu et al.), exactly; the
   reference keeps 10 from a randomized SVD. Both counts on the last layers, exact SVD.
4. `position_ids` for causal LMs: platobench passes position ids counted from each caption's first real
   token (left padding), as `generate` does; the reference passes none, so a left-padded caption's tokens
   sit at shifted positions. SmolLM2-135M x DINOv2-S extracted both ways (no cache for the second).

Prints one JSON object; docs/protocol.md holds its figures. Run: `python scripts/protocol_deviations.py`.
"""

from __future__ import annotations

import json
from typing import Any

import torch

from platobench.bench.settings import Catalog
from platobench.data import get_dataset
from platobench.encoders import load_encoder
from platobench.features.extract import encode_texts, extract
from platobench.features.store import FeatureStore
from platobench.metrics.api import score, summarize_layers
from platobench.metrics.selection import select
from platobench.metrics.validation import varying_layers
from platobench.zoo import load_zoo

METRICS = {"mutual_knn": {"k": 10}, "cka": {"kernel": "linear", "estimator": "unbiased"}}


def best(metric: str, xs: list[torch.Tensor], ys: list[torch.Tensor], rows: list[int], cols: list[int],
         **kw: Any) -> dict[str, Any]:
    """Best cell of the prh grid of `xs` x `ys` (kw: x_layers / y_layers), whose positions are the models'
    layers `rows` x `cols` -> {"score", "layers": the models' layer indices}."""
    grid = summarize_layers(metric, xs, ys, preprocess="prh", **kw, **METRICS[metric]).grid()
    chosen = select(grid, "best", True)
    return {"score": float(chosen.score), "layers": [rows[chosen.x_layer], cols[chosen.y_layer]]}


def main() -> None:
    zoo, store = load_zoo(), FeatureStore()
    data = get_dataset(Catalog().settings["demo-mknn"].dataset)
    entry = {name: extract(zoo.get(name), data, store=store, prompt=prompt, progress=False)[0]
             for name, prompt in (("demo/minilm-l6", "caption:0"), ("demo/dinov2-s-imgfocus", "image"),
                                  ("demo/smollm2-135m", "caption:0"))}
    text = entry["demo/minilm-l6"].cached_layers()
    vision = entry["demo/dinov2-s-imgfocus"].cached_layers()
    rows, cols = varying_layers(text), varying_layers(vision)
    out: dict[str, Any] = {"dataset": data.name, "n": len(data), "excluded": {"x": [i for i in range(len(text)) if i not in rows],
                                                                         "y": [j for j in range(len(vision)) if j not in cols]}}
    kept_x, kept_y = [text[i] for i in rows], [vision[j] for j in cols]
    for metric in METRICS:
        dropped = best(metric, kept_x, kept_y, rows, cols)
        whole = best(metric, list(text), list(vision), rows, cols, x_layers=rows, y_layers=cols)
        last_alone = score(metric, text[-1], vision[-1], preprocess="prh", **METRICS[metric])
        last_stack = float(summarize_layers(metric, list(text), list(vision), preprocess="prh", x_layers=[len(text) - 1],
                                            y_layers=[len(vision) - 1], **METRICS[metric]).grid()[0, 0])
        out[metric] = {"constant_layers": {"dropped_before_clamp": dropped, "clamp_over_every_layer": whole},
                       "last_layers": {"clamp_of_the_layer": last_alone, "clamp_of_the_stack": last_stack}}
    out["svcca"] = {"variance_0.99": score("svcca", text[-1], vision[-1], preprocess="prh", variance=0.99),
                    "dim_10": score("svcca", text[-1], vision[-1], preprocess="prh", dim=10)}
    spec = zoo.get("demo/smollm2-135m")
    encoder = load_encoder(spec, device=torch.device("cpu"))
    with torch.no_grad():
        encoder.causal = False  # what the reference does: no position_ids
        plain = encode_texts(encoder, data.captions(0), 32, None)
    with_ids = entry["demo/smollm2-135m"].cached_layers()
    differ = [i for i, (a, b) in enumerate(zip(with_ids, plain)) if not torch.equal(a, b.to(a.dtype))]
    moved = max(float((a - b.to(a.dtype)).abs().max() / a.abs().max()) for a, b in zip(with_ids, plain))
    out["position_ids"] = {"layers_that_differ": len(differ), "of": len(plain), "max_relative_change": moved}
    for metric in METRICS:  # each side's constant layers left out, as score_paired does
        runs = {"with_position_ids": list(with_ids), "without": [p.to(torch.float32) for p in plain]}
        out["position_ids"][metric] = {k: best(metric, [v[i] for i in varying_layers(v)], kept_y, varying_layers(v), cols)
                                       for k, v in runs.items()}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
