"""Score one model pair under one zero-shot setting: pair-free class matching -> record (kind "zeroshot").

Protocol: `platobench.metrics.zeroshot.zeroshot_eval` (Schnaus et al., CVPR 2025): class-mean image
embeddings (seeded 50% subsample) against class prompt embeddings (mean over templates), matched by
their standardised cosine kernels only. score = mean top-1 accuracy over seeds; chance = 1/C.

Which layers (`Setting.selection`):
  last   (the default of every zs-* setting) the last layer of each model, the embedding a zero-shot
         classifier would use; nothing is chosen by looking at the labels, so the score is pair-free.
  i,j    fixed layer positions, likewise pair-free.
  best   every (text layer, vision layer) pair is evaluated and the pair of highest mean top-1
         is reported, with the whole grid and the last-layer score. Caveat: the choice uses the class
         labels of the very classes it is scored on, so it is no longer pair-free and is biased
         upwards (the max of Lx*Ly correlated draws exceeds 1/C even for unrelated models); no exact
         null exists for it, so the record has none. `details.label_free_choice` gives the pair a
         truly pair-free rule would choose: the highest mean matching correlation (the solver's own
         objective, no labels), with its top-1. A layer pair whose kernel carries no geometry (e.g. a
         ViT's CLS token at the embedding layer, identical for every image) cannot be matched: its
         grid entry is chance (1/C), it is never selected, and `details.unscorable_cells` lists it.

Null (non-"best" selections): a uniform random matching of C classes has F fixed points, E[F] = 1 and
Var[F] = 1 (C >= 2), so top-1 = F/C has mean and std 1/C; its exact tail P(F >= k) follows from the
rencontres numbers. The record's p-value is the median over seeds of P(F >= correct matches of that
seed) (with tied classes, of the expected count: a seeded Monte Carlo tail, `metrics.zeroshot.null_tail`);
calibrated = (score - 1/C) / (1 - 1/C) (as `metrics.stats`).
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from platobench.bench.scoring import side_ref
from platobench.bench.settings import Setting
from platobench.bench.zeroshot_inputs import PromptSet, ZeroshotOptions
from platobench.errors import UserError
from platobench.metrics.selection import select, select_index
from platobench.metrics.zeroshot import METRIC_ID, NULL_DRAWS, zeroshot_eval
from platobench.results import DatasetRef, IntervalRef, MetricRef, NullRef, Provenance, ResultRecord, git_sha
from platobench.zoo import ModelSpec

BEST_CAVEAT = (
    "best over the layer grid: the layer pair is chosen with the labels of the scored classes, so the "
    "score is not pair-free and is biased upwards; see label_free_choice for the pair-free choice"
)


def _numpy(t: Any) -> np.ndarray:
    return t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)


def score_zeroshot(
    setting: Setting,
    x: ModelSpec,
    y: ModelSpec,
    x_layers: Sequence[torch.Tensor],
    y_layers: Sequence[torch.Tensor],
    dataset: DatasetRef,
    *,
    inputs: dict[str, Any],
    revisions: tuple[str | None, str | None] = (None, None),
    reads: tuple[str, str] = ("prompts", "image"),
    labels: Sequence[int],
    prompts: PromptSet,
) -> ResultRecord:
    """The record of zero-shot `setting` for one text (`x`) x vision (`y`) pair.

    x_layers: per layer [P, D_l] embeddings of `prompts.texts` (P prompts); y_layers: per layer
    [M, D_l] embeddings of the class dataset's M images, whose class indices are `labels` [M].
    """
    t0 = time.perf_counter()
    opts = ZeroshotOptions.of(setting)
    if setting.preprocess == "prh":
        raise UserError(
            f"setting {setting.id!r}: zero-shot matching l2-normalises embeddings itself; use preprocess none or l2"
        )
    if not x_layers or not y_layers:
        raise UserError("zero-shot scoring needs at least one layer of each model")
    if any(t.shape[0] != len(prompts) for t in x_layers):
        raise UserError(f"language features have {x_layers[0].shape[0]} rows for {len(prompts)} prompts")
    if any(t.shape[0] != len(labels) for t in y_layers):
        raise UserError(f"vision features have {y_layers[0].shape[0]} rows for {len(labels)} labelled images")
    texts = [prompts.per_class(_numpy(t)) for t in x_layers]
    images = [_numpy(t) for t in y_layers]
    labels_arr = np.asarray(labels, dtype=np.int64)

    def evaluate(i: int, j: int) -> dict[str, Any]:
        return zeroshot_eval(
            images[j], labels_arr, texts[i], seeds=opts.seeds, solver=opts.solver, restarts=opts.restarts,
            fraction=opts.fraction,
        )

    shape = (len(texts), len(images))
    fixed = select_index(shape, setting.selection)
    last = (shape[0] - 1, shape[1] - 1)
    grid = None
    details: dict[str, Any] = {}
    if fixed is None:
        cells, unscorable = {}, {}
        for i, j in itertools.product(range(shape[0]), range(shape[1])):
            try:
                cells[i, j] = evaluate(i, j)
            except UserError as exc:  # e.g. a CLS token at the embedding layer: every image alike
                unscorable[i, j] = str(exc)
        if not cells:
            raise UserError(f"no layer pair can be matched: {next(iter(unscorable.values()))}")
        grid = torch.full(shape, 1.0 / len(prompts.class_names), dtype=torch.float64)
        ranked = torch.full(shape, -math.inf, dtype=torch.float64)
        for (i, j), cell in cells.items():
            grid[i, j] = ranked[i, j] = cell["score"]
        chosen = select(ranked, "best", higher_is_better=True)
        pick = (chosen.x_layer, chosen.y_layer)
        free = max(cells, key=lambda c: (cells[c]["extra"]["correlation"]["mean"], -c[0], -c[1]))
        if unscorable:
            details["unscorable_cells"] = {
                "layers": [list(c) for c in unscorable], "errors": sorted(set(unscorable.values())),
                "grid_value": "chance (1/C), excluded from the selection",
            }
        details["selection_caveat"] = BEST_CAVEAT
        details["label_free_choice"] = {
            "rule": "highest mean matching correlation (no labels used)",
            "layers": list(free), "top1": cells[free]["score"],
            "correlation": cells[free]["extra"]["correlation"]["mean"],
        }
    else:
        pick = fixed
        cells = {pick: evaluate(*pick)}
        if last != pick:
            cells[last] = evaluate(*last)
    result = cells[pick]
    chance = result["chance"]
    null = calibrated = None
    if fixed is not None:
        null = NullRef(
            mean=chance, std=chance, p_value=float(np.median(result["null_tails"])),
            n_perm=0, seed=setting.seed,
            method=("exact: top-1 of a uniform random matching of the classes; p = median over seeds of P(F >= correct)"
                    if "tied_classes" not in result["extra"] else
                    "top-1 of a uniform random matching of the classes, tied classes counted in expectation; p = median "
                    f"over seeds of P(count >= observed), {NULL_DRAWS} seeded uniform matchings"),
        )
        calibrated = (result["score"] - chance) / (1 - chance)
    per_seed = [float(v) for v in result["extra"]["top1"]["per_seed"]]
    ci = None
    if len(per_seed) >= 2:
        # A new seed's top-1 falls within [min, max] of S exchangeable seeded draws with probability at
        # least (S - 1) / (S + 1) (ties only add to it): the interval's level, stated as such; .95 at the
        # settings' 39 seeds.
        ci = IntervalRef(
            lo=min(per_seed), hi=max(per_seed), level=(len(per_seed) - 1) / (len(per_seed) + 1),
            method=f"range of top-1 over the {len(per_seed)} seeded image subsamples "
                   "(level = (S-1)/(S+1), the chance that another seed falls inside)",
        )
    details.update(result["extra"])
    details["layers"] = {"x": pick[0], "y": pick[1], "selection": setting.selection}
    if last != pick and last in cells:
        keys = ("top1", "top5", "correlation", "truth_correlation")
        details["last_layers"] = {k: cells[last]["extra"][k] for k in keys}
    details["prompts"] = {
        "mode": opts.prompts, "key": prompts.prompt, "n_prompts": len(prompts),
        "fingerprint": prompts.fingerprint, "example": prompts.texts[0],
    }
    details["class_names"] = list(prompts.class_names)
    return ResultRecord(
        setting=setting.id,
        kind="zeroshot",
        metric=MetricRef(
            id=METRIC_ID, params={**result["params"], "prompts": opts.prompts, "templates": prompts.prompt,
                                  "per_class": opts.per_class},
            preprocess="l2", selection=setting.selection, higher_is_better=True,
        ),
        x=side_ref(x, revisions[0], reads[0]),
        y=side_ref(y, revisions[1], reads[1]),
        dataset=dataset,
        score=result["score"],
        layers=pick,
        last_layer_score=cells[last]["score"] if last in cells else None,
        chance=chance,
        null=null,
        calibrated=calibrated,
        ci=ci,
        grid=None if grid is None else [[round(float(v), 8) for v in row] for row in grid],
        provenance=Provenance(git_sha=git_sha(), inputs=inputs),
        details=details,
        runtime_s=round(time.perf_counter() - t0, 3),
    )
