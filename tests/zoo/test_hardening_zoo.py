"""Zoo files and remote code under hostile input: strict booleans, a named opt-in for repository code,
alias bombs, binary files, extraction requirements checked by `zoo validate`, and one naming rule."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pydantic
import pytest

from platobench.cli import build_parser, main
from platobench.errors import UserError
from platobench.files.ids import ID_PATTERN, MODEL_NAME_PATTERN
from platobench.zoo import ModelSpec, ZooError, load_zoo, read_zoo_file, remote_code

ENTRY = """\
  - name: mine/tiny-bert
    modality: text
    kind: text_encoder
    loader: hf_text
    source: prajjwal1/bert-tiny
    revision: main
    pooling: cls
    num_layers: 2
"""
BASE = {"name": "mine/evil", "modality": "text", "kind": "text_encoder", "loader": "hf_text",
        "source": "org/evil", "revision": "main", "pooling": "cls", "num_layers": 2}


def write(tmp_path: Path, text: str | bytes, name: str = "zoo.yaml") -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def zoo_problems(path: Path) -> list[str]:
    with pytest.raises(ZooError) as info:
        read_zoo_file(path)
    return info.value.problems


def custom_code_folder(tmp_path: Path) -> tuple[Path, Path]:
    """A model folder whose config names its own Python module; importing that module writes `marker`."""
    folder = tmp_path / "evil-model"
    folder.mkdir()
    marker = tmp_path / "remote-code-ran"
    (folder / "config.json").write_text(json.dumps({
        "model_type": "evil", "auto_map": {"AutoConfig": "evil.EvilConfig", "AutoModel": "evil.EvilModel"},
    }))
    (folder / "tokenizer_config.json").write_text(json.dumps({"auto_map": {"AutoTokenizer": ["evil.EvilTokenizer", None]}}))
    (folder / "evil.py").write_text(
        f"open({str(marker)!r}, 'w').write('ran')\n"
        "from transformers import PretrainedConfig\n"
        "class EvilConfig(PretrainedConfig):\n    model_type = 'evil'\n"
    )
    return folder, marker


# --- remote code ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["yes", "true", 1, "no", 0])
def test_trust_remote_code_must_be_a_real_boolean(tmp_path, value):
    with pytest.raises(pydantic.ValidationError):
        ModelSpec(**BASE, trust_remote_code=value)
    path = write(tmp_path, "models:\n" + ENTRY + f"    trust_remote_code: {json.dumps(value)}\n")
    (problem,) = zoo_problems(path)
    assert f"{path}:2" in problem and "field 'trust_remote_code'" in problem


def test_every_boolean_field_is_strict():
    bools = [name for name, info in ModelSpec.model_fields.items() if info.annotation in (bool, "bool")]
    assert bools == ["trust_remote_code"]
    for name in bools:
        assert any(getattr(m, "strict", False) for m in ModelSpec.model_fields[name].metadata), name


def test_remote_code_without_opt_in_is_refused_before_any_code_runs(tmp_path):
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from platobench.encoders import hf_text

    folder, marker = custom_code_folder(tmp_path)
    spec = ModelSpec(**{**BASE, "source": str(folder), "revision": None}, trust_remote_code=True)
    with pytest.raises(UserError) as info:
        hf_text.load(spec, device=torch.device("cpu"))
    assert not marker.exists()
    assert str(info.value) == (
        "model mine/evil asks to run code from its repository; rerun with --trust-remote-code mine/evil if you trust it"
    )


def test_custom_code_folder_without_trust_is_a_user_error(tmp_path):
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from platobench.encoders import hf_text

    folder, marker = custom_code_folder(tmp_path)
    spec = ModelSpec(**{**BASE, "source": str(folder), "revision": None})
    with remote_code.allowed(["mine/evil"]), pytest.raises(UserError) as info:
        hf_text.load(spec, device=torch.device("cpu"))
    assert not marker.exists()
    assert "mine/evil" in str(info.value) and "trust_remote_code: true" in str(info.value)


def test_opt_in_names_the_model_and_passes_true():
    from platobench.encoders.sources import pretrained_args

    trusting = ModelSpec(**BASE, trust_remote_code=True)
    plain = ModelSpec(**{**BASE, "name": "mine/plain"})
    with pytest.raises(UserError, match="--trust-remote-code mine/evil"):
        pretrained_args(trusting, None)
    with remote_code.allowed(["other/*"]), pytest.raises(UserError, match="--trust-remote-code mine/evil"):
        pretrained_args(trusting, None)
    with remote_code.allowed(["MINE/*"]):
        assert pretrained_args(trusting, None)[1]["trust_remote_code"] is True
        assert pretrained_args(plain, None)[1]["trust_remote_code"] is False
    with remote_code.allowed(["mine/evil"]):
        assert pretrained_args(trusting, None)[1]["trust_remote_code"] is True
    assert remote_code.allowed_patterns() == ()


LOADING_COMMANDS = [
    ["extract", "--model", "mine/evil", "--dataset", "d"],
    ["run", "--pairs", "demo", "--settings", "demo"],
    ["submit", "sub.yaml"],
    ["check"],
    ["jepa", "compare", "--data", "d", "--vision", "v"],
]


@pytest.mark.parametrize("argv", LOADING_COMMANDS, ids=lambda argv: " ".join(argv[:2]))
def test_every_command_that_loads_models_takes_the_opt_in(argv):
    args = build_parser().parse_args([*argv, "--trust-remote-code", "mine/evil", "--trust-remote-code", "x/*"])
    assert args.trust_remote_code == ["mine/evil", "x/*"]
    assert build_parser().parse_args(argv).trust_remote_code == []


def test_cli_applies_the_opt_in_while_the_command_runs(monkeypatch):
    from platobench.features import extract_commands

    seen = []
    monkeypatch.setattr(extract_commands, "_run", lambda args: seen.append(remote_code.allowed_patterns()) or 0)
    argv = ["extract", "--model", "mine/evil", "--dataset", "d"]
    assert main([*argv, "--trust-remote-code", "mine/evil"]) == 0
    assert main(argv) == 0
    assert seen == [("mine/evil",), ()]
    assert remote_code.allowed_patterns() == ()


def test_bad_opt_in_value_is_a_user_error(capsys):
    code = main(["extract", "--model", "a/b", "--dataset", "d", "--trust-remote-code", "../../etc"])
    assert code == 2 and "--trust-remote-code" in capsys.readouterr().err


def test_builtin_entries_that_run_remote_code_say_so():
    for spec in load_zoo():
        if spec.trust_remote_code:
            assert f"--trust-remote-code {spec.name}" in spec.notes, spec.name


# --- YAML bombs, binary files, short errors -------------------------------------------------------------


def test_alias_bomb_is_refused_quickly(tmp_path):
    lines = ["sets:", "  l0: &l0 [demo/minilm-l6, demo/minilm-l6, demo/minilm-l6, demo/minilm-l6, demo/minilm-l6]"]
    for i in range(1, 9):
        lines.append(f"  l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 5)}]")
    path = write(tmp_path, "\n".join(lines) + "\n")
    start = time.perf_counter()
    (problem,) = zoo_problems(path)
    assert time.perf_counter() - start < 5
    assert str(path) in problem and "aliases expand" in problem


def test_deeply_nested_set_is_a_zoo_error(tmp_path):
    path = write(tmp_path, "sets:\n  a: " + "[" * 900 + "demo/minilm-l6" + "]" * 900 + "\n")
    (problem,) = zoo_problems(path)
    assert str(path) in problem and len(problem) < 300


def test_nested_sets_flatten_without_recursion():
    from platobench.zoo.loading import _flatten

    nested: list = ["a/b"]
    for _ in range(5000):
        nested = [nested, "c/d"]
    assert _flatten(nested) == ["a/b"] + ["c/d"] * 5000


def test_builtin_zoo_with_aliases_still_loads():
    zoo = load_zoo()
    assert set(zoo.sets["prh-val-language"]) <= set(zoo.sets["prh-val"])


@pytest.mark.parametrize("data", [bytes(range(256)) * 4, "models: [caf\xe9]\n".encode("latin-1")])
def test_binary_or_latin1_file_is_a_zoo_error(tmp_path, data):
    path = write(tmp_path, data)
    (problem,) = zoo_problems(path)
    assert str(path) in problem and "UTF-8" in problem


def test_binary_file_through_the_cli(tmp_path, capsys):
    path = write(tmp_path, os.urandom(4096) + b"\xff\xfe")
    assert main(["zoo", "validate", str(path)]) == 2
    assert str(path) in capsys.readouterr().err


@pytest.mark.parametrize(
    "text",
    [
        "models:\n" + ENTRY.replace("name: mine/tiny-bert", "name: " + "x" * 100_000),
        "models:\n" + ENTRY.replace("revision: main", "revision: main\n    license: [" + "1, " * 30_000 + "1]"),
        "sets:\n  " + "s" * 100_000 + ": [demo/minilm-l6]\n",
        "sets:\n  ok: [" + "q" * 100_000 + "/x]\n",
        "x" * 100_000 + ": 1\n",
        "version: " + "9" * 100_000 + "\n",
    ],
    ids=["model-name", "field-input", "set-name", "set-member", "top-key", "version"],
)
def test_errors_do_not_echo_huge_input(tmp_path, text):
    path = write(tmp_path, text)
    with pytest.raises(ZooError) as info:
        load_zoo([path])
    assert all(len(problem) < 600 for problem in info.value.problems), info.value.problems


@pytest.mark.parametrize("text", ["version: 2024-13-45\n", "version: " + "9" * 5000 + "\n"])
def test_scalar_the_yaml_constructors_refuse_is_a_zoo_error(tmp_path, text):
    path = write(tmp_path, text)
    (problem,) = zoo_problems(path)
    assert problem.startswith(f"{path}: malformed YAML") and len(problem) < 400


def test_problem_list_is_capped(tmp_path):
    from platobench.zoo.loading import MAX_PROBLEMS

    members = ", ".join(f"nope/m{i}" for i in range(20_000))
    path = write(tmp_path, f"sets:\n  big: [{members}]\n")
    start = time.perf_counter()
    with pytest.raises(ZooError) as info:
        load_zoo([path])
    assert time.perf_counter() - start < 5
    assert len(info.value.problems) == MAX_PROBLEMS + 1 and "19,950 more problems" in info.value.problems[-1]


@pytest.mark.parametrize("text", ["? [a, b]\n: 1\n", "models:\n  - {? [a]: 1}\n", "sets:\n  {a: 1}: [demo/minilm-l6]\n"])
def test_unhashable_key_is_a_zoo_error(tmp_path, text):
    path = write(tmp_path, text)
    (problem,) = zoo_problems(path)
    assert problem.startswith(f"{path}:") and "unhashable key" in problem


def test_duplicate_keys_and_lines_still_reported(tmp_path):
    path = write(tmp_path, "models:\n" + ENTRY + "    pooling: avg\n")
    (problem,) = zoo_problems(path)
    assert f"{path}:10" in problem and "duplicate key 'pooling'" in problem and "line 8" in problem


# --- what extraction needs ------------------------------------------------------------------------------


def test_validate_rejects_an_entry_extraction_cannot_use(tmp_path, capsys):
    path = write(tmp_path, "models:\n" + ENTRY.replace("    num_layers: 2\n", ""))
    assert main(["zoo", "validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:2: models[0] ('mine/tiny-bert'): field 'num_layers'" in err
    assert main(["zoo", "validate", str(write(tmp_path, "models:\n" + ENTRY, "good.yaml"))]) == 0


def test_extract_and_validate_share_one_check():
    pytest.importorskip("torch")
    from platobench.encoders import layer_ids_of

    spec = ModelSpec(**{**BASE, "num_layers": None})
    problem = spec.extraction_problem()
    assert problem is not None and "num_layers" in problem
    with pytest.raises(UserError) as info:
        layer_ids_of(spec)
    assert problem in str(info.value)
    assert ModelSpec(**BASE).extraction_problem() is None


def test_openclip_projection_layer_can_be_selected_as_extraction_allows():
    pytest.importorskip("torch")
    from platobench.encoders import layer_ids_of

    spec = ModelSpec(name="c/clip", modality="vision", kind="clip_image", loader="openclip", source="ViT-B-32/x",
                     revision="main", pooling="cls", num_layers=12, layers=[12, 13])
    assert layer_ids_of(spec) == [12, 13]
    with pytest.raises(pydantic.ValidationError, match="does not exist"):
        ModelSpec(**BASE, layers=[3])


# --- one naming rule ------------------------------------------------------------------------------------


def test_model_and_set_names_follow_the_shared_rule(tmp_path):
    long_part = "a" * 101
    with pytest.raises(pydantic.ValidationError):
        ModelSpec(**{**BASE, "name": f"{long_part}/x"})
    path = write(tmp_path, f"sets:\n  {long_part}: [demo/minilm-l6]\n")
    (problem,) = zoo_problems(path)
    assert "at most 100 characters" in problem


def test_builtin_names_follow_the_shared_rule():
    zoo = load_zoo()
    assert all(MODEL_NAME_PATTERN.match(name) for name in zoo.names)
    assert all(ID_PATTERN.match(name) for name in zoo.sets)


@pytest.mark.parametrize("field, value", [("num_layers", "12"), ("num_layers", True), ("params_m", "3"), ("width", 1.5)])
def test_numeric_fields_are_strict(field, value):
    base = dict(name="a/b", modality="text", kind="text_encoder", loader="hf_text", source="x", revision="main",
                pooling="avg", num_layers=12)
    ModelSpec(**base)  # the base entry is valid
    with pytest.raises(pydantic.ValidationError, match=field):
        ModelSpec(**{**base, field: value})
