"""The `--zoo FILE` option, shared by every command that reads the model zoo."""

from __future__ import annotations

import argparse

from platobench.zoo.registry import Zoo, load_zoo


def add_zoo_option(parser: argparse.ArgumentParser) -> None:
    """Add a repeatable `--zoo FILE` to `parser` (user zoo files merged over the built-in one, in order)."""
    parser.add_argument(
        "--zoo",
        action="append",
        default=[],
        metavar="FILE",
        help="extra model-zoo YAML merged over the built-in one (repeatable; later files win on equal names)",
    )


def zoo_from_args(args: argparse.Namespace) -> Zoo:
    """The zoo named by the `--zoo` files of parsed `args` (built-in only when there are none)."""
    return load_zoo(getattr(args, "zoo", None) or ())
