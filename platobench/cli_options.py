"""Options shared by the command modules: `--device`, `--json` (and `progress_log`, which keeps progress
lines off a JSON stdout) and repeatable `KEY=VALUE` pairs.

Only the standard library and the light `platobench.errors` and `platobench.files.ids` are imported
here, so building the parser stays fast (`platobench --help` does not import torch).

A `KEY=VALUE` value is read like a YAML scalar (`parse_scalar`): `true`/`false` -> bool, `null` or
`~` -> None (all case-insensitive), an optionally signed decimal integer -> int, a decimal number with
a point or an exponent -> float, anything else -> the string itself. Quote nothing: `templates=cifar`
is the string "cifar", `k=10` the int 10, `variance=0.99` the float 0.99, `dim=null` None.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from platobench.errors import UserError
from platobench.files.ids import shown

DEVICE_DEFAULT = "cpu"
_INT = re.compile(r"[-+]?[0-9]+")
_FLOAT = re.compile(r"[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+(?=[eE]))(?:[eE][-+]?[0-9]+)?")
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_WORDS: dict[str, Any] = {"true": True, "false": False, "null": None, "~": None}


def parse_scalar(raw: str) -> Any:
    """`raw` as bool, None, int, float or str, by the rule in the module docstring."""
    word = raw.lower()
    if word in _WORDS:
        return _WORDS[word]
    if _INT.fullmatch(raw):
        return int(raw)
    if _FLOAT.fullmatch(raw):
        return float(raw)
    return raw


def parse_key_values(pairs: Sequence[str], option: str, metavar: str = "KEY=VALUE") -> dict[str, Any]:
    """`["k=10", "backend=torch"]` -> `{"k": 10, "backend": "torch"}` (values by `parse_scalar`; a key
    given twice keeps its last value). UserError naming `option` when a pair has no `=`, a key that is
    not a Python-style name, or an empty value."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not _KEY.fullmatch(key) or not value:
            raise UserError(
                f"{option} {shown(pair)}: expected {metavar} with a name before '=' and a value after it "
                "(write null for none)"
            )
        out[key] = parse_scalar(value)
    return out


def add_key_value_option(parser: argparse.ArgumentParser, option: str, *, metavar: str, help: str) -> None:
    """A repeatable `option METAVAR` collected as a list of strings (parse it with `parse_key_values`)."""
    parser.add_argument(option, action="append", default=[], metavar=metavar,
                        help=f"{help} (repeatable; values: int, float, true/false, null, else text)")


def add_device_option(parser: argparse.ArgumentParser, *, used_for: str = "feature extraction") -> None:
    """`--device` (default "cpu"): the torch device `used_for`, checked when the command runs."""
    parser.add_argument("--device", default=DEVICE_DEFAULT,
                        help=f"torch device for {used_for}: cpu, cuda or cuda:N (default {DEVICE_DEFAULT})")


def add_json_option(parser: argparse.ArgumentParser, *, what: str) -> None:
    """`--json` (a flag): print `what` as JSON instead of text."""
    parser.add_argument("--json", action="store_true", help=f"print {what} as JSON")


def progress_log(as_json: bool) -> Callable[[str], None]:
    """A printer of progress lines: to stdout, or to stderr when stdout carries `--json` output."""

    def log(line: str) -> None:
        print(line, file=sys.stderr if as_json else sys.stdout, flush=True)

    return log


def add_datasets_file_option(parser: argparse.ArgumentParser) -> None:
    """Add a repeatable `--datasets-file FILE`: datasets of your own (a local folder with a manifest, a hub
    or local parquet dataset) that settings and --dataset may then name (`platobench.data.datasets_file`)."""
    parser.add_argument("--datasets-file", action="append", default=[], type=Path, metavar="FILE",
                        help="YAML of your own datasets (type: folder | hub), usable wherever a dataset is named "
                             "(repeatable; see docs/datasets.md)")


def add_renamed_option(parser: argparse.ArgumentParser, old: str, new: str) -> None:
    """Keep `old`, the former spelling of `parser`'s option `new` (added before), working for one release:
    hidden from --help, it sets what `new` sets and warns on stderr that it is renamed."""
    import sys

    target = next(a for a in parser._actions if new in a.option_strings)
    flag = isinstance(target, argparse._StoreTrueAction)

    class Renamed(argparse.Action):
        def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                     option_string: str | None = None) -> None:
            print(f"warning: {old} is renamed {new}; the old spelling goes in the next release", file=sys.stderr)
            setattr(namespace, target.dest, True if flag else values)

    kwargs: dict[str, Any] = {"nargs": 0} if flag else {"type": target.type, "choices": target.choices,
                                                         "metavar": target.metavar}
    parser.add_argument(old, dest=target.dest, action=Renamed, default=argparse.SUPPRESS, help=argparse.SUPPRESS,
                        **kwargs)
