"""Pair-free ("blind") matching of two sets of N items through their own kernels only.

Problem (Schnaus et al., "It's a (Blind) Match!", CVPR 2025; Maniparambil et al., CVPR 2024):
given a kernel A [N, N] of N items in one modality (e.g. class-mean image embeddings) and a kernel
B [N, N] of N items in another (e.g. class-name text embeddings), find the permutation that best
aligns the two geometries, without any paired sample.

Kernel standardisation (both sides, before solving): subtract the mean of the off-diagonal entries,
divide by their standard deviation (population, ddof=0), set the diagonal to zero. The result has
off-diagonal mean 0 and variance 1, so neither modality's scale or offset matters, and standardising
twice changes nothing.

Objective (quadratic assignment, QAP, maximised over permutation matrices P with P[i, p[i]] = 1):

    f(p) = trace(A P B P^T) = sum_{i,j} A[i, j] * B[p[i], p[j]]          (A, B standardised)

Item i of A is matched to item p[i] of B. Because both kernels are standardised, f(p) / (N (N-1))
is the Pearson correlation between the off-diagonal entries of A and of B permuted by p (reported as
`MatchResult.correlation`). For a permutation coupling this is the square-loss Gromov-Wasserstein
problem up to a constant, so the `gw` solver optimises the same f.

Solvers:
  faq    scipy.optimize.quadratic_assignment (Fast Approximate QAP, Vogelstein et al. 2015): one
         start at the barycenter of the Birkhoff polytope plus `restarts` seeded randomized starts;
         the permutation with the highest f is kept (first one on ties).
  gw     POT's Gromov-Wasserstein conditional gradient (ot.gromov.gromov_wasserstein, square loss,
         uniform marginals, at most 200 steps; Peyre et al. 2016) from the product coupling plus
         `restarts` seeded starts (1/2 product coupling + 1/2 a random permutation coupling); each
         coupling is rounded
         to a permutation with the Hungarian algorithm (scipy linear_sum_assignment, maximising
         the coupling mass); the permutation with the highest f is kept.
  brute  exhaustive search over all N! permutations (N <= 9): the exact optimum, used as the test
         oracle; ties go to the lexicographically first permutation.

Top-k rule (`candidate_lists`): the gain of placing item i of A at item j of B, with every other
assignment of the solution p kept, is the linearisation of f at p,

    G[i, j] = (A P B)[i, j] = sum_k A[i, k] * B[p[k], j]          (half the gradient df/dP at p)

so that f(p) = sum_i G[i, p[i]]. The top-k list of item i is p[i] followed by the k-1 other items j
of largest G[i, j] (ties: lower j first); "lowest assignment cost" means largest gain. The list
always starts with the solver's assignment, so top-k accuracy >= top-1 accuracy.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import torch
from scipy.optimize import linear_sum_assignment, quadratic_assignment

from platobench.errors import UserError

Solver = Literal["faq", "gw", "brute"]
SOLVERS: tuple[str, ...] = ("faq", "gw", "brute")
DEFAULT_RESTARTS: dict[str, int] = {"faq": 8, "gw": 0, "brute": 0}
BRUTE_MAX_N = 9
_GW_MAX_ITER = 200  # conditional-gradient steps; POT's 10_000 can zig-zag for seconds near a vertex
_BRUTE_CHUNK = 20_000  # permutations scored per vectorised step (~13 MB at N = 9)


@dataclass(frozen=True)
class MatchResult:
    """A solved blind-matching problem.

    permutation: int64 [N]; item i of A is matched to item permutation[i] of B.
    objective: f(p) = trace(A P B P^T) on the standardised kernels (higher is better).
    correlation: objective / (N (N-1)), the Pearson correlation of the off-diagonal kernel entries
        under the matching, in [-1, 1].
    solver: "faq", "gw" or "brute".
    info: solver details (seed, restarts, objective of every start, index of the kept start).
    """

    permutation: np.ndarray
    objective: float
    correlation: float
    solver: str
    info: dict[str, Any] = field(default_factory=dict)


def _as_square(K: Any, name: str) -> np.ndarray:
    """A float64 copy of a square, symmetric, finite kernel given as numpy or torch."""
    if isinstance(K, torch.Tensor):
        K = K.detach().cpu().to(torch.float64).numpy()
    if not isinstance(K, np.ndarray):
        raise UserError(f"{name} must be a numpy array or torch tensor of shape [N, N], got {type(K).__name__}")
    if K.ndim != 2 or K.shape[0] != K.shape[1]:
        raise UserError(f"{name} must be a square kernel [N, N], got shape {tuple(K.shape)}")
    if K.shape[0] < 3:
        raise UserError(f"{name} has N={K.shape[0]} items; blind matching needs N >= 3")
    K = np.array(K, dtype=np.float64)
    if not np.isfinite(K).all():
        raise UserError(f"{name} contains NaN/inf values; expected a finite kernel")
    scale = max(float(np.abs(K).max()), 1e-300)
    if float(np.abs(K - K.T).max()) > 1e-6 * scale:
        raise UserError(f"{name} is not symmetric; expected a kernel with {name}[i, j] == {name}[j, i]")
    return K


def _as_matrix(X: Any, name: str) -> np.ndarray:
    if isinstance(X, torch.Tensor):
        X = X.detach().cpu().to(torch.float64).numpy()
    if not isinstance(X, np.ndarray) or X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        shape = tuple(X.shape) if hasattr(X, "shape") else type(X).__name__
        raise UserError(f"{name} must be a non-empty 2-D array [N, D], got {shape}")
    X = np.array(X, dtype=np.float64)
    if not np.isfinite(X).all():
        raise UserError(f"{name} contains NaN/inf values; expected finite embeddings")
    return X


def standardize_kernel(K: Any, name: str = "K") -> np.ndarray:
    """Standardised copy of a symmetric kernel K [N, N] (float64): off-diagonal entries shifted to
    mean 0 and scaled to standard deviation 1 (ddof=0), diagonal set to 0. Idempotent."""
    K = _as_square(K, name)
    off = ~np.eye(K.shape[0], dtype=bool)
    values = K[off]
    std = float(values.std())
    if not std > 1e-12 * max(float(np.abs(values).max()), 1e-300):
        raise UserError(f"{name} has constant off-diagonal entries; its geometry carries no information to match")
    S = (K - values.mean()) / std
    np.fill_diagonal(S, 0.0)
    return S


def cosine_kernel(E: Any) -> np.ndarray:
    """Cosine-similarity kernel [N, N] (float64) of embeddings E [N, D]: rows l2-normalised, then
    inner products. Unchanged by rotating or rescaling E."""
    E = _as_matrix(E, "E")
    norms = np.linalg.norm(E, axis=1, keepdims=True)
    if (norms == 0).any():
        raise UserError(f"E has {int((norms == 0).sum())} all-zero row(s); cosine similarity is undefined for them")
    U = E / norms
    return U @ U.T


def centered_linear_kernel(X: Any) -> np.ndarray:
    """Linear kernel X_c X_c^T [N, N] (float64) of X [N, D] with columns centred: the geometry an
    orthogonal map preserves exactly (unchanged by rotating or translating X)."""
    X = _as_matrix(X, "X")
    Xc = X - X.mean(axis=0, keepdims=True)
    return Xc @ Xc.T


def qap_objective(A: np.ndarray, B: np.ndarray, permutation: np.ndarray) -> float:
    """f(p) = sum_{i,j} A[i, j] B[p[i], p[j]] for kernels as given (standardise them first)."""
    return float(np.sum(A * B[np.ix_(permutation, permutation)]))


def blind_match(
    A: Any,
    B: Any,
    *,
    solver: str = "faq",
    seed: int = 0,
    restarts: int | None = None,
) -> MatchResult:
    """Match the N items of kernel A [N, N] to the N items of kernel B [N, N] (symmetric, numpy or
    torch) by maximising f(p) = trace(A P B P^T) on the standardised kernels (module docstring).

    solver: "faq", "gw" or "brute" (exact, N <= 9).
    seed: seeds the random restarts; results are reproducible for a given seed.
    restarts: random starts in addition to the deterministic one (faq: barycenter, gw: product
        coupling); default 8 for faq, 0 for gw; ignored by brute.
    """
    if solver not in SOLVERS:
        raise UserError(f"solver must be one of {list(SOLVERS)}, got {solver!r}")
    if restarts is None:
        restarts = DEFAULT_RESTARTS[solver]
    if isinstance(restarts, bool) or not isinstance(restarts, int) or restarts < 0:
        raise UserError(f"restarts must be an integer >= 0, got {restarts!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise UserError(f"seed must be an integer >= 0, got {seed!r}")
    As = standardize_kernel(A, "A")
    Bs = standardize_kernel(B, "B")
    if As.shape != Bs.shape:
        raise UserError(f"A has N={As.shape[0]} items but B has N={Bs.shape[0]}; both sides must have the same N")
    n = As.shape[0]
    if solver == "brute":
        perm = _solve_brute(As, Bs)
        info: dict[str, Any] = {"n_permutations": math.factorial(n)}
    else:
        starts = _solve_faq(As, Bs, seed, restarts) if solver == "faq" else _solve_gw(As, Bs, seed, restarts)
        objectives = [qap_objective(As, Bs, p) for p in starts]
        best = int(np.argmax(objectives))
        perm = starts[best]
        info = {"seed": int(seed), "restarts": restarts, "start_objectives": objectives, "best_start": best}
    objective = qap_objective(As, Bs, perm)
    return MatchResult(
        permutation=perm.astype(np.int64),
        objective=objective,
        correlation=objective / (n * (n - 1)),
        solver=solver,
        info=info,
    )


def _solve_faq(A: np.ndarray, B: np.ndarray, seed: int, restarts: int) -> list[np.ndarray]:
    """FAQ from the barycenter, then from `restarts` seeded randomized starts."""
    # the barycenter start draws nothing; its own generator keeps scipy off NumPy's global RNG (which
    # accelerate's set_seed seeds, and scipy >= 1.17 warns about)
    barycenter = {"maximize": True, "P0": "barycenter", "rng": np.random.default_rng(seed)}
    results = [quadratic_assignment(A, B, method="faq", options=barycenter)]
    for r in range(restarts):
        rng = np.random.default_rng([seed, r])
        options = {"maximize": True, "P0": "randomized", "rng": rng}
        results.append(quadratic_assignment(A, B, method="faq", options=options))
    return [np.asarray(res.col_ind) for res in results]


def _solve_gw(A: np.ndarray, B: np.ndarray, seed: int, restarts: int) -> list[np.ndarray]:
    """Square-loss GW couplings (uniform marginals) from the product coupling and seeded starts,
    each rounded to a permutation by the Hungarian algorithm."""
    import ot  # POT imports scikit-learn (~2.5 s): only when this solver runs

    n = A.shape[0]
    p = np.full(n, 1.0 / n)
    product = np.outer(p, p)
    starts = [product]
    for r in range(restarts):
        rng = np.random.default_rng([seed, r])
        random_perm = np.zeros((n, n))
        random_perm[np.arange(n), rng.permutation(n)] = 1.0 / n
        starts.append(0.5 * product + 0.5 * random_perm)
    perms = []
    for G0 in starts:
        coupling = ot.gromov.gromov_wasserstein(
            A, B, p, p, loss_fun="square_loss", symmetric=True, G0=G0, max_iter=_GW_MAX_ITER
        )
        _, cols = linear_sum_assignment(np.asarray(coupling), maximize=True)
        perms.append(cols)
    return perms


def _solve_brute(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """The exact maximiser of f over all N! permutations (N <= BRUTE_MAX_N), lexicographically first on ties."""
    n = A.shape[0]
    if n > BRUTE_MAX_N:
        raise UserError(f"solver 'brute' is exact only for N <= {BRUTE_MAX_N} ({BRUTE_MAX_N}! permutations), got N={n}")
    all_perms = np.array(list(itertools.permutations(range(n))), dtype=np.int64)
    best_value, best_perm = -np.inf, all_perms[0]
    for start in range(0, len(all_perms), _BRUTE_CHUNK):
        chunk = all_perms[start : start + _BRUTE_CHUNK]
        values = np.einsum("ij,pij->p", A, B[chunk[:, :, None], chunk[:, None, :]])
        i = int(np.argmax(values))
        if values[i] > best_value:
            best_value, best_perm = float(values[i]), chunk[i]
    return best_perm


def assignment_gain(A: Any, B: Any, permutation: Any) -> np.ndarray:
    """G [N, N] with G[i, j] = sum_k A[i, k] B[p[k], j] on the standardised kernels: the first-order
    gain of placing item i of A at item j of B with the rest of the matching p fixed."""
    As, Bs = standardize_kernel(A, "A"), standardize_kernel(B, "B")
    perm = _check_permutation(permutation, As.shape[0])
    return As @ Bs[perm]


def candidate_lists(A: Any, B: Any, permutation: Any, k: int = 5) -> np.ndarray:
    """Top-k candidates [N, min(k, N)] (int64): row i is p[i] followed by the k-1 other items j of B
    with the largest gain G[i, j] (see `assignment_gain`; ties broken by lower j)."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise UserError(f"k must be an integer >= 1, got {k!r}")
    G = assignment_gain(A, B, permutation)
    n = G.shape[0]
    perm = _check_permutation(permutation, n)
    G[np.arange(n), perm] = np.inf  # the assigned item first
    order = np.argsort(-G, axis=1, kind="stable")
    return order[:, : min(k, n)].astype(np.int64)


def _check_permutation(permutation: Any, n: int) -> np.ndarray:
    perm = np.asarray(permutation)
    if perm.shape != (n,) or not np.issubdtype(perm.dtype, np.integer) or not np.array_equal(np.sort(perm), np.arange(n)):
        raise UserError(f"permutation must be a permutation of 0..{n - 1} (int array of length {n})")
    return perm.astype(np.int64)


__all__ = [
    "DEFAULT_RESTARTS",
    "SOLVERS",
    "MatchResult",
    "assignment_gain",
    "blind_match",
    "candidate_lists",
    "centered_linear_kernel",
    "cosine_kernel",
    "qap_objective",
    "standardize_kernel",
]
