"""Command-line options shared by `jepa curve` and `jepa scaling`, and their checking."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from platobench.api import UserError, add_device_option, add_json_option
from platobench.experiments.jepa.sizes import SIZES

# --quick: the held-out sets measured at every training evaluation (TrainConfig.eval_pairs, .eval_captions).
# The defaults (256 pairs, 2,048 captions) made the held-out loss of the next-token runs (a 30k-way softmax
# over 256 documents at every snapshot) a third of `jepa curve --quick`'s training time.
QUICK_EVAL = {"eval_pairs": 64, "eval_captions": 128}
# --quick: the samples scored per setting (per class on class datasets), the smallest size at which the
# interval subsets of the demo settings' records hold enough distinct rows (as `run --limit 32` on the demo board)
QUICK_EVAL_LIMIT = 32


def add_training_options(p: argparse.ArgumentParser, *, out: str, report: str, examples: str) -> None:
    """--corpus, --limit, --size, --batch-size, --lr, --heldout, --examples, --eval-limit, --quick, --out,
    --report, --device, --json and the catalogue options (--settings-file, --zoo, --trust-remote-code)."""
    from platobench.api import add_catalog_options

    p.add_argument("--corpus", required=True, metavar="DATASET",
                   help="training texts: a corpus or paired dataset whose items have >= 2 views (e.g. wordnet, "
                        "openmoji, cldr-emoji, kjv-web, openclipart-desc; see `platobench data list`)")
    p.add_argument("--limit", type=int, default=None, help="train on the first N items of the corpus")
    p.add_argument("--size", choices=list(SIZES), default="tiny", help="encoder size (default tiny)")
    p.add_argument("--batch-size", type=int, default=64, help="examples per step (default 64)")
    p.add_argument("--lr", type=float, default=None, help="peak learning rate (default by size)")
    p.add_argument("--heldout", type=float, default=0.2,
                   help="share of corpus items never trained on, by item-id hash (default 0.2)")
    p.add_argument("--examples", default=None, metavar="FIRST:LAST:COUNT",
                   help=f"snapshot after COUNT log-spaced example counts from FIRST to LAST (default {examples})")
    p.add_argument("--eval-limit", type=int, default=None,
                   help="score on the first N samples of each setting's data (a quick test; default all)")
    p.add_argument("--quick", action="store_true",
                   help=f"a CI-sized run: 2,000 corpus items, tiny example counts, {QUICK_EVAL_LIMIT} evaluation samples "
                        "(per class on class datasets), "
                        f"{QUICK_EVAL['eval_pairs']} held-out pairs for the training losses and "
                        f"{QUICK_EVAL['eval_captions']} for the effective rank; its numbers test the wiring, not the claim")
    p.add_argument("--out", type=Path, default=Path(out), help=f"results folder of the records (default {out})")
    p.add_argument("--report", type=Path, default=Path(report),
                   help=f"folder of the summary, tables and plots, outside --out (default {report})")
    add_device_option(p, used_for="extraction (training picks its own)")
    add_json_option(p, what="the summary")
    add_catalog_options(p)


def quick_eval(quick: bool) -> dict[str, int]:
    """TrainConfig's held-out evaluation sizes under --quick; {} (TrainConfig's defaults) otherwise."""
    return dict(QUICK_EVAL) if quick else {}


def parse_examples(text: str, batch_size: int) -> list[int]:
    """FIRST:LAST:COUNT -> the log-spaced example counts (multiples of the batch)."""
    from platobench.experiments.jepa.recipes import log_spaced

    parts = text.split(":")
    try:
        first, last, count = (int(x) for x in parts)
    except ValueError:
        raise UserError(f"--examples {text!r}: expected FIRST:LAST:COUNT, three integers") from None
    if first < batch_size:
        raise UserError(f"--examples {text!r}: FIRST must be at least the batch size ({batch_size})")
    return log_spaced(first, last, count, batch_size)


def check_common(args: argparse.Namespace) -> None:
    """UserError for out-of-range numbers among the shared options, and under a multi-process launcher
    (every snapshot is exported, extracted and scored by one process while training waits; use
    `jepa train` under `accelerate launch` for multi-GPU training)."""
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        raise UserError("jepa curve and jepa scaling run in one process (one GPU or the CPU); WORLD_SIZE="
                        f"{os.environ['WORLD_SIZE']} says a multi-process launcher started this one")
    if args.batch_size < 2:
        raise UserError(f"--batch-size {args.batch_size}: expected at least 2")
    if args.lr is not None and not args.lr > 0:
        raise UserError(f"--lr {args.lr}: expected a positive learning rate")
    if not 0 < args.heldout < 1:
        raise UserError(f"--heldout {args.heldout}: expected a share strictly between 0 and 1")
    for flag, value in (("--limit", args.limit), ("--eval-limit", args.eval_limit)):
        if value is not None and value < 1:
            raise UserError(f"{flag} {value}: expected a positive count")


def load_corpus(name: str, limit: int | None, *, flag: str = "--corpus") -> Any:
    """The `CaptionCorpus` of corpus or paired dataset `name` (UserError naming `flag` for a class dataset)."""
    from platobench.api import get_dataset
    from platobench.experiments.jepa.train import CaptionCorpus

    dataset = get_dataset(name, limit=limit)
    if not hasattr(dataset, "caption_views"):
        raise UserError(f"{flag} {name!r} is a class dataset; training needs a text corpus or a paired dataset "
                        "whose items have two or more views (`platobench data list`)")
    return CaptionCorpus.from_dataset(dataset)


def vision_models(zoo: Any, names: str) -> list[Any]:
    """The vision specs of a comma-separated `--vision` list (UserError for a text model)."""
    specs = zoo.resolve(names)
    wrong = [s.name for s in specs if s.modality != "vision"]
    if wrong or not specs:
        raise UserError(f"--vision: {', '.join(wrong) or names!r} are not vision models of the zoo")
    return specs
