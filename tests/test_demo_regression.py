"""The committed demo records (`results/demo/`, from a real run of `make demo`) must reproduce: `platobench
check` re-extracts the offline demo models where their features are not cached, recomputes every layer grid
and fails when a score or grid cell moved by more than 0.001 (MTEB's results CI). Statistics (nulls, CIs)
are re-checked on one record only, to keep CI time bounded."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from platobench.bench.results import load_records
from platobench.cli import main

pytestmark = pytest.mark.slow
RESULTS = Path(__file__).resolve().parent.parent / "results" / "demo"


def test_committed_demo_records_exist_and_come_from_real_runs():
    records = load_records(RESULTS)
    assert len(records) == 12  # 2 language x 2 vision models x 3 demo settings
    assert {r.setting for r in records} == {"demo-mknn", "demo-cka", "demo-rotation"}
    for r in records:
        assert r.dataset.name == "openclipart-1024" and r.dataset.n == 1024
        assert r.null is not None and r.ci is not None and r.grid is not None
        assert r.language.name.startswith("demo/") and r.vision.name.startswith("demo/")


def test_demo_scores_reproduce_within_tolerance(capsys):
    assert main(["check", "--results", str(RESULTS), "--scores-only", "--strict", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["counts"]["ok"] == 12 and report["counts"]["moved"] == 0


def test_demo_statistics_reproduce_on_one_record(tmp_path, capsys):
    record = sorted((RESULTS / "demo-cka").glob("*.json"))[0]
    (tmp_path / "demo-cka").mkdir()
    shutil.copy(record, tmp_path / "demo-cka" / record.name)
    assert main(["check", "--results", str(tmp_path), "--strict", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["counts"] == {"ok": 1, "moved": 0, "skipped": 0}
