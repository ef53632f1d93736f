"""The files that key a `loader: python` encoder's features, found and hashed without importing anything.

A module name is resolved to files by walking `sys.path` ('' is the current folder) the way the import
system finds source modules: in each folder in turn, `NAME/__init__.py` (a package), a compiled extension
`NAME.<suffix>`, `NAME.py`; a folder `NAME/` without `__init__.py` is a namespace portion. Nothing is
imported and `importlib.util.find_spec` is not called (it would import parent packages).

Hashed, starting from the encoder's module (`source: module:name`): the module's file and the
`__init__.py` of every package along its dotted name; then, read with `ast`, every module its `import`
and `from ... import` statements name (anywhere in the file, relative imports included, `from p import m`
counting submodule `p.m`), the same way and transitively, as long as the files lie outside the
interpreter's standard library and site-packages and outside platobench itself: the user's own files.
Names that resolve to nothing (attributes, missing optional packages) and built-in or compiled modules
are skipped. Not followed: modules imported by other means (`importlib.import_module`, `__import__`) and
data files the code reads.
"""

from __future__ import annotations

import ast
import hashlib
import site
import sys
import sysconfig
from collections.abc import Iterable, Sequence
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from typing import Protocol

from platobench.errors import UserError

# (file, package folders) of one dotted part: a package (__init__.py, [folder]), a module (NAME.py, None),
# a compiled module (None, None) or a namespace package (None, its folders).
_Part = tuple[Path | None, list[Path] | None]


class _Spec(Protocol):
    name: str
    source: str


def search_path() -> list[Path]:
    """The folders of `sys.path` in order ('' is the current folder)."""
    return [Path(p) if p else Path.cwd() for p in sys.path if isinstance(p, str)]


def library_roots() -> tuple[Path, ...]:
    """Folders whose modules are not the user's: the standard library, site-packages and platobench."""
    paths = sysconfig.get_paths()
    roots = [paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths]
    roots += [*site.getsitepackages(), site.getusersitepackages()]
    return (*(Path(r).resolve() for r in roots), Path(__file__).resolve().parents[1])


def _locate(part: str, folders: Sequence[Path]) -> _Part | None:
    """Where module `part` is in `folders` (first match wins; see `_Part`); None when it is in none."""
    portions = []
    for folder in folders:
        package = folder / part
        if (package / "__init__.py").is_file():
            return package / "__init__.py", [package]
        if any((folder / f"{part}{suffix}").is_file() for suffix in EXTENSION_SUFFIXES):
            return None, None
        if (folder / f"{part}.py").is_file():
            return folder / f"{part}.py", None
        if package.is_dir():
            portions.append(package)
    return (None, portions) if portions else None


def resolve(name: str, search: Sequence[Path]) -> list[tuple[str, Path, bool]] | None:
    """The source files of module `name`: (dotted name, file, is a package) for each package `__init__.py`
    along the name, then the module's own .py (absent for a compiled or namespace module); None when it is
    not found."""
    folders: list[Path] | None = list(search)
    files: list[tuple[str, Path, bool]] = []
    parts = name.split(".")
    if not all(part.isidentifier() for part in parts):
        return None  # not a module name ("..x", "a-b"): nothing the import system could find
    for i, part in enumerate(parts):
        if folders is None:  # a module, not a package: it has no submodules
            return None
        hit = _locate(part, folders)
        if hit is None:
            return None
        file, folders = hit
        if file is not None:
            files.append((".".join(parts[: i + 1]), file, folders is not None))
    return files


def _with_parents(name: str) -> list[str]:
    """"a.b.c" -> ["a", "a.b", "a.b.c"]."""
    parts = name.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def imported_names(tree: ast.AST, module: str, is_package: bool) -> list[str]:
    """Every module name an `import` / `from ... import` of `tree` may load (with its parent packages;
    relative imports resolved against `module`)."""
    package = module if is_package else module.rpartition(".")[0]
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [n for alias in node.names for n in _with_parents(alias.name)]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".") if package else []
                if node.level - 1 >= len(parts):
                    continue  # beyond the top-level package: fails at import time too
                base = ".".join([*parts[: len(parts) - node.level + 1], *([base] if base else [])])
            if base:
                names += _with_parents(base)
                names += [f"{base}.{alias.name}" for alias in node.names if alias.name != "*"]
    return names


def _is_local(file: Path, roots: Iterable[Path]) -> bool:
    resolved = file.resolve()
    return not any(resolved.is_relative_to(root) for root in roots)


def _read(file: Path, who: str) -> bytes:
    try:
        return file.read_bytes()
    except OSError as exc:
        raise UserError(f"{who}cannot read {file} to key its features ({exc})") from exc


def _parse(data: bytes, file: Path) -> ast.AST | None:
    """The syntax tree, or None for a file Python cannot parse (it fails when imported; its bytes still count)."""
    try:
        return ast.parse(data, filename=str(file))
    except (SyntaxError, ValueError):
        return None


def key_files(module: str, *, model: str = "") -> dict[str, tuple[Path, bytes]]:
    """Dotted module name -> (file, contents) of every file that keys an encoder in `module` (see the module
    docstring), read now. UserError (naming `model`) when `module` is not found or has no .py file."""
    search = search_path()
    who = f"model {model}: " if model else ""
    todo = resolve(module, search)
    if todo is None:
        raise UserError(f"{who}cannot find module {module!r} (is its folder on the Python path?)")
    if not todo or todo[-1][0] != module:
        raise UserError(f"{who}module {module!r} has no .py source file to hash (a compiled or namespace module); "
                        "the cache key of a python encoder is the sha256 of its code")
    roots = library_roots()
    files: dict[str, tuple[Path, bytes]] = {}
    seen = {module}
    while todo:
        name, file, is_package = todo.pop()
        if name in files or (name != module and not _is_local(file, roots)):
            continue  # hashed already, or not the user's: its imports are not followed
        data = _read(file, who)
        files[name] = (file, data)
        tree = _parse(data, file)
        for other in imported_names(tree, name, is_package) if tree is not None else []:
            if other not in seen and other not in sys.builtin_module_names:
                seen.add(other)
                todo += resolve(other, search) or []
    return files


def source_sha256(spec: _Spec) -> str:
    """sha256 (hex) of the files that key `spec` ("module:name"), in order of dotted name: "name|size\\n",
    then the bytes."""
    h = hashlib.sha256()
    for name, (_, data) in sorted(key_files(spec.source.partition(":")[0], model=spec.name).items()):
        h.update(f"{name}|{len(data)}\n".encode())
        h.update(data)
    return h.hexdigest()
