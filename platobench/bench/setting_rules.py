"""The rules a setting must follow beyond its field types, checked when it is built (so when a settings
file is loaded): the metric, its parameters and the preprocessing of a paired setting against the metric
registry; the fields a zero-shot setting really uses; the smallest --limit each setting can score; and,
when its jobs are planned, whether it can score the samples its dataset holds.

Every function raises UserError with a short message (the settings loader adds the file and the setting).
The metric modules (and torch) are imported on the first check, not with this module: the CLI's start-up
imports the settings module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from platobench.errors import UserError
from platobench.files.ids import shown

if TYPE_CHECKING:
    from platobench.bench.settings import Setting

#: The metric id of every zero-shot setting (platobench.metrics.zeroshot.METRIC_ID; not a registry metric).
ZEROSHOT_METRIC = "zeroshot_matching"

#: Fields only paired scoring reads (platobench.bench.scoring); a zero-shot setting must leave them at
#: their defaults, since zero-shot scoring would silently ignore them.
PAIRED_ONLY = ("caption_index", "inputs", "params", "preprocess", "n_perm", "n_ci", "ci_fraction", "ci_level")


def check_preprocess(mode: str) -> str:
    """`mode` if it is a preprocessing mode (platobench.metrics.preprocess), else UserError."""
    from platobench.metrics.preprocess import PREPROCESS_MODES
    from platobench.registry import did_you_mean

    if mode not in PREPROCESS_MODES:
        raise UserError(f"unknown preprocess {shown(mode)}{did_you_mean(mode, sorted(PREPROCESS_MODES))}; "
                        f"expected one of {sorted(PREPROCESS_MODES)}")
    return mode


def check_dataset_kind(setting: Setting) -> None:
    """UserError when the setting's dataset is a text corpus (catalogue kind "corpus": no images to pair
    with), or ids only (kind "ids") under a zero-shot setting; names the catalogue (and the datasets files in
    force) does not hold are left to the run, which reports them."""
    from platobench.data.catalog import entries

    entry = entries().get(setting.dataset)
    if entry is not None and entry.info.kind == "ids" and setting.kind != "paired":
        raise UserError(f"dataset {shown(setting.dataset)} holds sample ids only (kind ids, no labels); a "
                        f"{setting.kind} setting needs a class dataset")
    if entry is not None and entry.info.kind == "corpus":
        raise UserError(f"dataset {shown(setting.dataset)} is a text corpus (kind corpus, no images); a "
                        f"{setting.kind} setting needs a paired or class dataset (`platobench data list`)")


def check_paired(setting: Setting) -> None:
    """A registered metric whose `validate` accepts the params; no zero-shot options; not a text corpus."""
    from platobench.metrics.registry import get_metric

    check_dataset_kind(setting)
    if setting.inputs is not None and setting.caption_index != 0:
        raise UserError(f"caption_index {setting.caption_index} and inputs {shown(list(setting.inputs))} both say "
                        "which caption is read: name the caption in inputs only")
    metric = get_metric(setting.metric)
    try:
        metric.checked_params(setting.params)
    except UserError as exc:
        raise UserError(f"params: {exc}") from None
    if setting.options:
        raise UserError(f"options {shown(sorted(setting.options))} are for zero-shot settings (kind: zeroshot); "
                        "a paired setting takes metric params")


def check_zeroshot(setting: Setting) -> None:
    """Metric `zeroshot_matching`, no paired-only field off its default, valid options; not a text corpus."""
    from platobench.bench.zeroshot_inputs import ZeroshotOptions

    check_dataset_kind(setting)
    if setting.metric != ZEROSHOT_METRIC:
        raise UserError(f"a zero-shot setting's metric must be {ZEROSHOT_METRIC!r}, got {shown(setting.metric)}")
    fields = type(setting).model_fields
    for name in PAIRED_ONLY:
        value, default = getattr(setting, name), fields[name].get_default(call_default_factory=True)
        if value != default:
            raise UserError(f"{name} is used by paired settings only; zero-shot scoring would ignore it "
                            f"(got {shown(value)}): remove it, or put zero-shot choices under options")
    if setting.selection == "heldout":
        raise UserError("selection 'heldout' is for paired settings (it splits paired samples in halves); a zero-shot "
                        "setting takes 'last', 'best' or 'i,j'")
    try:
        ZeroshotOptions.of(setting)
    except UserError as exc:
        raise UserError(str(exc).removeprefix(f"setting {setting.id!r}: ")) from None


def check_selection_fits(setting: Setting, shape: tuple[int, int], models: tuple[str, str]) -> None:
    """UserError unless `setting.selection` picks a cell of a [Lx, Ly] layer grid of `shape`, the layer
    counts of the (x, y) `models`: checked when jobs are planned, before any extraction."""
    from platobench.metrics.selection import select_index

    try:
        select_index(shape, setting.selection)
    except UserError as exc:
        raise UserError(f"setting {setting.id!r}: selection {shown(setting.selection)} does not fit {models[0]} "
                        f"({shape[0]} layers) x {models[1]} ({shape[1]} layers): {exc}") from None


def _check_samples(setting: Setting, n: int) -> None:
    """UserError unless paired `setting` can score n samples, its subsampling interval included."""
    from platobench.metrics.registry import get_metric

    metric = get_metric(setting.metric)
    params = metric.resolve_params(setting.params)
    heldout = setting.selection == "heldout"  # every score is then on a half of the samples it reads
    if metric.validate is not None:
        try:
            metric.validate(n // 2 if heldout else n, params)
        except UserError as exc:
            if not heldout:
                raise
            raise UserError(f"its held-out selection scores halves of {n // 2} samples, too few: {exc}") from None
    if setting.n_ci > 0:
        size = round(setting.ci_fraction * n)
        if not 2 <= size <= n - 1:
            raise UserError(f"ci_fraction={setting.ci_fraction} gives interval subsets of {size} samples; "
                            "expected 2 <= m <= N - 1")
        scored = size // 2 if heldout else size
        if metric.validate is not None:
            try:
                metric.validate(scored, params)
            except UserError as exc:
                raise UserError(f"its interval subsets of {size} samples are too small"
                                f"{' (halves of ' + str(scored) + ')' if heldout else ''}: {exc}") from None


class UnscorableSamplesError(UserError):
    """A setting cannot score the samples its dataset holds (`check_dataset_size`)."""


def check_dataset_size(setting: Setting, n: int) -> None:
    """UserError unless paired `setting` can score the `n` samples its dataset holds as read (after any
    --limit): checked when its jobs are planned, before any model runs (a dataset of 1 sample under k = 5,
    held-out halves too small for k), since a datasets file's size is known only once it is read. A setting
    of another kind (a plugin's, reading the paired inputs) scores with code of its own: not checked here."""
    if setting.kind != "paired":
        return
    try:
        _check_samples(setting, n)
    except UserError as exc:
        raise UnscorableSamplesError(f"setting {setting.id} ({setting.metric}) cannot score the {n} samples of "
                                     f"dataset {setting.dataset}: {exc}") from None


def check_limit(settings: list[Setting], limit: int | None, flag: str = "--limit") -> None:
    """UserError unless every setting can be scored with `limit` samples (paired) or images per class
    (zero-shot); the metric's own `validate(n, params)` decides for paired settings."""
    if limit is None:
        return
    if limit < 1:
        raise UserError(f"{flag} must be a positive number of samples, got {limit}")
    for setting in settings:
        if setting.kind != "paired":
            continue
        try:
            _check_samples(setting, limit)
        except UserError as exc:
            raise UserError(f"{flag} {limit} is too small for setting {setting.id!r} ({setting.metric}): {exc}") \
                from None

