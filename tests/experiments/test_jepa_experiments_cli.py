"""`platobench jepa curve` and `jepa scaling` end to end (--quick: real corpus, real vision model, tiny
encoders) and their refusals of bad input. The slow tests assert the pipeline's outputs, never the size of
an effect: at --quick sizes the numbers test the wiring, not the claim."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from platobench import cli, paths
from platobench.bench.settings import Catalog
from platobench.errors import UserError
from platobench.experiments.jepa.curve import SETTING_PREFIX, check_no_overlap
from platobench.experiments.jepa.curve import write_report as write_curve_report
from platobench.experiments.jepa.experiment_options import QUICK_EVAL_LIMIT
from platobench.experiments.jepa.snapshot_scoring import experiment_setting
from platobench.experiments.jepa.train import CaptionCorpus
from platobench.results import load_records

VISION = "demo/efficientnet-lite0"  # real weights; the cheapest vision model of the session features


def _fails(capsys, argv: list[str], message: str) -> None:
    assert cli.main(argv) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--objectives", "jepa-good,gpt"], "--objectives"),
        (["--examples", "10:5:3"], "--examples"),
        (["--examples", "8:512:3"], "at least the batch size"),
        (["--level", "best"], "--level"),
        (["--seeds", "0"], "--seeds 0"),
        (["--heldout", "1.5"], "--heldout"),
        (["--out", "r", "--report", "r/report"], "lies inside --out"),
        (["--vision", "demo/minilm-l6"], "not vision models"),
    ],
)
def test_curve_refuses_bad_options(capsys, extra, message):
    argv = ["jepa", "curve", "--corpus", "wordnet", "--vision", VISION, *extra]
    _fails(capsys, argv, message)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--shares", "0,1"], "--shares"),
        (["--shares", "0,1/1"], "must be new"),
        (["--shares", "0.5/0.2", "--examples", "64:1024:4"], ">= 2 fit shares"),
        (["--heldout-seeds", "3,3"], "two distinct seeds"),
        (["--heldout-seeds", "1,2"], "may not be a fit seed"),
        (["--fit-seeds", "1"], ">= 2 distinct seeds"),
        (["--grid", "0,1/1"], "--grid is renamed --shares"),  # the former spellings work, with a warning
        (["--seeds", "3,3"], "--seeds is renamed --heldout-seeds"),
        (["--run-seeds", "0,1"], "--run-seeds is renamed --heldout-seeds"),
        (["--setting", "zs-tuxpaint"], "paired setting"),
    ],
)
def test_scaling_refuses_bad_options(capsys, extra, message):
    argv = ["jepa", "scaling", "--corpus", "openmoji", "--vision", VISION, "--limit", "300", "--eval-limit", "32",
            *extra]
    _fails(capsys, argv, message)


def test_experiments_refuse_a_multi_process_launch(capsys, monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    _fails(capsys, ["jepa", "curve", "--corpus", "wordnet", "--vision", VISION], "one process")


def test_experiment_settings_drop_the_null_but_keep_the_protocol():
    mknn, zs = Catalog().resolve_settings("demo-mknn,zs-tuxpaint")
    copy = experiment_setting(mknn, SETTING_PREFIX, keep_null=False)
    assert (copy.id, copy.n_perm, copy.n_ci) == ("jepa-curve-mknn", 0, 0)
    assert copy.model_dump(exclude={"id", "n_perm", "n_ci"}) == mknn.model_dump(exclude={"id", "n_perm", "n_ci"})
    assert experiment_setting(mknn, SETTING_PREFIX, keep_null=True).n_perm == mknn.n_perm
    assert experiment_setting(zs, SETTING_PREFIX, keep_null=False).model_dump(exclude={"id"}) == zs.model_dump(
        exclude={"id"})


def test_training_corpus_cannot_be_the_measured_dataset():
    corpus = CaptionCorpus("tuxpaint", "r", "f", ["a", "b"], [["x", "y"], ["z", "w"]])
    with pytest.raises(UserError, match="training corpus"):
        check_no_overlap(corpus, Catalog().resolve_settings("demo-mknn"))


@pytest.mark.slow
def test_curve_quick_writes_records_plots_and_the_ratio_table(tmp_path: Path, capsys, demo_features):
    out, report = tmp_path / "curve", tmp_path / "report"
    argv = ["jepa", "curve", "--corpus", "wordnet", "--vision", VISION, "--quick", "--seeds", "1", "--out", str(out),
            "--report", str(report)]  # one seed: the wiring; --quick's two seeds double the time and test nothing more
    assert cli.main(argv) == 0
    printed = capsys.readouterr().out
    assert "| setting |" in printed and "baseline/bag-of-words" in printed  # the ratio table, then the board
    summary = json.loads((report / "jepa-curve.json").read_text())
    records = load_records(out)
    curves = [r for r in records if not r.details["jepa_curve"].get("control")]
    # 3 recipes x 1 seed x (initialisation + 3 snapshots) x 3 settings, plus 3 controls x 3 settings
    assert len(curves) == 3 * 1 * 4 * 3 and len(records) - len(curves) == 3 * 3
    seen = {(r.details["jepa_curve"]["recipe"], r.details["jepa_curve"]["seed"], r.details["jepa_curve"]["examples_seen"])
            for r in curves}
    assert seen == {(rec, 0, n) for rec in ("jepa-good", "jepa-bad", "ntp") for n in (0, 64, 128, 256)}
    assert {r.x.kind for r in curves} == {"text_jepa", "causal_lm"}
    assert all(r.provenance.limit == QUICK_EVAL_LIMIT for r in records)
    assert len(summary["tables"]) == 3 and len(summary["plots"]) == 3
    for table in summary["tables"]:
        assert table["reference"] == "jepa-good" and set(table["recipes"]) == {"jepa-bad", "ntp"}
        assert set(table["controls"]) == {"baseline/random-init-minilm-l6", "baseline/bag-of-words",
                                          "baseline/caption-length"}
    for plot in summary["plots"]:
        assert (report / plot).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| setting |" in (report / "jepa-curve.md").read_text()
    assert [run["examples"] for run in summary["runs"]] == [256] * 3 and summary["records"] == len(records)
    # the report is a function of the records: written again from them (read back in another order), it is
    # the same bytes
    again = write_curve_report(list(reversed(records)), tmp_path / "again")[1]
    assert len(again) == 5
    for path in map(Path, again):
        assert path.read_bytes() == (report / path.relative_to(tmp_path / "again")).read_bytes(), path
    # intermediate snapshots are deleted after scoring, the last one of each run is kept
    folders = {paths.home() / "jepa" / "curve" / r.x.name.split("/", 1)[1] for r in curves}
    assert {f.name for f in folders if f.exists()} == {f.name for f in folders if f.name.endswith("-n256")}


@pytest.mark.slow
def test_scaling_quick_predicts_before_training_the_heldout_runs(tmp_path: Path, capsys, demo_features):
    out, report = tmp_path / "scaling", tmp_path / "report"
    argv = ["jepa", "scaling", "--corpus", "wordnet", "--vision", VISION, "--quick", "--out", str(out),
            "--report", str(report), "--json"]
    assert cli.main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    # two fit shares x two fit seeds x four snapshots; one held-out share x two held-out seeds
    assert summary["law"]["n_points"] == 2 * 2 * 4 and summary["comparison"]["pairs"] == 4
    predictions = report / "jepa-scaling-predictions.json"
    written = json.loads(predictions.read_text())
    assert [p["p_good"] for p in written["predictions"]] == [0.5] * 4
    records = load_records(out)
    heldout = [r for r in records if r.details["jepa_scaling"]["role"] == "heldout"]
    assert len(heldout) == 2 * 4  # two seeds x four snapshots
    assert {r.details["jepa_scaling"]["seed"] for r in heldout} == {2, 3}
    assert {r.details["jepa_scaling"]["seed"] for r in records if r not in heldout} == {0, 1}
    record_files = list((out / "jepa-scaling-mknn").glob("*.json"))
    first_heldout = min(f.stat().st_mtime_ns for f in record_files if "mix0.5" in f.name)
    assert predictions.stat().st_mtime_ns < first_heldout  # the predictions were on disk first
    assert all(written["written_at"] <= r.created for r in heldout)
    # the report is a function of the records: written again from them, byte for byte
    from platobench.experiments.jepa.scaling import write_report

    _, again = write_report(load_records(out), tmp_path / "again")
    for path in again:
        assert Path(path).read_bytes() == (report / Path(path).relative_to(tmp_path / "again")).read_bytes()
