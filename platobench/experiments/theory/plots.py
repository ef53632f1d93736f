"""Figures of the theory lab (matplotlib, Agg backend): bound check and scaling law."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from platobench.api import save_figure


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_worlds(report: dict, path: str | Path) -> Path:
    """Misalignment ρ against its bound, one point per world (log-log; the line is ρ = bound)."""
    plt = _pyplot()
    rows = [r for r in report["rows"] if r["bound"] > 0]
    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    for fam in sorted({r["family"] for r in rows}):
        sub = [r for r in rows if r["family"] == fam]
        ax.scatter([r["bound"] for r in sub], [max(r["misalignment"], 1e-16) for r in sub], s=10, label=fam,
                   alpha=0.7)
    lo = min(min(r["bound"] for r in rows), 1e-8)
    ax.plot([lo, 2], [lo, 2], "k--", lw=1, label="misalignment = bound")
    ax.axvline(2.0, color="grey", lw=0.8, ls=":", label="trivial bound (2)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("Davis-Kahan bound on ρ")
    ax.set_ylabel("misalignment ρ (rotation residual)")
    ax.set_title(f"{report['worlds']} worlds, seed {report['seed']}: {report['violations']} violations, "
                 f"max ratio {report['max_ratio']:.3f}", fontsize=9)
    ax.legend(fontsize=8)
    return _save(fig, path)


def plot_scaling(report: dict, path: str | Path) -> Path:
    """Left: ρ against N per good-view share g with the fitted law; right: held-out runs, predicted
    against observed, next to the seed rerun against observed."""
    plt = _pyplot()
    from platobench.experiments.theory.experiments import scaling_law

    law = report["law"]
    theta = np.array([np.log(law["a"]), law["alpha"], np.log(law["b"]), law["beta"]])
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 4.2))
    goods = sorted({r["good"] for r in report["fit"]})
    cmap = plt.get_cmap("viridis")
    for k, g in enumerate(goods):
        sub = [r for r in report["fit"] if r["good"] == g]
        color = cmap(k / max(1, len(goods) - 1))
        ax.scatter([r["pairs"] for r in sub], [r["misalignment"] for r in sub], s=12, color=color, label=f"g={g:g}")
        Ns = np.geomspace(min(r["pairs"] for r in sub), max(r["pairs"] for r in sub), 50)
        ax.plot(Ns, scaling_law(np.full_like(Ns, g), Ns, theta), color=color, lw=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("sampled positive pairs N")
    ax.set_ylabel("misalignment ρ")
    ax.set_title(f"ρ = {law['a']:.3g}(1-g)^{law['alpha']:.2f} + {law['b']:.3g} N^-{law['beta']:.2f}", fontsize=9)
    ax.legend(fontsize=7, ncol=2)
    obs = np.array([r["misalignment"] for r in report["heldout"]])
    bx.scatter(obs, [r["predicted"] for r in report["heldout"]], s=12, label="law prediction")
    bx.scatter(obs, [r["rerun"] for r in report["heldout"]], s=12, marker="x", label="rerun, other seed")
    lim = [obs.min() / 2, obs.max() * 2]
    bx.plot(lim, lim, "k--", lw=1)
    bx.set_xscale("log")
    bx.set_yscale("log")
    bx.set_xlabel("held-out run ρ")
    bx.set_ylabel("predicted ρ")
    bx.set_title(f"RMSE log10: law {report['heldout_rmse_log10']:.3f}, rerun {report['seed_rerun_rmse_log10']:.3f}",
                 fontsize=9)
    bx.legend(fontsize=8)
    return _save(fig, path)


def _save(fig, path: str | Path) -> Path:
    fig.tight_layout()
    saved = save_figure(fig, path, dpi=120)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return saved
