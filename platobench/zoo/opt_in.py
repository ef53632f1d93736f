"""Running a model's own Python code only for models the user names: one `OptIn` per kind of code.

Each kind is a repeatable command-line option taking model names or globs (`--trust-remote-code`, see
platobench.zoo.remote_code; `--trust-code`, see platobench.zoo.python_code). The command-line entry point
(`platobench.cli.main`) holds the names given in `allowed(...)` while a command runs; library callers do
the same, e.g. `with python_code.allowed(["family/arch.tag"]): load_encoder(spec)`.
"""

from __future__ import annotations

import argparse
import fnmatch
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from platobench.errors import UserError
from platobench.files.ids import shown

# A model name ("family/arch.tag", see platobench.files.ids) that may hold glob characters.
PATTERN_RULE = re.compile(r"^[a-z0-9._+\-*?\[\]]{1,100}(/[a-z0-9._+\-*?\[\]]{1,100})?$")


class OptIn:
    """One kind of code that runs only for models named with `option` (patterns in force: `patterns()`)."""

    def __init__(self, option: str, help: str) -> None:
        self.option, self.help = option, help
        self._allowed: tuple[str, ...] = ()

    def add_option(self, parser: argparse.ArgumentParser) -> None:
        """Add the repeatable `OPTION MODEL` to a command that loads models."""
        parser.add_argument(self.option, action="append", default=[], metavar="MODEL", help=self.help)

    def check_patterns(self, patterns: Iterable[str]) -> tuple[str, ...]:
        """The patterns, lowercased; UserError for one that cannot name a model."""
        checked = []
        for pattern in patterns:
            key = pattern.strip().lower() if isinstance(pattern, str) else pattern
            if not isinstance(key, str) or not PATTERN_RULE.match(key) or ".." in key:
                raise UserError(f"{self.option} {shown(pattern)}: expected a model name 'family/arch.tag' or a glob of one")
            checked.append(key)
        return tuple(checked)

    @contextmanager
    def allowed(self, patterns: Iterable[str]) -> Iterator[tuple[str, ...]]:
        """Trust models matching `patterns` inside the block (the previous set is restored)."""
        previous = self._allowed
        self._allowed = self.check_patterns(patterns)
        try:
            yield self._allowed
        finally:
            self._allowed = previous

    def patterns(self) -> tuple[str, ...]:
        """The patterns in force now (empty outside `allowed`)."""
        return self._allowed

    def trusts(self, name: str) -> bool:
        """True when model `name` matches a pattern in force."""
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in self._allowed)

    def require(self, name: str, what: str) -> None:
        """UserError naming the model and the option to add, unless the user trusts `name`; `what` says
        what the model asks to run ("runs ... code from ...")."""
        if not self.trusts(name):
            raise UserError(f"model {name} {what}; rerun with {self.option} {name} if you trust it")
