"""examples/embeddings: features written outside platobench (the char-n-gram encoder of
examples/text_encoder.py) and named by a `loader: features` zoo entry score exactly as the same encoder run
through `loader: python` does."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest
from bench_fixtures import TINY_SETTINGS

from platobench.cli import main
from platobench.results import load_records

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
N = 24


def test_written_features_score_as_the_encoder_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLATOBENCH_HOME", str(tmp_path / "home"))
    monkeypatch.syspath_prepend(str(EXAMPLES))
    spec = importlib.util.spec_from_file_location("write_features", EXAMPLES / "embeddings" / "write_features.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    shutil.copy(EXAMPLES / "embeddings" / "zoo.yaml", tmp_path / "zoo.yaml")
    module.write(tmp_path / "char_ngrams.npy", limit=None)
    settings = tmp_path / "tiny.yaml"
    settings.write_text(TINY_SETTINGS.replace("openclipart-1024", "tuxpaint"))
    pairs = "example/char-ngrams-file:baseline/colour-histogram,example/char-ngrams:baseline/colour-histogram"
    assert main(["run", "--pairs", pairs, "--settings", "tiny", "--settings-file", str(settings), "--zoo",
                 str(tmp_path / "zoo.yaml"), "--zoo", str(EXAMPLES / "text_encoder.yaml"), "--trust-code",
                 "example/char-ngrams", "--limit", str(N), "--out", str(tmp_path / "r"), "--json"]) == 0
    by = {(r.setting, r.x.name): r for r in load_records(tmp_path / "r")}
    for setting in ("tiny-mknn", "tiny-cka"):
        from_file, from_code = by[(setting, "example/char-ngrams-file")], by[(setting, "example/char-ngrams")]
        assert from_file.score == from_code.score and from_file.grid == from_code.grid
        assert from_file.x.revision.startswith("features:sha256:")
