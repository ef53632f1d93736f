"""The committed offline records (`results/offline/`, from a real run of `make board`) must reproduce.

`platobench check` re-extracts the offline models where their features are not cached, recomputes the
layer grids and fails when a score or grid cell moved by more than 0.001 (MTEB's results CI). CI time is
bounded, so a representative subset is recomputed: at least one record per setting and per dataset, with
baselines on both sides. The same subset is then recomputed from features perturbed by 1e-6 relative
noise (the size of float-rounding differences between CPUs): a committed kNN score that moves beyond the
tolerance under it would depend on the machine. Statistics (null, CI) are re-checked on one record."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from platobench.bench.settings import Catalog
from platobench.cli import main
from platobench.results import load_records, record_path

pytestmark = pytest.mark.slow
RESULTS = Path(__file__).resolve().parents[2] / "results" / "offline"

# (setting, language, vision): cheap-to-extract models, every setting and dataset, baselines on both sides.
SUBSET = [
    ("demo-mknn", "demo/minilm-l6", "demo/efficientnet-lite0"),
    ("demo-mknn", "baseline/caption-length", "demo/efficientnet-lite0"),
    ("demo-cka", "demo/minilm-l3", "demo/efficientnet-lite0"),
    ("demo-rotation", "demo/minilm-l6", "baseline/colour-histogram"),
    ("zs-tuxpaint", "demo/minilm-l6", "demo/efficientnet-lite0"),
    ("zs-fmnist", "demo/minilm-l6", "demo/efficientnet-lite0"),
    ("oc-mknn", "demo/minilm-l6", "demo/efficientnet-lite0"),
    ("oc-mknn", "baseline/bag-of-words", "demo/efficientnet-lite0"),
    ("oc-cka", "demo/minilm-l6", "baseline/colour-histogram"),
    ("demo-rotation", "demo/minilm-l3", "demo/efficientnet-lite0"),
    ("demo-mknn-ho", "demo/minilm-l6", "demo/efficientnet-lite0"),  # a held-out selection's halves and folds
]
KNN_SETTINGS = ("demo-mknn", "oc-mknn")


def _copy_subset(dest: Path, settings: tuple[str, ...] | None = None) -> int:
    n = 0
    for setting, language, vision in SUBSET:
        if settings is not None and setting not in settings:
            continue
        src = record_path(RESULTS, setting, language, vision)
        target = record_path(dest, setting, language, vision)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, target)
        n += 1
    return n


def test_committed_offline_board_is_complete_and_real():
    everything = load_records(RESULTS)
    records = [r for r in everything if r.modalities == ("text", "vision")]  # the offline board of `make board`
    groups = Catalog().groups
    offline = [*groups["offline"], *groups["heldout"]]  # `make board` runs both groups on the offline pairs
    assert {r.setting for r in records} == set(offline)
    # the same-modality boards: vision x vision and text x text under same-modality, two views under views
    same = [r for r in everything if r.modalities != ("text", "vision")]
    kinds = {(r.setting, r.modalities) for r in same}
    assert kinds == {(s, m) for s in groups["same-modality"] for m in (("vision", "vision"), ("text", "text"))} | {
        (s, ("text", "text")) for s in groups["views"]}
    assert len(same) == 74 and all(r.null is not None and r.ci is not None for r in same)
    for r in records:
        assert r.null is not None and r.ci is not None
        assert r.x.name.startswith(("demo/", "baseline/")) and r.y.name.startswith(("demo/", "baseline/"))
        assert r.dataset.name in {"tuxpaint", "tuxpaint-categories", "fashion-mnist", "openclipart-1024"}
    # every board carries baselines on both sides, and at least 4 real models on each side
    for setting in offline:
        rs = [r for r in records if r.setting == setting]
        assert any(r.x.name.startswith("baseline/") for r in rs), setting
        assert any(r.y.name.startswith("baseline/") for r in rs), setting
        assert len({r.x.name for r in rs if r.x.name.startswith("demo/")}) >= 4, setting
        assert len({r.y.name for r in rs if r.y.name.startswith("demo/")}) >= 4, setting
    for setting, language, vision in SUBSET:
        assert record_path(RESULTS, setting, language, vision).is_file(), (setting, language, vision)


def test_offline_subset_reproduces_within_tolerance(tmp_path, capsys, demo_features):
    n = _copy_subset(tmp_path)
    assert main(["check", "--results", str(tmp_path), "--scores-only", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["counts"] == {"ok": n, "moved": 0, "invalid": 0, "skipped": 0}


def test_knn_scores_do_not_depend_on_rounding(tmp_path, capsys):
    n = _copy_subset(tmp_path, KNN_SETTINGS)
    args = ["check", "--results", str(tmp_path), "--scores-only", "--json", "--perturb", "1e-6", "--perturb-seed", "7"]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["counts"] == {"ok": n, "moved": 0, "invalid": 0, "skipped": 0}


def test_offline_statistics_reproduce_on_one_record(tmp_path, capsys):
    setting, language, vision = SUBSET[0]
    src = record_path(RESULTS, setting, language, vision)
    target = record_path(tmp_path, setting, language, vision)
    target.parent.mkdir(parents=True)
    shutil.copy(src, target)
    assert main(["check", "--results", str(tmp_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["counts"] == {"ok": 1, "moved": 0, "invalid": 0, "skipped": 0}
