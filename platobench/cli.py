"""The `platobench` command: one entry point; each stage registers its own subcommands.

A stage module listed in `COMMAND_MODULES` exposes `register(subparsers) -> None`, which adds its
subcommand(s) with `subparsers.add_parser(...)` and sets `func=handler` on each parser. A handler takes
the parsed `argparse.Namespace` and returns a process exit code.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from platobench import __version__
from platobench.errors import UserError
from platobench.zoo import python_code, remote_code

#: Longest error message printed in full.
MAX_ERROR_CHARS = 4000

COMMAND_MODULES: tuple[str, ...] = (
    "platobench.zoo.commands",
    "platobench.encoders.commands",
    "platobench.data.commands",
    "platobench.features.commands",
    "platobench.metrics.commands",
    "platobench.bench.commands",
    "platobench.leaderboard.commands",
    "platobench.theory.commands",
    "platobench.jepa.commands",
    "platobench.stitch.commands",
    "platobench.scaling.commands",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="platobench",
        description=(
            "Measure representational alignment between language and vision models "
            "(Platonic Representation Hypothesis). Run `platobench COMMAND --help` for details."
        ),
    )
    parser.add_argument("--version", action="version", version=f"platobench {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0 if args.command is None else 2
    try:
        with remote_code.allowed(getattr(args, "trust_remote_code", None) or ()), \
                python_code.allowed(getattr(args, "trust_code", None) or ()):  # models named by the opt-ins
            return int(args.func(args) or 0)
    except BrokenPipeError:  # `platobench ... | head`: the reader left; stop quietly, as Unix tools do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # the interpreter's final flush must not raise again
        return 1
    except UserError as exc:
        message = str(exc)
        if len(message) > MAX_ERROR_CHARS:  # errors echo input; hostile input must not flood the terminal
            message = message[:MAX_ERROR_CHARS] + f"... ({len(message) - MAX_ERROR_CHARS:,} more characters)"
        print(f"platobench {args.command}: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
