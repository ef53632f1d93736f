"""The shared command-line options: the one KEY=VALUE parser (`--option`, `--param`) and its conversion
rule, and `--device` / `--json` declared once for every command."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from platobench.cli import build_parser, main
from platobench.cli_options import (
    add_device_option,
    add_json_option,
    add_key_value_option,
    parse_key_values,
    parse_scalar,
)
from platobench.errors import UserError

ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------------------------------------- values


@pytest.mark.parametrize(("raw", "value"), [
    ("10", 10), ("-3", -3), ("+4", 4), ("007", 7),
    ("0.99", 0.99), ("1e-3", 0.001), ("-2.5E2", -250.0), (".5", 0.5), ("5.", 5.0),
    ("true", True), ("True", True), ("FALSE", False),
    ("null", None), ("Null", None), ("~", None),
    ("cifar", "cifar"), ("none", "none"), ("test", "test"), ("yes", "yes"),
    ("inf", "inf"), ("nan", "nan"), ("1_000", "1_000"), (" 10", " 10"), ("0x10", "0x10"), ("1e", "1e"),
    ("1.2.3", "1.2.3"), ("-", "-"), ("a=b", "a=b"),
])
def test_parse_scalar_follows_the_yaml_like_rule(raw, value):
    got = parse_scalar(raw)
    assert got == value and type(got) is type(value)


def test_parse_key_values_converts_each_value_and_keeps_the_last_of_a_repeated_key():
    got = parse_key_values(["k=10", "backend=torch", "variance=0.99", "dim=null", "flag=true", "k=3",
                            "expr=a=b"], "--param")
    assert got == {"k": 3, "backend": "torch", "variance": 0.99, "dim": None, "flag": True, "expr": "a=b"}
    assert parse_key_values([], "--option") == {}


@pytest.mark.parametrize("pair", ["split", "=3", "k=", "bad-key=1", "1k=2", " k=2"])
def test_parse_key_values_refuses_a_malformed_pair_naming_the_option(pair):
    with pytest.raises(UserError, match=r"^--option .*expected KEY=VALUE"):
        parse_key_values([pair], "--option")


def test_parse_key_values_error_shows_a_short_excerpt_of_long_input():
    with pytest.raises(UserError, match=r"^--param ") as info:
        parse_key_values(["x" * 10_000], "--param", "NAME=VALUE")
    assert len(str(info.value)) < 300 and "NAME=VALUE" in str(info.value)


# ---------------------------------------------------------------------------------------------- adders


def test_option_adders_declare_the_same_option_everywhere():
    parser = argparse.ArgumentParser()
    add_device_option(parser)
    add_json_option(parser, what="the rows")
    add_key_value_option(parser, "--param", metavar="NAME=VALUE", help="metric parameter")
    args = parser.parse_args([])
    assert (args.device, args.json, args.param) == ("cpu", False, [])
    args = parser.parse_args(["--device", "cuda:1", "--json", "--param", "k=1", "--param", "b=2"])
    assert (args.device, args.json, args.param) == ("cuda:1", True, ["k=1", "b=2"])
    text = parser.format_help()
    assert "print the rows as JSON" in text and "cpu, cuda or cuda:N" in text and "NAME=VALUE" in text


def _actions(parser: argparse.ArgumentParser, path: str = "platobench"):
    """(command path, action) for every option of `parser` and its subcommands, recursively."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _actions(sub, f"{path} {name}")
        else:
            yield path, action


def test_every_command_declares_device_and_json_through_the_adders():
    devices, jsons = [], []
    for path, action in _actions(build_parser()):
        if "--device" in action.option_strings:
            devices.append(path)
            assert action.default == "cpu", path
            assert action.help.startswith("torch device for ") and "cpu, cuda or cuda:N" in action.help, path
        if "--json" in action.option_strings:
            jsons.append(path)
            assert isinstance(action, argparse._StoreTrueAction), path
            assert action.help.startswith("print ") and action.help.endswith(" as JSON"), path
    assert {"platobench extract", "platobench score", "platobench run", "platobench check",
            "platobench submit"} <= set(devices)
    assert len(jsons) >= 20


def test_cli_options_imports_only_light_modules(tmp_path):
    code = ("import sys; import platobench.cli_options\n"
            "print(sorted(m for m in sys.modules if m.startswith('platobench')))\n"
            "print('torch' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    modules, torch_loaded = proc.stdout.splitlines()
    assert modules == str(sorted(["platobench", "platobench.cli_options", "platobench.errors",
                                  "platobench.files", "platobench.files.ids", "platobench.version"]))
    assert torch_loaded == "False"


# ---------------------------------------------------------------------------------------------- commands


def _score_files(tmp_path: Path) -> tuple[str, str]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((40, 6)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", x[:, ::-1].copy())
    return str(tmp_path / "x.npy"), str(tmp_path / "y.npy")


def test_score_param_values_reach_the_metric_converted(tmp_path, capsys):
    x, y = _score_files(tmp_path)
    assert main(["score", "--metric", "svcca", "--x", x, "--y", y, "--param", "dim=null",
                 "--param", "variance=0.9", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["params"] == {"variance": 0.9, "dim": None}
    assert main(["score", "--metric", "mutual_knn", "--x", x, "--y", y, "--param", "k=3", "--json"]) == 0
    params = json.loads(capsys.readouterr().out)["params"]
    assert params["k"] == 3 and isinstance(params["k"], int)


def test_score_and_data_refuse_a_malformed_pair_as_one_line(tmp_path, capsys):
    x, y = _score_files(tmp_path)
    assert main(["score", "--metric", "mutual_knn", "--x", x, "--y", y, "--param", "k"]) == 2
    assert "--param 'k': expected NAME=VALUE" in capsys.readouterr().err
    assert main(["data", "show", "fashion-mnist", "--option", "split="]) == 2
    assert "--option 'split=': expected KEY=VALUE" in capsys.readouterr().err
