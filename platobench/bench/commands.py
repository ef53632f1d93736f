"""CLI of the bench stage: run, leaderboard, check and submit."""

from __future__ import annotations

from typing import Any

from platobench.bench import check, leaderboard, run_command, submit


def register(subparsers: Any) -> None:
    run_command.register(subparsers)
    leaderboard.register(subparsers)
    check.register(subparsers)
    submit.register(subparsers)
