"""CLI of the bench stage: run, settings, pairs, leaderboard, check and submit."""

from __future__ import annotations

from typing import Any

from platobench.bench import catalog_commands, check, leaderboard, run_command, submit


def register(subparsers: Any) -> None:
    run_command.register(subparsers)
    catalog_commands.register(subparsers)
    leaderboard.register(subparsers)
    check.register(subparsers)
    submit.register(subparsers)
