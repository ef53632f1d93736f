"""`platobench stitch`: refusals, the pipeline on a multi-caption toy set, and the CI-sized --quick run whose
planted answer (vision features = a rotation of the text embeddings) the paired map must find."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from platobench import cli
from platobench.data.base import PairedDataset
from platobench.experiments.stitch.evaluate import EvalOptions
from platobench.experiments.stitch.report import print_summary, run_records, write_report
from platobench.experiments.stitch.run import DecoderOptions, StitchConfig, run_stitch
from platobench.experiments.stitch.split import split_dataset
from platobench.features.store import FeatureStore
from platobench.leaderboard.build import build_leaderboard
from platobench.leaderboard.stitch_table import stitch_extra
from platobench.results import load_records
from platobench.zoo import load_zoo


def _fails(capsys, argv: list[str], message: str) -> None:
    assert cli.main(argv) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--map-pairs", "2"], "--map-pairs '2'"),
        (["--k", "2"], "--k is renamed --map-pairs"),
        (["--planted", "-1"], "--planted -1"),
        (["--heldout", "1.5"], "--heldout 1.5"),
        (["--prefix-len", "0"], "--prefix-len 0"),
        (["--epochs", "0"], "--epochs 0"),
        (["--noise", "-0.1"], "--noise -0.1"),
        (["--vision", "", "--text", "demo/minilm-l6"], "nothing to caption"),
        (["--text", "demo/dinov2-s-imgfocus"], "expected a text model"),
        (["--vision", "demo/minilm-l6"], "expected a vision model"),
        (["--dataset", "fashion-mnist"], "stitching needs a paired dataset"),
        (["--setting", "../up"], "--setting"),
    ],
)
def test_stitch_refuses_bad_options(capsys, tmp_path: Path, extra: list[str], message: str) -> None:
    _fails(capsys, ["stitch", "--out", str(tmp_path / "r"), "--report", str(tmp_path / "p"), *extra], message)
    assert not (tmp_path / "r").exists()


def test_stitch_refuses_a_report_inside_the_results_folder(capsys, tmp_path: Path) -> None:
    _fails(capsys, ["stitch", "--quick", "--out", str(tmp_path), "--report", str(tmp_path / "report")],
           "lies inside --out")


def test_stitch_at_scale_names_resolve_before_the_hub_is_needed(capsys, monkeypatch, tmp_path: Path) -> None:
    """The documented COCO command names a hub dataset and hub models that exist in the catalogue and zoo;
    offline, it stops at the dataset with the hub's error, not at an unknown name."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    code = cli.main(["stitch", "--dataset", "coco-captions", "--vision", "dinov2-hf/vit-b14,dinov3/vit-b16.lvd1689m",
                     "--out", str(tmp_path / "r"), "--report", str(tmp_path / "p")])
    err = capsys.readouterr().err
    assert code == 2 and "coco" in err.lower() and "unknown" not in err.lower()


def _toy_dataset() -> PairedDataset:
    """80 samples, two captions each (a COCO-like multi-reference set), built from a small vocabulary."""
    animals = ["cat", "dog", "horse", "bird", "fish", "lion", "cow", "pig", "duck", "frog"]
    colours = ["red", "blue", "green", "yellow", "black", "white", "brown", "pink"]
    views = [[f"A {colours[i % 8]} {animals[i % 10]}.", f"The {animals[i % 10]} is {colours[i % 8]}."]
             for i in range(80)]
    return PairedDataset("toy-stitch", "1", [f"t{i}" for i in range(80)], views, lambda i: None)


def test_run_stitch_on_a_multi_caption_set_scores_against_every_reference(tmp_path: Path, capsys) -> None:
    split = split_dataset(_toy_dataset(), 0.25)
    assert split.views == 2 and len(split.decoder_items) == 2 * len(split.train) - split.dropped
    config = StitchConfig(
        setting="stitch-toy", text=[load_zoo().get("baseline/bag-of-words")], vision=[],
        decoder=DecoderOptions(name="tiny", epochs=40), evaluation=EvalOptions(ks=(8, None), n_boot=50),
        out=tmp_path / "results", planted=0.0, progress=False,
    )
    result = run_stitch(config, split, store=FeatureStore(tmp_path / "features"), home=tmp_path, log=lambda _: None)
    (record,) = result.records
    extra = stitch_extra(record)
    assert extra is not None and extra.split.test == len(split.test) == record.dataset.n
    assert record.dataset.name == "toy-stitch:heldout0.25" and record.kind == "stitch"
    assert all(len(s.references) == 2 for s in extra.samples)
    rows = {(r.variant, r.k) for r in extra.rows}
    n_train = len(split.train)
    assert rows == {("paired", 8), ("paired", n_train), ("unpaired", 0), ("shuffled", n_train), ("random", 0),
                    ("retrieval", n_train), ("text-bound", 0)}
    assert record.score == next(r.cider_d for r in extra.rows if r.variant == "paired" and r.k == n_train)
    assert load_records(tmp_path / "results")[0].score == record.score
    files = write_report(run_records(tmp_path / "results", "stitch-toy", split), split, tmp_path / "report")
    assert [Path(f).name for f in files] == ["stitch.md", "stitch.json", "stitch-k.png"]
    text = (tmp_path / "report" / "stitch.md").read_text()
    assert "text→text upper bound" in text and "Sample captions of baseline/bag-of-words" in text
    assert json.loads((tmp_path / "report" / "stitch.json").read_text())["records"][0]["score"] == record.score
    print_summary(result)
    assert "paired K=8" in capsys.readouterr().out


@pytest.mark.slow
def test_stitch_quick_finds_the_planted_rotation(tmp_path: Path, capsys) -> None:
    out, report = tmp_path / "results", tmp_path / "report"
    assert cli.main(["stitch", "--quick", "--out", str(out), "--report", str(report), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    (record,) = load_records(out)
    assert record.setting == "stitch-tuxpaint-quick" and record.y.name == "synthetic/planted-rotation"
    rows = {(r["variant"], r["k"]): r for r in record.details["stitch"]["rows"]}
    paired = rows[("paired", max(k for v, k in rows if v == "paired"))]
    random, bound = rows[("random", 0)], rows[("text-bound", 0)]
    assert paired["cider_d_ci"][0] > random["cider_d_ci"][1]  # beats the random map beyond both intervals
    assert paired["cider_d"] > 0.8 * bound["cider_d"]  # a planted rotation is undone: near the text bound
    assert rows[("unpaired", 0)]["cider_d"] > random["cider_d_ci"][1]
    assert [Path(p).name for p in summary["report"]] == ["stitch.md", "stitch.json", "stitch-k.png"]
    assert "paired K=8" in (report / "stitch.md").read_text()
    build_leaderboard(out, tmp_path / "board", with_plots=False)
    board = (tmp_path / "board" / "README.md").read_text()
    assert "### stitching" in board and "random orthonormal map" in board
