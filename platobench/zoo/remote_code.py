"""Running code from a model's repository (transformers' `trust_remote_code`) only when the user names it.

A zoo entry with `trust_remote_code: true` asks to import Python shipped with its weights. That runs only
for models named on the command line with `--trust-remote-code NAME` (repeatable, globs allowed); the
command-line entry point (`platobench.cli.main`) holds those names in `allowed(...)` while a command runs.
Library callers do the same: `with allowed(["family/arch.tag"]): load_encoder(spec)`.
"""

from __future__ import annotations

import argparse
import fnmatch
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Protocol

from platobench.errors import UserError
from platobench.files.ids import shown

OPTION = "--trust-remote-code"
# A model name ("family/arch.tag", see platobench.files.ids) that may hold glob characters.
PATTERN_RULE = re.compile(r"^[a-z0-9._+\-*?\[\]]{1,100}(/[a-z0-9._+\-*?\[\]]{1,100})?$")

_allowed: tuple[str, ...] = ()


class _Spec(Protocol):
    name: str
    trust_remote_code: bool


def add_trust_remote_code_option(parser: argparse.ArgumentParser) -> None:
    """Add a repeatable `--trust-remote-code MODEL` to a command that loads models."""
    parser.add_argument(
        OPTION,
        action="append",
        default=[],
        metavar="MODEL",
        help=(
            "let this model (name or glob; repeatable) run Python code from its repository, for a zoo entry "
            "with 'trust_remote_code: true'; without it such a model is refused"
        ),
    )


def check_patterns(patterns: Iterable[str]) -> tuple[str, ...]:
    """The patterns, lowercased; UserError for one that cannot name a model."""
    checked = []
    for pattern in patterns:
        key = pattern.strip().lower() if isinstance(pattern, str) else pattern
        if not isinstance(key, str) or not PATTERN_RULE.match(key) or ".." in key:
            raise UserError(f"{OPTION} {shown(pattern)}: expected a model name 'family/arch.tag' or a glob of one")
        checked.append(key)
    return tuple(checked)


@contextmanager
def allowed(patterns: Iterable[str]) -> Iterator[tuple[str, ...]]:
    """Allow remote code for models matching `patterns` inside the block (the previous set is restored)."""
    global _allowed
    previous = _allowed
    _allowed = check_patterns(patterns)
    try:
        yield _allowed
    finally:
        _allowed = previous


def allowed_patterns() -> tuple[str, ...]:
    """The patterns in force now (empty outside `allowed`)."""
    return _allowed


def remote_code_flag(spec: _Spec) -> bool:
    """The `trust_remote_code` value to give transformers for `spec`: True only when the entry asks for it
    and the user named the model; UserError when it asks and was not named; False otherwise."""
    if spec.trust_remote_code is not True:
        return False
    if any(fnmatch.fnmatchcase(spec.name, pattern) for pattern in _allowed):
        return True
    raise UserError(
        f"model {spec.name} asks to run code from its repository; "
        f"rerun with {OPTION} {spec.name} if you trust it"
    )
