"""Good views versus bad views, next to the LLMs: `platobench jepa compare`.

Balestriero & LeCun ("Proving and Improving the Platonic Representation Hypothesis with JEPAs", 2026)
claim that a text JEPA trained on good views (two captions of one image) aligns with a vision model
better than one trained on bad views (two corruptions of one caption), and better than next-token
prediction. `compare` measures that claim on one paired dataset:

1. for each seed, train a `good` and a `bad` text JEPA with identical settings (size, steps, batch,
   seed, held-out split by sample-id hash: `platobench.experiments.jepa.train.split`) and export both;
2. build the held-out subset of the dataset (`platobench.data.subset.paired_subset`, named
   "<dataset>:heldout<fraction>", so cache keys and record fingerprints are its own);
3. extract the JEPAs, the vision model and the LLMs on that subset through the features cache;
4. score every (text model, vision model) pair under copies of the paired settings renamed
   "jepa-compare-<id without 'demo-'>" and write one result record each;
5. summarise good minus bad per setting (mean, sample std, per seed) next to the LLMs' scores.

The settings' `dataset` field keeps the parent dataset's name (the subset is not a catalogue name), and
the subset object is passed to the scorer directly; records carry the subset's own name, n and
fingerprint, plus `details["jepa_compare"]` (parent dataset, held-out fraction, views, seed, steps).
`platobench check` therefore cannot rebuild these samples and lists such records as not recomputed.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from platobench.api import (
    FeatureEntry,
    FeatureStore,
    JobInputs,
    ModelSpec,
    PairedDataset,
    ResultRecord,
    Setting,
    SideInputs,
    UserError,
    extract,
    paired_subset,
    read_zoo_file,
    score_job,
    scorer_for,
    write_record,
)
from platobench.experiments.jepa.checkpoint import model_name
from platobench.experiments.jepa.export import export_run
from platobench.experiments.jepa.train import CaptionCorpus, TrainConfig, split, train
from platobench.experiments.jepa.views import parse_views

VIEWS = ("good", "bad")
SETTING_PREFIX = "jepa-compare-"


@dataclass(frozen=True)
class CompareConfig:
    """What to compare: `seeds` seeds of good and bad JEPAs trained with `train` (its `views` and `seed`
    are set per run), measured against `vision` next to `llms` under `settings` (paired kind)."""

    train: TrainConfig
    seeds: Sequence[int]
    vision: ModelSpec
    llms: Sequence[ModelSpec]
    settings: Sequence[Setting]
    out: Path
    device: str = "cpu"
    batch_size: int = 32
    workers: int = 2


@dataclass
class CompareResult:
    """Training summaries (one per JEPA, as `export_run` returns them), written record paths, the
    held-out subset, and the per-setting summary of `summarize`."""

    heldout: PairedDataset
    runs: list[dict[str, Any]] = field(default_factory=list)
    records: list[ResultRecord] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    wall_s: float = 0.0


def compare_setting(setting: Setting) -> Setting:
    """The compare copy of a paired setting: id "jepa-compare-<id without a 'demo-' prefix>"."""
    if setting.kind != "paired":
        raise UserError(
            f"--settings: {setting.id!r} is a {setting.kind} setting; compare needs paired settings"
        )
    return setting.model_copy(update={"id": SETTING_PREFIX + setting.id.removeprefix("demo-")})


def heldout_subset(dataset: PairedDataset, fraction: float) -> PairedDataset:
    """The held-out samples of `dataset` that the JEPAs never train on (same rule as `split`: two
    distinct captions and sha256(id) below `fraction`), in dataset order."""
    _, heldout = split(CaptionCorpus.from_dataset(dataset), fraction)
    if len(heldout) < 12:
        raise UserError(
            f"--dataset {dataset.name}: only {len(heldout)} held-out samples with two distinct captions; "
            "need at least 12 (mutual kNN uses k=10 neighbours): use more data or a larger --heldout"
        )
    return paired_subset(dataset, heldout, tag=f"heldout{fraction:g}")


def _spread(values: list[float]) -> dict[str, Any]:
    """{mean, std (sample, ddof 1; None below two values), per_seed}; mean None when empty."""
    mean = statistics.fmean(values) if values else None
    std = statistics.stdev(values) if len(values) > 1 else None
    return {"mean": mean, "std": std, "per_seed": values}


def summarize(records: Sequence[ResultRecord], seeds: Sequence[int]) -> dict[str, Any]:
    """Per setting: the metric, its direction, good and bad scores per seed with mean and sample std
    (ddof 1) over seeds, good minus bad per seed with its mean and std, and every other language model's
    score (the LLMs). A seed whose good or bad record is missing is left out of the differences."""
    out: dict[str, Any] = {}
    for setting in dict.fromkeys(r.setting for r in records):
        rs = [r for r in records if r.setting == setting]
        by_run = {
            (r.details["jepa_compare"]["views"], r.details["jepa_compare"]["seed"]): r.score
            for r in rs
            if "jepa_compare" in r.details
        }
        paired = [s for s in seeds if ("good", s) in by_run and ("bad", s) in by_run]
        out[setting] = {
            "metric": rs[0].metric.id,
            "higher_is_better": rs[0].metric.higher_is_better,
            "vision": rs[0].y.name,
            "seeds": paired,
            "good": _spread([by_run[("good", s)] for s in paired]),
            "bad": _spread([by_run[("bad", s)] for s in paired]),
            "good_minus_bad": _spread([by_run[("good", s)] - by_run[("bad", s)] for s in paired]),
            "others": {r.x.name: r.score for r in rs if "jepa_compare" not in r.details},
            "chance": rs[0].chance,
        }
    return out


def format_summary(summary: dict[str, Any]) -> str:
    """A markdown table: one row per setting with good, bad, good - bad (mean ± std over seeds, per
    seed) and the other language models' scores."""
    others = list(dict.fromkeys(name for s in summary.values() for name in s["others"]))
    head = ["setting", "metric", "good", "bad", "good - bad", "per seed (good - bad)", *others]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def pm(x: dict[str, Any]) -> str:
        if x["mean"] is None:
            return "missing"
        return f"{x['mean']:.4f} ± {x['std']:.4f}" if x["std"] is not None else f"{x['mean']:.4f}"

    for setting, s in summary.items():
        arrow = "↑" if s["higher_is_better"] else "↓"
        per_seed = ", ".join(f"{v:+.4f}" for v in s["good_minus_bad"]["per_seed"])
        row = [
            setting,
            f"{s['metric']} {arrow}",
            pm(s["good"]),
            pm(s["bad"]),
            pm(s["good_minus_bad"]),
            per_seed,
        ]
        row += [f"{s['others'][o]:.4f}" if o in s["others"] else "missing" for o in others]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


class _Features:
    """Extract each (model, prompt) once on the held-out subset, through the cache."""

    def __init__(self, dataset: PairedDataset, store: FeatureStore, config: CompareConfig, home: Path | None):
        self.dataset, self.store, self.config, self.home = dataset, store, config, home
        self._entries: dict[tuple[str, str], FeatureEntry] = {}

    def __call__(self, spec: ModelSpec, prompt: str) -> FeatureEntry:
        prompt = "image" if spec.modality == "vision" else prompt
        if (spec.name, prompt) not in self._entries:
            entry, _ = extract(
                spec,
                self.dataset,
                store=self.store,
                prompt=prompt,
                device=self.config.device,
                batch_size=self.config.batch_size,
                num_workers=self.config.workers,
                progress=False,
                home=self.home,
            )
            self._entries[(spec.name, prompt)] = entry
        return self._entries[(spec.name, prompt)]


def _score(
    setting: Setting,
    language: ModelSpec,
    vision: ModelSpec,
    features: _Features,
    extra: dict[str, Any] | None,
) -> ResultRecord:
    """The record of one pair on the held-out subset (`score_job`); a JEPA's carries `details.jepa_compare`."""
    prompt = f"caption:{setting.caption_index}"
    ds = features.dataset
    job_in = JobInputs(SideInputs(ds, prompt, None, prompt), SideInputs(ds, "image", None, "image"), ds, True, {})
    entries = (features(language, prompt), features(vision, "image"))
    return score_job(setting, language, vision, entries, job_in, scorer=scorer_for(setting.kind),
                     details=None if extra is None else {"jepa_compare": extra})


def _progress_line(name: str, line: dict[str, float]) -> str:
    return (
        f"    {name} step {line['step']}: loss {line['loss']:.4f}, held-out loss {line['heldout_loss']:.4f}, "
        f"effective rank {line['effective_rank']:.1f}"
    )


def run_compare(
    dataset: PairedDataset,
    config: CompareConfig,
    *,
    store: FeatureStore,
    home: Path,
    log: Callable[[str], None] = lambda line: None,
) -> CompareResult:
    """Train, extract, score and write as described in the module docstring. `home` is the cache root
    (checkpoints go to home/jepa/compare/<model name after '/'>). Training failures (too few samples)
    raise UserError naming --dataset."""
    t0 = time.perf_counter()
    settings = [compare_setting(s) for s in config.settings]
    corpus = CaptionCorpus.from_dataset(dataset)
    heldout = heldout_subset(dataset, config.train.heldout_fraction)
    result = CompareResult(heldout=heldout)
    log(
        f"{dataset.name}: {len(heldout)} held-out samples ({heldout.name}); "
        f"training {len(config.seeds)} seeds x good/bad"
    )
    jepas: list[tuple[ModelSpec, dict[str, Any]]] = []
    for seed in config.seeds:
        for views in VIEWS:
            cfg = replace(config.train, views=parse_views(views), seed=seed)
            name = model_name(cfg.size, views, dataset.name, seed, examples=cfg.steps * cfg.batch_size)
            start = time.perf_counter()
            try:
                trained = train(corpus, cfg, progress=lambda line, n=name: log(_progress_line(n, line)))
            except ValueError as exc:
                raise UserError(f"--dataset {dataset.name}: {exc}") from exc
            summary = export_run(
                trained,
                corpus,
                cfg,
                name=name,
                out_dir=home / "jepa" / "compare" / name.split("/", 1)[1],
                home=home,
            )
            summary["train_s"] = round(time.perf_counter() - start, 1)
            result.runs.append(summary)
            log(
                f"  trained {name}: held-out loss {summary['initial_loss']:.4f} -> "
                f"{summary['final_loss']:.4f}, "
                f"effective rank {summary['effective_rank']:.1f}, {summary['train_s']} s"
            )
            (spec,) = read_zoo_file(summary["zoo_entry"]).models
            jepas.append(
                (
                    spec,
                    {
                        "views": views,
                        "seed": seed,
                        "size": cfg.size,
                        "steps": cfg.steps,
                        "batch_size": cfg.batch_size,
                        "heldout_fraction": cfg.heldout_fraction,
                        "parent_dataset": {
                            "name": dataset.name,
                            "revision": dataset.revision,
                            "fingerprint": dataset.fingerprint,
                        },
                        "final_loss": summary["final_loss"],
                        "effective_rank": summary["effective_rank"],
                    },
                )
            )
    features = _Features(heldout, store, config, home)
    language: list[tuple[ModelSpec, dict[str, Any] | None]] = jepas + [(s, None) for s in config.llms]
    for setting in settings:
        for spec, extra in language:
            record = _score(setting, spec, config.vision, features, extra)
            result.records.append(record)
            result.paths.append(str(write_record(config.out, record)))
        log(f"  scored {setting.id}: {len(language)} language models x {config.vision.name}")
    result.summary = summarize(result.records, list(config.seeds))
    result.wall_s = round(time.perf_counter() - t0, 1)
    return result
