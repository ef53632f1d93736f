"""Score training snapshots against vision models: export, extract through the cache, score, write records.

Shared by `jepa curve` and `jepa scaling`. A snapshot (a `TrainResult` handed to `train`'s checkpoint
callback) is exported as a checkpoint folder with its zoo entry, loaded through the zoo like any model
(`text_jepa`/hf_text or `causal_lm`/hf_causal), extracted on every setting's inputs and scored by
`score_job` under each setting against each vision model. The snapshot's folder is deleted after scoring
unless it is to be kept (intermediate checkpoints of a tiny run weigh ~17 MB each); the records keep what
identifies it (`details[<tag>]`: recipe, seed, examples seen, training data and losses).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from platobench.api import (
    FeatureEntry,
    FeatureStore,
    ModelSpec,
    ResultRecord,
    Setting,
    SideInputs,
    UserError,
    extract,
    job_inputs,
    read_zoo_file,
    score_job,
    scorer_for,
    write_record,
)
from platobench.experiments.jepa.checkpoint import model_name
from platobench.experiments.jepa.export import export_run
from platobench.experiments.jepa.recipes import Recipe
from platobench.experiments.jepa.sizes import SIZES
from platobench.experiments.jepa.train import CaptionCorpus, TrainConfig, TrainResult


@contextmanager
def quiet_transformers() -> Iterator[None]:
    """Silence transformers' warnings and progress bars while a snapshot is saved and loaded: a snapshot of
    a next-token run loads its base model from an LM-head folder, and the load report (LM head unused,
    BERT's unused pooler initialised) and the shard-writing bar would repeat at every snapshot."""
    from transformers.utils import logging as hf_logging

    verbosity, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()


def experiment_setting(setting: Setting, prefix: str, *, keep_null: bool) -> Setting:
    """The experiment's copy of `setting`: id "<prefix><id without 'demo-'>"; a paired setting loses its
    permutation null and bootstrap interval unless `keep_null` (the spread over seeds is the experiment's
    uncertainty, and a null per checkpoint would cost ~20x the scoring time)."""
    update: dict[str, Any] = {"id": prefix + setting.id.removeprefix("demo-")}
    if setting.kind == "paired" and not keep_null:
        update.update(n_perm=0, n_ci=0)
    return setting.model_copy(update=update)


@dataclass
class SnapshotScorer:
    """Scores snapshots of runs on `corpus` under `settings` x `vision`; writes records under `out`.

    `home`: cache root (snapshots go to home/jepa/<folder>/<model name after '/'>); `tag`: the key of the
    records' `details` entry ("jepa_curve" or "jepa_scaling"); `keep`: keep every snapshot's folder (the
    last snapshot of each run is always kept); `limit`: score on the first `limit` samples (images per
    class) of each setting's data, a quick test (`run --limit`), stated in the records' `provenance.limit`."""

    corpus: CaptionCorpus
    settings: Sequence[Setting]
    vision: Sequence[ModelSpec]
    store: FeatureStore
    home: Path
    out: Path
    tag: str
    folder: str
    device: str = "cpu"
    batch_size: int = 64
    workers: int = 2
    keep: bool = False
    limit: int | None = None
    records: list[ResultRecord] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    _inputs: dict[Any, Any] = field(default_factory=dict)
    _vision_entries: dict[tuple[str, str, str], FeatureEntry] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for setting in self.settings:  # every dataset is built (and a missing one reported) before training
            job_inputs(setting, self.limit, self._inputs)

    def _entry(self, spec: ModelSpec, side: SideInputs) -> FeatureEntry:
        entry, _ = extract(
            spec, side.data, store=self.store, prompt=side.prompt, texts=side.texts, device=self.device,
            batch_size=self.batch_size, num_workers=self.workers, progress=False, home=self.home,
        )
        return entry

    def _snapshot_entry(self, spec: ModelSpec, side: SideInputs) -> FeatureEntry:
        """`_entry` of a snapshot, under `quiet_transformers`."""
        with quiet_transformers():
            return self._entry(spec, side)

    def _vision_entry(self, spec: ModelSpec, side: SideInputs) -> FeatureEntry:
        k = (spec.name, side.data.fingerprint, side.prompt)
        if k not in self._vision_entries:
            self._vision_entries[k] = self._entry(spec, side)
        return self._vision_entries[k]

    def __call__(
        self, snapshot: TrainResult, config: TrainConfig, recipe: Recipe, *, final: bool, extra: dict[str, Any]
    ) -> list[ResultRecord]:
        """Export `snapshot` (trained with `config`), score it under every setting against every vision
        model, write the records and return them. `extra` is stored under `details[tag]` with the run's
        identity (recipe, p_good, seed, examples_seen, size, batch, lr, corpus, held-out loss, effective
        rank). The folder is removed afterwards unless `final` or `keep`."""
        name = model_name(config.size, config.views.label, self.corpus.name, config.seed,
                          objective=config.objective, examples=snapshot.examples_seen)
        out_dir = self.home / "jepa" / self.folder / name.split("/", 1)[1]
        with quiet_transformers():
            summary = export_run(snapshot, self.corpus, config, name=name, out_dir=out_dir, home=self.home)
        (spec,) = read_zoo_file(Path(summary["zoo_entry"])).models
        info = {
            "recipe": recipe.label,
            "objective": recipe.objective,
            "p_good": recipe.p_good,
            "seed": config.seed,
            "examples_seen": snapshot.examples_seen,
            "size": config.size,
            "batch_size": config.batch_size,
            "lr": config.lr or SIZES[config.size].lr,
            "corpus": {"name": self.corpus.name, "revision": self.corpus.revision,
                       "fingerprint": self.corpus.fingerprint, "train_samples": snapshot.train_samples},
            "heldout_loss": snapshot.final_loss,
            "effective_rank": snapshot.effective_rank,
            **extra,
        }
        try:
            written = self.score_model(spec, {self.tag: info}, snapshot=True)
        except UserError as exc:
            raise UserError(f"scoring {name}: {exc}") from exc
        finally:
            if not (final or self.keep):
                shutil.rmtree(out_dir, ignore_errors=True)
        return written

    def score_model(self, spec: ModelSpec, extra: dict[str, Any], *, snapshot: bool = False) -> list[ResultRecord]:
        """Score text model `spec` under every setting against every vision model; write, keep and return
        the records (`extra` merged into each record's details). `snapshot`: silence its load report."""
        written: list[ResultRecord] = []
        for setting in self.settings:
            job_in = job_inputs(setting, self.limit, self._inputs)
            text_entry = self._snapshot_entry(spec, job_in.x) if snapshot else self._entry(spec, job_in.x)
            for vision in self.vision:
                record = score_job(setting, spec, vision, (text_entry, self._vision_entry(vision, job_in.y)),
                                   job_in, scorer=scorer_for(setting.kind), details=extra,
                                   limit=self.limit)
                self.paths.append(str(write_record(self.out, record)))
                written.append(record)
        self.records.extend(written)
        return written
