"""`--home DIR` on every command: the features, weights and data caches of that command live under DIR,
and the environment is as it was afterwards."""

from __future__ import annotations

import json
import os

from platobench import paths
from platobench.cli import _leaf_parsers, build_parser, main


def test_every_command_takes_home():
    leaves = _leaf_parsers(build_parser())
    assert len(leaves) > 20
    missing = [p.prog for p in leaves if not any("--home" in a.option_strings for a in p._actions)]
    assert missing == []


def test_extract_writes_under_home_and_the_environment_is_restored(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(paths.ENV_VAR, str(tmp_path / "default"))
    home = tmp_path / "chosen"
    argv = ["extract", "--model", "baseline/caption-length", "--dataset", "tuxpaint", "--limit", "8", "--json"]
    assert main([*argv, "--home", str(home)]) == 0
    capsys.readouterr()
    assert any((home / "features").rglob("manifest.json")) and not (tmp_path / "default").exists()
    assert os.environ[paths.ENV_VAR] == str(tmp_path / "default")
    assert main(["cache", "list", "--json", "--home", str(home)]) == 0
    (entry,) = json.loads(capsys.readouterr().out)
    assert entry["key"]["model"] == "baseline/caption-length"
