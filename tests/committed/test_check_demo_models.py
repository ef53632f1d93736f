"""Real weights (slow): `check` re-extracts the offline demo models and reproduces a record exactly, and a
`submit` of the same MiniLM weights from a local folder scores exactly like the zoo's demo/minilm-l6."""

from __future__ import annotations

import json
import shutil

import pytest
from bench_fixtures import TINY_SETTINGS

from platobench.cli import main
from platobench.encoders.packaged import prepared_dir
from platobench.results import load_record, record_path

pytestmark = pytest.mark.slow
N = 16
VISION = "demo/dinov2-s-imgfocus"


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("demo")
    (tmp / "tiny.yaml").write_text(TINY_SETTINGS)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PLATOBENCH_HOME", str(tmp / "home"))
        assert main(["run", "--pairs", f"demo/minilm-l6:{VISION}", "--settings", "tiny-mknn", "--settings-file",
                     str(tmp / "tiny.yaml"), "--limit", str(N), "--out", str(tmp / "results"), "--json"]) == 0
    return tmp


def test_check_extracts_demo_models_when_features_are_gone(ran, monkeypatch, capsys):
    monkeypatch.setenv("PLATOBENCH_HOME", str(ran / "home"))
    shutil.rmtree(ran / "home" / "features")
    assert main(["check", "--results", str(ran / "results"), "--tol", "1e-6", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["counts"] == {"ok": 1, "moved": 0, "invalid": 0, "skipped": 0}
    assert (ran / "home" / "features").is_dir()  # the check extracted the features again


def test_submitting_the_same_weights_from_a_folder_scores_the_same(ran, monkeypatch, capsys, tmp_path):
    """(Into a copy of the results: the module's other tests read the folder, in any order.)"""
    monkeypatch.setenv("PLATOBENCH_HOME", str(ran / "home"))
    results = tmp_path / "results"
    shutil.copytree(ran / "results", results)
    folder = prepared_dir("minilm-l6", ran / "home")
    (ran / "sub.yaml").write_text(
        "version: 1\nmodels:\n  - name: user/minilm-folder\n    modality: text\n    kind: text_encoder\n"
        f"    loader: hf_text\n    source: {folder}\n    pooling: avg\n    num_layers: 6\n    width: 384\n"
    )
    assert main(["submit", str(ran / "sub.yaml"), "--settings", "tiny-mknn", "--settings-file", str(ran / "tiny.yaml"),
                 "--pairs", f"demo/minilm-l6:{VISION}", "--limit", str(N), "--out", str(results),
                 "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["ranks"]["user/minilm-folder"]
    zoo_record = load_record(record_path(results, "tiny-mknn", "demo/minilm-l6", VISION, N))
    assert row["score"] == pytest.approx(zoo_record.score, abs=1e-9)
    assert row["rank"] == 1 and row["of"] == 2  # a tie shares rank 1


def test_check_recomputes_a_zeroshot_record(ran, monkeypatch, capsys):
    monkeypatch.setenv("PLATOBENCH_HOME", str(ran / "home"))
    (ran / "zs.yaml").write_text(
        "settings:\n  zs-fmnist-tiny:\n    kind: zeroshot\n    dataset: fashion-mnist\n    metric: zeroshot_matching\n"
        "    selection: last\n    options: {templates: fashion-mnist, prompts: templates, solver: faq, seeds: [0, 1],"
        " fraction: 0.5, per_class: 6}\n"
    )
    results = ran / "zs-results"
    assert main(["run", "--pairs", f"demo/minilm-l6:{VISION}", "--settings", "zs-fmnist-tiny", "--settings-file",
                 str(ran / "zs.yaml"), "--out", str(results), "--json"]) == 0
    capsys.readouterr()
    assert main(["check", "--results", str(results), "--no-extract", "--tol", "1e-9", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["counts"] == {"ok": 1, "moved": 0, "invalid": 0, "skipped": 0}
    assert {d["field"] for d in report["records"][0]["diffs"]} >= {"score", "last_layer_score"}
