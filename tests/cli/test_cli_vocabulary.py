"""One option vocabulary: an option name means one kind of value on every subcommand (a flag, a number, a
share, a list), so `--heldout 0.2` never means 0.2 of one thing here and a count of runs there."""

from __future__ import annotations

import argparse
from collections import defaultdict

from platobench.cli import _leaf_parsers, build_parser


def _shape(action: argparse.Action) -> tuple[str, str | None, object]:
    kind = "flag" if action.nargs == 0 else "value"
    return kind, getattr(action.type, "__name__", None), action.nargs if action.nargs != 0 else None


def vocabulary(parser: argparse.ArgumentParser) -> dict[str, dict[tuple, list[str]]]:
    """Visible option string -> its shapes (flag or value, type, nargs) -> the subcommands using each."""
    out: dict[str, dict[tuple, list[str]]] = defaultdict(lambda: defaultdict(list))
    for leaf in _leaf_parsers(parser):
        for action in leaf._actions:
            if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
                continue
            for option in action.option_strings:
                out[option][_shape(action)].append(leaf.prog)
    return out


def test_each_option_name_has_one_shape_on_every_subcommand():
    clashes = {o: dict(shapes) for o, shapes in vocabulary(build_parser()).items() if len(shapes) > 1}
    assert clashes == {}


def test_a_clash_is_found():
    parser = argparse.ArgumentParser(prog="p")
    sub = parser.add_subparsers()
    sub.add_parser("a").add_argument("--grid", action="store_true")
    sub.add_parser("b").add_argument("--grid", type=float)
    hidden = sub.add_parser("c")
    hidden.add_argument("--grid", type=int, help=argparse.SUPPRESS)  # a former spelling: not the vocabulary
    shapes = vocabulary(parser)["--grid"]
    assert sorted(shapes.values()) == [["p a"], ["p b"]]
