"""`platobench jepa curve`: alignment against examples seen for each objective, with the efficiency ratio."""

from __future__ import annotations

import argparse
import json
from typing import Any

from platobench.api import UserError, add_renamed_option, home, progress_log
from platobench.experiments.jepa.experiment_options import (
    QUICK_EVAL_LIMIT,
    add_training_options,
    check_common,
    load_corpus,
    parse_examples,
    quick_eval,
    vision_models,
)

DEFAULT_OBJECTIVES = "jepa-good,jepa-bad,ntp"
DEFAULT_SETTINGS = "demo-mknn,demo-cka,zs-tuxpaint"
DEFAULT_EXAMPLES = "256:32768:8"
QUICK = {"limit": 2000, "examples": "64:256:3", "eval_limit": QUICK_EVAL_LIMIT, "seeds": 2}


def register(sub: Any) -> None:
    p = sub.add_parser(
        "curve",
        help="alignment vs training examples seen, per objective (good views, bad views, next-token prediction)",
        description=(
            "Train each objective (--objectives; the first is the reference) with each seed on the corpus, with a "
            "constant learning rate after warm-up and a snapshot after log-spaced example counts; score every "
            "snapshot against the vision models under copies of the settings named jepa-curve-<id> (paired "
            "settings without their permutation null and interval unless --keep-null: the seeds give the spread) and "
            "write one record each under OUT/<setting>/. Then plot score vs examples (log x, mean over seeds with "
            "a min-max band) under REPORT/plots/, and print the sample-efficiency table: the examples each objective "
            "needs to reach the reference's level (interpolated in log examples), their ratio, per seed, and the "
            "score difference at the last snapshot with a 95%% t-interval over seeds. Every run is also scored at "
            "initialisation, and the --controls once, as reference lines. Writes REPORT/jepa-curve.json "
            "and REPORT/jepa-curve.md. Example: platobench jepa curve --corpus wordnet --vision "
            "demo/dinov2-s-imgfocus --objectives jepa-good,jepa-bad,ntp --seeds 3"
        ),
    )
    p.add_argument("--vision", required=True, metavar="MODEL,...", help="vision models of the zoo, comma-separated")
    p.add_argument("--objectives", default=DEFAULT_OBJECTIVES,
                   help=f"recipes, the first being the reference: jepa-good, jepa-bad, jepa-mix:P, ntp "
                        f"(default {DEFAULT_OBJECTIVES})")
    p.add_argument("--seeds", type=int, default=None, help="seeds 0..N-1 per objective (default 3; --quick 2)")
    p.add_argument("--settings", default=DEFAULT_SETTINGS,
                   help=f"setting ids or groups measured at every snapshot (default {DEFAULT_SETTINGS})")
    p.add_argument("--level", default="frac:0.75",
                   help="alignment level of the ratio: frac:F (F of the way from the reference's first to its "
                        "best mean score; default frac:0.75), final (its last mean score), or a score")
    p.add_argument("--controls", default="baselines-text", metavar="MODEL,...",
                   help="text models scored once under the same settings, drawn as reference lines (default "
                        "baselines-text: random weights, bag of words, caption length; '' for none)")
    p.add_argument("--keep-null", action="store_true", help="keep each paired setting's permutation null and interval")
    add_renamed_option(p, "--null", "--keep-null")
    p.add_argument("--keep-checkpoints", action="store_true",
                   help="keep every snapshot's folder (default: only each run's last)")
    add_training_options(p, out="results/jepa-curve", report="reports/jepa-curve", examples=DEFAULT_EXAMPLES)
    p.set_defaults(func=_curve)


def _curve(args: argparse.Namespace) -> int:
    from platobench.api import Catalog, FeatureStore, print_board, zoo_from_args
    from platobench.experiments.jepa.curve import SETTING_PREFIX, CurveConfig, run_curve
    from platobench.experiments.jepa.curve_analysis import format_efficiency, parse_level
    from platobench.experiments.jepa.recipes import parse_recipes
    from platobench.experiments.jepa.snapshot_scoring import experiment_setting
    from platobench.experiments.jepa.train import TrainConfig

    check_common(args)
    quick = QUICK if args.quick else {}
    seeds = args.seeds if args.seeds is not None else quick.get("seeds", 3)
    if seeds < 1:
        raise UserError(f"--seeds {seeds}: expected at least 1")
    recipes = parse_recipes(args.objectives)
    level = parse_level(args.level)
    examples = parse_examples(args.examples or quick.get("examples", DEFAULT_EXAMPLES), args.batch_size)
    zoo = zoo_from_args(args)
    settings = [experiment_setting(s, SETTING_PREFIX, keep_null=args.keep_null)
                for s in Catalog(args.settings_file).resolve_settings(args.settings)]
    config = CurveConfig(
        train=TrainConfig(size=args.size, batch_size=args.batch_size, lr=args.lr, heldout_fraction=args.heldout,
                          **quick_eval(args.quick)),
        recipes=recipes, seeds=list(range(seeds)), examples=examples, vision=vision_models(zoo, args.vision),
        settings=settings, out=args.out, report=args.report, level=level, device=args.device, keep_checkpoints=args.keep_checkpoints,
        eval_limit=args.eval_limit or quick.get("eval_limit"),
        controls=zoo.resolve(args.controls) if args.controls.strip() else [],
    )
    corpus = load_corpus(args.corpus, args.limit or quick.get("limit"))
    log = progress_log(args.json)
    log(f"{corpus.name}: {len(corpus.ids):,} items; {len(recipes)} objectives x {seeds} seeds; snapshots at "
        + ", ".join(f"{n:,}" for n in examples) + " examples")
    result = run_curve(corpus, config, store=FeatureStore(), home=home(), log=log)
    if args.json:
        print(json.dumps({"runs": result.runs, "tables": result.tables, "plots": result.plots,
                          "records": result.paths, "wall_s": result.wall_s}, indent=2))
        return 0
    print(format_efficiency(result.tables))
    print()
    last = [r for r in result.records
            if r.details["jepa_curve"].get("control") or r.details["jepa_curve"]["examples_seen"] == max(examples)]
    print_board(last)  # the last snapshots next to the controls
    print(f"{len(result.paths)} records under {args.out}; plots: {', '.join(result.plots)}; {result.wall_s:.0f} s")
    return 0
