"""The model zoo: validated `ModelSpec` entries from model_zoo.yaml (plus user files), lookup and sets.

The canonical built-in file is platobench/zoo/model_zoo.yaml (shipped in the package); the repository root's
model_zoo.yaml is a symlink to it. `load_zoo(extra_files)` merges user files over it.

The names below are imported on first use, so that building the command-line parser (which needs only
`add_zoo_option` and the opt-ins `remote_code`, `python_code`) does not load pydantic and validate the schema.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from platobench.zoo.loading import BUILTIN_ZOO, ZooError, read_zoo_file
    from platobench.zoo.options import add_zoo_option, zoo_from_args
    from platobench.zoo.registry import Zoo, load_zoo
    from platobench.zoo.spec import ModelSpec

#: Exported name -> the submodule that defines it.
_HOMES: dict[str, str] = {
    "BUILTIN_ZOO": "loading",
    "ZooError": "loading",
    "read_zoo_file": "loading",
    "add_zoo_option": "options",
    "zoo_from_args": "options",
    "Zoo": "registry",
    "load_zoo": "registry",
    "ModelSpec": "spec",
}


def __getattr__(name: str) -> Any:
    """An exported name, imported from its submodule on first access."""
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
    globals()[name] = value
    return value


__all__ = [
    "BUILTIN_ZOO",
    "ModelSpec",
    "Zoo",
    "ZooError",
    "add_zoo_option",
    "load_zoo",
    "read_zoo_file",
    "zoo_from_args",
]
