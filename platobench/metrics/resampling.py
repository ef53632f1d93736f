"""Standard errors from subset scores, paired differences of two scores on the same subsets, and Holm's
step-down adjustment. Torch-free: the leaderboard judges committed records with it, without features.

Two scores computed on the same N samples (the same setting, hence the same seeded subsets of
`stats.subsample_ci` and the same permutation draws of `stats.permutation_null`) are not independent:
models that share a side, or that read the same samples, rise and fall together from one subset to the
next. Their difference has the standard error of the subset-wise differences d_b = a_b - b_b under the
same resampling rule (`subset_se`), which is smaller than the two intervals' widths suggest whenever the
two scores are positively correlated. Comparing two intervals for overlap instead tests at a level far
below .05 and has little power (two 95% intervals that just touch differ by about 2.8 standard errors
of a difference, not 1.96; Schenker & Gentleman 2001).

`subset_se` (shapes: `scores` [B]):
  jackknife   B groups, each left out once: s^2 = (B - 1) / B sum_b (score_b - mean)^2
              (grouped jackknife: Quenouille 1956; Efron & Stein 1981; Shao & Tu 1995, sec. 2.3);
  subsample   B subsets of m of the N samples: s = sd(score_b) sqrt(m / (N - m)) (the delete-d jackknife
              factor, Shao & Wu 1989).
  rate        2B scores: B subsets of m, then B of m' = `rate_small_size(m)` = round(m / 2). With
              Var(score of n samples) = c n^-a, the spread of scores on subsets of m drawn without
              replacement from N is c (m^-a - N^-a), so each size estimates Var at N as
              sd(score_b)^2 / ((N / m)^a - 1), and s^2 is the mean of the two estimates (1 / (2^a - 1)
              and 1 / (4^a - 1) for half- and quarter-subsets; a = 1 with the half-subsets alone is the
              subsample rule). The exponent a is read from the ratio of the two sizes' variances, pooled
              over every cell of the layer grid (`rate_exponent`), and kept in `RATE_BOUNDS` (Bertail,
              Politis & Romano 1999, estimating the rate of convergence from subsamples of several
              sizes). A kNN score's variance falls like 1 / N far from chance and like 1 / N^2 at chance
              (neighbour lists of k out of N); the per-record ratio is too noisy to be read outside [1, 2].
  arcsine_rate
              the rate scheme on the variance-stabilised scale phi = arcsin(sqrt(score)) of a score that is
              a proportion in [0, 1] (Anscombe 1948): its subset draws and grid cells are mapped to phi,
              the exponent (from the pooled ratio times (B - 3) / (B - 1), the F distribution's mean taken
              out) and the standard error s_phi read there as above, and s = s_phi |d score / d phi|
              = s_phi sin(2 phi) at the observed score (the delta method; `linearised`). Cycle kNN, a mean of
              per-sample hits whose rate saturates on small subsets: its variance follows p (1 - p) / n
              more than a power of n, so its quarter-subsets can vary *less* than its halves, which no
              power law fits; on the phi scale the two sizes' ratio is a power law's again.
A difference is referred to Student's t with B - 1 degrees of freedom (`subset_df`), as the interval is. Under
the rate schemes (the arcsine one's draws `linearised` first) each score's subset scores are first scaled to
the spread at N by its own exponent (divided by sqrt((N / m)^a - 1) for their size), then differenced: the two scores may fall at different rates (a
pair far from chance like 1 / N, its control near chance faster), and a difference with one score is that
score's own standard error.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from platobench.results.schema import RATE_BOUNDS, RATE_SCHEMES  # exponent range; schemes stating one

SCHEMES = ("jackknife", "subsample", *RATE_SCHEMES)


def rate_small_size(size: int) -> int:
    """The rate scheme's second subset size m' = round(m / 2), for subsets of m."""
    return round(size / 2)


def subset_df(scheme: str, count: int) -> int:
    """Degrees of freedom of the t interval from `count` subset scores: B - 1, B = count (count / 2 for the
    rate schemes, whose 2B scores are B of each size)."""
    return (count // 2 if scheme in RATE_SCHEMES else count) - 1


def arcsine(scores: np.ndarray | float) -> np.ndarray:
    """phi = arcsin(sqrt(score)) of scores in [0, 1] (clipped into it first: float rounding), in radians."""
    return np.arcsin(np.sqrt(np.clip(np.asarray(scores, dtype=np.float64), 0.0, 1.0)))


def linearised(scores: Sequence[float] | np.ndarray, scheme: str, observed: float) -> tuple[np.ndarray, str]:
    """Subset scores on the score scale whose spread is what the scheme reads, and the scheme that reads them:
    under "arcsine_rate", observed + sin(2 phi_obs) (phi_b - phi_obs) with phi = `arcsine` (the first-order
    map of the phi scale back to the score's, the delta method) read by "rate"; the others unchanged. At a
    score of exactly 0 or 1 that slope vanishes and would give a zero-width interval whatever the draws:
    the raw draws are read by "rate" instead. A linear map of these (e.g. calibration against a null) keeps
    their meaning, as the raw draws' does under the other schemes."""
    s = np.asarray(scores, dtype=np.float64)
    if scheme != "arcsine_rate":
        return s, scheme
    if not 0.0 < observed < 1.0:
        return s, "rate"
    phi_obs = float(arcsine(observed))
    return observed + math.sin(2 * phi_obs) * (arcsine(s) - phi_obs), "rate"


def _rate_factor(a: float, n: int, size: int) -> float:
    """(N / m)^a - 1: the subset variance of m out of N over the variance at N, for Var ~ n^-a."""
    return (n / size) ** a - 1


def rate_exponent(ratio: float, n: int, size: int, small: int) -> float:
    """The exponent a in `RATE_BOUNDS` for which subsets of `small` and of `size` out of `n` samples have
    variances in the ratio `ratio` = var(small) / var(size) = ((N / m')^a - 1) / ((N / m)^a - 1)
    (2^a + 1 for half- and quarter-subsets); a ratio outside the bounds' images, or not finite, is
    clipped to the nearer bound (nan: the lower, the wider interval)."""
    if not 0 < small < size < n:
        raise ValueError(f"subsets of {small} and {size} samples out of N={n}: expected 0 < m' < m < N")

    def implied(a: float) -> float:
        return _rate_factor(a, n, small) / _rate_factor(a, n, size)

    lo, hi = RATE_BOUNDS
    if not ratio > implied(lo):  # also nan
        return lo
    if ratio >= implied(hi):
        return hi
    from scipy.optimize import brentq  # imported on first use: the CLI starts without scipy

    return float(brentq(lambda a: implied(a) - ratio, lo, hi, xtol=1e-12))


def subset_se(scores: Sequence[float] | np.ndarray, scheme: str, n: int, size: int, rate: float | None = None,
              observed: float | None = None) -> float:
    """Standard error of a score from its B subset scores (module docstring; 2B for the rate schemes, the B
    of `size` first); `n` the full sample size, `size` the samples in each subset (the jackknife's N - N / B);
    `rate` the exponent a of the rate schemes (in `RATE_BOUNDS`; only for them); `observed` the full-sample
    score (only for "arcsine_rate", whose standard error is taken at it)."""
    s = np.asarray(scores, dtype=np.float64)
    b = s.size
    if b < 2:
        raise ValueError(f"a standard error needs at least 2 subset scores, got {b}")
    if (rate is not None) != (scheme in RATE_SCHEMES):
        raise ValueError(f"the rate schemes, and only they, take an exponent: scheme {scheme!r}, rate {rate!r}")
    if (observed is not None) != (scheme == "arcsine_rate"):
        raise ValueError(f"the arcsine_rate scheme, and only it, takes the observed score: scheme {scheme!r}, "
                         f"observed {observed!r}")
    if scheme == "arcsine_rate":
        s, scheme = linearised(s, scheme, observed)
    if scheme == "jackknife":
        return math.sqrt((b - 1) / b * float(((s - s.mean()) ** 2).sum()))
    if scheme == "subsample":
        _check_size(n, size)
        return float(s.std(ddof=1)) * math.sqrt(size / (n - size))
    if scheme == "rate":
        return _rate_se(_rate_scaled(s, n, size, rate))
    raise ValueError(f"resampling scheme must be one of {SCHEMES}, got {scheme!r}")


def _rate_scaled(scores: np.ndarray, n: int, size: int, rate: float) -> np.ndarray:
    """The rate scheme's 2B subset scores, each size's divided by sqrt((N / m)^a - 1): their spread is then
    the spread at N (module docstring)."""
    b = scores.size
    _check_size(n, size)
    if not RATE_BOUNDS[0] <= rate <= RATE_BOUNDS[1]:
        raise ValueError(f"rate exponent {rate!r} is outside {list(RATE_BOUNDS)}")
    if b % 2 or b < 4 or rate_small_size(size) < 1:
        raise ValueError(f"the rate scheme's draws are B >= 2 scores on subsets of {size} and B on subsets of "
                         f"{rate_small_size(size)}; got {b} scores")
    factors = np.repeat([_rate_factor(rate, n, size), _rate_factor(rate, n, rate_small_size(size))], b // 2)
    return scores / np.sqrt(factors)


def _check_size(n: int, size: int) -> None:
    if not 0 < size < n:
        raise ValueError(f"subsets of {size} samples out of N={n}: expected 0 < m < N")


def _rate_se(scaled: np.ndarray) -> float:
    """The standard error from scaled rate draws: the mean of the two sizes' variances, square-rooted."""
    half = scaled.size // 2
    return math.sqrt((float(scaled[:half].var(ddof=1)) + float(scaled[half:].var(ddof=1))) / 2)


def t_quantile(level: float, df: int) -> float:
    """The two-sided Student t quantile t_{df, (1 + level) / 2}."""
    from scipy import stats  # imported on first use: the CLI starts without scipy

    return float(stats.t.ppf(0.5 + level / 2, df))


@dataclass(frozen=True)
class PairedDifference:
    """a - b of two scores on the same subsets: the observed difference, its standard error (the subset
    differences', plus the null means' where the scores are excesses over a null), Student's t with
    `df` degrees of freedom, and the one-sided p-values of a > b (`p_greater`) and a < b (`p_less`)."""

    diff: float
    se: float
    df: int
    p_greater: float
    p_less: float

    @property
    def t(self) -> float:
        return self.diff / self.se if self.se > 0 else math.copysign(math.inf, self.diff) if self.diff else 0.0


def paired_difference(
    observed: tuple[float, float],
    draws: tuple[Sequence[float], Sequence[float]],
    scheme: str,
    n: int,
    size: int,
    *,
    extra_var: float = 0.0,
    rates: tuple[float, float] | None = None,
) -> PairedDifference:
    """a - b for observed scores (a, b) with subset scores `draws` (a_b, b_b), drawn on the SAME subsets
    (same seed, N, scheme and size: the caller checks it). `extra_var`: variance added to the subset
    one (the null means' estimation error for excesses over a null). `rates`: the two scores' exponents
    under the rate schemes (each scales its own draws; "arcsine_rate" draws are `linearised` at their own
    observed score first). A zero standard error with a nonzero difference gives p = 0 on its side; two
    equal constant scores give p = 1 on both."""
    a, b = (np.asarray(d, dtype=np.float64) for d in draws)
    if a.shape != b.shape:
        raise ValueError(f"paired subset scores of different lengths: {a.size} and {b.size}")
    if (rates is not None) != (scheme in RATE_SCHEMES):
        raise ValueError(f"the rate schemes, and only they, take the two exponents: scheme {scheme!r}, rates {rates!r}")
    if scheme == "arcsine_rate":
        (a, _), (b, scheme) = linearised(a, scheme, observed[0]), linearised(b, scheme, observed[1])
    if scheme == "rate":
        subset = _rate_se(_rate_scaled(a, n, size, rates[0]) - _rate_scaled(b, n, size, rates[1]))
    else:
        subset = subset_se(a - b, scheme, n, size)
    se = math.sqrt(subset**2 + extra_var)
    diff = observed[0] - observed[1]
    df = subset_df(scheme, a.size)
    if se == 0:
        greater = 0.0 if diff > 0 else 1.0
        less = 0.0 if diff < 0 else 1.0
        return PairedDifference(diff, se, df, greater, less)
    from scipy import stats  # imported on first use: the CLI starts without scipy

    t = diff / se
    return PairedDifference(diff, se, df, float(stats.t.sf(t, df)), float(stats.t.cdf(t, df)))


__all__ = ["PairedDifference", "RATE_BOUNDS", "RATE_SCHEMES", "SCHEMES", "arcsine", "linearised",
           "paired_difference", "rate_exponent", "rate_small_size", "subset_df", "subset_se", "t_quantile"]
