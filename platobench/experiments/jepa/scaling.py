"""`platobench jepa scaling`: fit the scaling law on trained encoders, then predict new runs before training.

1. Fit runs: one JEPA per share of good views P in the fit grid (mix:P; P = 1 is jepa-good, P = 0
   jepa-bad), seed 0, snapshots at the example counts; each snapshot is scored against the vision model
   under one setting, and misalignment is 1 - score (a higher-is-better metric) or the score (lower).
2. The law of `scaling_law` is fitted to those points, and its predictions for the held-out runs (new
   shares, the same example counts) are written to `report/jepa-scaling-predictions.json` with a UTC
   timestamp *before* any held-out run starts.
3. Held-out runs: each new share is trained with two seeds. Either seed's run is "the new run"; the other
   seed's run is "a rerun". The test (Balestriero & LeCun 2026): the law's error on the new runs,
   root-mean-square over (P, n, seed), against the rerun's error, root-mean-square of the two seeds'
   differences. The law predicts as well as a rerun when its error is no larger. Control: the error of
   a constant, the mean misalignment of the fit points; a law that does not beat it has learnt nothing
   about P or n that the held-out runs show (as when training barely moves the metric).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from platobench.api import (
    FeatureStore,
    ModelSpec,
    Setting,
    UserError,
    atomic_write_text,
    contained,
    save_figure,
)
from platobench.experiments.jepa.curve import check_no_overlap, check_report_folder
from platobench.experiments.jepa.curve_plot import law_figure
from platobench.experiments.jepa.recipes import Recipe, run_config
from platobench.experiments.jepa.scaling_law import FORMULA, LawFit, fit_law
from platobench.experiments.jepa.snapshot_scoring import SnapshotScorer
from platobench.experiments.jepa.train import CaptionCorpus, TrainConfig, TrainResult, train
from platobench.experiments.jepa.views import ViewMode

TAG = "jepa_scaling"
SETTING_PREFIX = "jepa-scaling-"
PREDICTIONS_FILE = "jepa-scaling-predictions.json"
SUMMARY_FILE = "jepa-scaling.json"


@dataclass(frozen=True)
class ScalingConfig:
    """Fit shares x `examples` (seed `seeds[0]`), then held-out shares x `examples` x both `seeds`, each
    trained with `train` and scored against `vision` under `setting` (an experiment copy); records under
    `out`, predictions, summary and plot under `report` (outside `out`)."""

    train: TrainConfig
    fit_shares: Sequence[float]
    heldout_shares: Sequence[float]
    examples: Sequence[int]
    vision: ModelSpec
    setting: Setting
    out: Path
    report: Path
    seeds: tuple[int, int] = (0, 1)
    device: str = "cpu"
    limit: int | None = None


@dataclass
class ScalingResult:
    """Every measured point, the law, its predictions, the comparison and the files written."""

    points: list[dict[str, Any]] = field(default_factory=list)
    law: LawFit | None = None
    predictions: list[dict[str, Any]] = field(default_factory=list)
    comparison: dict[str, Any] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    wall_s: float = 0.0


def share_recipe(p: float) -> Recipe:
    """The JEPA recipe with a share `p` of good pairs: jepa-good at 1, jepa-bad at 0, jepa-mix:p between."""
    if p == 1:
        return Recipe("jepa", ViewMode("good", 1.0))
    if p == 0:
        return Recipe("jepa", ViewMode("bad", 0.0))
    return Recipe("jepa", ViewMode("mix", p))


def check_grid(config: ScalingConfig) -> None:
    """UserError for a grid the law cannot be fitted or tested on."""
    shares = [*config.fit_shares, *config.heldout_shares]
    if any(not 0 <= p <= 1 for p in shares):
        raise UserError(f"--shares: every share must be in [0, 1], got {shares}")
    if len(set(config.fit_shares)) < 2 or len(set(config.examples)) < 3:
        raise UserError("--shares: need >= 2 fit shares and >= 3 example counts to fit the law (4 parameters)")
    if set(config.fit_shares) & set(config.heldout_shares) or not config.heldout_shares:
        raise UserError("--shares: held-out shares must be new (not in the fit grid) and at least one")
    if config.seeds[0] == config.seeds[1]:
        raise UserError("--run-seeds: the rerun needs a second, different seed")


def misalignment(score: float, higher_is_better: bool) -> float:
    """1 - score for a higher-is-better metric (kNN overlap, CKA in [0, 1]); the score itself otherwise."""
    return 1.0 - score if higher_is_better else score


def _train_share(
    corpus: CaptionCorpus, config: ScalingConfig, scorer: SnapshotScorer, p: float, seed: int, role: str,
    result: ScalingResult, log: Callable[[str], None],
) -> None:
    recipe = share_recipe(p)
    cfg = run_config(config.train, recipe, seed, list(config.examples))
    last = max(config.examples)

    def snapshot(s: TrainResult) -> None:
        (record,) = scorer(s, cfg, recipe, final=s.examples_seen >= last, extra={"role": role})
        m = misalignment(record.score, record.metric.higher_is_better)
        result.points.append({"role": role, "p_good": p, "seed": seed, "examples": s.examples_seen,
                              "score": record.score, "misalignment": m})
        log(f"  {role} P={p:g} s{seed} n={s.examples_seen:,}: misalignment {m:.4f}")

    try:
        train(corpus, cfg, on_checkpoint=snapshot)
    except ValueError as exc:
        raise UserError(f"--corpus {corpus.name}: {exc}") from exc


def compare_with_reruns(points: Sequence[dict[str, Any]], law: LawFit, seeds: tuple[int, int]) -> dict[str, Any]:
    """Law error vs rerun error on the held-out points measured with both seeds (module docstring)."""
    held = {(q["p_good"], q["examples"], q["seed"]): q["misalignment"] for q in points if q["role"] == "heldout"}
    keys = sorted({(p, n) for p, n, _ in held if (p, n, seeds[0]) in held and (p, n, seeds[1]) in held})
    if not keys:
        return {"pairs": 0}
    m0 = np.array([held[(p, n, seeds[0])] for p, n in keys])
    m1 = np.array([held[(p, n, seeds[1])] for p, n in keys])
    pred = law.predict(np.array([p for p, _ in keys]), np.array([n for _, n in keys], dtype=float))
    law_rmse = float(np.sqrt(np.mean(np.concatenate([pred - m0, pred - m1]) ** 2)))
    rerun_rmse = float(np.sqrt(np.mean((m1 - m0) ** 2)))
    fit = [q["misalignment"] for q in points if q["role"] == "fit"]
    constant = float(np.mean(fit)) if fit else math.nan
    constant_rmse = float(np.sqrt(np.mean(np.concatenate([constant - m0, constant - m1]) ** 2)))
    return {
        "pairs": len(keys), "law_rmse": law_rmse, "rerun_rmse": rerun_rmse,
        "law_over_rerun": law_rmse / rerun_rmse if rerun_rmse > 0 else math.inf,
        "law_bias": float(np.mean(np.concatenate([pred - m0, pred - m1]))),
        "as_accurate_as_a_rerun": law_rmse <= rerun_rmse,
        "constant_rmse": constant_rmse,
        "beats_the_constant": law_rmse < constant_rmse,
    }


def run_scaling(
    corpus: CaptionCorpus,
    config: ScalingConfig,
    *,
    store: FeatureStore,
    home: Path,
    log: Callable[[str], None] = lambda line: None,
) -> ScalingResult:
    """Fit, predict (written first), train the held-out runs, compare; write the summary and plot."""
    t0 = time.perf_counter()
    check_grid(config)
    check_no_overlap(corpus, [config.setting])
    check_report_folder(config.report, config.out)
    scorer = SnapshotScorer(corpus, [config.setting], [config.vision], store, home, config.out, TAG, "scaling",
                            device=config.device, limit=config.limit)
    result = ScalingResult()
    for p in config.fit_shares:
        _train_share(corpus, config, scorer, p, config.seeds[0], "fit", result, log)
    fit = [q for q in result.points if q["role"] == "fit"]
    law = fit_law(np.array([q["p_good"] for q in fit]), np.array([q["examples"] for q in fit], dtype=float),
                  np.array([q["misalignment"] for q in fit]))
    result.law = law
    log(f"law: {FORMULA}; E={law.e:.4f} A={law.a:.4g} alpha={law.alpha:.4f} beta={law.beta:.4g} "
        f"(fit RMSE {law.rmse:.4f} on {law.n_points} points)")
    targets = [(p, n) for p in config.heldout_shares for n in config.examples]
    predicted = law.predict(np.array([p for p, _ in targets]), np.array([n for _, n in targets], dtype=float))
    result.predictions = [{"p_good": p, "examples": n, "predicted_misalignment": float(v)}
                          for (p, n), v in zip(targets, predicted, strict=True)]
    path = atomic_write_text(config.report / PREDICTIONS_FILE, json.dumps({
        "written_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "law": law.as_dict(), "predictions": result.predictions,
        "fit_points": fit, "setting": config.setting.id, "vision": config.vision.name,
    }, indent=1) + "\n")
    result.files.append(str(path))
    log(f"predictions for {len(targets)} held-out points written to {path} before training them")
    for p in config.heldout_shares:
        for seed in config.seeds:
            _train_share(corpus, config, scorer, p, seed, "heldout", result, log)
    result.comparison = compare_with_reruns(result.points, law, config.seeds)
    plot = contained(config.report, "plots", f"{config.setting.id}.{config.vision.name.replace('/', '--')}.png")
    label = f"misalignment ({'1 - ' if scorer.records[0].metric.higher_is_better else ''}{scorer.records[0].metric.id})"
    save_figure(law_figure(result.points, law.predict, label), plot)
    result.files.append(str(plot))
    result.wall_s = round(time.perf_counter() - t0, 1)
    summary = {
        "corpus": {"name": corpus.name, "revision": corpus.revision, "fingerprint": corpus.fingerprint},
        "setting": config.setting.id, "vision": config.vision.name, "size": config.train.size,
        "batch_size": config.train.batch_size, "fit_shares": list(config.fit_shares),
        "heldout_shares": list(config.heldout_shares), "examples": list(config.examples),
        "seeds": list(config.seeds), "limit": config.limit, "law": law.as_dict(),
        "comparison": result.comparison, "points": result.points, "predictions": result.predictions,
        "records": len(scorer.paths), "wall_s": result.wall_s,
    }
    result.files.append(str(atomic_write_text(config.report / SUMMARY_FILE, json.dumps(summary, indent=1) + "\n")))
    return result
