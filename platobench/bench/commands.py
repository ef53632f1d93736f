"""CLI of the bench stage: run, settings, pairs, check and submit (`platobench leaderboard` is registered by
platobench.leaderboard.commands)."""

from __future__ import annotations

from typing import Any

from platobench.bench import catalog_commands, check, run_command, submit


def register(subparsers: Any) -> None:
    run_command.register(subparsers)
    catalog_commands.register(subparsers)
    check.register(subparsers)
    submit.register(subparsers)
