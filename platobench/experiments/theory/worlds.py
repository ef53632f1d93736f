"""Finite worlds: states with a distribution, positive-pair graphs, and how modalities observe them.

A world (Balestriero & LeCun, "Proving and Improving the Platonic Representation Hypothesis with JEPAs",
finite-world setting) has n states with probabilities p [n] (all > 0) and, per modality, a symmetric
non-negative positive-pair matrix W [n, n] normalised to total mass 1: W[i, j] is the probability that a
sampled positive pair links states i and j. A modality observes each state through an injective map
(one-hot codes or distinct random feature vectors), so an encoder of observations can be any function of
the state.

Random families (each returns an unnormalised symmetric W with zero diagonal):
  stochastic block model   blocks of random sizes, edge probability p_in inside / p_out across
  random geometric          points uniform in the unit square, Gaussian-kernel weights within a radius
  weighted Erdos-Renyi      each pair an edge with probability q, weight uniform in [0.5, 1.5]
Mismatched second modalities: `rewire` (a share of the pairs drawn from a randomly rewired graph) and `bad_views`
(a share of the positive pairs replaced by a state paired with a modality-specific noisy copy of itself).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from platobench.api import UserError

FAMILIES = ("sbm", "geometric", "erdos_renyi")


@dataclass(frozen=True)
class World:
    """n states with distribution p [n] and one modality's positive-pair matrix W [n, n] (mass 1)."""

    p: np.ndarray
    W: np.ndarray
    family: str

    @property
    def n(self) -> int:
        return int(self.p.shape[0])


def normalise_pairs(W: np.ndarray) -> np.ndarray:
    """Symmetrise W [n, n] and scale it to total mass 1 (a joint distribution of positive pairs)."""
    W = np.asarray(W, dtype=np.float64)
    if W.ndim != 2 or W.shape[0] != W.shape[1]:
        raise UserError(f"W must be a square [n, n] matrix, got shape {W.shape}")
    if (W < 0).any() or not np.isfinite(W).all():
        raise UserError("W must hold finite non-negative pair weights")
    W = (W + W.T) / 2
    total = W.sum()
    if total <= 0:
        raise UserError("W has no positive pairs (all weights are zero)")
    return W / total


def state_distribution(n: int, rng: np.random.Generator, floor: float = 0.5) -> np.ndarray:
    """p [n]: a mix of `floor` uniform mass and (1 - floor) Dirichlet(1) mass, so every p_i >= floor / n."""
    return floor / n + (1 - floor) * rng.dirichlet(np.ones(n))


def sbm(n: int, rng: np.random.Generator, blocks: int | None = None) -> np.ndarray:
    """Stochastic block model: random block sizes, p_in in [0.3, 0.9], p_out in [0.01, 0.1]."""
    k = int(blocks if blocks is not None else rng.integers(2, 7))
    labels = np.sort(rng.integers(0, k, size=n))
    p_in, p_out = rng.uniform(0.3, 0.9), rng.uniform(0.01, 0.1)
    prob = np.where(labels[:, None] == labels[None, :], p_in, p_out)
    return _symmetric_edges(prob, rng)


def geometric(n: int, rng: np.random.Generator) -> np.ndarray:
    """Random geometric graph: points in [0, 1]^2, weight exp(-r^2 / 2 s^2) for pairs closer than 3 s."""
    x = rng.uniform(size=(n, 2))
    s = rng.uniform(0.08, 0.25)
    r2 = ((x[:, None, :] - x[None, :, :]) ** 2).sum(-1)
    W = np.exp(-r2 / (2 * s * s)) * (r2 < (3 * s) ** 2)
    np.fill_diagonal(W, 0.0)
    return W


def erdos_renyi(n: int, rng: np.random.Generator) -> np.ndarray:
    """Weighted Erdos-Renyi: edge probability q in [0.05, 0.4], weights uniform in [0.5, 1.5]."""
    return _symmetric_edges(np.full((n, n), rng.uniform(0.05, 0.4)), rng)


def _symmetric_edges(prob: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    n = prob.shape[0]
    upper = np.triu(rng.uniform(size=(n, n)) < prob, k=1)
    W = upper * rng.uniform(0.5, 1.5, size=(n, n))
    return W + W.T


def random_world(n: int, rng: np.random.Generator, family: str | None = None) -> World:
    """A world of n states from `family` (or a random one of FAMILIES)."""
    if n < 4:
        raise UserError(f"a world needs at least 4 states, got n={n}")
    family = family or FAMILIES[int(rng.integers(len(FAMILIES)))]
    makers = {"sbm": sbm, "geometric": geometric, "erdos_renyi": erdos_renyi}
    if family not in makers:
        raise UserError(f"family must be one of {list(FAMILIES)}, got {family!r}")
    W = makers[family](n, rng)
    if W.sum() == 0:  # an empty draw: fall back to a single random edge so W is a distribution
        i, j = rng.choice(n, size=2, replace=False)
        W[i, j] = W[j, i] = 1.0
    return World(p=state_distribution(n, rng), W=normalise_pairs(W), family=family)


def rewire(W: np.ndarray, share: float, rng: np.random.Generator) -> np.ndarray:
    """Rewire a `share` in [0, 1] of the positive pairs: with probability `share` a sampled pair comes
    from a randomly rewired copy of the graph (every edge, with its weight, moved to a uniformly random
    pair of distinct states) instead of W. Returns (1 - share) W + share W_rewired, normalised [n, n]."""
    if not 0.0 <= share <= 1.0:
        raise UserError(f"rewire share must be in [0, 1], got {share}")
    n = W.shape[0]
    iu, ju = np.nonzero(np.triu(W, k=1))
    if iu.size == 0:
        raise UserError("W has no edges between distinct states to rewire")
    a = rng.integers(0, n, size=iu.size)
    b = (a + rng.integers(1, n, size=iu.size)) % n  # b != a
    moved = np.zeros((n, n))
    np.add.at(moved, (a, b), W[iu, ju])
    return normalise_pairs((1 - share) * normalise_pairs(W) + share * normalise_pairs(moved))


def confusion_kernel(n: int, rng: np.random.Generator, width: int = 3) -> np.ndarray:
    """A modality-specific row-stochastic kernel K [n, n]: state i's noisy copy is one of `width`
    random other states, with Dirichlet(1) probabilities."""
    K = np.zeros((n, n))
    for i in range(n):
        others = rng.choice(np.delete(np.arange(n), i), size=min(width, n - 1), replace=False)
        K[i, others] = rng.dirichlet(np.ones(others.size))
    return K


def bad_views(W: np.ndarray, p: np.ndarray, good_share: float, K: np.ndarray) -> np.ndarray:
    """Pair matrix when only `good_share` of the positive pairs are good views [n, n].

    A good pair is drawn from W; a bad one pairs a state i ~ p with its noisy copy j ~ K[i] (the
    modality's own confusion kernel), i.e. the symmetrised joint (P K + (P K)^T) / 2.
    Result: good_share * W + (1 - good_share) * that joint, mass 1.
    """
    if not 0.0 <= good_share <= 1.0:
        raise UserError(f"good_share must be in [0, 1], got {good_share}")
    noisy = p[:, None] * K
    return normalise_pairs(good_share * normalise_pairs(W) + (1 - good_share) * normalise_pairs(noisy))


def one_hot_observations(n: int) -> np.ndarray:
    """Observation of state i: the i-th basis vector, [n, n]."""
    return np.eye(n)


def random_observations(n: int, dim: int, rng: np.random.Generator) -> np.ndarray:
    """Observation of state i: a distinct random vector, [n, dim] (injective with probability 1).

    Gaussian rows; when dim >= n the rows are orthonormalised (a random isometric copy of the one-hot
    code), so a linear encoder can realise any function of the state with a well-conditioned map."""
    if dim < 1:
        raise UserError(f"observation dim must be >= 1, got {dim}")
    x = rng.standard_normal((n, dim))
    if dim >= n:
        q, _ = np.linalg.qr(x.T)
        x = q.T
    return x


def sample_pairs(W: np.ndarray, n_pairs: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Draw n_pairs positive pairs (i, j) from the joint W [n, n]: two int arrays [n_pairs]."""
    if n_pairs < 1:
        raise UserError(f"the number of sampled pairs must be >= 1, got {n_pairs}")
    n = W.shape[0]
    flat = rng.choice(n * n, size=n_pairs, p=W.ravel() / W.sum())
    return flat // n, flat % n


def sample_pair_matrix(W: np.ndarray, n_pairs: int, rng: np.random.Generator) -> np.ndarray:
    """The normalised symmetric pair matrix [n, n] of n_pairs pairs drawn from W (multinomial counts;
    the same distribution as `empirical_pairs(*sample_pairs(W, n_pairs, rng), n)`)."""
    if n_pairs < 1:
        raise UserError(f"the number of sampled pairs must be >= 1, got {n_pairs}")
    counts = rng.multinomial(n_pairs, W.ravel() / W.sum()).reshape(W.shape)
    return normalise_pairs(counts.astype(np.float64))


def empirical_pairs(i: np.ndarray, j: np.ndarray, n: int) -> np.ndarray:
    """The normalised symmetric pair matrix [n, n] of sampled pairs (each pair counted both ways)."""
    counts = np.zeros((n, n))
    np.add.at(counts, (i, j), 1.0)
    return normalise_pairs(counts)
