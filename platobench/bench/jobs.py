"""One job: a model pair scored under one setting from its two feature entries -> one result record.

`score_job` is the single place where a job is scored; `platobench run` (and `submit`, through the
runner), `platobench check` and `platobench jepa compare` all call it. It checks that the entries hold
the same samples (paired settings), calls the setting kind's scorer with the entries' layers, digests
and model revisions and the job's inputs, and states the setting in `provenance.setting_config`. What a
scorer does itself (constant-layer exclusion, layer grid, selection, null, interval) is the scorer's.

Each setting kind's scorer is named by its protocol (`platobench.bench.protocols`) and imported when first
asked for (`protocols.scorer_for`): scorers load torch, which building the command-line parser does not need.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import torch

    from platobench.bench.settings import Setting
    from platobench.features.store import FeatureEntry
    from platobench.results import DatasetRef, ResultRecord
    from platobench.zoo import ModelSpec

LayerTransform = Callable[[Sequence["torch.Tensor"]], Sequence["torch.Tensor"]]


class Scorer(Protocol):
    """Scores one pair under one setting. `x` / `y`: the pair's two models (any modalities);
    `x_layers` / `y_layers`: their per-layer features [rows, D_l]; `dataset`: the samples' reference;
    `inputs`: the two feature-entry digests; `revisions`: the models' resolved revisions (None: the spec's);
    `reads`: what each side read ("image", "caption:<i>", "prompts"); `kwargs`: the kind's own inputs
    (zero-shot: labels and prompts)."""

    def __call__(
        self,
        setting: Setting,
        x: ModelSpec,
        y: ModelSpec,
        x_layers: Sequence[torch.Tensor],
        y_layers: Sequence[torch.Tensor],
        dataset: DatasetRef,
        *,
        inputs: dict[str, Any],
        revisions: tuple[str | None, str | None] = (None, None),
        reads: tuple[str, str] = ("caption:0", "image"),
        **kwargs: Any,
    ) -> ResultRecord: ...


@dataclass(frozen=True)
class SideInputs:
    """What one side of a job extracts: `texts` (None: what `prompt` selects: "image" or "caption:<i>") of
    `data`; `input` is what the record says it read ("image", "caption:<i>", or "prompts" for class
    prompts)."""

    data: Any
    prompt: str
    texts: list[str] | None
    input: str


@dataclass(frozen=True)
class JobInputs:
    """What a job extracts: `x` and `y`, one per side. `dataset`: the samples the record names.
    `paired`: the two entries hold the same samples row by row (checked). `scorer_kwargs`: extra keyword
    arguments of the kind's scorer."""

    x: SideInputs
    y: SideInputs
    dataset: Any
    paired: bool
    scorer_kwargs: dict[str, Any]

    def side(self, index: int) -> SideInputs:
        """Side `index` (0: x, 1: y)."""
        return (self.x, self.y)[index]

    @property
    def reads(self) -> tuple[str, str]:
        return self.x.input, self.y.input


def entry_digests(x: FeatureEntry, y: FeatureEntry) -> dict[str, str]:
    """The record's `provenance.inputs`: the digests of the two feature entries a job is scored from."""
    return {"x": x.digest, "y": y.digest}


def score_job(
    setting: Setting,
    x: ModelSpec,
    y: ModelSpec,
    entries: tuple[FeatureEntry, FeatureEntry],
    job_in: JobInputs,
    *,
    scorer: Scorer,
    transform: LayerTransform | None = None,
    details: dict[str, Any] | None = None,
    limit: int | None = None,
) -> ResultRecord:
    """The record of one job from its (x, y) feature entries. SampleMismatchError (a
    UserError) when a paired job's entries hold other samples. `scorer`: the setting kind's
    (`protocols.scorer_for`); `transform` maps each model's layer list before scoring (check's --perturb);
    the record's provenance gets the setting as run and `limit` (the run's --limit), its details `details`."""
    from platobench.features.store import check_same_samples
    from platobench.results import DatasetRef

    a, b = entries
    if job_in.paired:
        check_same_samples(a, b)
    layers_a, layers_b = a.cached_layers(), b.cached_layers()  # statistics saved beside each entry
    if transform is not None:
        layers_a, layers_b = transform(layers_a), transform(layers_b)
    ds = job_in.dataset
    record = scorer(
        setting, x, y, layers_a, layers_b,
        DatasetRef(name=ds.name, revision=ds.revision, n=len(ds), fingerprint=ds.fingerprint),
        inputs=entry_digests(a, b), revisions=(a.key["model_revision"], b.key["model_revision"]),
        reads=job_in.reads, **job_in.scorer_kwargs,
    )
    record.provenance.setting_config = setting.model_dump(mode="json")
    record.provenance.limit = limit
    record.details.update(details or {})
    return record
