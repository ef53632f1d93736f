"""benchmarks/gpu_check.py on the CPU with tiny shapes: every section runs and reports positive, finite
figures; MFU is null without a known peak and in (0, 1] with one; a spent budget gives nulls with reasons."""

from __future__ import annotations

import importlib
import json
import math
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture
def gpu_check(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    return importlib.import_module("gpu_check")


def _run(module, out: Path, *extra: str) -> dict:
    rc = module.main(["--tiny", "--device", "cpu", "--out", str(out), "--warmup", "1", "--repeats", "2", *extra])
    assert rc == 0
    return json.loads((out / "gpu_check.json").read_text())


def _positive(value) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


@pytest.mark.slow
def test_tiny_cpu_run_reports_every_section(gpu_check, tmp_path):
    report = _run(gpu_check, tmp_path, "--peak-tflops", "1000")
    for key in ("device", "device_name", "torch", "transformers", "dtype", "notes", "total_s"):
        assert key in report
    assert report["shapes"] == "tiny" and report["peak_tflops"] == 1000.0
    sections = report["sections"]
    assert set(sections) == {"text", "vision", "knn", "grid"}
    for name, section in sections.items():
        assert section["ran"] and "error" not in section and section["skipped"] == [], name
    for name, unit in (("text", "tokens_per_s"), ("vision", "images_per_s")):
        runs = sections[name]["runs"]
        assert {r["mode"] for r in runs} == {"forward", "extract"}
        for r in runs:
            assert r["timed_runs"] == 2
            for key in ("seconds_median", unit, "model_flops", "tflops"):
                assert _positive(r[key]), (name, key, r[key])
            assert 0 < r["mfu"] <= 1
            assert math.isclose(r["tflops"], r["model_flops"] / r["seconds_median"] / 1e12)
        extract = next(r for r in runs if r["mode"] == "extract")
        assert extract["outputs_finite"] and extract["layers_pooled"] == 3  # embeddings + 2 blocks
    knn = sections["knn"]
    assert knn["n"] == 2000 and _positive(knn["torch"]["seconds_median"]) and _positive(knn["torch"]["rows_per_s"])
    assert knn["faiss_gpu"]["seconds_median"] is None and "cpu" in knn["faiss_gpu"]["reason"]
    assert _positive(knn["mutual_knn_score"]["seconds_median"]) and 0 <= knn["mutual_knn_score"]["value"] <= 1
    if knn["faiss_cpu_project_backend"]["seconds_median"] is not None:  # faiss installed: same neighbours
        assert knn["agreement_with_torch"]["faiss_cpu_project_backend"]["mean_overlap"] > 0.99
    grid = sections["grid"]
    assert grid["grid"] == "3x2" and _positive(grid["seconds_median"]) and 0 < grid["grid_mean"] <= 1


@pytest.mark.slow
def test_unknown_peak_gives_null_mfu_and_spent_budget_gives_reasons(gpu_check, tmp_path):
    report = _run(gpu_check, tmp_path / "a", "--sections", "vision")
    assert report["peak_tflops"] is None and any("MFU is null" in note for note in report["notes"])
    assert report["sections"]["text"] == {"ran": False, "reason": "not selected (--sections)"}
    for r in report["sections"]["vision"]["runs"]:
        assert r["mfu"] is None and _positive(r["tflops"])
    report = _run(gpu_check, tmp_path / "b", "--sections", "text,knn,grid", "--budget-s", "1e-9")
    for name in ("text", "knn", "grid"):
        section = report["sections"][name]
        assert section["skipped"] and "skipped" in section["skipped"][0], name
    assert report["sections"]["text"]["runs"] == []
    assert report["sections"]["knn"]["torch"]["seconds_median"] is None
    assert report["sections"]["grid"]["seconds_median"] is None
