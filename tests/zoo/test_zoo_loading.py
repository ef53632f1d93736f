"""Zoo files: merging user files over the built-in zoo, and errors that name file, line, entry and field."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from platobench.errors import UserError
from platobench.zoo import BUILTIN_ZOO, ZooError, load_zoo, read_zoo_file

GOOD_ENTRY = """\
  - name: mine/tiny-bert
    modality: text
    kind: text_encoder
    loader: hf_text
    source: prajjwal1/bert-tiny
    revision: main
    pooling: cls
"""


def write(tmp_path: Path, text: str, name: str = "zoo.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def problems_of(*files: Path) -> list[str]:
    with pytest.raises(ZooError) as info:
        load_zoo(files)
    assert isinstance(info.value, UserError)  # the CLI turns it into exit code 2
    return info.value.problems


def test_user_file_adds_entries_and_sets(tmp_path):
    path = write(tmp_path, "models:\n" + GOOD_ENTRY + "sets:\n  mine: [mine/tiny-bert, demo/minilm-l6]\n")
    zoo = load_zoo([path])
    assert zoo.get("mine/tiny-bert").source == "prajjwal1/bert-tiny"
    assert zoo.origin("mine/tiny-bert") == path
    assert zoo.origin("demo/minilm-l6") == BUILTIN_ZOO
    assert zoo.sets["mine"] == ["mine/tiny-bert", "demo/minilm-l6"]
    assert len(zoo) == len(load_zoo()) + 1


def test_user_entry_replaces_builtin_entry_of_same_name(tmp_path):
    path = write(tmp_path, """\
        models:
          - name: qwen2.5/qwen2.5-72b
            modality: text
            kind: causal_lm
            loader: hf_causal
            source: Qwen/Qwen2.5-72B
            revision: main
            pooling: avg
            quantization: 4bit
        """)
    zoo = load_zoo([path])
    assert zoo.get("qwen2.5/qwen2.5-72b").quantization == "4bit"
    assert zoo.origin("qwen2.5/qwen2.5-72b") == path
    assert "qwen2.5/qwen2.5-72b" in zoo.sets["qwen2.5"]  # built-in sets still see the replacement
    assert load_zoo().get("qwen2.5/qwen2.5-72b").quantization == "none"  # built-in untouched


def test_later_user_file_wins(tmp_path):
    first = write(tmp_path, "models:\n" + GOOD_ENTRY, "a.yaml")
    second = write(tmp_path, "models:\n" + GOOD_ENTRY.replace("pooling: cls", "pooling: avg"), "b.yaml")
    assert load_zoo([first, second]).get("mine/tiny-bert").pooling == "avg"
    assert load_zoo([second, first]).get("mine/tiny-bert").pooling == "cls"


def test_unknown_key_names_file_line_entry_field_and_suggests(tmp_path):
    path = write(tmp_path, "models:\n" + GOOD_ENTRY + "    poolng: avg\n")
    (problem,) = problems_of(path)
    assert problem.startswith(f"{path}:2: ")  # the entry's mapping starts on line 2
    assert "models[0] ('mine/tiny-bert')" in problem
    assert "unknown key 'poolng'" in problem and "did you mean 'pooling'" in problem


def test_missing_field_is_named(tmp_path):
    path = write(tmp_path, "models:\n" + GOOD_ENTRY.replace("    pooling: cls\n", ""))
    (problem,) = problems_of(path)
    assert f"{path}:2" in problem and "'mine/tiny-bert'" in problem
    assert "field 'pooling': required field is missing" in problem


def test_invalid_value_is_named(tmp_path):
    path = write(tmp_path, "models:\n" + GOOD_ENTRY.replace("pooling: cls", "pooling: max"))
    (problem,) = problems_of(path)
    assert "field 'pooling'" in problem and "'max'" in problem


def test_duplicate_name_in_one_file_names_both_lines(tmp_path):
    path = write(tmp_path, "models:\n" + GOOD_ENTRY + GOOD_ENTRY)
    (problem,) = problems_of(path)
    assert problem.startswith(f"{path}:9: models[1] ('mine/tiny-bert')")
    assert "duplicate name 'mine/tiny-bert'" in problem and "line 2" in problem


def test_duplicate_key_in_an_entry(tmp_path):
    path = write(tmp_path, "models:\n" + GOOD_ENTRY + "    pooling: avg\n")
    (problem,) = problems_of(path)
    assert f"{path}:9" in problem and "duplicate key 'pooling'" in problem and "line 8" in problem


def test_malformed_yaml(tmp_path):
    path = write(tmp_path, "models:\n  - name: [unclosed\n")
    (problem,) = problems_of(path)
    assert problem.startswith(str(path)) and "malformed YAML" in problem


def test_every_problem_of_every_file_is_reported(tmp_path):
    bad_a = write(tmp_path, "models:\n" + GOOD_ENTRY.replace("kind: text_encoder", "kind: llm"), "a.yaml")
    bad_b = write(tmp_path, "models:\n" + GOOD_ENTRY.replace("    revision: main\n", ""), "b.yaml")
    problems = problems_of(bad_a, bad_b)
    assert len(problems) == 2
    assert str(bad_a) in problems[0] and "field 'kind'" in problems[0]
    assert str(bad_b) in problems[1] and "revision" in problems[1]


def test_set_with_unknown_member(tmp_path):
    path = write(tmp_path, "sets:\n  mine: [demo/minilm-l6, demo/minilm-l7]\n")
    (problem,) = problems_of(path)
    assert str(path) in problem and "sets['mine']" in problem
    assert "unknown model 'demo/minilm-l7'" in problem and "did you mean: demo/minilm-l6" in problem


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("models: {a: 1}\n", "'models' must be a list"),
        ("model: []\n", "unknown top-level key 'model'"),
        ("version: 2\nmodels: []\n", "unsupported 'version' 2"),
        ("models:\n  - just-a-string\n", "expected a mapping of fields, got str"),
        ("sets: [a]\n", "'sets' must map set names"),
        ("sets:\n  Bad/Name: [demo/minilm-l6]\n", "a set name is lowercase"),
        ("sets:\n  empty: []\n", "non-empty list of model names"),
        ("42\n", "expected a mapping"),
    ],
)
def test_malformed_structure(tmp_path, text, expected):
    path = write(tmp_path, text)
    (problem,) = problems_of(path)
    assert str(path) in problem and expected in problem


def test_missing_file(tmp_path):
    (problem,) = problems_of(tmp_path / "nope.yaml")
    assert "nope.yaml: zoo file not found" in problem


def test_relative_local_source_is_relative_to_the_file(tmp_path):
    sub = tmp_path / "zoos"
    sub.mkdir()
    path = write(sub, """\
        models:
          - {name: mine/rel, modality: text, kind: text_jepa, loader: hf_text, source: ./ckpt, pooling: avg}
          - {name: mine/up, modality: text, kind: text_jepa, loader: hf_text, source: ../ckpt2, pooling: avg}
          - {name: mine/abs, modality: text, kind: text_jepa, loader: hf_text, source: /data/ckpt, pooling: cls}
          - {name: mine/home, modality: text, kind: text_jepa, loader: hf_text, source: ~/ckpt, pooling: cls}
        """)
    specs = {spec.name: spec for spec in read_zoo_file(path).models}
    assert specs["mine/rel"].source == str(sub / "ckpt")
    assert specs["mine/up"].source == str(tmp_path / "ckpt2")
    assert specs["mine/abs"].source == "/data/ckpt"
    assert specs["mine/home"].source == str(Path("~/ckpt").expanduser())
    assert all(spec.source_type == "local" for spec in specs.values())


def test_bare_list_file_is_accepted(tmp_path):
    """`platobench jepa train` writes zoo_entry.yaml as a one-model list."""
    path = write(tmp_path, textwrap.dedent(GOOD_ENTRY))
    assert [spec.name for spec in read_zoo_file(path).models] == ["mine/tiny-bert"]


def test_nested_set_lists_are_flattened_and_deduplicated(tmp_path):
    path = write(tmp_path, """\
        sets:
          a: &a [demo/minilm-l6, demo/smollm2-135m]
          b: [*a, demo/minilm-l6, [demo/efficientnet-lite0]]
        """)
    assert read_zoo_file(path).sets["b"] == ["demo/minilm-l6", "demo/smollm2-135m", "demo/efficientnet-lite0"]


def test_example_text_jepa_file_is_valid():
    example = BUILTIN_ZOO.parent / "examples" / "text_jepa.yaml"
    zoo = load_zoo([example])
    (spec,) = zoo.resolve("text-jepa")
    assert spec.kind == "text_jepa" and spec.source_type == "local"
    assert Path(spec.source).is_absolute() and Path(spec.source).parent == example.parent / "checkpoints"


def test_zoo_entry_written_by_jepa_training_loads(tmp_path):
    """The zoo_entry.yaml that `platobench jepa train` writes beside a checkpoint is a valid user zoo file."""
    checkpoint = pytest.importorskip("platobench.experiments.jepa.checkpoint")
    spec = checkpoint.zoo_spec("text-jepa/tiny-good.openclipart-s0", tmp_path / "ckpt", num_layers=2, width=64,
                               params=1_234_567, notes="test")
    path = checkpoint.write_zoo_entry(spec, tmp_path / "zoo_entry.yaml")
    assert load_zoo([path]).get(spec.name) == spec
