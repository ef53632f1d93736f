"""`platobench score` (score features: two cached models or two files) and `platobench metrics` (the list)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from platobench.cli_options import (
    add_datasets_file_option,
    add_device_option,
    add_json_option,
    add_key_value_option,
    parse_key_values,
)
from platobench.errors import UserError
from platobench.files.ids import shown

if TYPE_CHECKING:  # numpy, torch and the metrics load in the handlers, not while the parser is built
    from collections.abc import Sequence

    import numpy as np
    import torch

#: `--preprocess` choices: sorted(platobench.metrics.preprocess.PREPROCESS_MODES), spelled out so that
#: building the parser does not import torch (tests/cli/test_cli_startup.py checks they agree).
PREPROCESS_CHOICES = ("l2", "none", "prh", "prh_exact")

#: Shuffles of the null `score` computes unasked for a metric without a closed-form chance level (svcca
#: scores ~0.95 on independent noise when N is near the widths): enough for its mean to show chance.
DEFAULT_NULL = 20


def register(subparsers: Any) -> None:
    m = subparsers.add_parser("metrics", help="list the alignment metrics", description="List metric descriptors.")
    add_json_option(m, what="the list of metric descriptors")
    m.set_defaults(func=_list)

    s = subparsers.add_parser(
        "score", help="score two feature sets with one metric",
        description=(
            "Score the layer grid of two feature sets. Inputs are either two models' cached features on a dataset "
            "(--x-model/--y-model with --dataset; extracted first if missing) or two files (--x/--y): .npy [N, D] or "
            "[L, N, D], or .safetensors with one tensor per layer, keys ending in the layer index (layer.0, layer.1, ...; "
            "read in numeric order). Prints the selected score and its layers (positions in that order), the chance "
            "level and the permutation null (mean ± std) and p-value: with --null B, or unasked for a metric whose "
            "chance level has no closed form. Warns when N is not above a feature width."
        ),
    )
    s.add_argument("--metric", required=True, help="metric id (see `platobench metrics`)")
    add_key_value_option(s, "--param", metavar="NAME=VALUE", help="metric parameter, e.g. k=10")
    s.add_argument("--preprocess", default="none", choices=PREPROCESS_CHOICES, help="feature preprocessing")
    s.add_argument("--selection", default="best",
                   help="best | heldout (chosen on one half of the samples, scored on the other, both ways; the "
                        "halves drawn from --seed) | last | i,j")
    s.add_argument("--x", type=Path, help="features file of the first model")
    s.add_argument("--y", type=Path, help="features file of the second model")
    s.add_argument("--x-model", help="first zoo model (features from the cache)")
    s.add_argument("--y-model", help="second zoo model (features from the cache)")
    s.add_argument("--dataset", help="dataset of --x-model/--y-model")
    add_datasets_file_option(s)
    s.add_argument("--limit", type=int, default=None, help="only the first N samples of the dataset")
    add_device_option(s, used_for="extraction when cached features are missing")
    s.add_argument("--grid", action="store_true", help="also print the whole layer grid")
    s.add_argument("--null", type=int, default=None, metavar="B",
                   help="also compute a permutation null with B shuffles of the pairing: its mean ± std and the "
                        f"p-value, whose floor is 1/(B+1) (default: {DEFAULT_NULL} for a metric whose chance level "
                        "is not known in closed form, else none; 0: no null)")
    s.add_argument("--seed", type=int, default=0, help="seed of the --null shuffles and of --selection heldout's halves (default 0)")
    add_json_option(s, what="the score, its layers and statistics")
    s.set_defaults(func=_score)


def _list(args: argparse.Namespace) -> int:
    from platobench.metrics import list_metrics  # metrics register themselves when their (torch) module loads

    metrics = list_metrics()
    if args.json:
        print(json.dumps([m.describe() for m in metrics], indent=1))
        return 0
    for m in metrics:
        arrow = "higher" if m.higher_is_better else "lower"
        params = ", ".join(f"{k}={v}" for k, v in m.params.items())
        print(f"{m.id:<28} {arrow:<6} {'symmetric' if m.symmetric else 'asymmetric':<10} {params}")
    return 0


#: A safetensors key: anything, then the layer index, e.g. "layer.10", "layers.3", "h.2", "10".
_LAYER_KEY = re.compile(r"^(.*?)(\d+)$")


def layer_keys_in_order(keys: list[str], where: str) -> list[str]:
    """Tensor keys of a safetensors features file ordered by their layer index (the integer that ends
    each key). Every key must end in an index and share one prefix, and no index may repeat; a file
    with a single tensor may name it freely. Otherwise UserError naming `where` and the keys."""
    if len(keys) <= 1:
        return list(keys)
    unparsed = [k for k in keys if not _LAYER_KEY.match(k)]
    if unparsed:
        raise UserError(f"{where}: tensor key(s) {shown(unparsed)} do not end in a layer index; expected keys "
                        "like 'layer.0', 'layer.1', ... (one pattern, the index last)")
    by_index: dict[int, str] = {}
    prefixes: dict[str, str] = {}
    for key in keys:
        prefix, index = _LAYER_KEY.match(key).groups()  # type: ignore[union-attr]
        prefixes.setdefault(prefix, key)
        if int(index) in by_index:
            raise UserError(f"{where}: keys {by_index[int(index)]!r} and {key!r} give the same layer index {int(index)}")
        by_index[int(index)] = key
    if len(prefixes) > 1:
        raise UserError(f"{where}: tensor keys follow {len(prefixes)} patterns ({shown(list(prefixes.values()))}); "
                        "expected one pattern like 'layer.<index>' for every layer")
    return [by_index[i] for i in sorted(by_index)]


def _check_layers(layers: list[np.ndarray | torch.Tensor], path: Path, names: list[str]) -> None:
    """Every layer [N, D_l] non-empty, real-valued and with the same N."""
    import numpy as np

    for layer, name in zip(layers, names):
        kind = layer.dtype.kind if isinstance(layer, np.ndarray) else ("c" if layer.is_complex() else "f")
        if kind not in "biuf":
            raise UserError(f"{path}: {name} holds {layer.dtype} values; expected real numbers")
        if layer.ndim != 2 or 0 in layer.shape:
            raise UserError(f"{path}: {name} has shape {tuple(layer.shape)}; expected a non-empty [N, D] layer")
        if layer.shape[0] != layers[0].shape[0]:
            raise UserError(f"{path}: {name} has {layer.shape[0]} samples but {names[0]} has "
                            f"{layers[0].shape[0]}; every layer must hold the same samples")


def _load_npy(path: Path) -> list[torch.Tensor]:
    import numpy as np
    import torch

    try:
        arr = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:  # pickled objects, text, truncated data
        raise UserError(f"{path}: not a readable .npy array of numbers ({shown(str(exc))})") from None
    if not isinstance(arr, np.ndarray):  # np.load opened an .npz archive
        arr.close()
        raise UserError(f"{path}: is an .npz archive, not a .npy array; save one array [N, D] or [L, N, D]")
    if arr.ndim not in (2, 3) or 0 in arr.shape:
        raise UserError(f"{path}: expected a non-empty array [N, D] or [L, N, D], got shape {arr.shape}")
    layers = list(arr[None] if arr.ndim == 2 else arr)
    _check_layers(layers, path, [f"layer {i}" for i in range(len(layers))])
    return [torch.from_numpy(np.ascontiguousarray(a.astype(a.dtype.newbyteorder("="), copy=False))) for a in layers]


def _load_safetensors(path: Path) -> list[torch.Tensor]:
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        tensors = load_file(str(path))
    except (SafetensorError, OSError, ValueError) as exc:
        raise UserError(f"{path}: not a readable safetensors file ({shown(str(exc))})") from None
    if not tensors:
        raise UserError(f"{path}: holds no tensors; expected one [N, D] tensor per layer")
    keys = layer_keys_in_order(list(tensors), str(path))
    layers = [tensors[k] for k in keys]
    _check_layers(layers, path, [repr(k) for k in keys])
    return layers


def load_feature_file(path: Path) -> list[torch.Tensor]:
    """A features file as a list of [N, D_l] layers: .npy [N, D] or [L, N, D] (no pickled objects), or
    .safetensors with one tensor per layer, in the order of the index that ends each key ("layer.0",
    "layer.1", ..., "layer.10"; see `layer_keys_in_order`). Layers are numbered by position in that
    order. Unreadable or malformed files raise UserError naming the file."""
    if not path.is_file():
        raise UserError(f"features file {path} does not exist or is not a file")
    suffix = path.suffix.lower()
    if suffix == ".npy":
        return _load_npy(path)
    if suffix == ".safetensors":
        return _load_safetensors(path)
    raise UserError(f"{path}: unsupported features file (use .npy or .safetensors)")


def _cached_layers(args: argparse.Namespace) -> tuple[Sequence[torch.Tensor], Sequence[torch.Tensor]]:
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
    return entries[0].cached_layers(), entries[1].cached_layers()


def _score(args: argparse.Namespace) -> int:
    import torch

    from platobench.metrics import get_metric
    from platobench.metrics.api import summarize_layers
    from platobench.metrics.heldout import HalfSplit
    from platobench.metrics.preprocess import LayerStack
    from platobench.metrics.selection import HELDOUT, kept_selection, select
    from platobench.metrics.validation import varying_layers

    metric = get_metric(args.metric)
    params = metric.resolve_params(parse_key_values(args.param, "--param", "NAME=VALUE"))
    if args.x_model and args.y_model:
        xs, ys = _cached_layers(args)
        sources = (args.x_model, args.y_model)
    elif args.x and args.y:
        xs, ys = load_feature_file(args.x), load_feature_file(args.y)
        sources = (str(args.x), str(args.y))
        if xs[0].shape[0] != ys[0].shape[0]:
            raise UserError(f"{args.x} has {xs[0].shape[0]} samples but {args.y} has {ys[0].shape[0]}; "
                            "row i of both files must be the same sample")
    else:
        raise UserError("give either --x and --y (files) or --x-model, --y-model and --dataset")
    # layers constant across the samples (a ViT's CLS token before the first block) are left out, as `run` does
    shape = (len(xs), len(ys))
    rows, cols = varying_layers(xs), varying_layers(ys)
    for kept, source in ((rows, sources[0]), (cols, sources[1])):
        if not kept:
            raise UserError(f"every layer of {source} is constant across the samples; nothing to score")
    spec = kept_selection(args.selection, shape, rows, cols, sources)
    xs, ys = [xs[i] for i in rows], [ys[j] for j in cols]
    labels = (f"layer {{i}} of {sources[0]}", f"layer {{i}} of {sources[1]}")
    summaries = summarize_layers(metric.id, xs, ys, preprocess=args.preprocess, labels=labels, **params)
    grid = summaries.grid()
    if spec == HELDOUT:  # chosen on one half of the samples, scored on the other (platobench/metrics/heldout.py)
        stacks = LayerStack(xs, "Xs", labels[0]), LayerStack(ys, "Ys", labels[1])
        chosen = HalfSplit.of(metric.id, stacks, int(xs[0].shape[0]), seed=args.seed, preprocess=args.preprocess,
                              **params).cross_fit().selection()
    else:
        chosen = select(grid, spec, metric.higher_is_better)
    chosen = dataclasses.replace(chosen, x_layer=rows[chosen.x_layer], y_layer=cols[chosen.y_layer])
    excluded = {"x": [i for i in range(shape[0]) if i not in rows], "y": [j for j in range(shape[1]) if j not in cols]}
    out = {"metric": metric.id, "params": params, "preprocess": args.preprocess, "selection": chosen.to_record(),
           "score": chosen.score, "n": int(xs[0].shape[0]), "excluded_layers": excluded}
    out.update(score_statistics(metric.id, xs, ys, summaries, args, params, out["n"], spec))
    out["warnings"] = size_warnings(out["n"], xs, ys)
    if args.grid:
        full = torch.full(shape, float("nan"), dtype=torch.float64)
        full[torch.tensor(rows)[:, None], torch.tensor(cols)[None, :]] = grid
        out["grid"] = [[None if v != v else v for v in row] for row in full.tolist()]
    if args.json:
        print(json.dumps(out))
    else:
        print(f"{metric.id} = {chosen.score:.6f} (layers {chosen.x_layer}, {chosen.y_layer}; {chosen.mode}; n={out['n']})")
        for line in statistics_lines(out):
            print(line)
        for side, source in (("x", sources[0]), ("y", sources[1])):
            if excluded[side]:
                print(f"left out: layer(s) {', '.join(map(str, excluded[side]))} of {source}, constant across the samples")
        if args.grid:
            for row in out["grid"]:
                print(" ".join("       -" if v is None else f"{v:8.4f}" for v in row))
    sys.stdout.flush()
    for warning in out["warnings"]:
        print(f"warning: {warning}", file=sys.stderr)
    return 0


def size_warnings(n: int, xs: list[torch.Tensor], ys: list[torch.Tensor]) -> list[str]:
    """One warning per side whose widest layer [N, D] has D >= N: with fewer samples than dimensions,
    unrelated features can be made to look aligned (CCA-type scores near 1 on noise)."""
    out = []
    for side, layers in (("x", xs), ("y", ys)):
        width = max(int(t.shape[1]) for t in layers)
        if width >= n:
            out.append(f"N = {n} samples is not above the width {width} of the {side} features: scores of "
                       "unrelated features can be far from chance at this size; compare with the permutation null")
    return out


def score_statistics(metric: str, xs: list[torch.Tensor], ys: list[torch.Tensor], summaries: Any,
                     args: argparse.Namespace, params: dict[str, Any], n: int, selection: str) -> dict[str, Any]:
    """{"chance": closed-form chance level or None, "null": permutation null summary or None}; the null
    (mean, std, p_value, p_floor = 1/(B+1), calibrated, n_perm, seed) with --null B > 0, or unasked
    (`DEFAULT_NULL` shuffles, "null_by_default" true) when the chance level has no closed form. `xs`, `ys`:
    the scored (kept) layers; `selection`: the spec on their grid (`kept_selection`)."""
    from platobench.metrics.stats import chance_level, permutation_null

    if args.null is not None and args.null < 0:
        raise UserError(f"--null must be a number of shuffles >= 0 (0: no null), got {args.null}")
    if args.seed < 0:
        raise UserError(f"--seed must be >= 0, got {args.seed}")
    # a held-out score is scored on halves: its chance level is theirs (the mean over the two half sizes)
    sizes = [n // 2, n - n // 2] if selection == "heldout" else [n]
    levels = [chance_level(metric, size, **params) for size in sizes]
    chance = None if None in levels else sum(levels) / len(levels)  # type: ignore[arg-type]
    n_perm = args.null if args.null is not None else (DEFAULT_NULL if chance is None else 0)
    out: dict[str, Any] = {"chance": chance, "null": None, "null_by_default": args.null is None and n_perm > 0}
    if n_perm > 0:
        res = permutation_null(metric, xs, ys, selection=selection, n_perm=n_perm, seed=args.seed,
                               preprocess=args.preprocess, summaries=summaries, **params)
        out["null"] = {"mean": res.mean, "std": res.std, "p_value": res.p_value, "p_floor": 1 / (res.n_perm + 1),
                       "calibrated": res.calibrated, "n_perm": res.n_perm, "seed": res.seed}
    return out


def statistics_lines(out: dict[str, Any]) -> list[str]:
    """The chance line and (with a null) the permutation-null line of `platobench score`."""
    k = out["params"].get("k")
    if out["chance"] is None:
        lines = ["chance level: not known in closed form for this metric (the permutation null estimates it)"]
    elif out["metric"] == "mutual_knn" and k is not None and out["selection"]["mode"] == "heldout":
        lines = [f"chance level: {out['chance']:.6f} (k/(N-1) of each half of the N = {out['n']} samples)"]
    elif out["metric"] == "mutual_knn" and k is not None:
        lines = [f"chance level: {out['chance']:.6f} (k/(N-1) = {k}/{out['n'] - 1})"]
    else:
        lines = [f"chance level: {out['chance']:.6f}"]
    null = out["null"]
    if null is not None:
        calibrated = "-" if null["calibrated"] is None else f"{null['calibrated']:.4f}"
        unasked = ", by default: --null 0 skips it" if out.get("null_by_default") else ""
        lines.append(f"permutation null (B={null['n_perm']}, seed {null['seed']}{unasked}): mean {null['mean']:.6f} ± "
                     f"{null['std']:.6f}; p = {null['p_value']:.4g} (floor 1/(B+1) = {null['p_floor']:.4g}); "
                     f"calibrated {calibrated}")
    return lines
