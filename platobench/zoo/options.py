"""The `--zoo FILE` option, shared by every command that reads the model zoo (and, for commands that load
models, the opt-ins `--trust-remote-code MODEL` and `--trust-code MODEL`)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from platobench.zoo.python_code import add_trust_code_option
from platobench.zoo.remote_code import add_trust_remote_code_option

if TYPE_CHECKING:
    from platobench.zoo.registry import Zoo


def add_zoo_option(parser: argparse.ArgumentParser, *, loads_models: bool = False) -> None:
    """Add a repeatable `--zoo FILE` to `parser` (user zoo files merged over the built-in one, in order);
    `loads_models`: also `--trust-remote-code MODEL` and `--trust-code MODEL`, for commands that load models."""
    parser.add_argument(
        "--zoo",
        action="append",
        default=[],
        metavar="FILE",
        help="extra model-zoo YAML merged over the built-in one (repeatable; later files win on equal names)",
    )
    if loads_models:
        add_trust_remote_code_option(parser)
        add_trust_code_option(parser)


def zoo_from_args(args: argparse.Namespace) -> Zoo:
    """The zoo named by the `--zoo` files of parsed `args` (built-in only when there are none)."""
    from platobench.zoo.registry import load_zoo  # pydantic: only when a command reads the zoo

    return load_zoo(getattr(args, "zoo", None) or ())
