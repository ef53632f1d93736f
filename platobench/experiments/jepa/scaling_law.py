"""A scaling law of misalignment in the share of good views P and the examples seen n.

Balestriero & LeCun (2026) fit misalignment as a function of the share of good views and the training
examples, and test it by predicting new runs before training them. This module's parametrisation (ours,
stated here so it can be argued with) treats a bad view as worth a fraction beta of a good one:

    n_eff = n * (P + beta * (1 - P))            effective good-view examples
    M(P, n) = E + A * n_eff ** (-alpha)         E: irreducible misalignment; A, alpha: power law

so 1 / beta is the sample-efficiency ratio of good over bad views that the law implies. Fitted by
non-linear least squares (scipy `least_squares`, trust-region reflective, bounds E in [0, max M],
A > 0, alpha in (0, 4], beta in [1e-6, 1e3]) from a grid of starting points; the best fit is kept.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy.optimize import least_squares

from platobench.api import UserError

FORMULA = "M(P, n) = E + A * (n * (P + beta * (1 - P))) ** (-alpha)"


@dataclass(frozen=True)
class LawFit:
    """Fitted parameters, the root-mean-square residual on the fit points and their number."""

    e: float
    a: float
    alpha: float
    beta: float
    rmse: float
    n_points: int

    def predict(self, p: np.ndarray, n: np.ndarray) -> np.ndarray:
        """M at shares `p` and example counts `n` (arrays of one shape)."""
        return _model(np.array([self.e, math.log(self.a), self.alpha, math.log(self.beta)]), p, n)

    def as_dict(self) -> dict[str, float | int | str]:
        return {"formula": FORMULA, **asdict(self), "good_over_bad_ratio": 1 / self.beta}


def _model(theta: np.ndarray, p: np.ndarray, n: np.ndarray) -> np.ndarray:
    e, log_a, alpha, log_beta = theta
    n_eff = n * (p + math.exp(log_beta) * (1 - p))
    return e + np.exp(log_a - alpha * np.log(n_eff))


def fit_law(p: np.ndarray, n: np.ndarray, m: np.ndarray) -> LawFit:
    """Fit the law to points (shares `p` in [0, 1], examples `n` >= 1, misalignment `m`), each `[K]`.

    Needs K >= 5 points with at least two distinct shares and two distinct example counts (else the
    parameters are not identified): UserError otherwise."""
    p, n, m = (np.asarray(x, dtype=np.float64) for x in (p, n, m))
    if not (p.shape == n.shape == m.shape and p.ndim == 1):
        raise UserError(f"fit_law: p, n and m must be 1-D arrays of one length, got {p.shape}, {n.shape}, {m.shape}")
    if len(m) < 5 or len(np.unique(p)) < 2 or len(np.unique(n)) < 2:
        raise UserError(
            f"fit_law: {len(m)} points with {len(np.unique(p))} shares and {len(np.unique(n))} example counts; "
            "need >= 5 points, >= 2 shares and >= 2 example counts"
        )
    if np.any((p < 0) | (p > 1)) or np.any(n < 1) or not np.all(np.isfinite(m)):
        raise UserError("fit_law: shares must be in [0, 1], example counts >= 1 and misalignments finite")
    top = float(max(m.max(), 1e-12))
    lower = [0.0, -50.0, 1e-3, math.log(1e-6)]
    upper = [top, 50.0, 4.0, math.log(1e3)]
    best = None
    for e0, alpha0, beta0 in itertools.product((0.0, 0.5 * float(m.min())), (0.1, 0.3, 1.0), (0.01, 0.1, 1.0)):
        n_eff = n * (p + beta0 * (1 - p))
        spread = max(float(np.max(m - e0)), 1e-9)
        a0 = math.log(spread) + alpha0 * math.log(float(np.min(n_eff)))
        theta0 = np.clip([e0, a0, alpha0, math.log(beta0)], lower, upper)
        fit = least_squares(lambda t: _model(t, p, n) - m, theta0, bounds=(lower, upper), method="trf",
                            x_scale="jac", max_nfev=2000)
        if best is None or fit.cost < best.cost:
            best = fit
    assert best is not None
    e, log_a, alpha, log_beta = (float(v) for v in best.x)
    rmse = float(np.sqrt(np.mean(best.fun**2)))
    return LawFit(e=e, a=math.exp(log_a), alpha=alpha, beta=math.exp(log_beta), rmse=rmse, n_points=len(m))
