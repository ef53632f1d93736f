"""CLI of the bench stage: run (and, as they land, leaderboard, submit, check)."""

from __future__ import annotations

from typing import Any

from platobench.bench import run_command


def register(subparsers: Any) -> None:
    run_command.register(subparsers)
