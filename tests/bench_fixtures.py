"""Helpers shared by the leaderboard, check and submit tests (imported by those test files).

`make_record` builds result records synthetically; `seed_features` writes synthetic per-layer features into a
feature cache under the exact key `platobench run` computes for a zoo model, so the runner, `check` and
`submit` can be exercised end to end without loading model weights (wiring only — never results).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from platobench.data import get_dataset
from platobench.features.extract import feature_key
from platobench.features.store import FeatureStore
from platobench.results import DatasetRef, IntervalRef, MetricRef, NullRef, ResultRecord, SideRef
from platobench.zoo import load_zoo

TINY_SETTINGS = """
settings:
  tiny-mknn:
    dataset: openclipart-1024
    metric: mutual_knn
    params: {k: 5}
    preprocess: prh
    selection: best
    n_perm: 4
    n_ci: 3
  tiny-cka:
    dataset: openclipart-1024
    metric: cka
    selection: best
    n_perm: 4
    n_ci: 3
groups:
  tiny: [tiny-mknn, tiny-cka]
"""


def make_record(
    setting: str, language: str, vision: str, score: float, *, higher: bool = True, params_l: float | None = 100.0,
    kind_l: str = "causal_lm", fingerprint: str = "f" * 64, n: int = 64, grid: list[list[float]] | None = None,
    **extra: Any,
) -> ResultRecord:
    """A paired record with a 2x3 grid whose best cell is `score` (unless `grid` is given); layers (1, 1),
    clamped into a smaller grid."""
    grid = grid if grid is not None else [[score - 0.02, score - 0.01, score - 0.03], [score - 0.05, score, score - 0.04]]
    return ResultRecord(
        setting=setting,
        metric=MetricRef(id="mutual_knn" if higher else "rotation_residual_heldout", params={"k": 10},
                         preprocess="prh", selection="best", higher_is_better=higher),
        x=SideRef(name=language, params_m=params_l, kind=kind_l, modality="text", input="caption:0"),
        y=SideRef(name=vision, params_m=22.1, kind="vision_vit", modality="vision", input="image"),
        dataset=DatasetRef(name="openclipart-1024", revision="r1", n=n, fingerprint=fingerprint),
        score=score, layers=(min(1, len(grid) - 1), min(1, len(grid[0]) - 1)), last_layer_score=grid[-1][-1], chance=0.1,
        null=NullRef(mean=0.1 if higher else 1.9, std=0.01, p_value=0.01, n_perm=100, seed=0),
        # as metrics.stats.calibrated_score: perfect 1 (mutual kNN), 0 (rotation residual)
        calibrated=(score - 0.1) / 0.9 if higher else (score - 1.9) / -1.9,
        ci=IntervalRef(lo=score - 0.02, hi=score + 0.02, level=0.95, method="test"), grid=grid, runtime_s=0.1,
        **extra,
    )


def seed_features(home: Path, model: str, n: int, *, width: int = 16, seed: int = 0, shared: int = 1234,
                  zoo_files: tuple[str, ...] = ()) -> None:
    """Cache synthetic features of zoo `model` on the first `n` openclipart-1024 samples under `home`:
    every layer is a fixed random map of a latent shared by all models seeded with the same `shared`,
    plus model-specific noise, so paired scores are above chance."""
    spec = load_zoo(zoo_files).get(model)
    ds = get_dataset("openclipart-1024", limit=n)
    prompt = "caption:0" if spec.modality == "text" else "image"
    key = feature_key(spec, ds, prompt=prompt, device=torch.device("cpu"))
    latent = torch.randn(n, 8, generator=torch.Generator().manual_seed(shared))
    g = torch.Generator().manual_seed(seed)
    layers = [latent @ torch.randn(8, width, generator=g) + 0.5 * (i + 1) * torch.randn(n, width, generator=g)
              for i in range(len(key.layers))]
    with FeatureStore(home / "features").writer(key, ds.ids, key.layers, [width] * len(key.layers)) as w:
        w.write_chunk(0, layers)
        w.finalize()


CHECK_N = 24
CHECK_PAIR = "demo/minilm-l6:demo/dinov2-s-imgfocus"


def seeded_check_results(tmp: Path) -> tuple[Path, Path, Path]:
    """Seed a cache under `tmp/home` with the two demo models' features (CHECK_N samples) and run the tiny
    settings on CHECK_PAIR into `tmp/results` -> (home, settings file, results folder)."""
    import pytest

    from platobench.cli import main

    home = tmp / "home"
    seed_features(home, "demo/minilm-l6", CHECK_N, seed=1)
    seed_features(home, "demo/dinov2-s-imgfocus", CHECK_N, seed=2)
    settings = tmp / "tiny.yaml"
    settings.write_text(TINY_SETTINGS)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PLATOBENCH_HOME", str(home))
        assert main(["run", "--pairs", CHECK_PAIR, "--settings", "tiny", "--settings-file", str(settings),
                     "--limit", str(CHECK_N), "--out", str(tmp / "results"), "--json"]) == 0
    return home, settings, tmp / "results"
