"""`platobench check` verifies every field the leaderboard displays: recomputed values within the tolerance,
metadata (setting, metric, models, dataset, chosen layers, null draws and seed) exactly against what
would be run. Features are synthetic cache entries of two demo models (wiring only; see bench_fixtures)."""

from __future__ import annotations

import json
import shutil

import pytest
from bench_fixtures import (
    CHECK_N,
    CHECK_PAIR,
    make_record,
    seeded_check_results,
)

from platobench.bench.check_fields import chosen_layers
from platobench.cli import main

N, PAIR = CHECK_N, CHECK_PAIR


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    """A cache with the two models' features and the records `platobench run` wrote from it (built once)."""
    return seeded_check_results(tmp_path_factory.mktemp("hardening-check"))


@pytest.fixture
def env(seeded, tmp_path, monkeypatch):
    """(results folder — a copy this test may edit —, settings file, {setting: record file})."""
    home, settings, results = seeded
    monkeypatch.setenv("PLATOBENCH_HOME", str(home))
    shutil.copytree(results, tmp_path / "results")
    files = {p.parent.name: p for p in (tmp_path / "results").rglob("*.json")}
    assert sorted(files) == ["tiny-cka", "tiny-mknn"]
    return tmp_path / "results", settings, files


def edit(path, fn):
    data = json.loads(path.read_text())
    fn(data)
    path.write_text(json.dumps(data))


def report(capsys, results, *extra):
    """(exit code, JSON report, {setting: record outcome}) of `check --json`."""
    code = main(["check", "--results", str(results), "--no-extract", "--json", *map(str, extra)])
    out = json.loads(capsys.readouterr().out)
    return code, out, {r["setting"]: r for r in out["records"]}


def table(capsys, results, *extra):
    code = main(["check", "--results", str(results), "--no-extract", *map(str, extra)])
    return code, capsys.readouterr().out


def test_unchanged_records_pass_with_every_field_verified(env, capsys):
    results, _, _ = env
    code, out, by = report(capsys, results)
    assert code == 0 and out["counts"] == {"ok": 2, "moved": 0, "invalid": 0, "skipped": 0}
    fields = {d["field"].split(" ")[0] for d in by["tiny-mknn"]["diffs"]}
    assert {"chance", "null.std", "null.p_value", "ci.level"} <= fields
    assert all(r["mismatches"] == [] for r in out["records"])


@pytest.mark.parametrize(("setting", "path", "value"), [
    ("tiny-mknn", "null.p_value", 0.5),
    ("tiny-mknn", "chance", 0.3),
    ("tiny-cka", "null.std", 0.25),
    ("tiny-cka", "ci.level", 0.5),
])
def test_a_changed_recomputed_statistic_fails(env, capsys, setting, path, value):
    results, _, files = env
    parent, _, leaf = path.rpartition(".")
    edit(files[setting], lambda d: (d[parent] if parent else d).update({leaf: value}))
    code, out = table(capsys, results)
    assert code == 1
    row = next(line for line in out.splitlines() if line.startswith("| MOVED"))
    assert f"| {setting} |" in row and f"| {path} | {value:.6f} |" in row


@pytest.mark.parametrize(("setting", "path", "value"), [
    ("tiny-cka", "metric.params.kernel", "rbf"),
    ("tiny-cka", "metric.id", "mutual_knn"),
    ("tiny-mknn", "metric.preprocess", "l2"),
    ("tiny-mknn", "metric.selection", "last"),
    ("tiny-mknn", "metric.higher_is_better", False),
    ("tiny-mknn", "x.revision", "sha256:" + "0" * 64),
    ("tiny-mknn", "y.params_m", 99.0),
    ("tiny-cka", "y.kind", "causal_lm"),
    ("tiny-cka", "x.input", "caption:1"),
    ("tiny-cka", "dataset.name", "tuxpaint"),
    ("tiny-cka", "dataset.revision", "other"),
    ("tiny-mknn", "null.n_perm", 100),
    ("tiny-mknn", "null.seed", 3),
    ("tiny-mknn", "ci.estimand", "population"),
    ("tiny-cka", "ci.method", "percentile bootstrap"),
    ("tiny-mknn", "kind", "zeroshot"),
])
def test_stated_metadata_that_would_not_be_run_is_a_failure(env, capsys, setting, path, value):
    results, _, files = env
    keys = path.split(".")

    def change(d):
        obj = d
        for k in keys[:-1]:
            obj = obj[k]
        obj[keys[-1]] = value

    edit(files[setting], change)
    code, out, by = report(capsys, results)
    assert code == 1 and out["counts"]["invalid"] == 1 and out["failed"]
    assert by[setting]["status"] == "invalid"
    field = "metric.params" if path.startswith("metric.params") else path
    (m,) = [m for m in by[setting]["mismatches"] if m["field"] == field]
    assert m["stated"] != m["expected"]
    other = next(s for s in by if s != setting)
    assert by[other]["status"] == "ok"
    code, text = table(capsys, results)
    assert any(line.startswith("| INVALID") and f"| {field} |" in line for line in text.splitlines())


def test_changed_metric_params_name_stated_and_expected(env, capsys):
    results, _, files = env
    edit(files["tiny-cka"], lambda d: d["metric"]["params"].update(kernel="rbf"))
    code, text = table(capsys, results)
    assert code == 1
    row = next(line for line in text.splitlines() if line.startswith("| INVALID"))
    assert "'kernel': 'rbf'" in row and "'kernel': 'linear'" in row
    assert "1 invalid" in text


def test_different_chosen_layers_fail(env, capsys):
    results, _, files = env
    rec = json.loads(files["tiny-mknn"].read_text())
    grid = rec["grid"]
    # the cell farthest from the chosen score: not a near tie
    i, j = max(((i, j) for i, row in enumerate(grid) for j, v in enumerate(row) if v is not None),
               key=lambda c: abs(grid[c[0]][c[1]] - rec["score"]))
    assert abs(grid[i][j] - rec["score"]) > 0.01
    edit(files["tiny-mknn"], lambda d: d.update(layers=[i, j]))
    code, out, by = report(capsys, results)
    assert code == 1 and by["tiny-mknn"]["status"] == "invalid"
    m, contradiction = by["tiny-mknn"]["mismatches"]
    assert m["field"] == "layers" and m["stated"] == [i, j] and m["expected"] == rec["layers"]
    assert contradiction["field"] == "record" and "not the grid cell" in contradiction["expected"]


def test_chosen_layers_may_differ_only_on_a_near_tie():
    old = make_record("s", "a/l", "v/x", 0.5, grid=[[0.4, 0.4995, 0.3], [0.1, 0.5, 0.2]])
    assert chosen_layers(old, old, 1e-3) == (None, None)
    new = old.model_copy(update={"layers": (0, 1), "score": 0.4995})  # another machine picks the near tie
    mismatch, note = chosen_layers(old, new, 1e-3)
    assert mismatch is None and "near tie" in note
    mismatch, note = chosen_layers(old, new, 1e-4)
    assert mismatch is not None and mismatch.field == "layers" and note is None
    far = old.model_copy(update={"layers": (1, 2), "score": 0.2})
    assert chosen_layers(old, far, 1e-3)[0] is not None
    assert chosen_layers(old, old.model_copy(update={"layers": None}), 1e-3)[0] is not None


def test_an_unknown_setting_name_fails_that_record_only(env, capsys):
    results, _, files = env
    edit(files["tiny-mknn"], lambda d: d.update(setting="no-such-setting"))
    code, out, by = report(capsys, results)
    assert code == 1 and out["counts"] == {"ok": 1, "moved": 0, "invalid": 1, "skipped": 0}
    (m,) = by["no-such-setting"]["mismatches"]
    assert m["field"] == "setting" and m["stated"] == "no-such-setting" and m["expected"] == "tiny-mknn"
    assert by["tiny-cka"]["status"] == "ok"


def test_an_unknown_setting_without_config_fails_and_names_the_fix(env, capsys):
    results, settings, files = env
    edit(files["tiny-mknn"], lambda d: d["provenance"].pop("setting_config"))
    code, out, by = report(capsys, results)
    assert code == 1 and by["tiny-mknn"]["status"] == "invalid" and by["tiny-cka"]["status"] == "ok"
    (m,) = by["tiny-mknn"]["mismatches"]
    assert m["field"] == "setting" and "--settings-file" in m["expected"]
    code, out, by = report(capsys, results, "--settings-file", settings)
    assert code == 0 and by["tiny-mknn"]["status"] == "ok"


def test_a_setting_config_that_is_not_a_mapping_makes_the_record_unreadable(env, capsys):
    results, _, files = env
    edit(files["tiny-mknn"], lambda d: d["provenance"].update(setting_config=["not", "a", "mapping"]))
    code, out, by = report(capsys, results)
    assert code == 1 and out["failed"] and "tiny-mknn" not in by and by["tiny-cka"]["status"] == "ok"
    assert any("provenance.setting_config" in problem for problem in out["unreadable"])


@pytest.mark.parametrize("config", [
    {"id": "tiny-mknn", "metric": "cka"},
    {"id": "../elsewhere", "dataset": "openclipart-1024", "metric": "cka"},
])
def test_an_invalid_setting_config_fails_that_record_only(env, capsys, config):
    results, _, files = env
    edit(files["tiny-mknn"], lambda d: d["provenance"].update(setting_config=config))
    code, out, by = report(capsys, results)
    assert code == 1 and by["tiny-mknn"]["status"] == "invalid" and by["tiny-cka"]["status"] == "ok"
    assert by["tiny-mknn"]["mismatches"][0]["field"] == "setting_config"


def test_a_setting_config_other_than_the_catalogs_is_a_failure(env, capsys):
    results, settings, files = env
    edit(files["tiny-cka"], lambda d: d["provenance"]["setting_config"]["params"].update(kernel="rbf"))
    code, out, by = report(capsys, results, "--settings-file", settings)
    assert code == 1 and by["tiny-cka"]["status"] == "invalid"
    (m,) = [m for m in by["tiny-cka"]["mismatches"] if m["field"] == "setting_config.params"]
    assert m["stated"] == {"kernel": "rbf"} and m["expected"] == {}
    # a description is not part of the protocol
    edit(files["tiny-mknn"], lambda d: d["provenance"]["setting_config"].update(description="edited"))
    assert report(capsys, results, "--settings-file", settings)[2]["tiny-mknn"]["status"] == "ok"


def test_scores_only_skips_null_and_interval_fields_but_not_metadata(env, capsys):
    results, _, files = env
    # a null without its draws (as records written before them): its summary is stated, not derived
    edit(files["tiny-mknn"], lambda d: (d["null"].update(p_value=0.5, n_perm=7), d["null"].pop("draws")))
    assert report(capsys, results, "--scores-only")[0] == 0
    edit(files["tiny-cka"], lambda d: d["x"].update(revision="other"))
    code, _, by = report(capsys, results, "--scores-only")
    assert code == 1 and [m["field"] for m in by["tiny-cka"]["mismatches"]] == ["x.revision"]


def test_perturbed_recomputation_still_passes_unchanged_records(env, capsys):
    results, _, _ = env
    code, out, _ = report(capsys, results, "--perturb", "1e-9", "--scores-only")
    assert code == 0 and out["counts"]["ok"] == 2


def test_a_recomputation_that_raises_fails_that_record_only(env, capsys):
    results, _, files = env
    edit(files["tiny-mknn"], lambda d: d["provenance"]["setting_config"].update(params={"k": 10**6}))
    code, out, by = report(capsys, results)
    assert code == 1 and by["tiny-mknn"]["status"] == "invalid" and by["tiny-cka"]["status"] == "ok"
    (m,) = by["tiny-mknn"]["mismatches"]  # refused before any recomputation: k cannot be scored on these samples
    assert m["field"] == "setting_config" and "cannot score the" in m["expected"] and "k must be smaller" in m["expected"]


@pytest.mark.parametrize(("change", "field"), [
    (lambda d: d["details"]["excluded_layers"].update(x=[0]), "details.excluded_layers.x"),
    (lambda d: d["details"].update(heldout_selection={"halves": [10, 14]}), "details.heldout_selection.halves"),
    (lambda d: d["details"].update(copy_cka=0.5), None),
])
def test_what_a_record_states_of_its_grid_and_halves_is_verified(env, capsys, change, field):
    """The layers a record says it left out, the sizes of held-out halves it states, and the copy statistic a
    board flags from are each what the recomputation gives (an edited one fails)."""
    results, _, files = env
    edit(files["tiny-cka"], change)
    code, out, by = report(capsys, results)
    assert code == 1 and by["tiny-cka"]["status"] in ("invalid", "moved")
    if field is not None:
        assert field in [m["field"] for m in by["tiny-cka"]["mismatches"]]
    else:
        assert any(d["field"] == "details.copy_cka" and d["delta"] > 0.001 for d in by["tiny-cka"]["diffs"])


def test_a_score_edited_by_twice_the_tolerance_fails_and_a_reproduced_one_passes(env, capsys):
    """Both directions: the record as written passes at --tol 0.001; the same record with its score moved by
    0.002 (its grid cell, interval and calibrated score moved with it, so it contradicts nothing) fails."""
    results, _, files = env
    assert report(capsys, results, "--tol", "0.001")[0] == 0
    shift = 0.002

    def moved(d):
        i, j = d["layers"]
        d["score"] += shift
        d["grid"][i][j] = round(d["grid"][i][j] + shift, 8)
        d["ci"].update(lo=d["ci"]["lo"] + shift, hi=d["ci"]["hi"] + shift)
        d["calibrated"] = (d["score"] - d["null"]["mean"]) / (1 - d["null"]["mean"])

    edit(files["tiny-cka"], moved)
    code, out, by = report(capsys, results, "--tol", "0.001")
    assert code == 1 and by["tiny-cka"]["status"] == "moved", by["tiny-cka"]
    assert any(d["field"] == "score" and d["delta"] == pytest.approx(shift, abs=1e-9) for d in by["tiny-cka"]["diffs"])
