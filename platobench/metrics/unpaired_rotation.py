"""Rotation recovery without paired data, scored on held-out pairs, against its paired counterpart.

The JEPA follow-up of the Platonic Representation Hypothesis (Balestriero & LeCun) argues that
independently trained encoders agree up to a rotation, so the rotation can be found with no pairs:

  unpaired  kernels of each side alone (centred linear kernels, which an orthogonal map preserves) ->
            Gromov-Wasserstein coupling -> Hungarian rounding (`matching.blind_match`, solver "gw") ->
            orthogonal Procrustes on the matched rows (`procrustes.fit_rotation`). Uses 0 pairs.
  paired    orthogonal Procrustes on the true training pairs: the linear map with orthonormal rows
            (or columns) that the unpaired method has to rediscover, fitted with N pairs.

Both maps act on normalised features: columns centred with the training means, the matrix scaled to
unit Frobenius norm (as `rotation_residual`). Q [Dx, Dy] has orthonormal rows when Dx <= Dy and
orthonormal columns otherwise (the narrower side zero-padded); its free parameters are those of the
Stiefel manifold, d_min * d_max - d_min (d_min + 1) / 2.

Held-out evaluation on n paired test samples, with Hx, Hy the test features centred with the training
means and scaled to unit Frobenius norm (the convention of `rotation_residual_heldout`):
  residual   ||Hx Q - Hy||_F^2 = 2 - 2 tr(Q^T Hx^T Hy) (narrower side zero-padded), in [0, 4];
             0 = exact rotation, about 2 = unrelated.
  recall@k   share of test samples i whose partner Hy[i] is among the k rows of Hy most cosine-similar
             to Hx[i] Q (ties counted against the partner); chance k / n.
A fitted map is only unique when N > max(Dx, Dy) and the training features span their space; use
enough training samples.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from platobench.errors import UserError
from platobench.metrics.api import score
from platobench.metrics.matching import DEFAULT_RESTARTS, MatchResult, blind_match, centered_linear_kernel
from platobench.metrics.procrustes import fit_rotation
from platobench.metrics.validation import as_features


@dataclass(frozen=True)
class FittedMap:
    """An orthogonal map between normalised feature spaces.

    rotation: Q [Dx, Dy] float64 with orthonormal rows (Dx <= Dy) or columns (Dx > Dy).
    x_mean, y_mean: training column means [Dx], [Dy] (float64), subtracted before mapping.
    method: "unpaired" or "paired"; n_paired: pairs used to fit (0 for unpaired).
    n_params: free parameters of Q (Stiefel manifold dimension); n_entries: Dx * Dy.
    matching: the blind matching behind an unpaired fit (None for paired).
    """

    rotation: torch.Tensor
    x_mean: torch.Tensor
    y_mean: torch.Tensor
    method: str
    n_paired: int
    n_params: int
    n_entries: int
    matching: MatchResult | None = None


def stiefel_params(dx: int, dy: int) -> int:
    """Free parameters of a [dx, dy] matrix with orthonormal rows or columns: d_min d_max - d_min (d_min + 1) / 2."""
    lo, hi = min(dx, dy), max(dx, dy)
    return lo * hi - lo * (lo + 1) // 2


def _normalised(x: torch.Tensor, mean: torch.Tensor, name: str) -> torch.Tensor:
    """x [n, D] minus mean, scaled to unit Frobenius norm (float64)."""
    xc = x.to(torch.float64) - mean
    norm = torch.linalg.matrix_norm(xc)
    if not norm > 0:
        raise UserError(f"{name} is constant across samples; expected varying features")
    return xc / norm


def _fit(x: torch.Tensor, y: torch.Tensor, method: str, n_paired: int, matching: MatchResult | None) -> FittedMap:
    """Procrustes on row-aligned x [N, Dx], y [N, Dy] after centring and unit Frobenius scaling."""
    x_mean, y_mean = x.to(torch.float64).mean(dim=0), y.to(torch.float64).mean(dim=0)
    q = fit_rotation(_normalised(x, x_mean, "X_train"), _normalised(y, y_mean, "Y_train"))
    dx, dy = x.shape[1], y.shape[1]
    return FittedMap(q, x_mean, y_mean, method, n_paired, stiefel_params(dx, dy), dx * dy, matching)


def _train_pair(X: Any, Y: Any, what: str) -> tuple[torch.Tensor, torch.Tensor]:
    x, y = as_features(X, "X_train"), as_features(Y, "Y_train")
    if x.shape[0] != y.shape[0]:
        raise UserError(f"X_train has {x.shape[0]} samples but Y_train has {y.shape[0]}; {what} needs the same N")
    if x.shape[0] < 3:
        raise UserError(f"X_train and Y_train need at least 3 samples, got {x.shape[0]}")
    return x, y


def fit_paired_map(X: Any, Y: Any) -> FittedMap:
    """Orthogonal map fitted on true pairs: row i of X [N, Dx] and Y [N, Dy] is one sample."""
    x, y = _train_pair(X, Y, "a paired fit")
    return _fit(x, y, "paired", x.shape[0], None)


def fit_unpaired_map(
    X: Any, Y: Any, *, solver: str = "gw", seed: int = 0, restarts: int | None = None
) -> FittedMap:
    """Orthogonal map fitted with no pairs: X [N, Dx] and Y [N, Dy] are two unordered sets of N
    samples. Rows are matched by `blind_match` on the centred linear kernels, then Procrustes is
    fitted on X against Y[matching.permutation]."""
    x, y = _train_pair(X, Y, "blind matching")
    matching = blind_match(
        centered_linear_kernel(x), centered_linear_kernel(y), solver=solver, seed=seed, restarts=restarts
    )
    return _fit(x, y[torch.from_numpy(matching.permutation)], "unpaired", 0, matching)


def evaluate_map(fitted: FittedMap, X_test: Any, Y_test: Any, *, ks: Sequence[int] = (1, 5)) -> dict[str, Any]:
    """Held-out residual and retrieval recall@k of a fitted map on paired test samples X_test [n, Dx],
    Y_test [n, Dy] (row i of each is one sample); see the module docstring."""
    x, y = as_features(X_test, "X_test"), as_features(Y_test, "Y_test")
    dx, dy = fitted.rotation.shape
    if x.shape[1] != dx or y.shape[1] != dy:
        raise UserError(
            f"X_test/Y_test widths ({x.shape[1]}, {y.shape[1]}) differ from the training widths ({dx}, {dy})"
        )
    if x.shape[0] != y.shape[0]:
        raise UserError(f"X_test has {x.shape[0]} samples but Y_test has {y.shape[0]}; rows must be paired samples")
    n = x.shape[0]
    if n < 2:
        raise UserError(f"X_test and Y_test need at least 2 samples, got {n}")
    hx, hy = _normalised(x, fitted.x_mean, "X_test"), _normalised(y, fitted.y_mean, "Y_test")
    pred = hx @ fitted.rotation
    residual = float(2.0 - 2.0 * (pred * hy).sum())
    sims = torch.nn.functional.normalize(pred, dim=1) @ torch.nn.functional.normalize(hy, dim=1).T
    # rank of the partner: candidates at least as similar, the partner itself excluded
    rank = (sims >= sims.diagonal()[:, None]).sum(dim=1) - 1
    out: dict[str, Any] = {"residual": residual, "n_test": n}
    for k in ks:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise UserError(f"ks must hold integers >= 1, got {k!r}")
        out[f"recall@{k}"] = float((rank < k).double().mean())
    return out


def rotation_recovery(
    X_train: Any,
    Y_train: Any,
    X_test: Any,
    Y_test: Any,
    *,
    solver: str = "gw",
    seed: int = 0,
    restarts: int | None = None,
) -> dict[str, Any]:
    """Unpaired versus paired rotation recovery, evaluated on held-out pairs.

    X_train [N, Dx], Y_train [N, Dy]: paired training samples; the unpaired fit only sees Y_train
    with its rows shuffled by numpy default_rng(seed), the paired fit sees the pairs. X_test [n, Dx],
    Y_test [n, Dy]: held-out pairs. Returns a JSON-ready dict: per method the held-out residual,
    recall@1, recall@5, pairs used and parameter count; the unpaired method's share of training rows
    matched to their true partner and kernel correlation; `oracle_residual` (the rotation_residual
    of the test pairs with a rotation fitted on them); chance levels.
    """
    x, y = _train_pair(X_train, Y_train, "rotation recovery")
    shuffle = np.random.default_rng(seed).permutation(x.shape[0])
    unpaired = fit_unpaired_map(x, y[torch.from_numpy(shuffle)], solver=solver, seed=seed, restarts=restarts)
    paired = fit_paired_map(x, y)
    assert unpaired.matching is not None
    recovered = shuffle[unpaired.matching.permutation] == np.arange(x.shape[0])
    n_test = as_features(X_test, "X_test").shape[0]
    return {
        "params": {
            "solver": solver,
            "seed": seed,
            "restarts": restarts if restarts is not None else DEFAULT_RESTARTS.get(solver),
            "kernel": "centred linear, standardised",
        },
        "n_train": int(x.shape[0]),
        "unpaired": {
            **evaluate_map(unpaired, X_test, Y_test),
            "n_paired": 0,
            "n_params": unpaired.n_params,
            "train_match_accuracy": float(recovered.mean()),
            "kernel_correlation": unpaired.matching.correlation,
        },
        "paired": {
            **evaluate_map(paired, X_test, Y_test),
            "n_paired": paired.n_paired,
            "n_params": paired.n_params,
            "n_entries": paired.n_entries,
        },
        "oracle_residual": score("rotation_residual", X_test, Y_test),
        "chance": {"residual": 2.0, "recall@1": 1.0 / n_test, "recall@5": min(5, n_test) / n_test},
    }


__all__ = [
    "FittedMap",
    "evaluate_map",
    "fit_paired_map",
    "fit_unpaired_map",
    "rotation_recovery",
    "stiefel_params",
]
