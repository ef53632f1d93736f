"""`platobench check` of stitch records: the stored captions are re-scored on the rebuilt held-out split,
so an edited score, CI or row value is "moved" and an edited dataset, split, reference or sample caption
is "invalid"; a record without stored captions (written before they were kept) is "skipped" and says to
rerun `platobench stitch`. The records come from a small real run: tuxpaint's first 60 samples, the
bag-of-words text baseline, planted vision features and a tiny decoder trained for one epoch."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from platobench.cli import main
from platobench.data import get_dataset
from platobench.experiments.stitch.evaluate import EvalOptions
from platobench.experiments.stitch.run import DecoderOptions, StitchConfig, run_stitch
from platobench.experiments.stitch.split import split_dataset
from platobench.features.store import FeatureStore
from platobench.results import load_record, load_records
from platobench.zoo import load_zoo

LIMIT = 60


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The path of one stitch record of a small run on tuxpaint[:60] (its 20% held out)."""
    root = tmp_path_factory.mktemp("stitch-verify")
    split = split_dataset(get_dataset("tuxpaint", limit=LIMIT), 0.2)
    config = StitchConfig(
        setting="stitch-tuxpaint-small", text=[load_zoo().get("baseline/bag-of-words")], vision=[],
        decoder=DecoderOptions(name="tiny", epochs=1), evaluation=EvalOptions(ks=(8, None), n_boot=50),
        out=root / "results", planted=0.05, progress=False, dataset="tuxpaint", limit=LIMIT,
    )
    result = run_stitch(config, split, store=FeatureStore(root / "features"), home=root, log=lambda _: None)
    (path,) = result.paths
    return Path(path)


def _check(capsys: pytest.CaptureFixture[str], folder: Path) -> tuple[int, dict[str, Any]]:
    code = main(["check", "--results", str(folder), "--json"])
    (outcome,) = json.loads(capsys.readouterr().out)["records"]
    return code, outcome


def _edited(written: Path, folder: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    data = json.loads(written.read_text())
    edit(data)
    target = folder / written.relative_to(written.parents[1])
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps(data))
    return folder


def test_the_record_stores_every_held_out_caption_and_how_it_was_scored(written: Path) -> None:
    record = load_record(written)
    stitch = record.details["stitch"]
    ids = list(stitch["scoring"]["references"])
    assert len(ids) == record.dataset.n == stitch["split"]["test"]
    assert all(list(row["captions"]) == ids for row in stitch["rows"])
    assert {k: stitch["scoring"][k] for k in ("dataset", "limit", "views", "n_boot", "bootstrap_seed", "map_seed")} \
        == {"dataset": "tuxpaint", "limit": LIMIT, "views": 1, "n_boot": 50, "bootstrap_seed": 0, "map_seed": 0}


def test_an_unedited_stitch_record_passes(written: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, outcome = _check(capsys, written.parents[1])
    assert code == 0 and outcome["status"] == "ok" and outcome["mismatches"] == []
    rows = len(load_record(written).details["stitch"]["rows"])
    assert len(outcome["diffs"]) == 3 + 6 * rows and all(d["delta"] == 0 for d in outcome["diffs"])
    assert any("re-scored the captions" in note for note in outcome["notes"])


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(data: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        obj = data
        for part in parents:
            obj = obj[int(part)] if isinstance(obj, list) else obj[part]
        obj[int(last) if isinstance(obj, list) else last] = value(obj[int(last) if isinstance(obj, list) else last])
    return edit


def _unshown_captions(data: dict[str, Any], row: int, caption: str) -> None:
    """Row `row`'s captions of the held-out images that no sample shows, all set to `caption`."""
    stitch = data["details"]["stitch"]
    shown = {s["id"] for s in stitch["samples"]}
    captions = stitch["rows"][row]["captions"]
    captions.update({k: caption for k in captions if k not in shown})


@pytest.mark.parametrize("edit,field", [
    (_set("score", lambda v: v + 0.2), "score"),
    (_set("ci.hi", lambda v: v + 0.01), "ci.hi"),
    (_set("details.stitch.rows.0.bleu4", lambda v: v + 0.05), "rows[paired K=8].bleu4"),
    (_set("details.stitch.rows.1.cider_d_ci.0", lambda v: v - 0.05), "cider_d_ci.lo"),
    (lambda d: _unshown_captions(d, 0, "A red house."), "rows[paired K=8].cider_d"),
])
def test_an_edited_value_or_caption_is_moved(written: Path, tmp_path: Path, capsys, edit, field) -> None:
    code, outcome = _check(capsys, _edited(written, tmp_path, edit))
    # a score edited out of its own interval also contradicts itself (leaderboard/consistency.py): invalid
    contradicts = any(m["field"] == "record" for m in outcome["mismatches"])
    assert code == 1 and outcome["status"] == ("invalid" if contradicts else "moved"), outcome
    assert contradicts == (field == "score")
    moved = [d["field"] for d in outcome["diffs"] if d["delta"] > 0.001]
    assert any(field in name for name in moved), moved


@pytest.mark.parametrize("edit,field", [
    (_set("dataset.fingerprint", lambda v: "0" * 64), "dataset.fingerprint"),
    (_set("dataset.n", lambda v: 644), "dataset.n"),
    (_set("dataset.revision", lambda v: v + ";edited"), "dataset.revision"),
    (_set("details.stitch.split.train", lambda v: v + 1), "details.stitch.split.train"),
    (_set("details.stitch.scoring.limit", lambda v: None), "dataset.fingerprint"),
    (_set("ci.level", lambda v: 0.9), "ci.level"),
    (_set("metric.params.k", lambda v: 8), "metric.params.k"),
    (_set("details.stitch.samples.0.captions.paired", lambda v: v + " edited"), "captions.paired"),
    (lambda d: d["details"]["stitch"]["scoring"]["references"].update(
        {next(iter(d["details"]["stitch"]["scoring"]["references"])): ["An edited reference."]}),
     "details.stitch.scoring.references["),
])
def test_an_edited_stated_field_is_invalid_and_named(written: Path, tmp_path: Path, capsys, edit, field) -> None:
    code, outcome = _check(capsys, _edited(written, tmp_path, edit))
    assert code == 1 and outcome["status"] == "invalid", outcome
    assert any(m["field"].startswith(field) or field in m["field"] for m in outcome["mismatches"]), outcome


def test_a_stitch_record_without_its_captions_is_skipped_with_the_way_to_rerun(written, tmp_path, capsys) -> None:
    def old(data: dict[str, Any]) -> None:
        del data["details"]["stitch"]["scoring"]
        for row in data["details"]["stitch"]["rows"]:
            del row["captions"]

    folder = _edited(written, tmp_path, old)
    assert load_records(folder)[0].kind == "stitch"
    code, outcome = _check(capsys, folder)
    assert code == 1 and outcome["status"] == "skipped"
    assert "without its held-out captions" in outcome["reason"] and "rerun `platobench stitch`" in outcome["reason"]


def test_a_bootstrap_too_large_to_redraw_is_skipped_not_run(written: Path, tmp_path: Path, capsys) -> None:
    code, outcome = _check(capsys, _edited(written, tmp_path, _set("details.stitch.scoring.n_boot", lambda v: 10**9)))
    assert code == 1 and outcome["status"] == "skipped" and "bootstrap draws" in outcome["reason"]


def test_the_diff_table_names_the_moved_row(written: Path, tmp_path: Path, capsys) -> None:
    folder = _edited(written, tmp_path, _set("details.stitch.rows.0.cider_d", lambda v: v + 0.3))
    assert main(["check", "--results", str(folder)]) == 1
    table = capsys.readouterr().out
    assert "| MOVED | stitch-tuxpaint-small | baseline/bag-of-words x synthetic/planted-rotation | " \
           "rows[paired K=8].cider_d |" in table
