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
    """Number of nodes in `node` with every alias expanded, counted up to just past `cap`.

    Iterative (no recursion limit on deep nesting); a node that contains itself counts as past `cap`."""
    memo: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(node, False)]
    while stack:
        n, children_done = stack.pop()
        if id(n) in memo:
            continue
        kids = _children(n)
        if not children_done:
            if id(n) in on_path:
                return cap + 1
            on_path.add(id(n))
            stack.append((n, True))
            for kid in kids:
                if id(kid) in on_path:
                    return cap + 1
                if id(kid) not in memo:
                    stack.append((kid, False))
            continue
        on_path.discard(id(n))
        memo[id(n)] = min(1 + sum(memo[id(k)] for k in kids), cap + 1)
    return memo[id(node)]


def _children(n: yaml.Node) -> list[yaml.Node]:
    if isinstance(n, yaml.SequenceNode):
        return list(n.value)
    if isinstance(n, yaml.MappingNode):
        return [x for pair in n.value for x in pair]
    return []


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
    except YamlError:
        raise
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f"{where}:{mark.line + 1}" if mark is not None else where
        reason = str(getattr(exc, "problem", None) or exc)
        raise YamlError(f"{at}: malformed YAML: {reason[:200]}") from exc
    except (ValueError, TypeError, RecursionError, OverflowError) as exc:  # scalar constructors, deep nesting
        raise YamlError(f"{where}: malformed YAML: {str(exc)[:200]}") from exc
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
    return load_yaml_text(text, str(path), loader)
