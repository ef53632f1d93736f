"""The two experiments of `platobench theory`: the bound on many random worlds, and the scaling law.

worlds: for each of n_worlds seeded worlds (family, size n in [10, 120], dimension d in [1, 8], a
    state distribution) build two modalities' pair matrices that differ by a random share (log-uniform
    in [1e-4, 0.1]) of rewired pairs or of bad views, solve both in closed form (platobench.experiments.theory.spectral) and compare the
    misalignment ρ with the a priori Davis-Kahan bound (platobench.experiments.theory.bound). A quarter of the worlds
    are adversarial: d is put where the first modality's relative spectral gap is smallest. A violation
    is ρ > bound + 1e-9 (the slack covers float64 rounding of the eigensolvers when the bound is 0).
scaling: one world, two modalities that see a share g of good views (the rest: each modality's own
    noisy copies) and N sampled positive pairs each; ρ(g, N) between their solutions, a law
    ρ ≈ a (1 - g)^α + b N^(-β) fitted in log space, and its error on held-out runs (new g, N and
    seeds) next to the error of predicting each held-out run by a rerun with another seed (the test of
    Balestriero & LeCun: the law predicts new runs about as well as a seed rerun does).
Every world and run draws from its own generator seeded by (seed, index), so tables reproduce exactly.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import scipy.optimize

from platobench.api import UserError
from platobench.experiments.theory import worlds as wd
from platobench.experiments.theory.bound import davis_kahan_bound, misalignment
from platobench.experiments.theory.spectral import complement_basis, spectral_embedding, whitened_laplacian
from platobench.experiments.theory.threads import single_threaded

VIOLATION_SLACK = 1e-9


@dataclass(frozen=True)
class WorldResult:
    """One world of the bound check: its draw, the misalignment ρ, the bound and their ratio.

    mismatch: "rewire" (modality b: a `share` of the pairs from a rewired graph) or "bad_views" (both
    modalities: a `share` of the pairs are their own noisy copies); ratio = ρ / bound (None if bound 0);
    informative: bound < 2; violation: ρ > bound + VIOLATION_SLACK."""

    index: int
    family: str
    n: int
    d: int
    mismatch: str
    share: float
    adversarial: bool
    misalignment: float
    bound: float
    ratio: float | None
    gap_a: float
    gap_b: float
    perturbation_op: float
    informative: bool
    violation: bool


def _adversarial_dim(W: np.ndarray, p: np.ndarray, d_max: int) -> int:
    """The d in [1, d_max] with the smallest relative gap (μ_{d+1} - μ_d) / μ_{d+1} of W's solution."""
    mu = np.linalg.eigvalsh(whitened_laplacian(W, p, complement_basis(p)))
    rel = [(mu[d] - mu[d - 1]) / max(mu[d], 1e-300) for d in range(1, d_max + 1)]
    return int(np.argmin(rel)) + 1


def one_world(seed: int, index: int) -> WorldResult:
    """Draw world `index` of the check seeded by `seed` and measure misalignment and bound."""
    rng = np.random.default_rng([seed, index])
    n = int(rng.integers(10, 121))
    world = wd.random_world(n, rng, wd.FAMILIES[index % len(wd.FAMILIES)])
    d_max = min(8, n - 2)
    adversarial = index % 4 == 3
    if index % 2 == 0:
        mismatch, share = "rewire", float(10 ** rng.uniform(-4, -1))
        W_a, W_b = world.W, wd.rewire(world.W, share, rng)
    else:
        mismatch, share = "bad_views", float(10 ** rng.uniform(-4, -1))
        W_a = wd.bad_views(world.W, world.p, 1 - share, wd.confusion_kernel(n, rng))
        W_b = wd.bad_views(world.W, world.p, 1 - share, wd.confusion_kernel(n, rng))
    d = _adversarial_dim(W_a, world.p, d_max) if adversarial else int(rng.integers(1, d_max + 1))
    rho = misalignment(spectral_embedding(W_a, world.p, d).U, spectral_embedding(W_b, world.p, d).U)
    b = davis_kahan_bound(W_a, W_b, world.p, d)
    return WorldResult(
        index=index, family=world.family, n=n, d=d, mismatch=mismatch, share=share,
        adversarial=adversarial, misalignment=rho, bound=float(b.bound),
        ratio=rho / b.bound if b.bound > 0 else None, gap_a=b.gap_a, gap_b=b.gap_b,
        perturbation_op=b.perturbation_op, informative=bool(b.informative),
        violation=bool(rho > b.bound + VIOLATION_SLACK),
    )


def run_worlds(n_worlds: int = 300, seed: int = 0) -> dict:
    """The bound check on n_worlds worlds: a JSON-ready summary with the per-world rows under `rows`.

    Keys: worlds, violations, max_ratio, median_ratio (over worlds with a positive bound),
    informative (bound < 2), max_ratio_informative, median_ratio_informative, by_family, rows."""
    if n_worlds < 1:
        raise UserError(f"--n must be >= 1 world, got {n_worlds}")
    with single_threaded():
        rows = [one_world(seed, k) for k in range(n_worlds)]
    ratios = np.array([r.ratio for r in rows if r.ratio is not None])
    inf = np.array([r.ratio for r in rows if r.ratio is not None and r.informative])
    by_family = {}
    for fam in sorted({r.family for r in rows}):
        sub = [r for r in rows if r.family == fam]
        fr = [r.ratio for r in sub if r.ratio is not None]
        by_family[fam] = {
            "worlds": len(sub), "violations": int(sum(r.violation for r in sub)),
            "informative": int(sum(r.informative for r in sub)),
            "max_ratio": float(max(fr)) if fr else None,
            "median_ratio": float(np.median(fr)) if fr else None,
        }
    return {
        "experiment": "theory_worlds",
        "seed": seed,
        "worlds": n_worlds,
        "violations": int(sum(r.violation for r in rows)),
        "max_ratio": float(ratios.max()) if ratios.size else None,
        "median_ratio": float(np.median(ratios)) if ratios.size else None,
        "informative": int(sum(r.informative for r in rows)),
        "max_ratio_informative": float(inf.max()) if inf.size else None,
        "median_ratio_informative": float(np.median(inf)) if inf.size else None,
        "max_misalignment": float(max(r.misalignment for r in rows)),
        "by_family": by_family,
        "rows": [asdict(r) for r in rows],
    }


# --- scaling -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ScalingWorld:
    """A fixed world with two modality confusion kernels; the subject of the scaling experiment."""

    world: wd.World
    K_a: np.ndarray
    K_b: np.ndarray
    d: int


def scaling_world(seed: int, n: int = 60, d: int = 4) -> ScalingWorld:
    """An SBM world of n states with d + 1 blocks (so a d-dimensional solution has a clear gap)."""
    if not 1 <= d <= n - 2:
        raise UserError(f"--dim must be in [1, n-2] = [1, {n - 2}], got {d}")
    rng = np.random.default_rng([seed, 10**6])
    W = wd.sbm(n, rng, blocks=d + 1)
    world = wd.World(p=wd.state_distribution(n, rng), W=wd.normalise_pairs(W), family="sbm")
    return ScalingWorld(world, wd.confusion_kernel(n, rng), wd.confusion_kernel(n, rng), d)


def scaling_run(sw: ScalingWorld, good: float, n_pairs: int, seed: int) -> float:
    """ρ between the two modalities' solutions learned from n_pairs sampled pairs each, at good-view
    share `good`; the pair samples are drawn from a generator seeded by (seed, good, n_pairs)."""
    rng = np.random.default_rng([seed, round(good * 1e6), n_pairs])
    w, p = sw.world, sw.world.p
    sols = [
        spectral_embedding(wd.sample_pair_matrix(wd.bad_views(w.W, p, good, K), n_pairs, rng), p, sw.d).U
        for K in (sw.K_a, sw.K_b)
    ]
    return misalignment(*sols)


def scaling_law(good: np.ndarray, n_pairs: np.ndarray, params: np.ndarray) -> np.ndarray:
    """ρ = a (1 - g)^α + b N^(-β), params = (log a, α, log b, β)."""
    la, alpha, lb, beta = params
    return np.exp(la) * (1 - good) ** alpha + np.exp(lb) * n_pairs ** (-beta)


def fit_scaling_law(good: np.ndarray, n_pairs: np.ndarray, rho: np.ndarray) -> np.ndarray:
    """Least squares on log ρ (scipy.optimize.least_squares); returns (log a, α, log b, β)."""
    def resid(theta: np.ndarray) -> np.ndarray:
        return np.log(scaling_law(good, n_pairs, theta)) - np.log(rho)

    fit = scipy.optimize.least_squares(resid, x0=np.array([0.0, 2.0, 0.0, 1.0]),
                                       bounds=([-30, 0.1, -30, 0.1], [30, 6, 30, 3]))
    return fit.x


def run_scaling(
    seed: int = 0,
    n_states: int = 60,
    dim: int = 4,
    goods: tuple[float, ...] = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0),
    pair_counts: tuple[int, ...] = (300, 1000, 3000, 10_000, 30_000, 100_000),
    fit_seeds: int = 2,
    heldout: int = 85,
) -> dict:
    """Fit the law on the grid goods x pair_counts x fit_seeds and test it on `heldout` new runs.

    Returns a JSON-ready dict: law parameters, fit error, held-out prediction error and seed-rerun
    error (both RMSE of log10 ρ), their ratio, and the runs themselves."""
    if heldout < 2:
        raise UserError(f"--heldout-runs must be >= 2 runs, got {heldout}")
    if any(not 0.0 <= g <= 1.0 for g in goods):
        raise UserError(f"good-view shares must lie in [0, 1], got {list(goods)}")
    with single_threaded():
        return _run_scaling(seed, n_states, dim, goods, pair_counts, fit_seeds, heldout)


def _run_scaling(seed: int, n_states: int, dim: int, goods: tuple[float, ...], pair_counts: tuple[int, ...],
                 fit_seeds: int, heldout: int) -> dict:
    sw = scaling_world(seed, n_states, dim)
    grid = [(g, N, s) for g in goods for N in pair_counts for s in range(fit_seeds)]
    rho = np.array([scaling_run(sw, g, N, seed * 1000 + s) for g, N, s in grid])
    G = np.array([g for g, _, _ in grid])
    Ns = np.array([N for _, N, _ in grid], dtype=np.float64)
    theta = fit_scaling_law(G, Ns, rho)
    fit_err = _rmse_log10(scaling_law(G, Ns, theta), rho)

    rng = np.random.default_rng([seed, 2])
    hg = rng.uniform(min(goods), max(goods), size=heldout)
    hN = np.round(10 ** rng.uniform(np.log10(min(pair_counts)), np.log10(max(pair_counts)), size=heldout))
    first = np.array([scaling_run(sw, g, int(N), seed * 1000 + 500 + k) for k, (g, N) in enumerate(zip(hg, hN))])
    rerun = np.array([scaling_run(sw, g, int(N), seed * 1000 + 700 + k) for k, (g, N) in enumerate(zip(hg, hN))])
    pred_err = _rmse_log10(scaling_law(hg, hN, theta), first)
    seed_err = _rmse_log10(rerun, first)
    la, alpha, lb, beta = (float(t) for t in theta)
    return {
        "experiment": "theory_scaling",
        "seed": seed,
        "states": n_states,
        "dim": dim,
        "law": {"form": "rho = a * (1 - g)**alpha + b * N**(-beta)",
                "a": float(np.exp(la)), "alpha": alpha, "b": float(np.exp(lb)), "beta": beta},
        "fit_runs": len(grid),
        "fit_rmse_log10": fit_err,
        "heldout_runs": heldout,
        "heldout_rmse_log10": pred_err,
        "seed_rerun_rmse_log10": seed_err,
        "prediction_over_rerun": pred_err / seed_err if seed_err > 0 else None,
        "fit": [{"good": float(g), "pairs": int(N), "seed": int(s), "misalignment": float(r)}
                for (g, N, s), r in zip(grid, rho)],
        "heldout": [{"good": float(g), "pairs": int(N), "misalignment": float(a), "rerun": float(b),
                     "predicted": float(q)}
                    for g, N, a, b, q in zip(hg, hN, first, rerun, scaling_law(hg, hN, theta))],
    }


def _rmse_log10(pred: np.ndarray, obs: np.ndarray) -> float:
    return float(np.sqrt(np.mean((np.log10(pred) - np.log10(obs)) ** 2)))


# --- training ----------------------------------------------------------------------------------------

TRAINING_TOLERANCE = 1e-6
MIN_RELATIVE_GAP = 0.05


def run_training(n_worlds: int = 3, n_states: int = 24, dim: int = 3, n_pairs: int = 20_000, seed: int = 0) -> dict:
    """Train JEPA encoders on sampled pairs of random worlds and compare with the closed form.

    Per world: N = n_pairs pairs drawn from W; encoders linear on one-hot observations, linear on random
    isometric observations (dim n) and a tanh MLP on random 8-dimensional observations, trained by
    platobench.experiments.theory.training.train_jepa. `residual` is ρ between the trained encoder and the spectral
    solution of the same sampled pairs (the theorem's prediction: 0 up to optimisation error; the
    report says whether every residual is under TRAINING_TOLERANCE). `residual_population` compares with
    the solution of W itself and `sampling_residual` is closed form (pairs) against closed form (W).
    A draw whose sampled pair graph has a relative gap (μ_{d+1} - μ_d) / μ_{d+1} below MIN_RELATIVE_GAP
    is redrawn, since the solution is unique up to rotation only when the gap is positive."""
    from platobench.experiments.theory.training import train_jepa

    if not 1 <= dim <= n_states - 2:
        raise UserError(f"--dim must be in [1, states-2] = [1, {n_states - 2}], got {dim}")
    if n_states < 4:
        raise UserError(f"--states must be >= 4, got {n_states}")
    rows = []
    with single_threaded():
        for k in range(n_worlds):
            world, pairs, emp = _training_world(seed, k, n_states, dim, n_pairs)
            closed = spectral_embedding(emp, world.p, dim).U
            population = spectral_embedding(world.W, world.p, dim).U
            rng = np.random.default_rng([seed, 4, k])
            setups = (
                ("linear", "one-hot", wd.one_hot_observations(n_states)),
                ("linear", "random isometric", wd.random_observations(n_states, n_states, rng)),
                ("mlp", "random 8-d", wd.random_observations(n_states, 8, rng)),
            )
            for encoder, obs_name, obs in setups:
                trained = train_jepa(obs, world.p, pairs, dim, encoder=encoder, seed=seed * 100 + k)
                rows.append({
                    "world": k, "family": world.family, "encoder": encoder, "observations": obs_name,
                    "residual": misalignment(trained.U, closed),
                    "residual_population": misalignment(trained.U, population),
                    "sampling_residual": misalignment(closed, population),
                    "final_loss": float(trained.losses[-1]),
                })
    worst = max(r["residual"] for r in rows)
    return {
        "experiment": "theory_train", "seed": seed, "worlds": n_worlds, "states": n_states, "dim": dim,
        "pairs": n_pairs, "tolerance": TRAINING_TOLERANCE, "max_residual": worst,
        "within_tolerance": bool(worst <= TRAINING_TOLERANCE), "rows": rows,
    }


def _training_world(seed: int, k: int, n: int, d: int, n_pairs: int, max_draws: int = 100):
    """World k of the training check, its sampled pairs and their pair matrix (redrawn until gap)."""
    for attempt in range(max_draws):
        rng = np.random.default_rng([seed, 3, k, attempt])
        world = wd.random_world(n, rng, wd.FAMILIES[k % len(wd.FAMILIES)])
        pairs = wd.sample_pairs(world.W, n_pairs, rng)
        emp = wd.empirical_pairs(*pairs, n)
        mu = spectral_embedding(emp, world.p, d).eigenvalues
        if mu[d] > 0 and (mu[d] - mu[d - 1]) / mu[d] >= MIN_RELATIVE_GAP:
            return world, pairs, emp
    raise UserError(f"no world with a spectral gap at d={d} in {max_draws} draws; try another --dim")
