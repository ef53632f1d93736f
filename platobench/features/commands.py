"""CLI of the features stage: `extract` and `cache`. Each registrar adds its own subcommand(s); a new
command is one more module with a `register(subparsers)` appended to REGISTRARS."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from platobench.features import cache_commands, extract_commands

REGISTRARS: tuple[Callable[[Any], None], ...] = (extract_commands.register, cache_commands.register)


def register(subparsers: Any) -> None:
    for registrar in REGISTRARS:
        registrar(subparsers)
