"""One protocol per setting kind: what a setting of that kind must satisfy, what each side of a pair reads,
how its inputs are built (and memoised), what its statistics cost and which scorer writes its record.

`PROTOCOLS` (a `platobench.registry.Registry`) holds them by kind: "paired" (both sides read the same
samples; a registered metric over the layer grid, `bench.scoring`) and "zeroshot" (class prompts against
images matched without pairs, `bench.zeroshot_scoring`). The runner, `check` and settings validation
dispatch through it; a plugin registers a kind of its own with its `Protocol`.

Importing this module is light (the CLI's start-up validates settings through it): each protocol imports
its datasets, metrics and scorer when first used.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

from platobench.errors import UserError
from platobench.registry import Registry, resolve_target

if TYPE_CHECKING:
    from platobench.bench.cost import JobCost
    from platobench.bench.jobs import JobInputs, Scorer
    from platobench.bench.settings import Setting
    from platobench.zoo import ModelSpec


class Protocol(ABC):
    """A setting kind. `scorer`: the "module:function" of its `jobs.Scorer`."""

    kind: str
    scorer: str

    @abstractmethod
    def check(self, setting: Setting) -> None:
        """UserError when `setting` breaks the kind's rules (checked when a settings file is loaded)."""

    @abstractmethod
    def reads(self, setting: Setting, modalities: tuple[str, str], names: tuple[str, str]) -> tuple[str, str]:
        """What each side of a pair of `modalities` (models `names`) reads; UserError when one cannot."""

    def memo_key(self, setting: Setting, limit: int | None) -> tuple[Any, ...]:
        """Everything that changes what `build` returns."""
        return (self.kind, setting.dataset, limit)

    @abstractmethod
    def build(self, setting: Setting, limit: int | None) -> Any:
        """The data the setting's jobs read (memoised by the runner under `memo_key`)."""

    @abstractmethod
    def job_inputs(self, setting: Setting, built: Any, reads: tuple[str, str],
                   pair: tuple[ModelSpec, ModelSpec] | None) -> JobInputs:
        """One job's inputs from the memoised data."""

    @abstractmethod
    def cost(self, setting: Setting, label: str, inputs: JobInputs, shape: tuple[int, int],
             fixed: tuple[int, int] | None, widths: list[int]) -> JobCost:
        """The estimated cost of the job's statistics on a [Lx, Ly] layer grid (`fixed`: one selected cell)."""

    def load_scorer(self) -> Scorer:
        scorer: Scorer = resolve_target(self.scorer)
        return scorer


class PairedProtocol(Protocol):
    kind = "paired"
    scorer = "platobench.bench.scoring:score_paired"

    def check(self, setting: Setting) -> None:
        from platobench.bench.setting_rules import check_paired

        check_paired(setting)

    def reads(self, setting: Setting, modalities: tuple[str, str], names: tuple[str, str]) -> tuple[str, str]:
        from platobench.results.schema import input_modality

        reads = (setting.input_for(0, modalities[0]), setting.input_for(1, modalities[1]))
        wrong = [f"{n} ({m}) cannot read {r!r}" for n, m, r in zip(names, modalities, reads) if input_modality(r) != m]
        if wrong:
            raise UserError(f"setting {setting.id} gives {names[0]} x {names[1]} the inputs {list(reads)}: "
                            f"{'; '.join(wrong)} (a vision model reads 'image', a text model 'caption:<i>')")
        return reads

    def build(self, setting: Setting, limit: int | None) -> Any:
        from platobench.data import get_dataset
        from platobench.features.extract import note_limit

        data = get_dataset(setting.dataset, limit=limit)
        note_limit(limit, data)
        return data

    def job_inputs(self, setting: Setting, built: Any, reads: tuple[str, str],
                   pair: tuple[ModelSpec, ModelSpec] | None) -> JobInputs:
        """Both sides read `built`, each caption checked to exist for every sample (UserError naming the pair
        otherwise); on an ids-only dataset both sides must be `loader: features` entries; the setting must
        be able to score the samples `built` holds (`setting_rules.check_dataset_size`)."""
        from platobench.bench.jobs import JobInputs, SideInputs
        from platobench.bench.setting_rules import check_dataset_size
        from platobench.data.base import IdsDataset

        check_dataset_size(setting, len(built))
        names = side_names(pair)[1]
        if isinstance(built, IdsDataset):  # no images or captions here: only embeddings read by sample id
            models = [] if pair is None else [spec.name for spec in pair if spec.loader != "features"]
            if models:
                raise UserError(f"dataset {setting.dataset} holds sample ids only (precomputed embeddings): "
                                f"{' and '.join(models)} would have to read its inputs; only `loader: features` "
                                "zoo entries can be measured on it")
        else:
            for name, read in zip(names, reads):
                if read != "image":
                    try:
                        built.captions(int(read.split(":")[1]))
                    except UserError as exc:
                        raise UserError(f"setting {setting.id}: {name} of {names[0]} x {names[1]} reads {read!r}: "
                                        f"{exc}") from None
        x, y = (SideInputs(built, read, None, read) for read in reads)
        return JobInputs(x, y, built, True, {})

    def cost(self, setting: Setting, label: str, inputs: JobInputs, shape: tuple[int, int],
             fixed: tuple[int, int] | None, widths: list[int]) -> JobCost:
        from platobench.bench.cost import paired_cost
        from platobench.metrics.stats import interval_scheme

        cells, layers = (shape[0] * shape[1], shape[0] + shape[1]) if fixed is None else (1, 2)
        scheme = interval_scheme(setting.metric, setting.selection, len(inputs.dataset), setting.ci_fraction,
                                 setting.params)
        return paired_cost(label, setting.metric, len(inputs.dataset), cells, layers, max(widths, default=None),
                           setting.n_perm, setting.n_ci, setting.ci_fraction, scheme)


class ZeroshotProtocol(Protocol):
    kind = "zeroshot"
    scorer = "platobench.bench.zeroshot_scoring:score_zeroshot"

    def check(self, setting: Setting) -> None:
        from platobench.bench.setting_rules import check_zeroshot

        check_zeroshot(setting)

    def reads(self, setting: Setting, modalities: tuple[str, str], names: tuple[str, str]) -> tuple[str, str]:
        if modalities != ("text", "vision"):
            raise UserError(
                f"setting {setting.id} matches class prompts (read by a text model) to images (read by a vision "
                f"model): {names[0]} x {names[1]} is {modalities[0]} x {modalities[1]}; use a text x vision pair")
        return "prompts", "image"

    def memo_key(self, setting: Setting, limit: int | None) -> tuple[Any, ...]:
        return (*super().memo_key(setting, limit), tuple(sorted((o, repr(v)) for o, v in setting.options.items())))

    def build(self, setting: Setting, limit: int | None) -> Any:
        from platobench.bench.zeroshot_inputs import zeroshot_inputs

        return zeroshot_inputs(setting, limit)

    def job_inputs(self, setting: Setting, built: Any, reads: tuple[str, str],
                   pair: tuple[ModelSpec, ModelSpec] | None) -> JobInputs:
        from platobench.bench.jobs import JobInputs, SideInputs

        ds, prompts = built
        kwargs = {"labels": ds.labels, "prompts": prompts}
        text = SideInputs(prompts, prompts.prompt, prompts.texts, "prompts")
        return JobInputs(text, SideInputs(ds, "image", None, "image"), ds, False, kwargs)

    def cost(self, setting: Setting, label: str, inputs: JobInputs, shape: tuple[int, int],
             fixed: tuple[int, int] | None, widths: list[int]) -> JobCost:
        from platobench.bench.cost import zeroshot_cost
        from platobench.bench.zeroshot_inputs import ZeroshotOptions
        from platobench.metrics.matching import DEFAULT_RESTARTS

        opts = ZeroshotOptions.of(setting)
        cells = shape[0] * shape[1] if fixed is None else 1 + (fixed != (shape[0] - 1, shape[1] - 1))
        restarts = DEFAULT_RESTARTS[opts.solver] if opts.restarts is None else opts.restarts
        return zeroshot_cost(label, opts.solver, len(inputs.x.data.class_names), cells, len(opts.seeds), restarts)


#: Every setting kind's protocol (a plugin registers its own kind here).
PROTOCOLS: Registry[Protocol] = Registry("setting kind")
for _protocol in (PairedProtocol(), ZeroshotProtocol()):
    PROTOCOLS.register(_protocol.kind, _protocol)


def scorer_for(kind: str) -> Scorer:
    """The scorer of setting kind `kind` (imported on first use); UserError for a kind without one."""
    if kind not in PROTOCOLS:
        raise UserError(f"setting kind {kind!r} has no scorer (known: {', '.join(PROTOCOLS.names())})")
    return PROTOCOLS.get(kind).load_scorer()


def scorers() -> dict[str, Scorer]:
    """Every registered kind's scorer (imports them all)."""
    return {kind: protocol.load_scorer() for kind, protocol in PROTOCOLS.items()}


def protocol_for(kind: str) -> Protocol:
    """The protocol of setting kind `kind`; UserError naming the registered kinds for any other."""
    if kind not in PROTOCOLS:
        raise UserError(f"setting kind {kind!r} has no protocol (known: {', '.join(PROTOCOLS.names())})")
    return PROTOCOLS.get(kind)


def side_names(pair: tuple[ModelSpec, ModelSpec] | None) -> tuple[tuple[str, str], tuple[str, str]]:
    """((x modality, y modality), (x name, y name)) of `pair`; None stands for a text x vision pair."""
    if pair is None:
        return ("text", "vision"), ("the text model", "the vision model")
    return (pair[0].modality, pair[1].modality), (pair[0].name, pair[1].name)
