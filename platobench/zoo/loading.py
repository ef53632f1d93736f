"""Reading zoo YAML files into validated `ModelSpec`s, with errors that name file, line, entry and field.

File format (see the built-in `model_zoo.yaml` beside this module):

    version: 1
    models:            # list of ModelSpec mappings
      - name: family/arch.tag
        ...
    sets:              # optional: set name -> list of model names (nested lists, e.g. YAML aliases,
      my-set: [a/b, c/d]  # are flattened)

A file may also be a bare list of model entries (what `platobench jepa train` writes as zoo_entry.yaml).

A local `source` written as "./dir" or "../dir" is relative to the YAML file that names it ("~" is expanded).
Files are read with `platobench.files.yaml_safe` (UTF-8 only, alias expansion capped); model and set names
follow `platobench.files.ids`; error messages quote at most a short prefix of any input (`shown`).
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pydantic

from platobench.errors import UserError
from platobench.files.ids import ID_PATTERN, ID_RULE, shown
from platobench.files.yaml_lines import LineLoader, field_problem
from platobench.files.yaml_safe import YamlError, read_yaml
from platobench.zoo.spec import ModelSpec, is_local_path

BUILTIN_ZOO = Path(__file__).with_name("model_zoo.yaml")
TOP_LEVEL_KEYS = ("version", "models", "sets")
SUPPORTED_VERSIONS = (1,)
#: Most problems listed for one file (a hostile file could produce one per alias-expanded node).
MAX_PROBLEMS = 50


class ZooError(UserError):
    """One or more problems in zoo files; `problems` holds one line per problem, each naming the file,
    line, entry and field."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        head = self.problems[0] if len(self.problems) == 1 else f"{len(self.problems)} problems in the model zoo"
        body = "" if len(self.problems) == 1 else "\n  " + "\n  ".join(self.problems)
        super().__init__(head + body)


@dataclass
class ZooFile:
    """The validated contents of one zoo file (set members are checked later, against the merged zoo)."""

    path: Path
    models: list[ModelSpec] = field(default_factory=list)
    sets: dict[str, list[str]] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)  # model or set name -> line in the file


_END = object()


def _flatten(members: Any) -> list[Any]:
    """The leaves of arbitrarily nested lists, in order (iterative: no recursion limit to hit)."""
    leaves: list[Any] = []
    stack = [iter([members])]
    while stack:
        item = next(stack[-1], _END)
        if item is _END:
            stack.pop()
        elif isinstance(item, list):
            stack.append(iter(item))
        else:
            leaves.append(item)
    return leaves


def _resolve_local_source(entry: dict[str, Any], base: Path) -> dict[str, Any]:
    source = entry.get("source")
    if not isinstance(source, str) or not is_local_path(source):
        return entry
    path = Path(source).expanduser()
    if not path.is_absolute():
        path = (base / path).resolve()
    return {**entry, "source": str(path)}


def read_zoo_file(path: str | Path, *, for_extraction: bool = False) -> ZooFile:
    """Parse and validate one zoo file. Raises ZooError listing every problem found in it; with
    `for_extraction`, also every entry features cannot be extracted with (`ModelSpec.extraction_problem`)."""
    path = Path(path)
    if not path.is_file():
        raise ZooError([f"{path}: zoo file not found"])
    try:
        data = read_yaml(path, what="zoo file", loader=LineLoader)  # a safe loader
    except YamlError as exc:  # unreadable, not UTF-8, malformed, over-expanding or too deeply nested
        raise ZooError([str(exc)]) from exc

    if isinstance(data, list):  # a bare list of entries, e.g. the zoo_entry.yaml of `platobench jepa train`
        data = {"models": data}
    if not isinstance(data, dict):
        raise ZooError([f"{path}: expected a mapping with keys {', '.join(TOP_LEVEL_KEYS)}, or a list of models"])
    problems: list[str] = []
    for key in data:
        if key not in TOP_LEVEL_KEYS:
            problems.append(f"{path}: unknown top-level key {shown(key)} (allowed: {', '.join(TOP_LEVEL_KEYS)})")
    version = data.get("version", 1)
    if version not in SUPPORTED_VERSIONS:
        problems.append(f"{path}: unsupported 'version' {shown(version)} (supported: {SUPPORTED_VERSIONS})")

    result = ZooFile(path=path)
    problems += _read_models(data.get("models") or [], result, for_extraction)
    problems += _read_sets(data.get("sets") or {}, result)
    if problems:
        raise ZooError(capped(problems))
    return result


def capped(problems: list[str], limit: int = MAX_PROBLEMS) -> list[str]:
    """The first `limit` problems, plus one line counting the rest."""
    if len(problems) <= limit:
        return problems
    return [*problems[:limit], f"... and {len(problems) - limit:,} more problems"]


def _read_models(entries: Any, result: ZooFile, for_extraction: bool) -> list[str]:
    """Validate the `models` list into `result.models`; returns the problems found."""
    path = result.path
    if not isinstance(entries, list):
        return [f"{path}: 'models' must be a list of model entries"]
    problems: list[str] = []
    allowed = tuple(ModelSpec.model_fields)
    for index, entry in enumerate(entries):
        line = getattr(entry, "line", 0)
        where = f"{path}:{line}" if line else str(path)
        if not isinstance(entry, dict):
            problems.append(f"{where}: models[{index}]: expected a mapping of fields, got {type(entry).__name__}")
            continue
        label = f"models[{index}] ({shown(entry['name'])})" if isinstance(entry.get("name"), str) else f"models[{index}]"
        try:
            spec = ModelSpec.model_validate(_resolve_local_source(dict(entry), path.parent))
        except pydantic.ValidationError as exc:
            problems.extend(f"{where}: {label}: {_field_problem(err, allowed)}" for err in exc.errors())
            continue
        problem = spec.extraction_problem() if for_extraction else None
        if problem is not None:
            problems.append(f"{where}: {label}: {problem}")
        if spec.name in result.lines:
            problems.append(
                f"{where}: {label}: field 'name': duplicate name {spec.name!r} "
                f"(first defined at line {result.lines[spec.name]})"
            )
            continue
        result.lines[spec.name] = line
        result.models.append(spec)
    return problems


def _field_problem(error: dict[str, Any], allowed: tuple[str, ...]) -> str:
    """`field_problem`'s line for one pydantic error; for an unknown key that only looks like an allowed
    one, also what differs: characters outside printable ASCII (a Cyrillic 'ѕ' for an 's', a no-break
    space) by code point and name, or spaces around it. Its suggestion would otherwise read as the very
    key refused."""
    line = field_problem(error, allowed)
    key = error["loc"][-1] if error["type"] == "extra_forbidden" and error["loc"] else None
    if not isinstance(key, str):
        return line
    odd = [c for c in dict.fromkeys(key) if not (c.isascii() and c.isprintable())]
    if odd:
        names = ", ".join(f"U+{ord(c):04X} {unicodedata.name(c, 'without a name')}" for c in odd[:3])
        return f"{line}; the key holds {names}, not printable ASCII"
    if key != key.strip():
        return f"{line}; the key has spaces around it"
    return line


def _read_sets(raw_sets: Any, result: ZooFile) -> list[str]:
    """Check the `sets` mapping into `result.sets` (members are checked against the merged zoo later)."""
    path = result.path
    if not isinstance(raw_sets, dict):
        return [f"{path}: 'sets' must map set names to lists of model names"]
    problems: list[str] = []
    for set_name, members in raw_sets.items():
        members_flat = _flatten(members)
        if not isinstance(set_name, str) or not ID_PATTERN.match(set_name):
            problems.append(f"{path}: sets[{shown(set_name)}]: a set name is {ID_RULE}, no '/'")
            continue
        if not members_flat or not all(isinstance(m, str) for m in members_flat):
            problems.append(f"{path}: sets[{set_name!r}]: expected a non-empty list of model names")
            continue
        result.sets[set_name] = list(dict.fromkeys(members_flat))
    return problems
