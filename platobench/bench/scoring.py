"""Score one model pair under one paired setting: layer grid, selection, null, interval -> record."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import torch

from platobench.bench.results import (
    DatasetRef,
    IntervalRef,
    MetricRef,
    ModelRef,
    NullRef,
    ResultRecord,
    git_sha,
)
from platobench.bench.settings import Setting
from platobench.metrics import get_metric
from platobench.metrics.api import summarize_layers
from platobench.metrics.selection import select
from platobench.metrics.stats import chance_level, permutation_null, subsample_ci
from platobench.zoo import ModelSpec

CONSTANT_RTOL = 1e-5


def varying_layers(layers: Sequence[torch.Tensor], rtol: float = CONSTANT_RTOL) -> list[int]:
    """Positions of the layers whose features vary across samples. A layer whose largest deviation from
    its per-feature mean is at most `rtol` x its largest magnitude is constant up to float rounding (e.g.
    a ViT's CLS token at the embedding layer, identical for every image): every metric on it would
    score rounding noise, so such layers are excluded from the grid and named in the record."""
    keep = []
    for i, x in enumerate(layers):
        scale = float(x.abs().max())
        if scale > 0 and float((x - x.mean(0)).abs().max()) > rtol * scale:
            keep.append(i)
    return keep


def _embed(grid: torch.Tensor, rows: list[int], cols: list[int], shape: tuple[int, int]) -> list[list[float | None]]:
    full: list[list[float | None]] = [[None] * shape[1] for _ in range(shape[0])]
    for a, i in enumerate(rows):
        for b, j in enumerate(cols):
            full[i][j] = round(float(grid[a, b]), 8)
    return full


def model_ref(spec: ModelSpec, revision: str | None = None) -> ModelRef:
    return ModelRef(name=spec.name, revision=revision or spec.revision, params_m=spec.params_m, kind=spec.kind)


def score_paired(
    setting: Setting,
    language: ModelSpec,
    vision: ModelSpec,
    lang_layers: Sequence[torch.Tensor],
    vis_layers: Sequence[torch.Tensor],
    dataset: DatasetRef,
    *,
    inputs: dict[str, Any],
    revisions: tuple[str | None, str | None] = (None, None),
) -> ResultRecord:
    """The record of `setting` for one pair; `*_layers` are the cached per-layer features [N, D_l] (row i
    of both is dataset sample i). `inputs` (feature-entry digests) is kept so reruns can tell what changed."""
    t0 = time.perf_counter()
    metric = get_metric(setting.metric)
    params = metric.resolve_params(setting.params)
    shape = (len(lang_layers), len(vis_layers))
    rows, cols = varying_layers(lang_layers), varying_layers(vis_layers)
    if not rows or not cols:
        side = "language" if not rows else "vision"
        raise ValueError(f"every layer of the {side} model is constant across the samples; nothing to score")
    lang_layers = [lang_layers[i] for i in rows]
    vis_layers = [vis_layers[j] for j in cols]
    summaries = summarize_layers(setting.metric, lang_layers, vis_layers, preprocess=setting.preprocess, **params)
    grid = summaries.grid()
    chosen = select(grid, setting.selection, metric.higher_is_better)
    last = float(grid[-1, -1]) if (rows[-1], cols[-1]) == (shape[0] - 1, shape[1] - 1) else None
    null = ci = calibrated = None
    if setting.n_perm > 0:
        res = permutation_null(
            setting.metric, lang_layers, vis_layers, selection=setting.selection, n_perm=setting.n_perm,
            seed=setting.seed, preprocess=setting.preprocess, summaries=summaries, **params,
        )
        null = NullRef(mean=res.mean, std=res.std, p_value=res.p_value, n_perm=res.n_perm, seed=res.seed)
        calibrated = res.calibrated
    if setting.n_ci > 0:
        lo, hi = subsample_ci(
            setting.metric, lang_layers, vis_layers, selection=setting.selection, n_sub=setting.n_ci,
            frac=setting.ci_fraction, level=setting.ci_level, seed=setting.seed, preprocess=setting.preprocess,
            summaries=summaries, **params,
        )
        ci = IntervalRef(
            lo=lo, hi=hi, level=setting.ci_level,
            method=f"subsampling without replacement, {setting.n_ci} subsets of {setting.ci_fraction:g} N",
        )
    return ResultRecord(
        git_sha=git_sha(),
        setting=setting.id,
        kind="paired",
        metric=MetricRef(
            id=metric.id, params=params, preprocess=setting.preprocess, selection=setting.selection,
            higher_is_better=metric.higher_is_better,
        ),
        language=model_ref(language, revisions[0]),
        vision=model_ref(vision, revisions[1]),
        dataset=dataset,
        score=chosen.score,
        layers=(rows[chosen.x_layer], cols[chosen.y_layer]),
        last_layer_score=last,
        chance=chance_level(setting.metric, dataset.n, **params),
        null=null,
        calibrated=calibrated,
        ci=ci,
        grid=_embed(grid, rows, cols, shape),
        extra={
            "inputs": inputs,
            "excluded_layers": {
                "language": [i for i in range(shape[0]) if i not in rows],
                "vision": [j for j in range(shape[1]) if j not in cols],
                "why": f"constant across samples (relative spread <= {CONSTANT_RTOL:g})",
            },
        },
        runtime_s=round(time.perf_counter() - t0, 3),
    )
