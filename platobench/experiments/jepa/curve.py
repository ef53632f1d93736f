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
    load_records,
    round_floats,
    save_figure,
)
from platobench.experiments.jepa.curve_analysis import (
    curve_sets,
    efficiency,
    format_efficiency,
    parse_level,
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
    design = {"recipes": [r.label for r in config.recipes], "seeds": list(config.seeds),
              "examples": list(config.examples), "level": str(config.level)}
    for control in config.controls:
        records = scorer.score_model(control, {TAG: {"control": True, "design": design}})
        log(f"control {control.name}: " + ", ".join(f"{r.setting.removeprefix(SETTING_PREFIX)} {r.score:.4f}"
                                                    for r in records))
    last = max(config.examples)
    for recipe in config.recipes:
        for seed in config.seeds:
            cfg = run_config(config.train, recipe, seed, [0, *config.examples])
            start = time.perf_counter()

            def snapshot(s: TrainResult, cfg: TrainConfig = cfg, recipe: Recipe = recipe) -> None:
                run = {"steps": cfg.steps, "initial_loss": s.initial_loss, "examples_per_s": s.samples_per_s}
                records = scorer(s, cfg, recipe, final=s.examples_seen >= last, extra={"design": design, "run": run})
                scores = ", ".join(f"{r.setting.removeprefix(SETTING_PREFIX)} {r.score:.4f}" for r in records)
                log(f"  {recipe.label} s{cfg.seed} n={s.examples_seen:,}: held-out loss {s.final_loss:.4f}; {scores}")

            try:
                trained = train(corpus, cfg, on_checkpoint=snapshot)
            except ValueError as exc:
                raise UserError(f"--corpus {corpus.name}: {exc}") from exc
            log(f"{recipe.label} seed {seed}: {trained.examples_seen:,} examples, "
                f"{trained.samples_per_s:.0f} examples/s, {time.perf_counter() - start:.0f} s with scoring")
    result.records, result.paths = list(scorer.records), list(scorer.paths)
    summary, _ = write_report(result.records, config.report)
    result.runs, result.tables = summary["runs"], summary["tables"]
    result.plots = [str(config.report / p) for p in summary["plots"]]
    result.wall_s = round(time.perf_counter() - t0, 1)
    return result


def _order(records: Sequence[ResultRecord], recipes: Sequence[str]) -> list[ResultRecord]:
    """`records` in one order whatever the order they were written or read in: by setting and vision model,
    the controls first (by name), then by recipe (in the design's order), seed and examples seen."""
    def key(r: ResultRecord) -> tuple[Any, ...]:
        info = r.details[TAG]
        if info.get("control"):
            return (r.setting, r.y.name, 0, r.x.name, 0, 0)
        return (r.setting, r.y.name, 1, recipes.index(info["recipe"]), info["seed"], info["examples_seen"])
    return sorted(records, key=key)


def _one_design(records: Sequence[ResultRecord]) -> dict[str, Any]:
    """The design (recipes, seeds, examples, level) every record states; UserError when the records hold
    none (written before records stated it) or more than one (two curve runs in one folder)."""
    designs = {json.dumps(r.details[TAG].get("design"), sort_keys=True) for r in records}
    corpora = {r.details[TAG]["corpus"]["fingerprint"] for r in records if "corpus" in r.details[TAG]}
    if "null" in designs:
        raise UserError("jepa curve records without details.jepa_curve.design (written by an older version): "
                        "rerun `platobench jepa curve`")
    if len(designs) > 1 or len(corpora) > 1:
        raise UserError(f"the records hold {len(designs)} jepa curve designs on {len(corpora)} corpora: one "
                        "report summarises one run; give each run its own --out")
    return json.loads(designs.pop())


def write_report(records: Sequence[ResultRecord], folder: Path) -> tuple[dict[str, Any], list[str]]:
    """jepa-curve.json (design, runs, efficiency tables), jepa-curve.md (the tables) and a plot per
    (setting, vision model) under `folder`/plots, written from one curve run's `records` alone; returns the
    summary and the paths written. Derived floats are rounded (`round_floats`) so that a rebuild on another
    CPU gives the same bytes. UserError when the records hold no curve run."""
    mine = [r for r in records if isinstance(r.details.get(TAG), dict)]
    if all(r.details[TAG].get("control") for r in mine):
        raise UserError("no jepa curve records (records whose details hold jepa_curve with a recipe)")
    design = _one_design(mine)
    recipes = design["recipes"]
    mine = _order(mine, recipes)
    snapshots = [r for r in mine if not r.details[TAG].get("control")]
    level = parse_level(design["level"])
    tables, plots = [], []
    for cs in curve_sets(mine, TAG).values():
        table = round_floats(efficiency(cs, recipes[0], level))
        tables.append(table)
        rel = f"plots/{cs.setting}.{cs.vision.replace('/', '--')}.png"
        save_figure(curve_figure(cs, table["level"], recipes), contained(folder, *rel.split("/")))
        plots.append(rel)
    first_cell = (snapshots[0].setting, snapshots[0].y.name)
    runs = []
    for recipe in recipes:
        for seed in design["seeds"]:
            cell = [r for r in snapshots if (r.setting, r.y.name) == first_cell
                    and (r.details[TAG]["recipe"], r.details[TAG]["seed"]) == (recipe, seed)]
            if cell:
                runs.append(_run_summary(cell[-1]))
    info = snapshots[0].details[TAG]
    summary = {
        "corpus": {k: info["corpus"][k] for k in ("name", "revision", "fingerprint")},
        **design, "size": info["size"], "batch_size": info["batch_size"],
        "vision": sorted({r.y.name for r in mine}), "settings": sorted({r.setting for r in mine}),
        "controls": sorted({r.x.name for r in mine if r.details[TAG].get("control")}),
        "eval_limit": snapshots[0].provenance.limit, "runs": runs, "tables": tables, "plots": plots,
        "records": len(mine),
    }
    paths = [atomic_write_text(folder / SUMMARY_FILE, json.dumps(summary, indent=1) + "\n"),
             atomic_write_text(folder / TABLE_FILE, format_efficiency(tables) + "\n")]
    return summary, [str(p) for p in paths] + [str(folder / p) for p in plots]


def _run_summary(last: ResultRecord) -> dict[str, Any]:
    """One run's training summary, from the record of its last snapshot."""
    info = last.details[TAG]
    run = info.get("run", {})
    return {"recipe": info["recipe"], "seed": info["seed"], "steps": run.get("steps"),
            "examples": info["examples_seen"], "initial_loss": run.get("initial_loss"),
            "final_loss": info["heldout_loss"], "effective_rank": info["effective_rank"],
            "examples_per_s": run.get("examples_per_s"), "train_samples": info["corpus"]["train_samples"]}


def rebuild(results: Path, reports: Path, out: Path) -> list[str]:
    """`platobench reports`: the jepa-curve summary, table and plots again under `out`/jepa-curve from the
    records committed under `reports`/jepa-curve/records (`results` is not read)."""
    folder = reports / "jepa-curve" / "records"
    records = load_records(folder) if folder.is_dir() else []
    if not records:
        raise UserError(f"no jepa curve records under {folder}: run `platobench jepa curve --out {folder}` first")
    return write_report(records, out / "jepa-curve")[1]
