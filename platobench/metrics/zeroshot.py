"""Zero-shot classification by pair-free matching of class-level embeddings.

Protocol (the blind-matching settings of Schnaus et al., CVPR 2025, used by Balestriero & LeCun's
JEPA follow-up of the Platonic Representation Hypothesis):

1. Image side, per class c: the mean of the l2-normalised image embeddings of a seeded subsample of
   ceil(fraction * n_c) of the class's n_c images (fraction = 0.5) -> [C, D_img].
2. Text side, per class c: the mean over prompt templates of the l2-normalised text embeddings of the
   class name in each template -> [C, D_txt] (deterministic; no seed).
3. Each side's cosine kernel [C, C] is standardised and the classes are matched with
   `platobench.metrics.matching.blind_match` (only each modality's own geometry is used).
4. Top-1 accuracy: share of image classes matched to their own name, in expectation over the matchings
   the kernels cannot tell apart: classes whose l2-normalised embeddings are identical on one side
   (e.g. names of equal length under the caption-length baseline) have identical kernel rows, so
   relabelling them leaves the objective unchanged and which of them the solver picks is decided by
   float rounding. Such classes are counted as a uniform draw among their tie group (`assignment_weights`);
   without ties this is the plain share. Its null tail is exact (rencontres numbers) without ties and a
   seeded Monte Carlo estimate (`NULL_DRAWS` uniform matchings) with them (top-5 is not corrected: among
   tied classes it follows the solver's pick). Top-5: share of image classes
   whose own name is in their top-5 candidate list (`matching.candidate_lists`: the assigned name,
   then the 4 names of largest first-order gain under the solution). Chance: 1/C and min(5, C)/C,
   the expected accuracies of a uniformly random matching.
5. Repeated over seeds (subsample and solver restarts both use the seed); mean and sample standard
   deviation (ddof=1; 0 for one seed) over seeds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import torch

from platobench.errors import UserError
from platobench.metrics.matching import (
    DEFAULT_RESTARTS,
    blind_match,
    candidate_lists,
    cosine_kernel,
    qap_objective,
    standardize_kernel,
)

METRIC_ID = "zeroshot_matching"
TOP_K = 5
#: Uniform random matchings behind the null tail of a top-1 with tied classes.
NULL_DRAWS = 10_000


def random_matching_tail(n: int, k: int) -> float:
    """P(F >= k) for F the number of fixed points of a uniform random permutation of n items (exact:
    P(F = j) = D(n - j) / (j! (n - j)!), D the derangement numbers)."""
    if k <= 0:
        return 1.0
    derangements = [1, 0]
    for m in range(2, n + 1):
        derangements.append((m - 1) * (derangements[-1] + derangements[-2]))
    tail = sum(Fraction(derangements[n - j], math.factorial(j) * math.factorial(n - j)) for j in range(k, n + 1))
    return float(tail)


def tie_groups(E: Any) -> np.ndarray:
    """int64 [C]: a group label per row of class embeddings E [C, D]; rows identical after l2
    normalisation share one (their cosine kernel rows are identical: no matching can tell them apart)."""
    U = np.asarray(E, dtype=np.float64)
    U = U / np.linalg.norm(U, axis=1, keepdims=True)
    return np.unique(U, axis=0, return_inverse=True)[1].reshape(-1).astype(np.int64)


def assignment_weights(image_groups: np.ndarray, text_groups: np.ndarray) -> np.ndarray:
    """W [C, C]: the expected number of correct classes contributed by matching image class a to name t,
    when image class a is relabelled uniformly within its tie group G(a) and name t within its group H(t):
    W[a, t] = #{c in G(a): c in H(t)} / (|G(a)| |H(t)|). Top-1 count of a matching p: sum_a W[a, p[a]];
    without ties W is the identity and that is the number of fixed points."""
    same_a = (image_groups[:, None] == image_groups[None, :]).astype(np.float64)
    same_t = (text_groups[:, None] == text_groups[None, :]).astype(np.float64)
    return (same_a @ same_t) / (same_a.sum(1)[:, None] * same_t.sum(0)[None, :])


def null_tail(weights: np.ndarray, correct: float, seed: int) -> float:
    """P(top-1 count >= `correct`) under a uniform random matching: exact for W = I, else (1 + #draws
    >= correct) / (NULL_DRAWS + 1) over seeded uniform matchings."""
    n = weights.shape[0]
    if np.array_equal(weights, np.eye(n)):
        return random_matching_tail(n, round(correct))
    perms = np.argsort(np.random.default_rng([seed, n]).random((NULL_DRAWS, n)), axis=1)
    counts = weights[np.arange(n)[None, :], perms].sum(axis=1)
    return float((1 + np.sum(counts >= correct - 1e-9)) / (NULL_DRAWS + 1))


def _to_numpy(x: Any, name: str) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    if not isinstance(x, np.ndarray):
        raise UserError(f"{name} must be a numpy array or torch tensor, got {type(x).__name__}")
    if not np.issubdtype(x.dtype, np.number):
        raise UserError(f"{name} must hold numbers, got dtype {x.dtype}")
    return x


def _l2_rows(x: np.ndarray, name: str) -> np.ndarray:
    """Rows of x [n, D] divided by their norm (float64); an all-zero or non-finite row is an error."""
    x = np.asarray(x, dtype=np.float64)
    if not np.isfinite(x).all():
        raise UserError(f"{name} contains NaN/inf values; expected finite embeddings")
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    if (norms == 0).any():
        raise UserError(f"{name} has {int((norms == 0).sum())} all-zero embedding(s); cannot l2-normalise them")
    return x / norms


def class_text_embeddings(text_feats_per_class: Any) -> np.ndarray:
    """Class text embeddings [C, D] (float64): per class, the mean over templates of the l2-normalised
    embeddings. Input: [C, T, D] (numpy or torch) or a list of C arrays [T_c, D] (T_c may differ)."""
    if isinstance(text_feats_per_class, (np.ndarray, torch.Tensor)):
        arr = _to_numpy(text_feats_per_class, "text_feats_per_class")
        if arr.ndim != 3 or 0 in arr.shape:
            raise UserError(f"text_feats_per_class must be [C, T, D] or a list of [T_c, D], got shape {arr.shape}")
        per_class: Sequence[Any] = list(arr)
    elif isinstance(text_feats_per_class, Sequence) and not isinstance(text_feats_per_class, (str, bytes)):
        per_class = text_feats_per_class
    else:
        raise UserError(
            f"text_feats_per_class must be [C, T, D] or a list of [T_c, D], got {type(text_feats_per_class).__name__}"
        )
    out = []
    for c, feats in enumerate(per_class):
        name = f"text_feats_per_class[{c}]"
        feats = _to_numpy(feats, name)
        if feats.ndim != 2 or 0 in feats.shape:
            raise UserError(f"{name} must be [T, D] (templates x width), got shape {feats.shape}")
        out.append(_l2_rows(feats, name).mean(axis=0))
    widths = {v.shape[0] for v in out}
    if len(widths) != 1:
        raise UserError(f"text_feats_per_class has classes of different widths {sorted(widths)}; expected one D")
    return np.stack(out)


def _check_labels(labels: Any, n_images: int, n_classes: int) -> np.ndarray:
    lab = _to_numpy(np.asarray(labels) if isinstance(labels, (list, tuple)) else labels, "labels")
    if lab.ndim != 1 or lab.shape[0] != n_images:
        raise UserError(f"labels must be 1-D with one entry per image ({n_images}), got shape {lab.shape}")
    if not np.issubdtype(lab.dtype, np.integer):
        raise UserError(f"labels must be integer class indices, got dtype {lab.dtype}")
    if n_images and (lab.min() < 0 or lab.max() >= n_classes):
        raise UserError(f"labels must lie in 0..{n_classes - 1} (one class per text entry), got {lab.min()}..{lab.max()}")
    counts = np.bincount(lab, minlength=n_classes)
    empty = np.flatnonzero(counts == 0)
    if empty.size:
        raise UserError(f"class(es) {empty[:10].tolist()} have no images; every class needs at least one")
    return lab.astype(np.int64)


def class_image_embeddings(
    image_feats: Any, labels: Any, n_classes: int, *, seed: int, fraction: float = 0.5
) -> np.ndarray:
    """Class image embeddings [C, D] (float64): per class c, the mean of the l2-normalised embeddings
    of ceil(fraction * n_c) images drawn without replacement with numpy's default_rng(seed).
    image_feats: [M, D]; labels: [M] integer class indices in 0..n_classes-1."""
    if not 0 < fraction <= 1:
        raise UserError(f"fraction must be in (0, 1], got {fraction!r}")
    feats = _to_numpy(image_feats, "image_feats")
    if feats.ndim != 2 or 0 in feats.shape:
        raise UserError(f"image_feats must be [M, D] (images x width), got shape {feats.shape}")
    lab = _check_labels(labels, feats.shape[0], n_classes)
    rng = np.random.default_rng(seed)
    out = np.empty((n_classes, feats.shape[1]))
    for c in range(n_classes):
        members = np.flatnonzero(lab == c)
        chosen = rng.choice(members, size=math.ceil(fraction * members.size), replace=False)
        out[c] = _l2_rows(feats[np.sort(chosen)], f"image_feats (class {c})").mean(axis=0)
    return out


def match_classes(
    image_class: Any, text_class: Any, *, solver: str = "faq", seed: int = 0, restarts: int | None = None
) -> dict[str, Any]:
    """Blind-match C image classes [C, D_img] to C class names [C, D_txt]; row c of each is class c.

    Returns top1 (expected over tied classes, module docstring), null_tail (P(top-1 >= it) under a
    uniform matching), tied_classes (index groups per side), top5 (accuracies in [0, 1]), correlation
    (of the standardised kernels under the found matching), truth_correlation (under the true matching; above `correlation` means the solver
    missed a better optimum), objective and permutation (image class c -> name permutation[c]).
    """
    A, B = cosine_kernel(image_class), cosine_kernel(text_class)
    if A.shape != B.shape:
        raise UserError(f"image side has {A.shape[0]} classes but text side has {B.shape[0]}; expected the same C")
    result = blind_match(A, B, solver=solver, seed=seed, restarts=restarts)
    n = A.shape[0]
    truth = np.arange(n)
    candidates = candidate_lists(A, B, result.permutation, k=TOP_K)
    truth_objective = qap_objective(standardize_kernel(A, "A"), standardize_kernel(B, "B"), truth)
    groups = tie_groups(image_class), tie_groups(text_class)
    weights = assignment_weights(*groups)
    correct = float(weights[truth, result.permutation].sum())
    return {
        "top1": correct / n,
        "null_tail": null_tail(weights, correct, seed),
        "tied_classes": {side: sorted(np.flatnonzero(g == v).tolist() for v in np.unique(g) if (g == v).sum() > 1)
                         for side, g in zip(("image", "text"), groups)},
        "top5": float(np.mean((candidates == truth[:, None]).any(axis=1))),
        "objective": result.objective,
        "correlation": result.correlation,
        "truth_correlation": truth_objective / (n * (n - 1)),
        "permutation": result.permutation.tolist(),
    }


def _mean_std(values: list[float]) -> dict[str, Any]:
    arr = np.asarray(values, dtype=np.float64)
    return {
        "mean": float(arr.mean()),
        "std": float(arr.std(ddof=1)) if arr.size > 1 else 0.0,
        "per_seed": [float(v) for v in arr],
    }


def _select_layer(feats: Any, layer: int | None, name: str) -> Any:
    """feats itself when layer is None; else feats[layer] (a list/sequence of layers or [L, ...] tensor)."""
    if layer is None:
        return feats
    if isinstance(layer, bool) or not isinstance(layer, int):
        raise UserError(f"{name} layer must be an integer index or None, got {layer!r}")
    try:
        return feats[layer]
    except (TypeError, IndexError):
        n_layers = len(feats) if hasattr(feats, "__len__") else "no"
        raise UserError(f"{name} layer {layer} is out of range for {name} with {n_layers} layer(s)") from None


def zeroshot_eval(
    image_feats: Any,
    labels: Any,
    text_feats_per_class: Any,
    *,
    seeds: Sequence[int] = (0, 1, 2, 3, 4),
    solver: str = "faq",
    restarts: int | None = None,
    fraction: float = 0.5,
    image_layer: int | None = None,
    text_layer: int | None = None,
) -> dict[str, Any]:
    """Zero-shot matching accuracy of one image layer against one text layer, over seeds.

    image_feats: [M, D_img] image embeddings, or (with image_layer) a sequence of layers / [L, M, D]
        from which layer `image_layer` is used. labels: [M] class indices 0..C-1.
    text_feats_per_class: [C, T, D_txt] or a list of C [T_c, D_txt] (templates per class), or (with
        text_layer) a sequence over layers of those.
    Returns a JSON-ready dict for a result record (kind "zeroshot"): metric_id, params, score (mean
    top-1), null_tails (per seed, `null_tail`), chance (1/C), higher_is_better, n_classes, and extra
    (top1/top5/correlation/truth_correlation as {mean, std, per_seed}, chance_top5, permutations, images
    per class, and tied_classes when any class ties).
    """
    seeds = list(seeds)
    if not seeds or any(isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 0 for s in seeds):
        raise UserError(f"seeds must be a non-empty list of integers >= 0, got {seeds!r}")
    text_class = class_text_embeddings(_select_layer(text_feats_per_class, text_layer, "text_feats_per_class"))
    n_classes = text_class.shape[0]
    if n_classes < 3:
        raise UserError(f"zero-shot matching needs at least 3 classes, got {n_classes}")
    image_feats = _select_layer(image_feats, image_layer, "image_feats")
    per_seed = [
        match_classes(
            class_image_embeddings(image_feats, labels, n_classes, seed=int(s), fraction=fraction),
            text_class, solver=solver, seed=int(s), restarts=restarts,
        )
        for s in seeds
    ]
    counts = np.bincount(_check_labels(labels, len(image_feats), n_classes), minlength=n_classes)
    top1 = _mean_std([r["top1"] for r in per_seed])
    tied = {}
    if any(r["tied_classes"]["image"] or r["tied_classes"]["text"] for r in per_seed):
        tied = {"tied_classes": {
            "text": per_seed[0]["tied_classes"]["text"], "image_per_seed": [r["tied_classes"]["image"] for r in per_seed],
            "top1": "expected over uniform relabellings within each group (the kernels cannot tell them apart)"}}
    return {
        "metric_id": METRIC_ID,
        "params": {
            "solver": solver,
            "restarts": restarts if restarts is not None else DEFAULT_RESTARTS.get(solver),
            "seeds": [int(s) for s in seeds],
            "fraction": fraction,
            "kernel": "cosine, standardised off-diagonal",
            "k": TOP_K,
        },
        "score": top1["mean"],
        "null_tails": [r["null_tail"] for r in per_seed],
        "chance": 1.0 / n_classes,
        "higher_is_better": True,
        "n_classes": n_classes,
        "extra": {
            "top1": top1,
            "top5": _mean_std([r["top5"] for r in per_seed]),
            "chance_top5": min(TOP_K, n_classes) / n_classes,
            "correlation": _mean_std([r["correlation"] for r in per_seed]),
            "truth_correlation": _mean_std([r["truth_correlation"] for r in per_seed]),
            "permutations": [r["permutation"] for r in per_seed],
            "images_per_class": {"min": int(counts.min()), "max": int(counts.max()), "n_images": int(counts.sum())},
            "layers": {"image": image_layer, "text": text_layer},
            **tied,
        },
    }


__all__ = [
    "METRIC_ID",
    "class_image_embeddings",
    "class_text_embeddings",
    "match_classes",
    "random_matching_tail",
    "zeroshot_eval",
]
