"""Score one model pair under one paired setting: layer grid, selection, null, interval -> record."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import torch

from platobench.bench.settings import Setting
from platobench.metrics import get_metric
from platobench.metrics.api import LayerSummaries, summarize_layers
from platobench.metrics.cached_layers import take_layers
from platobench.metrics.heldout import CrossFit, HalfSplit
from platobench.metrics.preprocess import LayerStack
from platobench.metrics.selection import HELDOUT, kept_selection, select
from platobench.metrics.stats import chance_level, interval_method, permutation_null, subset_draws
from platobench.metrics.validation import CONSTANT_RTOL, DegenerateFeaturesError, varying_layers
from platobench.results import (
    DatasetRef,
    IntervalRef,
    MetricRef,
    ModelRef,
    NullRef,
    Provenance,
    Reproducibility,
    ResultRecord,
    Rounding,
    SideRef,
    git_sha,
)
from platobench.zoo import ModelSpec

ROUNDING_NOISE = 1e-6  # relative; the size of float32 rounding differences between machines
ROUNDING_DRAWS = 3
CHECK_TOL = 1e-3  # `platobench check`'s default tolerance
# The most a neighbour metric's record may be widened to by its measured rounding sensitivity. A record that
# rounding-sized noise moves by more than half of this is not reproducible across CPUs at any useful
# precision: `check` still holds it to this bound (the committed records need at most 0.016).
MAX_ROUNDING_TOLERANCE = 0.02


def _embed(grid: torch.Tensor, rows: list[int], cols: list[int], shape: tuple[int, int]) -> list[list[float | None]]:
    full: list[list[float | None]] = [[None] * shape[1] for _ in range(shape[0])]
    for a, i in enumerate(rows):
        for b, j in enumerate(cols):
            full[i][j] = round(float(grid[a, b]), 8)
    return full


def _perturbed(layers: Sequence[torch.Tensor], gen: torch.Generator) -> list[torch.Tensor]:
    return [x * (1 + ROUNDING_NOISE * torch.randn(x.shape, generator=gen, dtype=x.dtype)) for x in layers]


def _stacks(x_layers: Sequence[torch.Tensor], y_layers: Sequence[torch.Tensor]) -> tuple[LayerStack, LayerStack]:
    return LayerStack(x_layers, "Xs"), LayerStack(y_layers, "Ys")


def half_split(setting: Setting, x_layers: Sequence[torch.Tensor], y_layers: Sequence[torch.Tensor],
               params: dict[str, Any]) -> HalfSplit:
    """Both halves of the samples summarised for the setting's held-out selection (metrics/heldout.py)."""
    return HalfSplit.of(setting.metric, _stacks(x_layers, y_layers), int(x_layers[0].shape[0]), seed=setting.seed,
                        preprocess=setting.preprocess, **params)


def _selected_score(setting: Setting, x_layers: Sequence[torch.Tensor], y_layers: Sequence[torch.Tensor],
                    params: dict[str, Any], grid: torch.Tensor, higher_is_better: bool, selection: str) -> float:
    if selection == HELDOUT:
        return half_split(setting, x_layers, y_layers, params).cross_fit().score
    return select(grid, selection, higher_is_better).score


def rounding_sensitivity(
    setting: Setting, x_layers: Sequence[torch.Tensor], y_layers: Sequence[torch.Tensor],
    params: dict[str, Any], grid: torch.Tensor, higher_is_better: bool, selection: str, chosen: float,
) -> Reproducibility:
    """How far CPU-rounding-sized noise moves a record: the features are multiplied by (1 + 1e-6 e),
    e ~ N(0, 1), in `ROUNDING_DRAWS` seeded draws; returns the largest change of the selected score and of
    any grid cell. When it exceeds half of `check`'s 0.001, the record states its own check tolerance
    (twice the largest change) instead of failing on other machines — written, never silent. `selection`:
    the setting's selection on the grid of these (kept) layers (`kept_selection`); `chosen`: its score."""
    worst = 0.0
    for draw in range(ROUNDING_DRAWS):
        gen = torch.Generator().manual_seed(draw)
        xs, ys = _perturbed(x_layers, gen), _perturbed(y_layers, gen)
        noisy = summarize_layers(setting.metric, xs, ys, preprocess=setting.preprocess, **params).grid()
        moved = max(abs(_selected_score(setting, xs, ys, params, noisy, higher_is_better, selection) - chosen),
                    float((noisy - grid).abs().max()))
        worst = max(worst, moved)
    out = Reproducibility(rounding=Rounding(noise=ROUNDING_NOISE, draws=ROUNDING_DRAWS, max_change=worst))
    if worst > CHECK_TOL / 2:
        out.check_tolerance = float(f"{2 * worst:.2g}")
        out.check_tolerance_why = (
            f"relative noise of {ROUNDING_NOISE:g} on the features moved this record by up to {worst:.2g} "
            "(near ties among neighbours), so it is checked at twice that"
        )
    return out


def model_ref(spec: ModelSpec, revision: str | None = None) -> ModelRef:
    return ModelRef(name=spec.name, revision=revision or spec.revision, params_m=spec.params_m, kind=spec.kind,
                    loader=spec.loader, trained_on=None if spec.trained_on is None else list(spec.trained_on),
                    fitted_on_eval=spec.fitted_on_eval)


def side_ref(spec: ModelSpec, revision: str | None, read: str) -> SideRef:
    """The record side of `spec` (its resolved `revision`; None: the spec's), which read `read`."""
    return SideRef(**model_ref(spec, revision).model_dump(), modality=spec.modality, input=read)


def score_paired(
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
) -> ResultRecord:
    """The record of `setting` for one pair (`x`, `y` of any modalities); `*_layers` are the cached
    per-layer features [N, D_l] (row i of both is dataset sample i), `reads` what each side read. `inputs`
    (feature-entry digests) is kept so reruns can tell what changed.

    Layers constant across the samples are left out of the grid. So is a layer that varies over the
    samples but on which the metric has no score: constant as prepared on all samples or on samples the
    score reads apart (one of the interval's subsets, the held-out residual's fit half), as at small N a
    random-init CNN's stem whose rows differ only beyond the prh clamp. The record is then scored again
    without it, and `details.excluded_layers.why` says so."""
    t0 = time.perf_counter()
    rows, cols = varying_layers(x_layers), varying_layers(y_layers)
    if not rows or not cols:
        side = x.name if not rows else y.name
        raise ValueError(f"every layer of {side} is constant across the samples; nothing to score")
    kept = {"Xs": rows, "Ys": cols}
    dropped = False
    while True:
        try:
            return _paired_record(setting, x, y, x_layers, y_layers, kept["Xs"], kept["Ys"], dropped, dataset,
                                  inputs, revisions, reads, t0)
        except DegenerateFeaturesError as exc:
            if exc.side not in kept or exc.layer is None:
                raise
            side = kept[exc.side]
            kept[exc.side] = side[:exc.layer] + side[exc.layer + 1:]
            dropped = True
            if not kept[exc.side]:
                name = x.name if exc.side == "Xs" else y.name
                raise ValueError(f"every layer of {name} is constant across the samples, or as prepared on samples "
                                 f"the score reads; nothing to score (last: {exc})") from None


def _paired_record(
    setting: Setting, x: ModelSpec, y: ModelSpec, x_layers: Sequence[torch.Tensor], y_layers: Sequence[torch.Tensor],
    rows: list[int], cols: list[int], subset_dropped: bool, dataset: DatasetRef, inputs: dict[str, Any],
    revisions: tuple[str | None, str | None], reads: tuple[str, str], t0: float,
) -> ResultRecord:
    """`score_paired`'s record on the kept layers `rows` x `cols` (`subset_dropped`: some were left out for
    being degenerate as prepared, on all samples or on some)."""
    metric = get_metric(setting.metric)
    params = metric.resolve_params(setting.params)
    shape = (len(x_layers), len(y_layers))
    # a fixed selection names layers of the whole models: moved to the kept layers' grid
    sel = kept_selection(setting.selection, shape, rows, cols, (x.name, y.name))
    x_layers, y_layers = take_layers(x_layers, rows), take_layers(y_layers, cols)
    summaries = summarize_layers(setting.metric, x_layers, y_layers, preprocess=setting.preprocess, **params)
    grid = summaries.grid()
    split = half_split(setting, x_layers, y_layers, params) if sel == HELDOUT else None
    fit = split.cross_fit() if split is not None else None
    chosen = fit.selection() if fit is not None else select(grid, sel, metric.higher_is_better)
    rounding = (rounding_sensitivity(setting, x_layers, y_layers, params, grid, metric.higher_is_better, sel,
                                     chosen.score)
                if metric.neighbour_sets else None)
    last = float(grid[-1, -1]) if (rows[-1], cols[-1]) == (shape[0] - 1, shape[1] - 1) else None
    null = ci = calibrated = None
    if setting.n_perm > 0:
        res = permutation_null(
            setting.metric, x_layers, y_layers, selection=sel, n_perm=setting.n_perm,
            seed=setting.seed, preprocess=setting.preprocess, summaries=summaries, split=split, **params,
        )
        null = NullRef(mean=res.mean, std=res.std, p_value=res.p_value, n_perm=res.n_perm, seed=res.seed,
                       draws=res.values.tolist())
        calibrated = res.calibrated
    if setting.n_ci > 0:
        draws = subset_draws(
            setting.metric, x_layers, y_layers, selection=sel, n_sub=setting.n_ci,
            frac=setting.ci_fraction, seed=setting.seed, preprocess=setting.preprocess, summaries=summaries,
            split=split, **params,
        )
        lo, hi = draws.interval(setting.ci_level)
        ci = IntervalRef(
            lo=lo, hi=hi, level=setting.ci_level, method=interval_method(setting.metric, setting.n_ci, setting.ci_fraction, draws.scheme),
            estimand=metric.estimand_for(params, sel), scheme=draws.scheme, subset_size=draws.size,
            draws=draws.scores.tolist(), rate=draws.rate,
        )
    return ResultRecord(
        setting=setting.id,
        kind="paired",
        metric=MetricRef(
            id=metric.id, params=params, preprocess=setting.preprocess, selection=setting.selection,
            higher_is_better=metric.higher_is_better,
        ),
        x=side_ref(x, revisions[0], reads[0]),
        y=side_ref(y, revisions[1], reads[1]),
        dataset=dataset,
        score=chosen.score,
        layers=(rows[chosen.x_layer], cols[chosen.y_layer]),
        last_layer_score=last,
        chance=(chance_level(setting.metric, dataset.n, **params) if split is None
                else _mean_chance(setting.metric, [len(r) for r in split.rows], params)),
        null=null,
        calibrated=calibrated,
        ci=ci,
        grid=_embed(grid, rows, cols, shape),
        provenance=Provenance(git_sha=git_sha(), inputs=inputs),
        reproducibility=rounding,
        details={
            **({} if fit is None else {"heldout_selection": _heldout_details(fit, grid, rows, cols, metric.higher_is_better,
                                                                             [len(r) for r in split.rows])}),
            **({"tie_share": _tie_shares(summaries, rows, cols, shape)} if metric.neighbour_sets else {}),
            "copy_cka": copy_cka(x_layers, y_layers),
            "excluded_layers": {
                "x": [i for i in range(shape[0]) if i not in rows],
                "y": [j for j in range(shape[1]) if j not in cols],
                "why": f"constant across samples (relative spread <= {CONSTANT_RTOL:g})" + (
                    f"; or constant as prepared ({setting.preprocess}) on the samples the score reads: all, one of "
                    f"the interval's {setting.n_ci} subsets, or the metric's own fit half" if subset_dropped else ""),
            },
        },
        runtime_s=round(time.perf_counter() - t0, 3),
    )


def copy_cka(x_layers: Sequence[torch.Tensor], y_layers: Sequence[torch.Tensor]) -> float:
    """The largest linear CKA (biased, of the features as cached: invariant to rotation, isotropic scale and
    translation) between any layer of one side and any of the other, in [0, 1]: 1 when one side's layer is
    the other's up to rotation and scale, the copy a board flags (platobench/leaderboard/flags.py)."""
    from platobench.metrics import layer_grid

    grid = layer_grid("cka", list(x_layers), list(y_layers), kernel="linear", estimator="biased")
    return round(float(grid.max()), 6)


def _tie_shares(summaries: LayerSummaries, rows: list[int], cols: list[int], shape: tuple[int, int]
                ) -> dict[str, list[float | None]]:
    """Per model layer of each side, the share of samples whose k-th neighbour is tied (`knn.tie_share`:
    their list is a choice among equal inner products); None for a layer left out of the grid."""
    from platobench.metrics.knn import tie_share

    def side(sets: list[Any], kept: list[int], size: int) -> list[float | None]:
        shares = dict(zip(kept, (tie_share(s) for s in sets)))
        return [shares.get(i) for i in range(size)]

    return {"x": side(summaries.x, rows, shape[0]), "y": side(summaries.y, cols, shape[1])}


def _mean_chance(metric: str, sizes: list[int], params: dict[str, Any]) -> float | None:
    """The chance level of a held-out score: the mean of its two folds' chance levels (one per half size)."""
    levels = [chance_level(metric, n, **params) for n in sizes]
    return None if any(c is None for c in levels) else sum(levels) / len(levels)  # type: ignore[arg-type]


def _heldout_details(fit: CrossFit, grid: torch.Tensor, rows: list[int], cols: list[int], higher_is_better: bool,
                     sizes: list[int]) -> dict[str, Any]:
    """What a held-out record states besides its score: the halves' sizes; each fold's layers (of the whole
    models), held-out score and in-sample score; `in_sample`, the mean of the halves' best-of-grid scores (at
    the held-out score's N: their difference is the optimism of choosing on the samples scored); and
    `full_grid_best`, the best cell of the full-N grid (what the best-of-grid setting would report, at N)."""
    best = select(grid, "best", higher_is_better)
    return {
        "halves": sizes,
        "folds": [{"chosen_on": f.chosen_on, "layers": [rows[f.x_layer], cols[f.y_layer]], "score": f.score,
                   "in_sample": f.in_sample} for f in fit.folds],
        "in_sample": fit.in_sample,
        "full_grid_best": {"score": best.score, "layers": [rows[best.x_layer], cols[best.y_layer]]},
    }
