"""A paired setting that cannot score the samples its dataset holds is refused when its jobs are planned,
before any model runs: N = 1 with k = 5 (was: both embeddings files read, then "every layer is constant"
and a traceback), and a held-out selection whose halves are too small for k (was: a failure after both
sides were extracted). The dataset is a datasets file's ids-only entry, its models `loader: features` files.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from platobench.cli import main
from platobench.encoders import precomputed

DATASETS = """version: 1
datasets:
  few-ids:
    type: ids
    ids: ./ids.txt
    licence: CC0-1.0
"""
ZOO = """version: 1
models:
  - name: f/text
    modality: text
    kind: text_encoder
    loader: features
    source: ./text.safetensors
    pooling: avg
    num_layers: 0
  - name: f/vision
    modality: vision
    kind: vision_cnn
    loader: features
    source: ./vision.safetensors
    pooling: avg
    num_layers: 0
"""
SETTINGS = """settings:
  few-mknn:
    dataset: few-ids
    metric: mutual_knn
    params: {k: 5}
    selection: best
    n_perm: 4
    n_ci: 0
  few-mknn-ho:
    dataset: few-ids
    metric: mutual_knn
    params: {k: 5}
    selection: heldout
    n_perm: 4
    n_ci: 0
"""


def files(folder: Path, n: int) -> None:
    """The datasets, zoo and settings files, and the two embeddings files of `n` samples."""
    ids = [f"s{i}" for i in range(n)]
    (folder / "ids.txt").write_text("\n".join(ids) + "\n")
    (folder / "datasets.yaml").write_text(DATASETS)
    (folder / "zoo.yaml").write_text(ZOO)
    (folder / "settings.yaml").write_text(SETTINGS)
    g = torch.Generator().manual_seed(0)
    for name, read in (("text", "caption:0"), ("vision", "image")):
        precomputed.write_safetensors(folder / f"{name}.safetensors", ids, [0], [torch.randn(n, 4, generator=g)],
                                      input=read)


def run(folder: Path, setting: str) -> int:
    return main(["run", "--zoo", str(folder / "zoo.yaml"), "--datasets-file", str(folder / "datasets.yaml"),
                 "--settings-file", str(folder / "settings.yaml"), "--settings", setting, "--pairs",
                 "f/text:f/vision", "--out", str(folder / "results"), "--json"])


@pytest.mark.parametrize("n, setting, problem", [
    (1, "few-mknn", "k must be smaller than the number of samples N: got k=5, N=1"),
    (10, "few-mknn-ho", "its held-out selection scores halves of 5 samples, too few: k must be smaller"),
])
def test_too_few_samples_for_the_setting_fail_at_plan_time(tmp_path, monkeypatch, capsys, n, setting, problem):
    monkeypatch.setenv("PLATOBENCH_HOME", str(tmp_path / "home"))
    files(tmp_path, n)
    assert run(tmp_path, setting) == 1
    (why,) = json.loads(capsys.readouterr().out)["failed"].values()
    assert why.startswith(f"UnscorableSamplesError: setting {setting} (mutual_knn) cannot score the {n} samples of dataset "
                          f"few-ids: {problem}"), why
    assert "Traceback" not in why
    assert not (tmp_path / "home" / "features").exists() or not list((tmp_path / "home" / "features").rglob("*.json"))
