"""`platobench theory worlds|scaling|train`: the Platonic representation theorem in finite worlds."""

from __future__ import annotations

import argparse
import json
from typing import Any

from platobench.api import UserError, add_json_option, add_renamed_option


def register(subparsers: Any) -> None:
    t = subparsers.add_parser(
        "theory", help="check the Platonic representation theorem in simulated finite worlds",
        description=(
            "Finite-world simulations of the JEPA Platonic representation theorem (Balestriero & LeCun): the "
            "closed-form solution is the whitened spectral embedding of the positive-pair graph; two modalities "
            "with the same pair graph agree up to rotation, and their misalignment is bounded by a Davis-Kahan "
            "term (pair mismatch over spectral gap). Run `platobench theory COMMAND --help`."
        ),
    )
    t.set_defaults(func=lambda args: _usage(t))
    sub = t.add_subparsers(dest="theory_command", metavar="COMMAND")

    w = sub.add_parser(
        "worlds", help="misalignment against the Davis-Kahan bound on many random worlds",
        description=(
            "Draw N random worlds (stochastic block, random geometric, weighted Erdos-Renyi; 10-120 states; "
            "a quarter with the embedding dimension put at the smallest spectral gap), give two modalities pair "
            "graphs that differ by rewired edges or bad views, and compare their misalignment (rotation residual "
            "of the whitened solutions) with the bound. Prints violations (expected 0) and the error/bound ratios."
        ),
    )
    w.add_argument("--n", type=int, default=300, help="number of worlds (default 300)")
    w.add_argument("--seed", type=int, default=0, help="seed of the world draws (default 0)")
    w.add_argument("--plot", metavar="FILE", help="save the misalignment-versus-bound scatter (PNG/PDF/SVG)")
    add_json_option(w, what="the summary and per-world rows")
    w.set_defaults(func=_worlds)

    s = sub.add_parser(
        "scaling", help="misalignment against good-view share and samples, a fitted law, held-out test",
        description=(
            "Two modalities of one world see a share g of good views (the rest pair a state with the modality's "
            "own noisy copy) and N sampled positive pairs. Fits rho = a(1-g)^alpha + b N^-beta on a grid and "
            "reports its prediction error on held-out runs next to the error of a rerun with another seed."
        ),
    )
    s.add_argument("--seed", type=int, default=0, help="seed of the world and the runs (default 0)")
    s.add_argument("--states", type=int, default=60, help="number of states of the world (default 60)")
    s.add_argument("--dim", type=int, default=4, help="embedding dimension d (default 4)")
    s.add_argument("--fit-seeds", type=int, default=2, help="seeds per grid point of the fit (default 2)")
    s.add_argument("--heldout-runs", type=int, default=85, metavar="N", help="number of held-out runs (default 85)")
    add_renamed_option(s, "--heldout", "--heldout-runs")
    s.add_argument("--plot", metavar="FILE", help="save the scaling figure")
    add_json_option(s, what="the whole report (grid, fitted law, held-out errors)")
    s.set_defaults(func=_scaling)

    r = sub.add_parser(
        "train", help="train JEPA encoders by gradient descent and compare them with the closed form",
        description=(
            "Train linear (one-hot and random isometric observations) and MLP (random low-dimensional "
            "observations) JEPA encoders with whitening anti-collapse on sampled positive pairs of random worlds, "
            "and report the rotation residual between each trained encoder and the closed-form spectral "
            "solution of the same pairs (the theorem on training, not only algebra)."
        ),
    )
    r.add_argument("--worlds", type=int, default=3, help="number of worlds (default 3)")
    r.add_argument("--states", type=int, default=24, help="states per world (default 24)")
    r.add_argument("--dim", type=int, default=3, help="embedding dimension d (default 3)")
    r.add_argument("--positive-pairs", type=int, default=20_000, metavar="N",
                   help="sampled positive pairs per world (default 20000)")
    add_renamed_option(r, "--pairs", "--positive-pairs")
    r.add_argument("--seed", type=int, default=0, help="seed (default 0)")
    add_json_option(r, what="the whole report (per-world residuals)")
    r.set_defaults(func=_train)


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def _positive(value: int, flag: str) -> None:
    if value < 1:
        raise UserError(f"{flag} must be a positive integer, got {value}")


def _worlds(args: argparse.Namespace) -> int:
    from platobench.experiments.theory.experiments import run_worlds

    _positive(args.n, "--n")
    report = run_worlds(args.n, args.seed)
    if args.plot:
        from platobench.experiments.theory.plots import plot_worlds

        report["plot"] = str(plot_worlds(report, args.plot))
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    print(f"## Bound check: {report['worlds']} worlds, seed {report['seed']}\n")
    print("| family | worlds | violations | informative bound | max ratio | median ratio |")
    print("|---|---:|---:|---:|---:|---:|")
    for fam, f in report["by_family"].items():
        print(f"| {fam} | {f['worlds']} | {f['violations']} | {f['informative']} | {_fmt(f['max_ratio'])} | "
              f"{_fmt(f['median_ratio'])} |")
    print(f"| **all** | {report['worlds']} | {report['violations']} | {report['informative']} | "
          f"{_fmt(report['max_ratio'])} | {_fmt(report['median_ratio'])} |")
    print(f"\nratio = misalignment / bound; among worlds whose bound is informative (< 2): max "
          f"{_fmt(report['max_ratio_informative'])}, median {_fmt(report['median_ratio_informative'])}.")
    if args.plot:
        print(f"plot: {report['plot']}")
    return 0


def _scaling(args: argparse.Namespace) -> int:
    from platobench.experiments.theory.experiments import run_scaling

    for flag, value in (("--states", args.states), ("--dim", args.dim), ("--fit-seeds", args.fit_seeds)):
        _positive(value, flag)
    report = run_scaling(seed=args.seed, n_states=args.states, dim=args.dim, fit_seeds=args.fit_seeds,
                         heldout=args.heldout_runs)
    if args.plot:
        from platobench.experiments.theory.plots import plot_scaling

        report["plot"] = str(plot_scaling(report, args.plot))
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    law = report["law"]
    print(f"## Scaling law, seed {report['seed']} ({report['states']} states, d = {report['dim']})\n")
    print(f"rho = {law['a']:.4g} (1 - g)^{law['alpha']:.3f} + {law['b']:.4g} N^-{law['beta']:.3f}"
          f"   (fitted on {report['fit_runs']} runs)\n")
    print("| error (RMSE of log10 rho) | value |")
    print("|---|---:|")
    print(f"| fit, {report['fit_runs']} runs | {report['fit_rmse_log10']:.4f} |")
    print(f"| law on {report['heldout_runs']} held-out runs | {report['heldout_rmse_log10']:.4f} |")
    print(f"| seed rerun of the same runs | {report['seed_rerun_rmse_log10']:.4f} |")
    print(f"| law / rerun | {_fmt(report['prediction_over_rerun'])} |")
    if args.plot:
        print(f"\nplot: {report['plot']}")
    return 0


def _train(args: argparse.Namespace) -> int:
    from platobench.experiments.theory.experiments import run_training

    for flag, value in (("--worlds", args.worlds), ("--states", args.states), ("--dim", args.dim),
                        ("--positive-pairs", args.positive_pairs)):
        _positive(value, flag)
    report = run_training(n_worlds=args.worlds, n_states=args.states, dim=args.dim, n_pairs=args.positive_pairs,
                          seed=args.seed)
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    print(f"## Trained JEPA against the closed form (seed {report['seed']}, tolerance {report['tolerance']:g})\n")
    print("| world | family | encoder | observations | residual to closed form (same pairs) | "
          "residual to closed form (population W) | sampling residual |")
    print("|---:|---|---|---|---:|---:|---:|")
    for r in report["rows"]:
        print(f"| {r['world']} | {r['family']} | {r['encoder']} | {r['observations']} | {r['residual']:.2e} | "
              f"{r['residual_population']:.2e} | {r['sampling_residual']:.2e} |")
    print(f"\nmax residual {report['max_residual']:.2e}; within tolerance: {report['within_tolerance']}")
    return 0


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.4f}"
