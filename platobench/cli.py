"""The `platobench` command: one entry point; each stage registers its own subcommands.

Each stage module registered in `COMMANDS` (`platobench.registry`; a plugin registers its own) exposes
`register(subparsers) -> None`, which adds its subcommand(s) with `subparsers.add_parser(...)` and sets
`func=handler` on each parser. A handler takes
the parsed `argparse.Namespace` and returns a process exit code.

`main` prints a `UserError` as one line and exits with code 2; so too an `OSError` that names a file (a
read-only or full platobench home, a missing folder), as `os_error_message` words it.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from platobench import __version__, paths
from platobench.encoders.guard import isolating
from platobench.errors import UserError
from platobench.registry import Registry
from platobench.zoo import python_code, remote_code

#: Longest error message printed in full.
MAX_ERROR_CHARS = 4000

#: Command name -> the `register(subparsers)` of the module that adds it (lazy: imported when the parser is
#: built); plugins add their own commands here.
COMMANDS: Registry[Callable[[Any], None]] = Registry("command")
for _name, _module in (
    ("zoo", "platobench.zoo.commands"),
    ("encoders", "platobench.encoders.commands"),
    ("data", "platobench.data.commands"),
    ("features", "platobench.features.commands"),
    ("metrics", "platobench.bench.metric_commands"),
    ("bench", "platobench.bench.commands"),
    ("leaderboard", "platobench.leaderboard.commands"),
    ("reports", "platobench.leaderboard.reports"),
    ("theory", "platobench.experiments.theory.commands"),
    ("jepa", "platobench.experiments.jepa.commands"),
    ("stitch", "platobench.experiments.stitch.commands"),
    ("scaling", "platobench.experiments.scaling.commands"),
):
    COMMANDS.register_lazy(_name, f"{_module}:register")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="platobench",
        description=(
            "Measure representational alignment between models of any two modalities (text, vision) "
            "(Platonic Representation Hypothesis). Run `platobench COMMAND --help` for details."
        ),
    )
    parser.add_argument("--version", action="version", version=f"platobench {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for _, register in COMMANDS.items():
        register(sub)
    for command in _leaf_parsers(parser):
        if not any("--home" in action.option_strings for action in command._actions):
            command.add_argument("--home", type=Path, default=None, metavar="DIR",
                                 help=f"platobench home of this command: features, weights and data caches "
                                      f"(default: ${paths.ENV_VAR} or ~/.cache/platobench)")
    return parser


def _leaf_parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """The parsers that run a handler: every subcommand (`run`, `cache list`, `jepa compare`, ...)."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return [parser]
    return [leaf for a in subs for child in dict.fromkeys(a.choices.values()) for leaf in _leaf_parsers(child)]


def os_error_message(exc: OSError) -> str:
    """One line for an `OSError` naming a file: the reason and the path(s); for a refused write inside
    the platobench home, where that home comes from and how to choose another."""
    names = [str(n) for n in (exc.filename, exc.filename2) if n is not None]
    reason = exc.strerror or type(exc).__name__
    message = f"{reason}: {' -> '.join(names)}"
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        home = Path(os.path.abspath(paths.home()))
        if any(Path(os.path.abspath(n)).is_relative_to(home) for n in names):
            if home != Path(os.path.abspath(paths.shell_home())):
                where, other = "from --home", "give --home a writable one"
            else:
                where = f"from ${paths.ENV_VAR}" if os.environ.get(paths.ENV_VAR) else "the default"
                other = f"set {paths.ENV_VAR} to a writable one"
            message += f" (in the platobench home {home}, {where}: make that folder writable, or {other})"
    return message


def _datasets(files: list[Path]) -> contextlib.AbstractContextManager[object]:
    """The users' datasets of `--datasets-file` in force (the data catalogue is imported only when given)."""
    if not files:
        return contextlib.nullcontext()
    from platobench.data.datasets_file import using

    return using(files)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0 if args.command is None else 2
    try:
        with paths.using_home(getattr(args, "home", None)), \
                remote_code.allowed(getattr(args, "trust_remote_code", None) or ()), \
                python_code.allowed(getattr(args, "trust_code", None) or ()), \
                isolating(getattr(args, "isolate_encoders", False)), \
                _datasets(getattr(args, "datasets_file", None) or ()):  # models named by the opt-ins, users' datasets
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
    except OSError as exc:
        if exc.filename is None:  # no file to name: not the environment's doing, or not knowably so
            raise
        print(f"platobench {args.command}: error: {os_error_message(exc)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
