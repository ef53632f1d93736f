"""`platobench jepa train`: train a text JEPA on good, bad or mixed views (or, with --objective ntp, the same
backbone by next-token prediction); write a checkpoint + zoo entry.
`platobench jepa compare`: good versus bad views over seeds, scored against a vision model next to LLMs."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from platobench.api import UserError, add_device_option, add_json_option, home, progress_log
from platobench.experiments.jepa import curve_commands, scaling_commands
from platobench.experiments.jepa.experiment_options import load_corpus
from platobench.experiments.jepa.sizes import SIZES
from platobench.experiments.jepa.views import parse_views

DEFAULT_STEPS = 300
#: compare's default settings: the paired settings of the offline demo (its zero-shot ones do not apply).
DEFAULT_COMPARE_SETTINGS = "demo-mknn,demo-cka,demo-rotation"


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "jepa",
        help="train text JEPAs (good vs bad views)",
        description=(
            "Text JEPAs trained from scratch on caption pairs (Balestriero & LeCun, 'Proving and Improving the "
            "Platonic Representation Hypothesis with JEPAs'): good views are two captions of one image, bad "
            "views two corruptions of one caption."
        ),
    )
    sub = parser.add_subparsers(dest="jepa_command", metavar="ACTION", required=True)
    tr = sub.add_parser(
        "train",
        help="train one text JEPA and write a transformers checkpoint plus a zoo entry",
        description=(
            "Train a BERT-style text encoder from scratch as a JEPA: a view's projected mean-pooled embedding "
            "must match (or, with --predictor, predict) the other view's, with VICReg's variance and "
            "covariance terms against collapse (Bardes et al., ICLR 2022). Trains on the samples outside a "
            "fixed held-out split (by sample-id hash) that have two distinct captions; prints the held-out "
            "loss and the effective rank of the features (Roy & Vetterli 2007) as it goes. Writes OUT/ "
            "(config.json, model.safetensors, tokenizer, platobench_jepa.json) and OUT/zoo_entry.yaml "
            "(kind text_jepa; use it with --zoo OUT/zoo_entry.yaml). With --objective ntp the same backbone "
            "(causal attention, an LM head) learns next-token prediction on documents made of each sample's "
            "captions, which the JEPA paper reads as a JEPA with bad views (prefix and continuation); its "
            "entry is a causal_lm for the hf_causal loader. bf16 on GPUs; launch with "
            "`accelerate launch -m platobench jepa train ...` for several GPUs."
        ),
    )
    tr.add_argument(
        "--objective",
        choices=["jepa", "ntp"],
        default="jepa",
        help="jepa: view pairs, VICReg loss (default); ntp: next-token prediction with causal attention on "
        "documents of a sample's captions joined in a random order (2 x the views' token budget)",
    )
    tr.add_argument(
        "--views",
        default=None,
        metavar="good|bad|mix:P",
        help="JEPA pairs (default good): good: two different captions of one image; bad: two random "
        "span+mask corruptions of one caption; mix:P: a share P of good pairs. Not for --objective ntp",
    )
    data = tr.add_mutually_exclusive_group(required=True)  # --data: former spelling, accepted but not shown
    data.add_argument("--dataset", dest="data", metavar="DATASET",
                      help="paired dataset (see `platobench data list`), e.g. openclipart")
    data.add_argument("--data", dest="data", help=argparse.SUPPRESS)
    tr.add_argument(
        "--size",
        choices=list(SIZES),
        default="tiny",
        help="tiny (2 x 128, trains on CPU), 33m (12 x 384), 109m (BERT-base 12 x 768); default tiny",
    )
    tr.add_argument(
        "--steps", type=int, default=DEFAULT_STEPS, help=f"optimiser steps (default {DEFAULT_STEPS})"
    )
    tr.add_argument(
        "--seed", type=int, default=0, help="seed of initialisation, pair sampling and dropout (default 0)"
    )
    tr.add_argument(
        "--batch-size", type=int, default=64, help="pairs (ntp: documents) per step per process (default 64)"
    )
    tr.add_argument(
        "--lr",
        type=float,
        default=None,
        help="peak AdamW learning rate (default by size: tiny 1e-3, 33m 5e-4, 109m 3e-4)",
    )
    tr.add_argument(
        "--schedule",
        choices=["cosine", "constant"],
        default="cosine",
        help="after a linear warm-up (10%% of the steps): cosine decay to 0 (default), or a constant "
        "learning rate (a run's early part then matches a shorter run, as learning curves need)",
    )
    tr.add_argument(
        "--predictor",
        action="store_true",
        help="add a predictor head: view a's embedding predicts view b's (default: match directly)",
    )
    tr.add_argument(
        "--heldout",
        type=float,
        default=0.2,
        help="share of samples held out (chosen by sample-id hash; default 0.2)",
    )
    tr.add_argument("--limit", type=int, default=None, help="use the first N samples of the dataset")
    tr.add_argument(
        "--name",
        default=None,
        help="zoo name (default text-jepa/<size>-<views>.<data>-s<seed>-n<examples seen>; ntp: "
        "text-ntp/<size>.<data>-s<seed>-n<examples seen>; examples seen = steps x global batch)",
    )
    tr.add_argument(
        "--out",
        type=Path,
        default=None,
        help="checkpoint folder (default $PLATOBENCH_HOME/jepa/<name after '/'>)",
    )
    add_json_option(tr, what="the training summary (initial_loss, final_loss, effective_rank, checkpoint, zoo_entry, ...)")
    tr.set_defaults(func=_train)
    _register_compare(sub)
    curve_commands.register(sub)
    scaling_commands.register(sub)


def _global_batch(batch_size: int) -> int:
    """Examples per optimiser step over every process of a launcher (WORLD_SIZE; 1 without one)."""
    return batch_size * max(1, int(os.environ.get("WORLD_SIZE", "1")))


def _check_args(args: argparse.Namespace) -> None:
    if args.steps < 1:
        raise UserError(f"--steps {args.steps}: expected a positive number of steps")
    if args.batch_size < 2:
        raise UserError(
            f"--batch-size {args.batch_size}: expected at least 2 pairs (variance needs two samples)"
        )
    if args.lr is not None and not args.lr > 0:
        raise UserError(f"--lr {args.lr}: expected a positive learning rate")
    if not 0 < args.heldout < 1:
        raise UserError(f"--heldout {args.heldout}: expected a share strictly between 0 and 1")
    if args.limit is not None and args.limit < 1:
        raise UserError(f"--limit {args.limit}: expected a positive number of samples")
    batch = _global_batch(args.batch_size)
    if args.limit is not None and args.limit < batch:
        raise UserError(
            f"--limit {args.limit}: fewer samples than one step's global batch ({batch} = --batch-size x "
            f"processes); training needs at least {batch} outside the held-out share: raise --limit or lower "
            "--batch-size"
        )


def _check_split(corpus: Any, args: argparse.Namespace) -> None:
    """UserError, before any training, when the training split of `corpus` (samples with two distinct
    captions outside the held-out share) holds fewer than one global batch, or the held-out part under 2."""
    from platobench.experiments.jepa.config import split

    train_idx, heldout_idx = split(corpus, args.heldout)
    batch = _global_batch(args.batch_size)
    if len(train_idx) < batch or len(heldout_idx) < 2:
        limit = "" if args.limit is None else f" --limit {args.limit}"
        more = "raise --limit or " if args.limit is not None else ""
        fix = f"{more}lower --batch-size" if len(train_idx) < batch else f"{more}raise --heldout"
        raise UserError(
            f"--dataset {args.data}{limit}: {len(train_idx)} training and {len(heldout_idx)} held-out samples "
            f"have two distinct captions; need at least {batch} (the global batch, --batch-size x processes) "
            f"and 2: {fix}"
        )


def _train(args: argparse.Namespace) -> int:
    if args.objective == "ntp":
        if args.views not in (None, "good"):
            raise UserError(f"--views {args.views}: --views applies to --objective jepa only")
        if args.predictor:
            raise UserError("--predictor applies to --objective jepa only")
    views = parse_views(args.views or "good")
    _check_args(args)
    corpus = load_corpus(args.data, args.limit, flag="--dataset")
    _check_split(corpus, args)
    from platobench.experiments.jepa.export import export_run  # torch and transformers: after the checks
    from platobench.experiments.jepa.train import TrainConfig, train

    config = TrainConfig(
        size=args.size,
        views=views,
        objective=args.objective,
        schedule=args.schedule,
        steps=args.steps,
        seed=args.seed,
        batch_size=args.batch_size,
        lr=args.lr,
        predictor=args.predictor,
        heldout_fraction=args.heldout,
    )

    def progress(line: dict[str, float]) -> None:
        parts = (
            f"(inv {line['invariance']:.4f} var {line['variance']:.4f} cov {line['covariance']:.4f})  "
            if "invariance" in line
            else ""
        )
        print(
            f"step {line['step']:>6}/{config.steps}  loss {line['loss']:.4f}  {parts}held-out loss "
            f"{line['heldout_loss']:.4f}  effective rank {line['effective_rank']:.1f}",
            file=sys.stderr if args.json else sys.stdout,
            flush=True,
        )

    try:
        result = train(corpus, config, progress=progress)
    except ValueError as exc:
        raise UserError(f"--dataset {args.data}: {exc}") from exc
    if not result.is_main_process:  # other processes of `accelerate launch`: the main one writes
        return 0
    summary = export_run(result, corpus, config, name=args.name, out_dir=args.out, home=home())
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(
            f"loss {summary['initial_loss']:.4f} -> {summary['final_loss']:.4f} (held-out); effective rank "
            f"{summary['effective_rank']:.1f}; {summary['samples_per_s']:.1f} "
            f"{'documents' if args.objective == 'ntp' else 'pairs'}/s"
        )
        print(f"checkpoint: {summary['checkpoint']}\nzoo entry:  {summary['zoo_entry']}")
    return 0


DEFAULT_LLMS = "demo/smollm2-135m,demo/minilm-l6"


def _register_compare(sub: Any) -> None:
    from platobench.api import add_catalog_options

    cp = sub.add_parser(
        "compare",
        help="good vs bad views over seeds, scored against a vision model next to LLMs",
        description=(
            "For each seed, train a good-view and a bad-view text JEPA with identical settings and the same "
            "held-out split; extract them, the vision model and the LLMs on the held-out images through the "
            "features cache (dataset '<DATASET>:heldout<P>'); score every text model against the vision model "
            "under copies of the paired settings renamed jepa-compare-<id> and write one result record each "
            "under OUT/<setting>/; print good minus bad per setting (mean, std over seeds, per seed) next to "
            "the LLMs. Checkpoints go to $PLATOBENCH_HOME/jepa/compare/. Example: platobench jepa compare "
            "--dataset openclipart-desc --vision demo/dinov2-s-imgfocus --seeds 3"
        ),
    )
    data = cp.add_mutually_exclusive_group(required=True)  # --data: former spelling, accepted but not shown
    data.add_argument("--dataset", dest="data", metavar="DATASET",
                      help="paired dataset whose samples have two captions (e.g. openclipart-desc)")
    data.add_argument("--data", dest="data", help=argparse.SUPPRESS)
    cp.add_argument(
        "--vision",
        required=True,
        metavar="MODEL",
        help="vision model of the zoo (e.g. demo/dinov2-s-imgfocus)",
    )
    cp.add_argument(
        "--seeds", type=int, default=3, help="number of seeds, 0..N-1, each trains good and bad (default 3)"
    )
    cp.add_argument(
        "--steps", type=int, default=DEFAULT_STEPS, help=f"optimiser steps per run (default {DEFAULT_STEPS})"
    )
    cp.add_argument("--size", choices=list(SIZES), default="tiny", help="JEPA size (default tiny)")
    cp.add_argument("--batch-size", type=int, default=64, help="training pairs per step (default 64)")
    cp.add_argument("--lr", type=float, default=None, help="peak learning rate (default by size)")
    cp.add_argument("--predictor", action="store_true", help="train with a predictor head")
    cp.add_argument(
        "--heldout", type=float, default=0.2, help="held-out share, by sample-id hash (default 0.2)"
    )
    cp.add_argument("--limit", type=int, default=None, help="use the first N samples of the dataset")
    cp.add_argument(
        "--settings",
        default=DEFAULT_COMPARE_SETTINGS,
        help=f"paired setting ids or groups, comma-separated (default {DEFAULT_COMPARE_SETTINGS}: the "
        "offline demo's mutual kNN, CKA and rotation)",
    )
    cp.add_argument(
        "--llm",
        default=DEFAULT_LLMS,
        metavar="MODEL,...",
        help=f"text models measured on the same held-out data (default {DEFAULT_LLMS}; '' for none)",
    )
    cp.add_argument("--out", type=Path, default=Path("results"), help="results folder (default ./results)")
    add_device_option(cp, used_for="extraction (training picks its own)")
    add_json_option(cp, what="the runs, records, summary and wall_s")
    add_catalog_options(cp)
    cp.set_defaults(func=_compare)


def _load_dataset(name: str, limit: int | None):
    from platobench.api import get_dataset

    dataset = get_dataset(name, limit=limit)
    if not hasattr(dataset, "image") or not hasattr(dataset, "caption_views"):
        raise UserError(f"--dataset {name!r} is not a paired dataset; compare needs image-caption pairs")
    return dataset


def _compare(args: argparse.Namespace) -> int:
    from platobench.api import Catalog, FeatureStore, board_rows, print_board, zoo_from_args
    from platobench.experiments.jepa.compare import CompareConfig, format_summary, run_compare
    from platobench.experiments.jepa.train import CaptionCorpus, TrainConfig

    _check_args(args)
    if args.seeds < 1:
        raise UserError(f"--seeds {args.seeds}: expected at least 1 seed")
    zoo = zoo_from_args(args)
    vision = zoo.get(args.vision)
    if vision.modality != "vision":
        raise UserError(f"--vision {args.vision!r} is a {vision.modality} model; expected a vision model")
    llms = zoo.resolve(args.llm) if args.llm.strip() else []
    wrong = [s.name for s in llms if s.modality != "text"]
    if wrong:
        raise UserError(f"--llm: {', '.join(wrong)} are not text models")
    settings = Catalog(args.settings_file).resolve_settings(args.settings)
    config = CompareConfig(
        train=TrainConfig(
            size=args.size,
            steps=args.steps,
            batch_size=args.batch_size,
            lr=args.lr,
            predictor=args.predictor,
            heldout_fraction=args.heldout,
        ),
        seeds=list(range(args.seeds)),
        vision=vision,
        llms=llms,
        settings=settings,
        out=args.out,
        device=args.device,
    )
    dataset = _load_dataset(args.data, args.limit)
    _check_split(CaptionCorpus.from_dataset(dataset), args)

    result = run_compare(dataset, config, store=FeatureStore(), home=home(), log=progress_log(args.json))
    if args.json:
        print(
            json.dumps(
                {
                    "dataset": {
                        "name": result.heldout.name,
                        "n": len(result.heldout),
                        "fingerprint": result.heldout.fingerprint,
                    },
                    "runs": result.runs,
                    "records": result.paths,
                    "summary": result.summary,
                    "board": board_rows(result.records),
                    "wall_s": result.wall_s,
                },
                indent=2,
            )
        )
    else:
        print(format_summary(result.summary))
        print()
        print_board(result.records)
        print(f"{len(result.paths)} records under {args.out}; {result.wall_s:.0f} s")
    return 0
