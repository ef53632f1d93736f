"""The stitching map: vision features -> normalised text embeddings through ONE semi-orthogonal matrix.

Following the applied result of Balestriero & LeCun (JEPA follow-up of the Platonic Representation
Hypothesis), a frozen vision encoder is stitched to a text-only caption decoder by a linear map with
orthonormal rows (or columns); it is the only part that may see image-caption pairs.

Normalisation. Vision features x [N, D_v] are centred with the mean of all N train images and divided
by s = sqrt(mean_i ||x_i - mu||^2), the RMS row norm of the centred train features (`Normaliser`); these
statistics use no pairing. The text side Z [N, D_t] comes in already normalised the same way with caption
statistics. A map is z_hat = x_norm @ Q with Q [D_v, D_t] float64, Q Q^T = I (D_v <= D_t) or Q^T Q = I
(D_v >= D_t).

Fits (`fit_map`):
  paired    orthogonal Procrustes (`procrustes.fit_rotation`: Q = W V^T from the SVD
            x_norm^T Z = W S V^T, narrower side zero-padded) on k pairs drawn without replacement by
            numpy default_rng(seed). With k < max(D_v, D_t) (more precisely: when x_norm^T Z has rank
            below min(D_v, D_t)) the map is underdetermined: the directions the k pairs do not reach are
            completed by the SVD's arbitrary singular vectors, so Q is still semi-orthogonal but not unique.
  shuffled  control: the same k rows as "paired" (same seed), with the caption rows permuted by a
            seeded random k-cycle (a derangement: no row keeps its partner), then Procrustes.
  unpaired  no pairs: min(N, unpaired_n) seeded train rows; the caption side is shuffled by a seeded
            permutation, the rows are matched on centred linear kernels by `matching.blind_match`
            (Gromov-Wasserstein by default; Peyre et al. 2016), then Procrustes of x_norm on the matched
            caption rows (the recipe of `unpaired_rotation.fit_unpaired_map`, here on the stitch
            normalisation). Because the shuffle is known, the share of rows matched to their true
            partner is recorded as a diagnostic; the fit never reads it.
  random    a Haar-distributed semi-orthogonal matrix (`random_map`), seeded, independent of the data.
A Procrustes fit with D_v > D_t is the zero-padded problem: directions of x_norm outside Q's column span
are treated as mapping to zero, so Q recovers a planted map only when x_norm lies in that span.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from platobench.api import (
    DEFAULT_RESTARTS,
    UserError,
    as_features,
    blind_match,
    centered_linear_kernel,
    check_int,
    fit_rotation,
    stiefel_params,
)

METHODS: tuple[str, ...] = ("paired", "shuffled", "unpaired", "random")


@dataclass(frozen=True, eq=False)
class Normaliser:
    """Centre with `mean` [D] (float64), divide by `scale` (> 0): train rows get mean 0 and mean squared
    row norm 1."""

    mean: torch.Tensor
    scale: float

    @classmethod
    def fit(cls, X: Any, name: str = "X_train") -> Normaliser:
        """Statistics of X [N, D] (N >= 2): row mean and RMS row norm of the centred rows."""
        x = as_features(X, name).to(torch.float64)
        if x.shape[0] < 2:
            raise UserError(f"{name} needs at least 2 rows to fit a normaliser, got {x.shape[0]}")
        mean = x.mean(dim=0)
        scale = float((x - mean).square().sum(dim=1).mean().sqrt())
        if not scale > 0:
            raise UserError(f"{name} is constant across rows; expected varying features")
        return cls(mean, scale)

    def normalise(self, X: Any, name: str = "X") -> torch.Tensor:
        """(X - mean) / scale in float64, X [N, D]."""
        x = as_features(X, name)
        if x.shape[1] != self.mean.shape[0]:
            raise UserError(f"{name} has {x.shape[1]} features but the normaliser was fitted on {self.mean.shape[0]}")
        return (x.to(torch.float64) - self.mean) / self.scale

    def __call__(self, X: Any) -> torch.Tensor:
        """(X - mean) / scale, float32 [N, D]."""
        return self.normalise(X).to(torch.float32)


@dataclass(frozen=True, eq=False)
class StitchMap:
    """A fitted stitching map z_hat = x_norm(X) @ weight.

    weight: Q [D_v, D_t] float64, semi-orthogonal. x_norm: the vision-side normaliser.
    method: one of METHODS; k: pairs used to fit (0 for unpaired and random); seed: the fit's seed.
    n_entries: D_v * D_t; n_free: free parameters of Q (Stiefel manifold dimension).
    extra: JSON-ready details of the fit (the blind matching for "unpaired").
    """

    weight: torch.Tensor
    x_norm: Normaliser
    method: str
    k: int
    seed: int
    n_entries: int
    n_free: int
    extra: dict[str, Any] = field(default_factory=dict)

    def apply(self, X: Any) -> torch.Tensor:
        """Predicted normalised text embeddings [n, D_t] float32 of raw vision features X [n, D_v]."""
        return (self.x_norm.normalise(X, "X") @ self.weight).to(torch.float32)

    def describe(self) -> dict[str, Any]:
        """JSON-ready summary: method, k, seed, n_entries, n_free, widths (d_v, d_t), extra."""
        d_v, d_t = self.weight.shape
        return {
            "method": self.method,
            "k": self.k,
            "seed": self.seed,
            "n_entries": self.n_entries,
            "n_free": self.n_free,
            "widths": {"d_v": int(d_v), "d_t": int(d_t)},
            "extra": dict(self.extra),
        }


def random_map(d_v: int, d_t: int, seed: int) -> torch.Tensor:
    """Haar-distributed Q [d_v, d_t] float64 with orthonormal rows (d_v <= d_t) or columns: the QR factor
    of a numpy default_rng(seed) Gaussian [max, min] matrix with its columns' signs fixed so that R has a
    positive diagonal (Mezzadri 2007, "How to generate random matrices from the classical compact groups")."""
    d_v, d_t = check_int(d_v, "d_v", 1), check_int(d_t, "d_t", 1)
    seed = check_int(seed, "seed", 0)
    g = np.random.default_rng(seed).standard_normal((max(d_v, d_t), min(d_v, d_t)))
    q, r = np.linalg.qr(g)
    q = q * np.where(np.diag(r) < 0, -1.0, 1.0)
    return torch.from_numpy(q if d_v >= d_t else q.T.copy())


def _derangement(k: int, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random k-cycle on range(k) (k >= 2): position order[i] receives order[i + 1]."""
    order = rng.permutation(k)
    perm = np.empty(k, dtype=np.int64)
    perm[order] = np.roll(order, -1)
    return perm


def _unpaired(
    xn: torch.Tensor, z: torch.Tensor, rng: np.random.Generator, n: int, seed: int, solver: str, restarts: int | None
) -> tuple[torch.Tensor, dict[str, Any]]:
    """Blind-matched Procrustes on n seeded rows; returns Q and the JSON-ready matching record."""
    rows = torch.from_numpy(np.sort(rng.choice(xn.shape[0], size=n, replace=False)))
    shuffle = rng.permutation(n)
    x_rows, z_shuffled = xn[rows], z[rows][torch.from_numpy(shuffle)]
    matching = blind_match(
        centered_linear_kernel(x_rows), centered_linear_kernel(z_shuffled), solver=solver, seed=seed, restarts=restarts
    )
    q = fit_rotation(x_rows, z_shuffled[torch.from_numpy(matching.permutation)])
    extra = {
        "n_matched": n,
        "solver": solver,
        "restarts": restarts if restarts is not None else DEFAULT_RESTARTS.get(solver),
        "objective": matching.objective,
        "kernel_correlation": matching.correlation,
        "matching_info": matching.info,
        "diagnostic": {"true_partner_share": float((shuffle[matching.permutation] == np.arange(n)).mean())},
    }
    return q, extra


def fit_map(
    method: str,
    X_train: Any,
    Z_train: Any,
    *,
    k: int | None = None,
    seed: int = 0,
    unpaired_n: int = 512,
    solver: str = "gw",
    restarts: int | None = None,
) -> StitchMap:
    """Fit a stitching map (module docstring). X_train [N, D_v]: raw vision features of the N train images;
    Z_train [N, D_t]: normalised text embeddings of their captions (row i of both is one sample).
    k: pairs for "paired"/"shuffled" (None = all N; not accepted by the other methods). unpaired_n: rows
    matched by "unpaired". solver, restarts: `matching.blind_match` options for "unpaired"."""
    if method not in METHODS:
        raise UserError(f"method must be one of {list(METHODS)}, got {method!r}")
    x, z = as_features(X_train, "X_train"), as_features(Z_train, "Z_train").to(torch.float64)
    n = x.shape[0]
    if z.shape[0] != n:
        raise UserError(f"X_train has {n} rows but Z_train has {z.shape[0]}; row i of both must be one train sample")
    if n < 3:
        raise UserError(f"X_train and Z_train need at least 3 train samples, got {n}")
    seed = check_int(seed, "seed", 0)
    if k is not None and method in ("unpaired", "random"):
        raise UserError(f"k (pairs to fit) applies to methods 'paired' and 'shuffled' only, not {method!r}")
    k = n if k is None else check_int(k, "k", 1)
    if k > n:
        raise UserError(f"k must be at most the number of train samples N={n}, got {k}")
    if method == "shuffled" and k < 2:
        raise UserError("k must be >= 2 for method 'shuffled' (one pair cannot be shuffled)")
    unpaired_n = check_int(unpaired_n, "unpaired_n", 3)
    x_norm = Normaliser.fit(x)
    xn = x_norm.normalise(x, "X_train")
    d_v, d_t = x.shape[1], z.shape[1]
    rng = np.random.default_rng(seed)
    extra: dict[str, Any] = {}
    if method == "random":
        q, k = random_map(d_v, d_t, seed), 0
    elif method == "unpaired":
        q, extra = _unpaired(xn, z, rng, min(n, unpaired_n), seed, solver, restarts)
        k = 0
    else:
        rows = rng.choice(n, size=k, replace=False)
        z_rows = rows[_derangement(k, rng)] if method == "shuffled" else rows
        q = fit_rotation(xn[torch.from_numpy(rows)], z[torch.from_numpy(z_rows)])
    return StitchMap(q, x_norm, method, k, seed, d_v * d_t, stiefel_params(d_v, d_t), extra)


__all__ = ["METHODS", "Normaliser", "StitchMap", "fit_map", "random_map"]
