"""`platobench run --pairs SET --settings SET`: the main job."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from platobench.cli_options import add_datasets_file_option, add_device_option, add_json_option
from platobench.encoders.guard import add_timeout_option
from platobench.table import format_table
from platobench.zoo import add_zoo_option, zoo_from_args

if TYPE_CHECKING:
    from platobench.bench.jobs import Scorer


def scorers() -> dict[str, Scorer]:
    """Setting kind -> scorer, as its protocol names it (`platobench.bench.protocols`; imported when called:
    the scorers load torch, which building the parser does not need)."""
    from platobench.bench.protocols import scorers as registered

    return registered()


def add_settings_file_option(p: argparse.ArgumentParser) -> None:
    """`--settings-file FILE` and `--datasets-file FILE` (settings may name the datasets of the latter)."""
    p.add_argument("--settings-file", action="append", default=[], type=Path, metavar="FILE",
                   help="extra settings YAML merged over the built-in one (repeatable)")
    add_datasets_file_option(p)


def add_catalog_options(p: argparse.ArgumentParser) -> None:
    add_settings_file_option(p)
    add_zoo_option(p, loads_models=True)


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "run", help="measure alignment of model pairs and write result records",
        description=(
            "Plan the work (each model is extracted once per dataset, however many pairs it is in), extract "
            "through the cache, score whole layer grids and write one JSON record per pair x setting under "
            "OUT/<setting>/. Records whose inputs (feature entries) and setting are unchanged are not "
            "recomputed. A failing model does not lose the others' results; the run then exits 1 and lists "
            "the failures. Under a launcher (accelerate launch --multi_gpu, torchrun) the processes split "
            "each extraction and the main process scores and writes. "
            "Example: platobench run --pairs demo --settings demo"
        ),
    )
    p.add_argument("--pairs", required=True,
                   help="pair sets (demo, default21, prh-val, all, demo-vision-vision, demo-text-text: see `platobench "
                        "pairs list`) and/or pairs 'X:Y' of any two zoo models (text:vision, vision:vision, "
                        "text:text), comma-separated: their union (e.g. offline,demo)")
    p.add_argument("--settings", required=True, help="setting ids or groups, comma-separated (e.g. demo, paired, prh-mknn; see `platobench settings list`)")
    p.add_argument("--out", type=Path, default=Path("results"), help="results folder (default ./results)")
    p.add_argument("--limit", type=int, default=None,
                   help="a quick test, not comparable with full records: the first N samples of each paired "
                        "dataset, the first N images of each class of a class dataset (zero-shot settings); its "
                        "records go to their own files (<pair>--limit-N.json), never over the full records")
    add_device_option(p)
    p.add_argument("--batch-size", type=int, default=32, help="extraction batch size")
    p.add_argument("--workers", type=int, default=2, help="image-decoding workers")
    add_timeout_option(p)
    p.add_argument("--skip-existing", action="store_true", help="skip any pair x setting that already has a record")
    p.add_argument("--force", action="store_true", help="recompute records even when their inputs are unchanged")
    p.add_argument("--dry-run", action="store_true",
                   help="show the plan (models, sizes, GPU memory, cached, estimated statistics time) and stop")
    p.add_argument("--yes", action="store_true",
                   help="run even when the statistics (nulls, intervals, restarts) are estimated above 2 hours "
                        "(never above 7 days)")
    add_json_option(p, what="the plan or the run summary")
    add_catalog_options(p)
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from platobench.bench.cost import duration
    from platobench.bench.dry_run import COMPUTE, extraction_rows, record_plans, summary_line
    from platobench.bench.evaluation import evaluate, plan_jobs
    from platobench.bench.runner import RunOptions, plan_costs
    from platobench.bench.settings import Catalog
    from platobench.bench.terminal_board import board_rows, print_board
    from platobench.features.extract import parallel_state
    from platobench.features.store import FeatureStore

    zoo = zoo_from_args(args)
    jobs = plan_jobs(args.pairs, args.settings, Catalog(args.settings_file), zoo, args.limit)
    pairs = {(j.x.name, j.y.name) for j in jobs}
    settings = {j.setting.id for j in jobs}
    if args.dry_run:
        opts = RunOptions(out=args.out, limit=args.limit, device=args.device, batch_size=args.batch_size,
                          workers=args.workers, force=args.force, skip_existing=args.skip_existing)
        store = FeatureStore()
        plans = record_plans(jobs, opts)
        rows = extraction_rows(plans, opts, store)
        pending = [p.job for p in plans if p.status == COMPUTE]
        seconds = sum(c.seconds for c in plan_costs(pending, opts))
        if args.json:
            print(json.dumps({"jobs": len(jobs), "records": [
                {"setting": p.job.setting.id, "x": p.job.x.name, "y": p.job.y.name,
                 "status": p.status} for p in plans], "extractions": rows, "statistics_s": round(seconds, 1)},
                indent=1))
        else:
            print(f"{len(pairs)} pairs x {len(settings)} settings; {summary_line(plans)}; "
                  f"{len(rows)} extractions for the records to compute:")
            cells = [[r["model"], r["dataset"], r["input"], "?" if r["params_m"] is None else f"{r['params_m']:g}",
                      "?" if r["est_gpu_gib"] is None else f"~{r['est_gpu_gib']}",
                      {True: "yes", False: "no"}.get(r["cached"], str(r["cached"])), r["features"], r["weights"]]
                     for r in rows]
            if cells:
                print("\n".join(format_table(("model", "dataset", "input", "params (M)", "GPU GiB", "cached",
                                              "features", "weights"), cells, right={3, 4}, indent="  ")))
            for p in plans:
                if p.status.startswith("unavailable"):
                    print(f"  {p.job.setting.id} {p.job.x.name} x {p.job.y.name}: {p.status}")
            print(f"statistics (nulls, intervals, restarts) of the records to compute: ~{duration(seconds)} "
                  "estimated on 2 CPU cores")
        return 0
    state = parallel_state(args.device)
    if state is None or state.is_main_process:
        print(f"platobench run: {len(pairs)} pairs x {len(settings)} settings = {len(jobs)} records -> {args.out}",
              file=sys.stderr)
    results = evaluate(
        args.pairs, args.settings, zoo=zoo, settings_files=args.settings_file, out=args.out, limit=args.limit,
        device=args.device, batch_size=args.batch_size, workers=args.workers, encoder_timeout=args.encoder_timeout,
        force=args.force, skip_existing=args.skip_existing, yes=args.yes, progress=not args.json,
    )
    summary, records = results.summary, results.records
    if summary.worker:
        return 0
    if args.json:
        print(json.dumps({**summary.as_dict(), "board": board_rows(records, results.pool)}, indent=1))
    else:
        if records:
            print_board(records, pool=results.pool)
        print(f"written: {len(summary.written)}, up to date (reused, inputs unchanged): {len(summary.up_to_date)}, "
              f"failed: {len(summary.failed)}")
        if summary.up_to_date:
            print(f"reused {len(summary.up_to_date)} record(s) whose feature-cache keys and setting are unchanged; "
                  "--force recomputes them")
        for label, why in summary.failed.items():
            print(f"FAILED {label}: {why}")
    return 1 if summary.failed else 0
