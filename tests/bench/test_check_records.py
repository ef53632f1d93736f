"""`platobench check`: recompute records from cached features and fail when a value moved.

Features are synthetic entries written under the exact cache keys of two demo models (wiring only), so
`platobench run` and `check` run end to end in seconds without loading weights.
"""

from __future__ import annotations

import json
import math
import shutil

import pytest
from bench_fixtures import (
    CHECK_N,
    CHECK_PAIR,
    make_record,
    seeded_check_results,
)

from platobench.bench.check import compare
from platobench.cli import main
from platobench.metrics.resampling import subset_df, subset_se, t_quantile

N, PAIR = CHECK_N, CHECK_PAIR


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    """A cache with the two models' features and the records `platobench run` wrote from it (built once)."""
    return seeded_check_results(tmp_path_factory.mktemp("check"))


@pytest.fixture
def env(seeded, tmp_path, monkeypatch):
    """(results folder of this test — a copy it may edit —, settings file, record files)."""
    home, settings, results = seeded
    monkeypatch.setenv("PLATOBENCH_HOME", str(home))
    shutil.copytree(results, tmp_path / "results")
    files = sorted((tmp_path / "results").rglob("*.json"))
    assert len(files) == 2
    return tmp_path / "results", settings, files


def check(results, *extra):
    return main(["check", "--results", str(results), "--no-extract", *map(str, extra)])


def shift(d, delta):
    """Move a mutual-kNN record's score, grid and subset scores by `delta`, keeping it self-consistent (the interval
    restated from its subset scores at the new score, as the arcsine scheme's depends on it; the calibrated score
    follows the score; perfect = 1)."""
    d.update(score=d["score"] + delta, grid=[[v + delta for v in row] for row in d["grid"]])
    ci = d["ci"]
    if "draws" not in ci:
        ci.update(lo=ci["lo"] + delta, hi=min(1.0, ci["hi"] + delta))  # clipped to the range
    else:  # the interval follows from its subset scores
        ci["draws"] = [v + delta for v in ci["draws"]]
        se = subset_se(ci["draws"], ci["scheme"], d["dataset"]["n"], ci["subset_size"], ci.get("rate"),
                       d["score"] if ci["scheme"] == "arcsine_rate" else None)
        half = t_quantile(ci["level"], subset_df(ci["scheme"], len(ci["draws"]))) * se
        ci.update(lo=max(0.0, d["score"] - half), hi=min(1.0, d["score"] + half))
    d["calibrated"] = (d["score"] - d["null"]["mean"]) / (1 - d["null"]["mean"])


def edit(path, fn):
    data = json.loads(path.read_text())
    fn(data)
    path.write_text(json.dumps(data))


def test_unchanged_records_pass(env, capsys):
    results, _, _ = env
    assert check(results, "--json") == 0
    report = json.loads(capsys.readouterr().out)
    assert report["counts"] == {"ok": 2, "moved": 0, "invalid": 0, "skipped": 0}
    fields = {d["field"].split(" ")[0] for r in report["records"] for d in r["diffs"]}
    assert {"score", "last_layer_score", "calibrated", "null.mean", "ci.lo", "ci.hi"} <= fields
    assert all(d["delta"] <= 1e-9 for r in report["records"] for d in r["diffs"])


def test_moved_score_fails_with_a_diff_table(env, capsys):
    results, _, files = env
    recorded = json.loads(files[0].read_text())["score"]
    edit(files[0], lambda d: shift(d, 0.01))
    assert check(results) == 1
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("| MOVED"))
    assert f"| score | {recorded + 0.01:.6f} | {recorded:.6f} | 1.00e-02 |" in row
    assert "1 moved" in out


def test_tolerance_bounds_the_allowed_change(env):
    results, _, files = env
    edit(files[1], lambda d: shift(d, 0.0005))
    assert check(results) == 0  # 5e-4 < default tol 1e-3
    assert check(results, "--tol", "0.0001") == 1


def test_scores_only_ignores_the_statistics(env):
    results, _, files = env
    def widen(d):  # a wider interval stated without its subset scores (as records written before them)
        d["ci"].update(lo=d["ci"]["lo"] - 0.5)
        for key in ("draws", "scheme", "subset_size"):
            d["ci"].pop(key)

    edit(files[0], widen)
    assert check(results) == 1
    assert check(results, "--scores-only") == 0


def test_record_without_setting_config_uses_the_catalog(env, capsys):
    results, settings, files = env
    edit(files[0], lambda d: d["provenance"].pop("setting_config"))
    assert check(results, "--settings-file", settings) == 0
    assert "used the catalog's setting" in capsys.readouterr().err
    assert check(results) == 1  # an unknown setting fails this record; the other one is still checked


def test_changed_samples_are_not_recomputed_but_listed(env, capsys):
    results, _, files = env
    edit(files[0], lambda d: d["dataset"].update(fingerprint="0" * 64))
    assert check(results, "--json") == 1  # not verified is not passed
    report = json.loads(capsys.readouterr().out)
    skipped = [r for r in report["records"] if r["status"] == "skipped"]
    assert len(skipped) == 1 and "differ from the record's" in skipped[0]["reason"]
    assert report["failed"] is True
    assert check(results, "--allow-skipped") == 0
    assert "FAILED" not in capsys.readouterr().err


def test_changed_n_is_not_verified_and_fails(env, capsys):
    """An edited N fails before any recomputation: the CKA record's interval no longer follows from its
    half-subset scores at that N (their factor sqrt(m / (N - m)) reads N), so the record is invalid."""
    results, _, files = env
    assert json.loads(files[0].read_text())["ci"]["scheme"] == "subsample"
    edit(files[0], lambda d: d["dataset"].update(n=d["dataset"]["n"] * 10))
    assert check(results) == 1
    out = capsys.readouterr().out
    assert "| INVALID | tiny-cka |" in out and "standard error of its 3 subset scores" in out


def test_failures_are_listed_first(env, capsys):
    results, _, files = env
    edit(files[1], lambda d: shift(d, 0.3))
    assert check(results, "--scores-only") == 1
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ") and "status" not in line
            and not line.startswith("|---")]
    assert rows[0].startswith("| MOVED") and rows[-1].startswith("| ok")


def test_a_record_cannot_widen_its_own_tolerance(env, capsys):
    results, _, files = env

    def cheat(d):
        shift(d, 0.05)
        d.update(reproducibility={**(d["reproducibility"] or {}), "check_tolerance": 1.0, "check_tolerance_why": "trust me"})

    edit(files[0], cheat)
    assert check(results, "--scores-only") == 1
    captured = capsys.readouterr()
    assert "1 moved" in captured.out
    assert "states check_tolerance 1.0; not used" in captured.err
    assert "record's own tolerance" not in captured.err


@pytest.mark.parametrize("what", ["score", "ci", "calibrated"])
def test_a_self_contradicting_record_is_invalid(env, capsys, what):
    results, _, files = env
    change = {"score": lambda d: d.update(score=d["score"] + 0.3),
              "ci": lambda d: d["ci"].update(hi=d["score"] - 1e-3),
              "calibrated": lambda d: d.update(calibrated=d["calibrated"] + 0.1)}[what]
    edit(files[0], change)
    assert check(results, "--scores-only") == 1
    out = capsys.readouterr().out
    assert "| INVALID |" in out and "| record | 'contradicts itself' |" in out


def test_missing_features_without_extraction_fail(env, tmp_path, monkeypatch, capsys):
    results, _, _ = env
    monkeypatch.setenv("PLATOBENCH_HOME", str(tmp_path / "empty-home"))
    assert check(results) == 1
    captured = capsys.readouterr()
    assert "are not cached and extraction is disabled (--no-extract)" in captured.out
    assert "no record could be recomputed" in captured.err


def test_bad_arguments_are_user_errors(tmp_path, capsys):
    assert main(["check", "--results", str(tmp_path / "nope")]) == 2
    assert "--results" in capsys.readouterr().err
    (tmp_path / "r").mkdir()
    assert main(["check", "--results", str(tmp_path / "r"), "--tol", "-1"]) == 2
    assert "--tol" in capsys.readouterr().err


def test_compare_reports_grid_and_absent_values():
    old = make_record("s", "a/l", "v/x", 0.5)
    same = compare(old, old)
    assert all(d.delta == 0 for d in same) and not any(d.moved(0.0) for d in same)
    reshaped = make_record("s", "a/l", "v/x", 0.5, grid=[[0.5, 0.1]])
    assert any(d.field.startswith("grid shape 2x3 -> 1x2") and d.moved(1.0) for d in compare(old, reshaped))
    no_null = old.model_copy(update={"null": None})
    moved = [d.field for d in compare(old, no_null) if d.moved(1.0)]
    assert moved == ["null.mean"]
    nan_grid = make_record("s", "a/l", "v/x", 0.5, grid=[[0.4, 0.5, math.nan], [0.1, 0.5, 0.2]])
    worst = compare(old, nan_grid)[-1]
    assert worst.field == "grid[0][2] (largest cell change)" and worst.moved(1.0)


def test_grid_cells_excluded_as_constant_compare_as_equal_only_on_both_sides():
    rec = make_record("demo-mknn", "demo/minilm-l6", "demo/dinov2-s-imgfocus", 0.5, grid=[[None, 0.5], [None, 0.25]])
    assert not any(d.moved(1e-9) for d in compare(rec, rec, statistics=False))
    moved = compare(rec, rec.model_copy(update={"grid": [[0.1, 0.5], [None, 0.25]]}), statistics=False)
    assert any(d.moved(1e-3) for d in moved)
