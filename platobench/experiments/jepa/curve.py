"""`platobench jepa curve`: alignment with vision models against training examples seen, per objective.

For each recipe (jepa-good, jepa-bad, jepa-mix:P, ntp) and seed, one run on the corpus with a constant
learning rate after warm-up and a snapshot at log-spaced example counts; every snapshot is scored against
the vision models under experiment copies of the settings (`snapshot_scoring`), one record each. The
records then give one curve per run, a plot per (setting, vision model) and the sample-efficiency table
of `curve_analysis` (examples each recipe needs to reach the reference's level).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from platobench.api import (
    FeatureStore,
    ModelSpec,
    ResultRecord,
    Setting,
    UserError,
    atomic_write_text,
    contained,
    save_figure,
)
from platobench.experiments.jepa.curve_analysis import (
    curve_sets,
    efficiency,
    format_efficiency,
    resolve_level,
)
from platobench.experiments.jepa.curve_plot import curve_figure
from platobench.experiments.jepa.recipes import Recipe, run_config
from platobench.experiments.jepa.snapshot_scoring import SnapshotScorer
from platobench.experiments.jepa.train import CaptionCorpus, TrainConfig, TrainResult, train

TAG = "jepa_curve"
SETTING_PREFIX = "jepa-curve-"
SUMMARY_FILE = "jepa-curve.json"
TABLE_FILE = "jepa-curve.md"


@dataclass(frozen=True)
class CurveConfig:
    """`recipes` x `seeds` runs of `train` (size, batch, lr, held-out share) with snapshots after each of
    `examples`, scored against `vision` under `settings` (experiment copies); records under `out`, the
    summary, table and plots under `report` (outside `out`: the record reader takes every JSON there).
    The first recipe is the reference of the ratio table; `level` as `curve_analysis.parse_level`;
    `eval_limit`: score on the first N samples of each setting's data (a quick test); `controls`: text
    models scored once under the same settings (the baselines: random weights, bag of words, caption
    length). Every run is also scored at initialisation (0 examples)."""

    train: TrainConfig
    recipes: Sequence[Recipe]
    seeds: Sequence[int]
    examples: Sequence[int]
    vision: Sequence[ModelSpec]
    settings: Sequence[Setting]
    out: Path
    report: Path
    level: str | float = "frac:0.75"
    device: str = "cpu"
    keep_checkpoints: bool = False
    eval_limit: int | None = None
    controls: Sequence[ModelSpec] = ()


@dataclass
class CurveResult:
    """Per run: its training summary; the records and their paths; the efficiency tables; plot paths."""

    runs: list[dict[str, Any]] = field(default_factory=list)
    records: list[ResultRecord] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    tables: list[dict[str, Any]] = field(default_factory=list)
    plots: list[str] = field(default_factory=list)
    wall_s: float = 0.0


def check_no_overlap(corpus: CaptionCorpus, settings: Sequence[Setting]) -> None:
    """UserError when a setting measures on the corpus the models train on (its samples would be scored
    by a model that saw them; `jepa compare` measures on the held-out split instead)."""
    same = [s.id for s in settings if s.dataset == corpus.name]
    if same:
        raise UserError(
            f"--settings {', '.join(same)} measure on {corpus.name}, the training corpus; choose settings on "
            "other data (or use `platobench jepa compare`, which scores the held-out split)"
        )


def check_report_folder(report: Path, out: Path) -> None:
    """UserError when the report folder lies inside the results folder (its JSON files are not records,
    and every reader of `out` would stop on them)."""
    report, out = report.resolve(), out.resolve()
    if report == out or out in report.parents:
        raise UserError(f"--report {report} lies inside --out {out}; the record reader takes every JSON file "
                        "under --out: choose a report folder outside it")


def _run_summary(result: TrainResult, recipe: Recipe, config: TrainConfig, seconds: float) -> dict[str, Any]:
    return {
        "recipe": recipe.label, "seed": config.seed, "steps": config.steps, "examples": result.examples_seen,
        "initial_loss": result.initial_loss, "final_loss": result.final_loss,
        "effective_rank": result.effective_rank, "examples_per_s": result.samples_per_s,
        "train_samples": result.train_samples, "wall_s": round(seconds, 1),
    }


def run_curve(
    corpus: CaptionCorpus,
    config: CurveConfig,
    *,
    store: FeatureStore,
    home: Path,
    log: Callable[[str], None] = lambda line: None,
) -> CurveResult:
    """Train, snapshot, score, analyse and plot as the module docstring says; write the summary JSON and
    the Markdown table (`report/jepa-curve.json`, `report/jepa-curve.md`) and the plots under
    `report/plots/`."""
    t0 = time.perf_counter()
    check_no_overlap(corpus, config.settings)
    check_report_folder(config.report, config.out)
    scorer = SnapshotScorer(corpus, config.settings, config.vision, store, home, config.out, TAG, "curve",
                            device=config.device, keep=config.keep_checkpoints, limit=config.eval_limit)
    result = CurveResult()
    for control in config.controls:
        records = scorer.score_model(control, {TAG: {"control": True}})
        log(f"control {control.name}: " + ", ".join(f"{r.setting.removeprefix(SETTING_PREFIX)} {r.score:.4f}"
                                                    for r in records))
    last = max(config.examples)
    for recipe in config.recipes:
        for seed in config.seeds:
            cfg = run_config(config.train, recipe, seed, [0, *config.examples])
            start = time.perf_counter()

            def snapshot(s: TrainResult, cfg: TrainConfig = cfg, recipe: Recipe = recipe) -> None:
                records = scorer(s, cfg, recipe, final=s.examples_seen >= last, extra={})
                scores = ", ".join(f"{r.setting.removeprefix(SETTING_PREFIX)} {r.score:.4f}" for r in records)
                log(f"  {recipe.label} s{cfg.seed} n={s.examples_seen:,}: held-out loss {s.final_loss:.4f}; {scores}")

            try:
                trained = train(corpus, cfg, on_checkpoint=snapshot)
            except ValueError as exc:
                raise UserError(f"--corpus {corpus.name}: {exc}") from exc
            summary = _run_summary(trained, recipe, cfg, time.perf_counter() - start)
            result.runs.append(summary)
            log(f"{recipe.label} seed {seed}: {summary['examples']:,} examples, "
                f"{summary['examples_per_s']:.0f} examples/s, {summary['wall_s']:.0f} s with scoring")
    result.records, result.paths = list(scorer.records), list(scorer.paths)
    reference = config.recipes[0].label
    for cs in curve_sets(result.records, TAG).values():
        table = efficiency(cs, reference, config.level)
        result.tables.append(table)
        path = contained(config.report, "plots", f"{cs.setting}.{cs.vision.replace('/', '--')}.png")
        level = resolve_level(config.level, cs.mean_curve(reference), cs.higher_is_better)
        save_figure(curve_figure(cs, level, [r.label for r in config.recipes]), path)
        result.plots.append(str(path))
    result.wall_s = round(time.perf_counter() - t0, 1)
    write_summary(config, corpus, result)
    return result


def write_summary(config: CurveConfig, corpus: CaptionCorpus, result: CurveResult) -> None:
    """`report/jepa-curve.json` (configuration, runs, tables, plots, wall time) and `report/jepa-curve.md`."""
    doc = {
        "corpus": {"name": corpus.name, "revision": corpus.revision, "fingerprint": corpus.fingerprint},
        "recipes": [r.label for r in config.recipes], "seeds": list(config.seeds),
        "examples": list(config.examples), "size": config.train.size, "batch_size": config.train.batch_size,
        "vision": [v.name for v in config.vision], "settings": [s.id for s in config.settings],
        "controls": [c.name for c in config.controls],
        "level": str(config.level), "eval_limit": config.eval_limit, "runs": result.runs, "tables": result.tables, "plots": result.plots,
        "records": len(result.paths), "wall_s": result.wall_s,
    }
    atomic_write_text(config.report / SUMMARY_FILE, json.dumps(doc, indent=1) + "\n")
    atomic_write_text(config.report / TABLE_FILE, format_efficiency(result.tables) + "\n")
