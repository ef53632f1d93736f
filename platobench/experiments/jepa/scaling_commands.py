"""`platobench jepa scaling`: the trained scaling law in the share of good views and examples seen."""

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

DEFAULT_GRID = "0,0.25,0.5,0.75,1/0.1,0.6"
DEFAULT_EXAMPLES = "1024:32768:6"
QUICK = {"limit": 2000, "examples": "64:512:4", "eval_limit": QUICK_EVAL_LIMIT, "grid": "0,1/0.5"}


def register(sub: Any) -> None:
    p = sub.add_parser(
        "scaling",
        help="fit misalignment vs share of good views and examples, then predict new runs before training them",
        description=(
            "Train one JEPA per share of good views P of the fit grid (mix:P) and fit seed with snapshots after "
            "log-spaced example counts, score each snapshot against the vision model under one setting "
            "(misalignment = 1 - score for a higher-is-better metric), fit M(P, n) = E + A * (n * (P + beta * "
            "(1 - P))) ** (-alpha), write its predictions for the held-out shares to "
            "REPORT/jepa-scaling-predictions.json (timestamped) before training them, then train every held-out "
            "share with two held-out seeds (not fit seeds) and compare the law's error with a rerun's (the other "
            "held-out seed, also stated on the law's footing) and a constant's. Writes records "
            "under OUT/<setting>/, REPORT/jepa-scaling.json and a plot under REPORT/plots/. Example: platobench jepa "
            "scaling --corpus wordnet --vision demo/dinov2-s-imgfocus --quick"
        ),
    )
    p.add_argument("--vision", required=True, metavar="MODEL", help="one vision model of the zoo")
    p.add_argument("--setting", default="demo-mknn",
                   help="the setting whose score gives misalignment (default demo-mknn)")
    p.add_argument("--shares", default=None, metavar="FIT/HELDOUT",
                   help=f"shares of good views to fit on / to predict, comma-separated (default {DEFAULT_GRID})")
    p.add_argument("--fit-seeds", type=int, default=2, metavar="F",
                   help="seeds of every fit share, 0..F-1, at least 2 (default 2)")
    p.add_argument("--heldout-seeds", default=None, metavar="SEED,SEED",
                   help="the held-out runs' seeds, a new run's and its rerun's, neither a fit seed (default F,F+1)")
    add_renamed_option(p, "--grid", "--shares")
    add_renamed_option(p, "--seeds", "--heldout-seeds")
    add_renamed_option(p, "--run-seeds", "--heldout-seeds")
    add_training_options(p, out="results/jepa-scaling", report="reports/jepa-scaling", examples=DEFAULT_EXAMPLES)
    p.set_defaults(func=_scaling)


def parse_grid(text: str) -> tuple[list[float], list[float]]:
    """FIT/HELDOUT share lists; UserError for anything else."""
    fit, sep, heldout = text.partition("/")
    try:
        if not sep:
            raise ValueError
        return [float(x) for x in fit.split(",")], [float(x) for x in heldout.split(",")]
    except ValueError:
        raise UserError(f"--shares {text!r}: expected FIT/HELDOUT, e.g. {DEFAULT_GRID}") from None


def _scaling(args: argparse.Namespace) -> int:
    from platobench.api import Catalog, FeatureStore, zoo_from_args
    from platobench.experiments.jepa.scaling import SETTING_PREFIX, ScalingConfig, run_scaling
    from platobench.experiments.jepa.snapshot_scoring import experiment_setting
    from platobench.experiments.jepa.train import TrainConfig

    check_common(args)
    quick = QUICK if args.quick else {}
    fit, heldout = parse_grid(args.shares or quick.get("grid", DEFAULT_GRID))
    fit_seeds = tuple(range(args.fit_seeds))
    heldout_seeds = (_seeds(args.heldout_seeds, "--heldout-seeds", "2,3") if args.heldout_seeds is not None
                     else (args.fit_seeds, args.fit_seeds + 1))
    if len(heldout_seeds) != 2:
        raise UserError(f"--heldout-seeds {args.heldout_seeds!r}: expected two seeds, e.g. 2,3")
    (vision,) = vision_models(zoo_from_args(args), args.vision)
    (setting,) = Catalog(args.settings_file).resolve_settings(args.setting)
    if setting.kind != "paired":
        raise UserError(f"--setting {setting.id}: a {setting.kind} setting; the law is fitted on a paired setting")
    config = ScalingConfig(
        train=TrainConfig(size=args.size, batch_size=args.batch_size, lr=args.lr, heldout_fraction=args.heldout,
                          **quick_eval(args.quick)),
        fit_shares=fit, heldout_shares=heldout,
        examples=parse_examples(args.examples or quick.get("examples", DEFAULT_EXAMPLES), args.batch_size),
        vision=vision, setting=experiment_setting(setting, SETTING_PREFIX, keep_null=False), out=args.out, report=args.report,
        fit_seeds=fit_seeds, heldout_seeds=(heldout_seeds[0], heldout_seeds[1]), device=args.device, limit=args.eval_limit or quick.get("eval_limit"),
    )
    corpus = load_corpus(args.corpus, args.limit or quick.get("limit"))
    log = progress_log(args.json)
    result = run_scaling(corpus, config, store=FeatureStore(), home=home(), log=log)
    assert result.law is not None
    if args.json:
        print(json.dumps({"law": result.law.as_dict(), "comparison": result.comparison,
                          "files": result.files, "wall_s": result.wall_s}, indent=2))
        return 0
    c = result.comparison
    print(f"law: E={result.law.e:.4f} A={result.law.a:.4g} alpha={result.law.alpha:.4f} beta={result.law.beta:.4g} "
          f"(good views worth {1 / result.law.beta:.3g} bad ones); fit RMSE {result.law.rmse:.4f}")
    if c.get("pairs"):
        verdict = "as accurate as a rerun" if c["as_accurate_as_a_rerun"] else "less accurate than a rerun"
        beats = "beats" if c["beats_the_constant"] else "does not beat"
        print(f"held-out seeds: law RMSE {c['law_rmse']:.4f} vs rerun RMSE {c['rerun_rmse']:.4f} "
              f"({c['rerun_rmse_equal_footing']:.4f} as the mean of {c['fit_seeds']} reruns, the law's footing) over "
              f"{c['pairs']} (P, n) points -> {c['law_over_rerun']:.2f}x: the law is {verdict}; it {beats} the "
              f"constant (mean misalignment of the fit runs), RMSE {c['constant_rmse']:.4f}; one run's noise "
              f"{c['noise_floor']:.4f}")
    print(f"files: {', '.join(result.files)}; {result.wall_s:.0f} s")
    return 0


def _seeds(text: str, flag: str, example: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(","))
    except ValueError:
        raise UserError(f"{flag} {text!r}: expected comma-separated seeds, e.g. {example}") from None
