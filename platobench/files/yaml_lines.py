"""YAML files whose errors name their line: a safe loader that records each mapping's line and refuses
duplicate keys, and one-line wording of pydantic validation errors with a did-you-mean for unknown keys.
Used by the zoo files and the datasets files."""

from __future__ import annotations

import difflib
from typing import Any

import yaml

from platobench.files.ids import shown
from platobench.files.yaml_safe import SafeLoader


class LineMapping(dict):
    """A YAML mapping that remembers its 1-based line number."""

    line: int = 0


class LineLoader(SafeLoader):  # libyaml's parser when available (7x faster)
    """Safe loader that rejects duplicate keys and records the line of every mapping."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                hash(key)
            except TypeError:
                raise yaml.constructor.ConstructorError(
                    None, None, f"unhashable key (a {type(key).__name__.lstrip('_').lower()})", key_node.start_mark
                ) from None
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r} (first at line {seen[key]})", key_node.start_mark
                )
            seen[key] = key_node.start_mark.line + 1
        mapping = LineMapping(super().construct_mapping(node, deep=deep))
        mapping.line = node.start_mark.line + 1
        return mapping


LineLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    lambda loader, node: loader.construct_mapping(node, deep=True),
)


def field_problem(error: dict[str, Any], allowed: tuple[str, ...]) -> str:
    """One pydantic error (an item of `ValidationError.errors()`) as a line: an unknown key with the closest
    of `allowed` (did you mean), a missing field, or the field and the message with the offending value."""
    loc = ".".join(str(p) for p in error["loc"]) if error["loc"] else ""
    if error["type"] == "extra_forbidden":
        close = difflib.get_close_matches(str(loc), allowed, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else f" (allowed keys: {', '.join(allowed)})"
        return f"unknown key {shown(loc)}{hint}"
    if error["type"] == "missing":
        return f"field '{loc}': required field is missing"
    message = error["msg"].removeprefix("Value error, ")
    if loc and not isinstance(error.get("input"), (dict, list)):
        message += f" (got {shown(error['input'])})"
    return f"field '{loc}': {message}" if loc else message
