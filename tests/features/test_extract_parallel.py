"""Data-parallel extraction (slow, real MiniLM weights): `accelerate launch` with 2 CPU processes splits the
chunks over the processes and writes one merged entry equal to a single-process extraction."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from platobench.data import get_dataset
from platobench.features.extract import extract
from platobench.features.store import FeatureStore
from platobench.zoo import load_zoo

pytestmark = pytest.mark.slow


def test_two_processes_write_the_same_entry_as_one(tmp_path, monkeypatch):
    if shutil.which("accelerate", path=str(Path(sys.executable).parent)) is None:
        pytest.skip("accelerate's launcher is not installed next to this Python")
    env = {**os.environ, "PLATOBENCH_HOME": str(tmp_path / "dp"), "OMP_NUM_THREADS": "1"}
    cmd = [str(Path(sys.executable).parent / "accelerate"), "launch", "--num_processes", "2", "--multi_gpu",
           "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no", "-m", "platobench", "extract",
           "--model", "demo/minilm-l6", "--dataset", "tuxpaint", "--limit", "40", "--chunk-size", "8", "--json"]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    spec, ds = load_zoo().get("demo/minilm-l6"), get_dataset("tuxpaint", limit=40)
    parallel = FeatureStore(tmp_path / "dp" / "features")
    single_home = tmp_path / "single"
    monkeypatch.setenv("PLATOBENCH_HOME", str(single_home))
    single, _ = extract(spec, ds, store=FeatureStore(single_home / "features"), chunk_size=8, progress=False)
    merged, report = extract(spec, ds, store=parallel, progress=False, home=tmp_path / "dp")
    assert report.cached  # written by the two processes, complete
    assert merged.ids == single.ids
    for a, b in zip(merged.layers, single.layers):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-5)
