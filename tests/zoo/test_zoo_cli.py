"""`platobench zoo list|show|sets|validate` through the real CLI entry point."""

from __future__ import annotations

import json

import pytest

from platobench.cli import main

BAD_ENTRY = """\
models:
  - name: mine/bad
    modality: text
    kind: causal_lm
    loader: hf_causal
    source: org/model
    revision: main
    pooling: avg
    colour: blue
"""


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def bad_file(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(BAD_ENTRY)
    return path


@pytest.mark.parametrize("action", ["list", "show", "sets", "validate"])
def test_every_action_has_help(capsys, action):
    with pytest.raises(SystemExit) as info:
        main(["zoo", action, "--help"])
    assert info.value.code == 0
    assert "--zoo" in capsys.readouterr().out


def test_list_json_filters(capsys):
    code, out, _ = run(capsys, "zoo", "list", "--filter", "demo/*", "--modality", "vision", "--json")
    assert code == 0
    assert [m["name"] for m in json.loads(out)] == [
        "demo/dinov2-s-imgfocus", "demo/efficientnet-lite0", "demo/efficientnet-lite1", "demo/efficientnet-lite2"]


def test_list_by_set_and_kind(capsys):
    code, out, _ = run(capsys, "zoo", "list", "--set", "prh-val", "--kind", "vision_vit", "--json")
    assert code == 0 and len(json.loads(out)) == 17


def test_list_table(capsys):
    code, out, _ = run(capsys, "zoo", "list", "--filter", "qwen2.5/*")
    lines = out.splitlines()
    assert code == 0 and lines[0].split()[:3] == ["name", "modality", "kind"]
    assert "qwen2.5/qwen2.5-72b" in out and "72.7B" in out and "all(81)" in out
    assert lines[-1].startswith("(7 of ")


def test_show_json(capsys):
    code, out, _ = run(capsys, "zoo", "show", "Dinov2/ViT-G14.lvd142m", "--json")
    record = json.loads(out)
    assert code == 0 and record["name"] == "dinov2/vit-g14.lvd142m" and record["image_size"] == 518
    assert record["defined_in"].endswith("model_zoo.yaml") and "prh-val" in record["sets"]
    assert record["source_type"] == "timm"


def test_show_set(capsys):
    code, out, _ = run(capsys, "zoo", "show", "prh-test", "--json")
    assert code == 0 and len(json.loads(out)["members"]) == 8


def test_show_unknown_suggests(capsys):
    code, out, err = run(capsys, "zoo", "show", "qwen2.5-7b")
    assert code == 2 and out == ""
    assert "unknown model 'qwen2.5-7b'" in err and "did you mean: qwen2.5/qwen2.5-7b" in err


def test_sets_json(capsys):
    code, out, _ = run(capsys, "zoo", "sets", "--json")
    sets = json.loads(out)
    assert code == 0 and {"demo", "prh-val", "prh-test", "qwen2.5", "default21-language"} <= set(sets)


def test_validate_good(capsys, tmp_path):
    path = tmp_path / "good.yaml"
    path.write_text(BAD_ENTRY.replace("    colour: blue\n", "    num_layers: 28\n"))
    code, out, _ = run(capsys, "zoo", "validate", str(path))
    assert code == 0 and out.startswith("ok: ") and str(path) in out


def test_validate_bad_names_file_entry_and_field(capsys, bad_file):
    code, out, err = run(capsys, "zoo", "validate", str(bad_file))
    assert code == 2 and out == ""
    assert f"{bad_file}:2: models[0] ('mine/bad'): unknown key 'colour'" in err


def test_validate_json_reports_problems(capsys, bad_file):
    code, out, _ = run(capsys, "zoo", "validate", str(bad_file), "--json")
    report = json.loads(out)
    assert code == 2 and report["ok"] is False and len(report["problems"]) == 1
    assert "colour" in report["problems"][0]


@pytest.mark.parametrize("argv", [["list"], ["show", "demo/minilm-l6"], ["sets"]])
def test_every_command_reading_the_zoo_fails_on_a_bad_file(capsys, bad_file, argv):
    code, _, err = run(capsys, "zoo", *argv, "--zoo", str(bad_file))
    assert code == 2 and str(bad_file) in err and "colour" in err


def test_validate_refuses_a_block_count_no_model_has(capsys, tmp_path):
    path = tmp_path / "huge.yaml"
    path.write_text(BAD_ENTRY.replace("    colour: blue\n", "    num_layers: 1000000000000\n"))
    code, out, err = run(capsys, "zoo", "validate", str(path))
    assert code == 2 and "num_layers" in err and "less than or equal to 4096" in err
