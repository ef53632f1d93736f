"""`platobench jepa scaling`: fit the scaling law on trained encoders, then predict new runs before training.

1. Fit runs: one JEPA per share of good views P in the fit grid (mix:P; P = 1 is jepa-good, P = 0
   jepa-bad) and per fit seed (at least two), snapshots at the example counts; each snapshot is scored
   against the vision model under one setting, and misalignment is 1 - score (a higher-is-better metric) or
   the score (lower).
2. The law of `scaling_law` is fitted to those points, and its predictions for the held-out runs (new
   shares, the same example counts) are written to `report/jepa-scaling-predictions.json` with a UTC
   timestamp *before* any held-out run starts.
3. Held-out runs: each new share is trained with two held-out seeds, neither of them a fit seed (a run
   shares its initialisation and data order with every run of its seed, so judging the law on a fit seed
   flatters it). The test (Balestriero & LeCun 2026): how well each predictor predicts a held-out run,
   root-mean-square over (P, n, seed):
   - the law, fitted on F fit seeds;
   - a rerun: the other held-out seed's run at the same (P, n). Its error carries the noise of two runs
     where the law's carries one run's and the fit's, so it is also stated on the law's footing: the error of
     the mean of F reruns, rerun RMSE x sqrt((1 + 1 / F) / 2) (for run noise of variance s^2, one rerun errs
     by 2 s^2, the mean of F reruns by (1 + 1 / F) s^2), and the verdict reads that one;
   - a constant: the mean misalignment of the fit runs; a law that does not beat it has learnt nothing about
     P or n that the held-out runs show (as when training barely moves the metric).
   `noise_floor` = rerun RMSE / sqrt(2) estimates one run's own noise s, which no predictor beats.

The report (jepa-scaling.json, the plot) is written from the run's records alone (`write_report`), which
are committed beside it, so `platobench reports` rebuilds it.
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
    ResultRecord,
    Setting,
    UserError,
    atomic_write_text,
    contained,
    load_records,
    round_floats,
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
    """Fit shares x `examples` x `fit_seeds`, then held-out shares x `examples` x both `heldout_seeds`, each
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
    fit_seeds: tuple[int, ...] = (0, 1)
    heldout_seeds: tuple[int, int] = (2, 3)
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
    if len(set(config.fit_seeds)) < 2 or len(set(config.fit_seeds)) != len(config.fit_seeds):
        raise UserError(f"--fit-seeds: need >= 2 distinct seeds (the law is judged against run noise), got "
                        f"{list(config.fit_seeds)}")
    if len(set(config.heldout_seeds)) != 2:
        raise UserError(f"--heldout-seeds: two distinct seeds (a new run and its rerun), got {list(config.heldout_seeds)}")
    if set(config.heldout_seeds) & set(config.fit_seeds):
        raise UserError(f"--heldout-seeds {list(config.heldout_seeds)}: a held-out seed may not be a fit seed "
                        f"({list(config.fit_seeds)}): a run shares its initialisation with its seed's fit runs")


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


def compare_with_reruns(points: Sequence[dict[str, Any]], law: LawFit, seeds: tuple[int, int],
                        fit_seeds: int) -> dict[str, Any]:
    """Law, rerun and constant errors on the held-out points measured with both held-out `seeds` (module
    docstring); `fit_seeds`: how many seeds the law was fitted on (F)."""
    held = {(q["p_good"], q["examples"], q["seed"]): q["misalignment"] for q in points if q["role"] == "heldout"}
    keys = sorted({(p, n) for p, n, _ in held if (p, n, seeds[0]) in held and (p, n, seeds[1]) in held})
    if not keys:
        return {"pairs": 0}
    m0 = np.array([held[(p, n, seeds[0])] for p, n in keys])
    m1 = np.array([held[(p, n, seeds[1])] for p, n in keys])
    pred = law.predict(np.array([p for p, _ in keys]), np.array([n for _, n in keys], dtype=float))
    law_rmse = float(np.sqrt(np.mean(np.concatenate([pred - m0, pred - m1]) ** 2)))
    rerun_rmse = float(np.sqrt(np.mean((m1 - m0) ** 2)))
    footing = math.sqrt((1 + 1 / fit_seeds) / 2)
    rerun_equal = rerun_rmse * footing
    fit = [q["misalignment"] for q in points if q["role"] == "fit"]
    constant = float(np.mean(fit)) if fit else math.nan
    constant_rmse = float(np.sqrt(np.mean(np.concatenate([constant - m0, constant - m1]) ** 2)))
    return {
        "pairs": len(keys), "law_rmse": law_rmse, "rerun_rmse": rerun_rmse,
        "fit_seeds": fit_seeds, "rerun_rmse_equal_footing": rerun_equal,
        "noise_floor": rerun_rmse / math.sqrt(2),
        "law_over_rerun": law_rmse / rerun_equal if rerun_equal > 0 else math.inf,
        "law_bias": float(np.mean(np.concatenate([pred - m0, pred - m1]))),
        "as_accurate_as_a_rerun": law_rmse <= rerun_equal,
        "constant_rmse": constant_rmse,
        "beats_the_constant": law_rmse < constant_rmse,
    }


ROLES = ("fit", "heldout")


def points_of(records: Sequence[ResultRecord]) -> list[dict[str, Any]]:
    """The measured points of a scaling run's records (details `jepa_scaling`), in one order whatever the
    order the records were written or read in: fit before held-out, then share, seed and examples."""
    points = []
    for r in records:
        info = r.details.get(TAG)
        if not isinstance(info, dict):
            continue
        points.append({"role": info["role"], "p_good": info["p_good"], "seed": info["seed"],
                       "examples": info["examples_seen"], "score": r.score,
                       "misalignment": misalignment(r.score, r.metric.higher_is_better)})
    return sorted(points, key=lambda q: (ROLES.index(q["role"]), q["p_good"], q["seed"], q["examples"]))


def fit_points(points: Sequence[dict[str, Any]]) -> LawFit:
    """The law fitted to the fit points of `points` (in `points_of`'s order)."""
    fit = [q for q in points if q["role"] == "fit"]
    return fit_law(np.array([q["p_good"] for q in fit]), np.array([q["examples"] for q in fit], dtype=float),
                   np.array([q["misalignment"] for q in fit]))


def predictions(law: LawFit, shares: Sequence[float], examples: Sequence[int]) -> list[dict[str, Any]]:
    """The law's misalignment at every (share, examples) of the held-out grid."""
    targets = [(p, n) for p in shares for n in examples]
    predicted = law.predict(np.array([p for p, _ in targets]), np.array([n for _, n in targets], dtype=float))
    return [{"p_good": p, "examples": n, "predicted_misalignment": float(v)}
            for (p, n), v in zip(targets, predicted, strict=True)]


def write_report(records: Sequence[ResultRecord], folder: Path) -> tuple[dict[str, Any], list[str]]:
    """jepa-scaling.json and the law's plot, written from one scaling run's `records` alone under `folder`
    (the law is fitted again from the fit records: the same points in the same order give the same law);
    returns the summary and the paths written. UserError when the records hold no scaling run."""
    points = points_of(records)
    mine = [r for r in records if isinstance(r.details.get(TAG), dict)]
    if not points or not any(q["role"] == "fit" for q in points):
        raise UserError("no jepa scaling fit records (records whose details hold jepa_scaling with role fit)")
    first, info = mine[0], mine[0].details[TAG]
    law = fit_points(points)
    shares = {role: sorted({q["p_good"] for q in points if q["role"] == role}) for role in ROLES}
    seeds = {role: sorted({q["seed"] for q in points if q["role"] == role}) for role in ROLES}
    examples = sorted({q["examples"] for q in points})
    comparison = (compare_with_reruns(points, law, (seeds["heldout"][0], seeds["heldout"][1]), len(seeds["fit"]))
                  if len(seeds["heldout"]) == 2 else {"pairs": 0})
    plot = contained(folder, "plots", f"{first.setting}.{first.y.name.replace('/', '--')}.png")
    label = f"misalignment ({'1 - ' if first.metric.higher_is_better else ''}{first.metric.id})"
    save_figure(law_figure(points, law.predict, label), plot)
    corpus = {k: info["corpus"][k] for k in ("name", "revision", "fingerprint")}
    summary = {
        "corpus": corpus, "setting": first.setting, "vision": first.y.name, "size": info["size"],
        "batch_size": info["batch_size"], "fit_shares": shares["fit"], "heldout_shares": shares["heldout"],
        "examples": examples, "fit_seeds": seeds["fit"], "heldout_seeds": seeds["heldout"],
        "limit": first.provenance.limit, "law": round_floats(law.as_dict()), "comparison": round_floats(comparison),
        "points": points, "predictions": round_floats(predictions(law, shares["heldout"], examples)), "records": len(mine),
    }
    summary_path = atomic_write_text(folder / SUMMARY_FILE, json.dumps(summary, indent=1) + "\n")
    return summary, [str(summary_path), str(folder / plot.relative_to(folder.resolve()))]


def rebuild(results: Path, reports: Path, out: Path) -> list[str]:
    """`platobench reports`: jepa-scaling.json and its plot again under `out`/jepa-scaling from the records
    committed under `reports`/jepa-scaling/records (`results` is not read); the predictions file, written
    before the held-out runs trained, is evidence of that order and is not rewritten."""
    folder = reports / "jepa-scaling" / "records"
    records = load_records(folder) if folder.is_dir() else []
    if not records:
        raise UserError(f"no jepa scaling records under {folder}: run `platobench jepa scaling --out {folder}` first")
    return write_report(records, out / "jepa-scaling")[1]


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
        for seed in config.fit_seeds:
            _train_share(corpus, config, scorer, p, seed, "fit", result, log)
    law = fit_points(points_of(scorer.records))
    log(f"law: {FORMULA}; E={law.e:.4f} A={law.a:.4g} alpha={law.alpha:.4f} beta={law.beta:.4g} "
        f"(fit RMSE {law.rmse:.4f} on {law.n_points} points)")
    ahead = predictions(law, config.heldout_shares, config.examples)
    fit = [q for q in points_of(scorer.records) if q["role"] == "fit"]
    path = atomic_write_text(config.report / PREDICTIONS_FILE, json.dumps({
        "written_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "law": law.as_dict(), "predictions": ahead,
        "fit_points": fit, "setting": config.setting.id, "vision": config.vision.name,
    }, indent=1) + "\n")
    result.files.append(str(path))
    log(f"predictions for {len(ahead)} held-out points written to {path} before training them")
    for p in config.heldout_shares:
        for seed in config.heldout_seeds:
            _train_share(corpus, config, scorer, p, seed, "heldout", result, log)
    summary, files = write_report(scorer.records, config.report)
    result.law, result.predictions, result.comparison = law, summary["predictions"], summary["comparison"]
    result.points = summary["points"]
    result.files += files
    result.wall_s = round(time.perf_counter() - t0, 1)
    return result
