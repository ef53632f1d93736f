"""Reading YAML safely: the safe loader only, text that must be UTF-8, and a cap on alias expansion.

Aliases are allowed (the built-in zoo shares model lists between sets with them), but a document whose
fully expanded node count exceeds `MAX_EXPANDED_NODES` is refused before anything is built from it,
so a few hundred bytes of nested aliases ("billion laughs") cannot grow into gigabytes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from platobench.errors import UserError

MAX_EXPANDED_NODES = 200_000
MAX_FILE_BYTES = 64 * 2**20

SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class YamlError(UserError):
    """A YAML file that cannot be read, is not UTF-8 text, is malformed, or expands too far."""


def expanded_size(node: yaml.Node, cap: int = MAX_EXPANDED_NODES) -> int:
    """Number of nodes in `node` with every alias expanded, counted up to just past `cap`."""
    memo: dict[int, int] = {}

    def size(n: yaml.Node) -> int:
        if id(n) in memo:
            return memo[id(n)]
        memo[id(n)] = cap + 1  # a node reached again while being counted: a cycle, refuse it
        if isinstance(n, yaml.SequenceNode):
            total = 1 + sum(size(c) for c in n.value)
        elif isinstance(n, yaml.MappingNode):
            total = 1 + sum(size(k) + size(v) for k, v in n.value)
        else:
            total = 1
        memo[id(n)] = min(total, cap + 1)
        return memo[id(n)]

    return size(node)


def load_yaml_text(text: str, where: str, loader: type = SafeLoader) -> Any:
    """Parse one YAML document with `loader` (a safe loader or subclass) after checking its size."""
    instance = loader(text)
    try:
        node = instance.get_single_node()
        if node is None:
            return None
        if expanded_size(node) > MAX_EXPANDED_NODES:
            raise YamlError(
                f"{where}: YAML aliases expand to more than {MAX_EXPANDED_NODES:,} nodes; refusing to read it"
            )
        return instance.construct_document(node)
    finally:
        instance.dispose()


def read_yaml(path: str | Path, what: str = "YAML file", loader: type = SafeLoader) -> Any:
    """Read `path` as UTF-8 YAML. YamlError (naming the file) for unreadable, non-UTF-8, malformed or
    over-expanding input; the parser's message is kept short."""
    path = Path(path)
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise YamlError(f"{what} {path} is larger than {MAX_FILE_BYTES // 2**20} MiB")
        text = path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise YamlError(f"cannot read {what} {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise YamlError(f"{what} {path} is not UTF-8 text (byte {exc.start}); is it a binary file?") from exc
    try:
        return load_yaml_text(text, str(path), loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        reason = str(getattr(exc, "problem", None) or exc)
        raise YamlError(f"{where}: malformed YAML: {reason[:200]}") from exc
