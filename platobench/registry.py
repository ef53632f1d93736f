"""One registry of named things, used for every kind platobench looks up by name: metrics
(`metrics.registry.METRICS`), setting kinds (`bench.protocols.PROTOCOLS`), model loaders
(`zoo.support.LOADERS`), datasets (`data.catalog.DATASETS`), commands (`cli.COMMANDS`), record kinds
that `check` verifies their own way (`bench.check.VERIFIERS`), how the leaderboard shows each record
kind (`leaderboard.kinds.RECORD_KINDS`) and the reports rebuilt from committed data
(`leaderboard.reports.REPORTS`).

A `Registry[T]` maps names to objects of one kind. An entry is the object itself or a lazy target
"package.module:attribute", imported on its first lookup (a command module may load torch; `--help` must
not). Built-ins are modules whose import registers them, imported on the first lookup, and so
are plugins: every entry point of the group `platobench.plugins` (a module, imported, or a callable,
called) may register into any registry, e.g. in a plugin's pyproject.toml::

    [project.entry-points."platobench.plugins"]
    my_metrics = "my_package.platobench_metrics"

Lookups of unknown names raise `UserError` naming the closest registered name (difflib) and the others;
listing takes a glob (`fnmatch`), as timm's `list_models` does, and keeps the registration order.

Lookups are thread-safe: built-ins, plugins and lazy targets are imported under one lock shared by every
registry (`_IMPORTING`), so a thread that looks up while another imports waits for the import to finish
instead of finding the registry half filled (two `evaluate` calls in threads once failed so with
"unknown metric"); a lookup from inside those imports, in the importing thread, goes through.
"""

from __future__ import annotations

import difflib
import fnmatch
import importlib
import importlib.metadata
import threading
from collections.abc import Iterator, Sequence
from typing import Any, Generic, TypeVar

from platobench.errors import UserError

T = TypeVar("T")

#: The entry-point group of plugins (each a module or a callable that registers into the registries).
ENTRY_POINT_GROUP = "platobench.plugins"
_plugins_loaded = False
#: Held while built-ins, plugins or a lazy target are imported: one re-entrant lock for every registry, so
#: that a registry's import may look up another registry without two locks taken in opposite orders.
_IMPORTING = threading.RLock()


def did_you_mean(value: Any, options: Any) -> str:
    """' (did you mean 'x'?)' with the closest of `options` to `value` (difflib), or '' when none is close."""
    close = difflib.get_close_matches(str(value), [str(o) for o in options], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def load_plugins() -> None:
    """Import (or call) every `platobench.plugins` entry point, once per process; another thread waits
    until they are loaded."""
    global _plugins_loaded
    with _IMPORTING:
        if _plugins_loaded:  # loaded, or being loaded by this thread (a plugin's own lookups)
            return
        _plugins_loaded = True
        for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            loaded = entry.load()
            if callable(loaded):
                loaded()


def resolve_target(target: str) -> Any:
    """The object a "package.module:attribute" target names (the module is imported)."""
    module, sep, attribute = target.partition(":")
    if not sep or not module or not attribute:
        raise ValueError(f"lazy target {target!r}: expected 'package.module:attribute'")
    obj: Any = importlib.import_module(module)
    for part in attribute.split("."):
        obj = getattr(obj, part)
    return obj


class Registry(Generic[T]):
    """Names -> objects of one `kind` ("metric", "scorer", ...), in registration order.

    builtins: modules whose import registers the built-in entries (imported on the first lookup)."""

    def __init__(self, kind: str, builtins: Sequence[str] = ()) -> None:
        self.kind = kind
        self._builtins = tuple(builtins)
        self._entries: dict[str, T | str] = {}
        self._lazy: set[str] = set()
        self._loaded = False  # set once the built-ins and plugins are imported
        self._loading = False  # this registry's built-ins are being imported (by the thread holding _IMPORTING)

    def register(self, name: str, obj: T) -> T:
        """Add `obj` under `name`; ValueError when the name is taken: a plugin never silently replaces a
        built-in."""
        self._add(name, obj)
        return obj

    def register_lazy(self, name: str, target: str) -> None:
        """Add the "package.module:attribute" `target` under `name`, imported when `name` is first looked up."""
        if ":" not in target:
            raise ValueError(f"lazy target {target!r}: expected 'package.module:attribute'")
        self._add(name, target)
        self._lazy.add(name)

    def _add(self, name: str, entry: T | str) -> None:
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        self._entries[name] = entry

    def _load(self) -> None:
        """Import the built-ins and the plugins once; another thread's lookup waits until they are in."""
        if self._loaded:
            return
        with _IMPORTING:
            if self._loaded or self._loading:  # done by another thread, or a lookup from inside the imports
                return
            self._loading = True
            try:
                for module in self._builtins:
                    importlib.import_module(module)
                load_plugins()
            finally:
                self._loading, self._loaded = False, True

    def get(self, name: str) -> T:
        """The entry `name`; UserError naming the closest name and every registered one when there is none."""
        self._load()
        if name not in self._entries:
            raise UserError(f"unknown {self.kind} {name!r}{did_you_mean(name, self._entries)}; "
                            f"available: {sorted(self._entries)}")
        if name in self._lazy:
            with _IMPORTING:
                if name in self._lazy:  # not resolved by another thread meanwhile
                    self._entries[name] = resolve_target(str(self._entries[name]))
                    self._lazy.discard(name)
        return self._entries[name]  # type: ignore[return-value]

    def names(self, pattern: str = "*") -> list[str]:
        """Registered names matching the glob `pattern`, in registration order (lazy entries are not
        imported)."""
        self._load()
        return [n for n in self._entries if fnmatch.fnmatch(n, pattern)]

    def items(self, pattern: str = "*") -> list[tuple[str, T]]:
        """(name, entry) for the names matching `pattern`, in registration order (lazy entries are imported)."""
        return [(n, self.get(n)) for n in self.names(pattern)]

    def values(self, pattern: str = "*") -> list[T]:
        """The entries whose names match `pattern`, in registration order (lazy entries are imported)."""
        return [entry for _, entry in self.items(pattern)]

    def __contains__(self, name: object) -> bool:
        self._load()
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())
