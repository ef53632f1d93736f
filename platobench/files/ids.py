"""The naming rule for every id that becomes part of a path, and a check that paths stay under a root.

Ids (setting, setting group, pair set, zoo set, dataset): lowercase letters, digits and `. _ + -`,
starting with a letter or digit, at most 100 characters (`ID_PATTERN`). Model names are two such
parts joined by one `/` ("family/arch.tag", `MODEL_NAME_PATTERN`) with no `__` or `--` in them: a
record's file name is `language__vision` with `/` written as `--` (a `--limit N` run's adds
`--limit-N`), so distinct pairs get distinct files.
Neither can spell `..`, an absolute path, markup or a newline.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from platobench.errors import UserError

MAX_ID_LENGTH = 100
ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._+-]{0,99}$")
MODEL_NAME_PATTERN = re.compile(r"^(?!.*(?:__|--))[a-z0-9][a-z0-9._+-]{0,99}/[a-z0-9][a-z0-9._+-]{0,99}$")
ID_RULE = "lowercase letters, digits and . _ + - (starting with a letter or digit, at most 100 characters)"


class InvalidIdError(UserError):
    """An id or model name does not follow the naming rule."""


def shown(value: Any, limit: int = 80) -> str:
    """`repr(value)` cut to `limit` characters, for error messages that echo input."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_id(value: Any, what: str) -> str:
    """`value` if it is an id (`ID_PATTERN`), else InvalidIdError naming `what` (e.g. "setting id")."""
    if not isinstance(value, str) or not ID_PATTERN.match(value):
        raise InvalidIdError(f"{what} {shown(value)} is not a valid id: use {ID_RULE}")
    return value


def check_model_name(value: Any, what: str = "model name") -> str:
    """`value` if it is a model name "family/arch.tag" (`MODEL_NAME_PATTERN`), else InvalidIdError."""
    if not isinstance(value, str) or not MODEL_NAME_PATTERN.match(value):
        raise InvalidIdError(
            f"{what} {shown(value)} is not a model name 'family/arch.tag' (each part: {ID_RULE}; "
            "no '__' or '--')"
        )
    return value


def contained(root: str | Path, *parts: str) -> Path:
    """`root / parts...`, refused (InvalidIdError) unless the resolved path stays inside `root`."""
    base = Path(root).resolve()
    path = base.joinpath(*parts).resolve()
    if path != base and base not in path.parents:
        raise InvalidIdError(f"path {shown('/'.join(parts))} leaves its folder {root}")
    return path
