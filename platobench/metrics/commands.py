"""`platobench score` (score features: two cached models or two files) and `platobench metrics` (the list)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file

from platobench.errors import UserError
from platobench.metrics import get_metric, list_metrics
from platobench.metrics.api import summarize_layers
from platobench.metrics.preprocess import PREPROCESS_MODES
from platobench.metrics.selection import select


def register(subparsers: Any) -> None:
    m = subparsers.add_parser("metrics", help="list the alignment metrics", description="List metric descriptors.")
    m.add_argument("--json", action="store_true", help="print a JSON list of descriptors")
    m.set_defaults(func=_list)

    s = subparsers.add_parser(
        "score", help="score two feature sets with one metric",
        description=(
            "Score the layer grid of two feature sets. Inputs are either two models' cached features on a dataset "
            "(--x-model/--y-model with --dataset; extracted first if missing) or two files (--x/--y): .npy [N, D] or "
            "[L, N, D], or .safetensors with one tensor per layer. Prints the selected score and its layers."
        ),
    )
    s.add_argument("--metric", required=True, help="metric id (see `platobench metrics`)")
    s.add_argument("--param", action="append", default=[], metavar="NAME=VALUE", help="metric parameter (repeatable), e.g. k=10")
    s.add_argument("--preprocess", default="none", choices=sorted(PREPROCESS_MODES), help="feature preprocessing")
    s.add_argument("--selection", default="best", help="best | last | i,j")
    s.add_argument("--x", type=Path, help="features file of the first model")
    s.add_argument("--y", type=Path, help="features file of the second model")
    s.add_argument("--x-model", help="first zoo model (features from the cache)")
    s.add_argument("--y-model", help="second zoo model (features from the cache)")
    s.add_argument("--dataset", help="dataset of --x-model/--y-model")
    s.add_argument("--limit", type=int, default=None, help="only the first N samples of the dataset")
    s.add_argument("--device", default="cpu", help="device used if features must be extracted")
    s.add_argument("--grid", action="store_true", help="also print the whole layer grid")
    s.add_argument("--json", action="store_true", help="print a JSON object")
    s.set_defaults(func=_score)


def _list(args: argparse.Namespace) -> int:
    metrics = list_metrics()
    if args.json:
        print(json.dumps([m.describe() for m in metrics], indent=1))
        return 0
    for m in metrics:
        arrow = "higher" if m.higher_is_better else "lower"
        params = ", ".join(f"{k}={v}" for k, v in m.params.items())
        print(f"{m.id:<28} {arrow:<6} {'symmetric' if m.symmetric else 'asymmetric':<10} {params}")
    return 0


def _parse_value(raw: str) -> Any:
    for cast in (int, float):
        try:
            return cast(raw)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(raw.lower(), raw)


def _params(pairs: list[str]) -> dict[str, Any]:
    out = {}
    for p in pairs:
        name, sep, value = p.partition("=")
        if not sep or not name:
            raise UserError(f"--param {p!r}: expected NAME=VALUE")
        out[name] = _parse_value(value)
    return out


def load_feature_file(path: Path) -> list[torch.Tensor]:
    """A features file as a list of [N, D_l] layers (.npy [N, D] / [L, N, D]; .safetensors, layers in key order)."""
    if not path.is_file():
        raise UserError(f"features file {path} does not exist")
    if path.suffix == ".npy":
        arr = np.load(path, allow_pickle=False)
        if arr.ndim == 2:
            arr = arr[None]
        if arr.ndim != 3:
            raise UserError(f"{path}: expected [N, D] or [L, N, D], got shape {arr.shape}")
        return [torch.from_numpy(np.ascontiguousarray(a)) for a in arr]
    if path.suffix == ".safetensors":
        tensors = load_file(str(path))
        return [tensors[k] for k in sorted(tensors)]
    raise UserError(f"{path}: unsupported features file (use .npy or .safetensors)")


def _cached_layers(args: argparse.Namespace) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    from platobench.data import get_dataset
    from platobench.features.extract import extract
    from platobench.features.store import FeatureStore, check_same_samples
    from platobench.zoo import load_zoo

    if not args.dataset:
        raise UserError("--x-model/--y-model need --dataset")
    zoo, store = load_zoo(), FeatureStore()
    ds = get_dataset(args.dataset, limit=args.limit)
    entries = [extract(zoo.get(name), ds, store=store, device=args.device, progress=not args.json)[0]
               for name in (args.x_model, args.y_model)]
    check_same_samples(*entries)
    return list(entries[0].layers), list(entries[1].layers)


def _score(args: argparse.Namespace) -> int:
    metric = get_metric(args.metric)
    params = metric.resolve_params(_params(args.param))
    if args.x_model and args.y_model:
        xs, ys = _cached_layers(args)
    elif args.x and args.y:
        xs, ys = load_feature_file(args.x), load_feature_file(args.y)
    else:
        raise UserError("give either --x and --y (files) or --x-model, --y-model and --dataset")
    grid = summarize_layers(metric.id, xs, ys, preprocess=args.preprocess, **params).grid()
    chosen = select(grid, args.selection, metric.higher_is_better)
    out = {"metric": metric.id, "params": params, "preprocess": args.preprocess, "selection": chosen.to_record(),
           "score": chosen.score, "n": int(xs[0].shape[0])}
    if args.grid:
        out["grid"] = grid.tolist()
    if args.json:
        print(json.dumps(out))
    else:
        print(f"{metric.id} = {chosen.score:.6f} (layers {chosen.x_layer}, {chosen.y_layer}; {chosen.mode}; n={out['n']})")
        if args.grid:
            for row in grid.tolist():
                print(" ".join(f"{v:8.4f}" for v in row))
    return 0
