"""`AlignmentProbe`: a model under training scored against a fixed, cached reference model in seconds.

The reference (a zoo model) is extracted once through the feature cache on a paired setting's samples and
its per-layer summaries are computed once (`metrics.api.summarize_side`); each `score` call then summarises
only the probed model and combines the two: the setting's metric, preprocessing, constant-layer exclusion
and layer selection exactly as `platobench run` applies them (`bench.scoring.score_paired`), so a probe
score of a model's cached features equals the score of that model's record bit for bit. No permutation
null, interval or rounding check is computed: a probe is a training curve's point, not a record. What REPA
(Yu et al. 2025, "Representation Alignment for Generation") and the JEPA training curves watch.

Sides: a vision reference takes the record's y side and a text reference its x side, as in a text x vision
record; the probed model takes the other side, of either modality. The reference reads what the setting
gives its side (`Setting.input_for`); the probe reads what the setting gives the other side when it names
`inputs` (the second of two views), else what the other side of a text x vision pair would (captions
`caption_index` for a vision reference, images for a text one), unless `input` names another: `"image"` or
`"caption:<i>"`, e.g. two captions of one image as two good views (Balestriero & LeCun 2026).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from platobench.errors import UserError

EncodeFn = Callable[[list[Any]], Any]  # a batch of PIL images or strings -> [B, D] or per-layer [B, D_l]


@dataclass(frozen=True)
class ProbeScore:
    """One probe measurement: `score` of the setting's metric at the selected layers `layers` (probe layer,
    reference layer, positions in each model's own layer list), the whole `grid` [L_probe, L_reference]
    (NaN on excluded constant layers), the metric's `chance` level at this n (None when not closed form)
    and the `seconds` the scoring took (encoding excluded). `float(result)` is the score."""

    score: float
    layers: tuple[int, int]
    grid: np.ndarray
    chance: float | None
    n: int
    seconds: float

    def __float__(self) -> float:
        return self.score


class NonFiniteFeaturesError(UserError):
    """Features hold NaN or infinite values: a measurement without a value (`AlignmentCallback` logs NaN)."""


#: How the encoder guard (platobench/encoders/guard.py) names an encode function in its messages.
ENCODE_FN = "probed by AlignmentProbe"


def _as_tensor(value: Any, what: str) -> torch.Tensor:
    """`value` (a tensor, or anything numpy reads as real numbers) as a tensor; UserError for booleans,
    complex numbers, a tensor on the meta device or anything else, as `loader: python` encoders are checked
    (platobench/encoders/python_loader.py)."""
    if not isinstance(value, torch.Tensor):
        try:
            array = np.asarray(value)
        except Exception:  # whatever the conversion raises, the value is not an array
            array = None
        if array is None or array.dtype.kind not in "iuf":
            kind = type(value).__name__ if array is None else f"{type(value).__name__} of dtype {array.dtype}"
            raise UserError(f"{what} is a {kind}; expected an array or tensor of real numbers")
        return torch.as_tensor(array)
    if value.is_complex() or value.dtype == torch.bool:
        raise UserError(f"{what} has dtype {value.dtype}; expected real numbers")
    if value.is_meta:
        raise UserError(f"{what} is a tensor on the meta device (a shape without data: were the weights never "
                        "loaded?); expected computed features")
    return value


def _as_layers(features: Any, n: int, what: str = "features") -> list[torch.Tensor]:
    """[N, D], [L, N, D] or a sequence of [N, D_l] (torch or numpy) -> float32 CPU layers, the dtype the
    feature cache stores; UserError for another shape or row count, a layer of width 0 or values that are
    not real numbers (`what` names the features in messages); NonFiniteFeaturesError for NaN or inf."""
    if isinstance(features, (torch.Tensor, np.ndarray)):
        t = _as_tensor(features, what)
        if t.ndim == 2:
            layers = [t]
        elif t.ndim == 3:
            layers = list(t.unbind(0))
        else:
            raise UserError(f"{what} must be [N, D], [L, N, D] or a list of [N, D_l] layers, got shape {tuple(t.shape)}")
    elif isinstance(features, Sequence) and not isinstance(features, (str, bytes)) and len(features) > 0:
        layers = [_as_tensor(x, f"{what} layer {i}") for i, x in enumerate(features)]
    else:
        raise UserError(f"{what} must be [N, D], [L, N, D] or a non-empty list of [N, D_l] layers, "
                        f"got {type(features).__name__}")
    out = []
    for i, x in enumerate(layers):
        if x.ndim != 2 or x.shape[0] != n:
            raise UserError(f"{what} layer {i} has shape {tuple(x.shape)}; expected [{n}, D] (one row per "
                            "probe sample, in the order of probe.ids)")
        if x.shape[1] == 0:
            raise UserError(f"{what} layer {i} has width 0 (shape {tuple(x.shape)}); every layer needs at least "
                            "one feature")
        x = x.detach().to("cpu", torch.float32)
        if not bool(torch.isfinite(x).all()):
            raise NonFiniteFeaturesError(f"{what} layer {i} holds NaN or infinite values")
        out.append(x.contiguous())
    return out


def _check_like_first(layers: list[torch.Tensor], first: list[torch.Tensor], batch: int) -> None:
    """UserError when batch `batch` of an encode function gave another number of layers or another width
    than its first batch: the features of one model have one shape whatever the inputs."""
    if len(layers) != len(first):
        raise UserError(f"encode_fn returned {len(layers)} layers in batch {batch} but {len(first)} in batch 1; "
                        "the number of layers must not depend on the inputs")
    for i, (x, y) in enumerate(zip(layers, first)):
        if x.shape[1] != y.shape[1]:
            raise UserError(f"encode_fn's layer {i} has width {x.shape[1]} in batch {batch} but {y.shape[1]} in "
                            "batch 1; the width must not depend on the inputs")


class AlignmentProbe:
    """Score any model against `reference` under paired setting `setting` (ids of `platobench settings
    list`; `settings_files` add user ones) on its dataset, or on `dataset` when given (its own samples,
    same protocol; `datasets_files` define datasets of your own, read now). `zoo`: extra zoo files (or a loaded `Zoo`); `limit`: the first `limit` samples, as
    `run --limit`. The reference is extracted (or read from the cache) when the probe is built."""

    def __init__(
        self,
        reference: str,
        *,
        setting: str,
        dataset: str | None = None,
        input: str | None = None,  # noqa: A002 -- the probe's input, as feature keys name it
        zoo: Any = None,
        settings_files: str | Path | Sequence[str | Path] = (),
        datasets_files: str | Path | Sequence[str | Path] = (),
        limit: int | None = None,
        device: str = "cpu",
        batch_size: int = 32,
        workers: int = 2,
        progress: bool = False,
    ) -> None:
        from platobench.bench.evaluation import as_paths, as_zoo
        from platobench.bench.runner import job_inputs
        from platobench.bench.settings import Catalog
        from platobench.data.datasets_file import using
        from platobench.features.extract import extract
        from platobench.features.store import FeatureStore
        from platobench.metrics.api import summarize_side
        from platobench.metrics.cached_layers import take_layers
        from platobench.metrics.registry import get_metric
        from platobench.metrics.validation import varying_layers
        from platobench.results.schema import input_modality

        catalog = Catalog(tuple(as_paths(settings_files, "settings_files")))
        if setting not in catalog.settings:
            raise UserError(f"AlignmentProbe: unknown setting {setting!r}; paired settings: "
                            f"{sorted(k for k, s in catalog.settings.items() if s.kind == 'paired')}")
        chosen = catalog.settings[setting]
        if chosen.kind != "paired":
            raise UserError(f"AlignmentProbe: setting {setting!r} is {chosen.kind}; a probe scores a paired setting "
                            "(one row per sample on both sides)")
        if chosen.selection == "heldout":
            raise UserError(f"AlignmentProbe: setting {setting!r} selects its layers held out (on one half of the "
                            "samples, scored on the other); a probe keeps the reference's summaries of all samples "
                            "and selects on one grid: use a setting with selection best, last or i,j")
        if dataset is not None and dataset != chosen.dataset:
            chosen = chosen.model_copy(update={"dataset": dataset})
        self.setting = chosen
        self.reference = as_zoo(zoo).get(reference)
        datasets = as_paths(datasets_files, "datasets_files")
        with using(datasets):  # the samples are read now: the dataset need not stay defined
            data = job_inputs(chosen, limit, {}).dataset
        side = 0 if self.reference.modality == "text" else 1  # the reference's side in a text x vision record
        ref_input = chosen.input_for(side, self.reference.modality)
        if input_modality(ref_input) != self.reference.modality:
            raise UserError(f"AlignmentProbe: setting {setting!r} gives its {'xy'[side]} side {ref_input!r}, which "
                            f"reference {reference} ({self.reference.modality}) cannot read")
        if input is None:
            input = (chosen.inputs[1 - side] if chosen.inputs is not None  # noqa: A001
                     else f"caption:{chosen.caption_index}" if self.reference.modality == "vision" else "image")
        self.input = _check_input(input, data)
        self.dataset = data
        entry, _ = extract(self.reference, data, store=FeatureStore(), prompt=ref_input, device=device,
                           batch_size=batch_size, num_workers=workers, progress=progress)
        layers = entry.cached_layers()
        self._ref_rows = varying_layers(layers)
        if not self._ref_rows:
            raise UserError(f"every layer of reference {reference} is constant across the samples; nothing to score")
        self._metric = get_metric(chosen.metric)
        self._params = self._metric.resolve_params(chosen.params)
        self._ref_x = side == 0
        self._ref_summaries = summarize_side(
            chosen.metric, take_layers(layers, self._ref_rows), side="x" if self._ref_x else "y",
            preprocess=chosen.preprocess, label=f"{reference} layer {{i}}", **self._params)
        self._ref_layers = len(layers)
        self.batch_size = batch_size

    @property
    def ids(self) -> list[str]:
        """The sample ids, in the row order `score` expects features in."""
        return list(self.dataset.ids)

    def __len__(self) -> int:
        return len(self.dataset)

    def inputs(self, start: int = 0, stop: int | None = None) -> list[Any]:
        """What the probed model reads for samples `start` to `stop` (None: the last), in `ids` order: PIL
        images (RGB) or strings."""
        stop = len(self.dataset) if stop is None else min(stop, len(self.dataset))
        if self.input == "image":
            return [self.dataset.image(i) for i in range(start, stop)]
        return self.dataset.captions(int(self.input.split(":", 1)[1]))[start:stop]

    def encode(self, encode_fn: EncodeFn) -> list[torch.Tensor]:
        """`encode_fn` applied to the inputs in batches of `batch_size` under `torch.no_grad()`; each call
        returns [B, D], [L, B, D] or a sequence of per-layer [B, D_l] -> per-layer [N, D_l] float32 features.
        Each batch is copied before the next call (`encoders.base.owned`: a view of a buffer the function
        reuses would otherwise become the last batch). Each call runs under the encoder guard of `loader:
        python` encoders (platobench/encoders/guard.py: what it prints goes to stderr, `sys.exit()` raises
        EncoderExitError) and its output is checked as theirs is, each batch against the first (the number
        of layers and their widths)."""
        from platobench.encoders.base import owned
        from platobench.encoders.guard import encoder_call

        n, chunks = len(self.dataset), []
        with torch.no_grad():
            for number, start in enumerate(range(0, n, self.batch_size), 1):
                batch = self.inputs(start, start + self.batch_size)
                with encoder_call(ENCODE_FN, f"encode of batch {number} ({len(batch)} inputs)", None):
                    out = encode_fn(batch)
                layers = owned(_as_layers(out, len(batch), f"encode_fn's output for batch {number}"))
                if chunks:
                    _check_like_first(layers, chunks[0], number)
                chunks.append(layers)
        return [torch.cat([c[i] for c in chunks]) for i in range(len(chunks[0]))]

    def score(self, model: EncodeFn | Any) -> ProbeScore:
        """The setting's score of `model` against the reference: `model` is a callable `encode_fn` (see
        `encode`) or features [N, D], [L, N, D] or a list of [N, D_l] with rows in `ids` order."""
        from platobench.metrics.api import LayerSummaries, summarize_side
        from platobench.metrics.cached_layers import take_layers
        from platobench.metrics.selection import kept_selection, select
        from platobench.metrics.stats import chance_level
        from platobench.metrics.validation import varying_layers

        layers = self.encode(model) if callable(model) else _as_layers(model, len(self.dataset))
        t0 = time.perf_counter()
        s = self.setting
        rows = varying_layers(layers)
        if not rows:
            raise UserError("every layer of the probed model is constant across the samples; nothing to score")
        mine = summarize_side(s.metric, take_layers(layers, rows), side="y" if self._ref_x else "x",
                              preprocess=s.preprocess, label="probe layer {i}", **self._params)
        sx, sy = (self._ref_summaries, mine) if self._ref_x else (mine, self._ref_summaries)
        grid = LayerSummaries(self._metric, self._params, len(self.dataset), sx, sy).grid()
        ref_rows = self._ref_rows
        shape, kept = (len(layers), self._ref_layers), (rows, ref_rows)
        if self._ref_x:
            shape, kept = shape[::-1], kept[::-1]
        spec = kept_selection(s.selection, shape, *kept)
        chosen = select(grid, spec, self._metric.higher_is_better)
        probe_i, ref_i = (chosen.y_layer, chosen.x_layer) if self._ref_x else (chosen.x_layer, chosen.y_layer)
        full = np.full((len(layers), self._ref_layers), np.nan)
        mine_grid = grid.T if self._ref_x else grid
        full[np.ix_(rows, ref_rows)] = mine_grid.numpy()
        return ProbeScore(score=chosen.score, layers=(rows[probe_i], ref_rows[ref_i]), grid=full,
                          chance=chance_level(s.metric, len(self.dataset), **self._params), n=len(self.dataset),
                          seconds=time.perf_counter() - t0)


def _check_input(value: str, data: Any) -> str:
    """`value` if it is "image" or "caption:<i>" of a caption every sample of `data` has; else UserError."""
    if value == "image":
        return value
    head, _, index = value.partition(":")
    if head != "caption" or not index.isdigit():
        raise UserError(f"AlignmentProbe input must be 'image' or 'caption:<i>', got {value!r}")
    data.captions(int(index))  # UserError naming the samples without that caption
    return value
