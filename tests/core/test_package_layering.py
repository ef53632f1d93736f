"""The package layering, read from the source (ast, nothing imported): the leaderboard never imports the
bench, result records import no stage that scores or renders, imports that run (at module load or inside a
function; not under TYPE_CHECKING) form no cycle between modules, module-level ones none between
subpackages (through results, leaderboard and bench), and no module takes a `_private` name from another
subpackage.

The experiments (platobench.experiments.*) sit beside the core: each imports the core only through
`platobench.api`, none imports another, and the core imports none of them, deferred imports included."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "platobench"


@dataclass(frozen=True)
class Import:
    """One import statement's target: `module` (a platobench module, resolved), the `names` it takes
    from it, and whether it runs when the importing module loads (not inside a function or under
    TYPE_CHECKING)."""

    module: str
    names: tuple[str, ...]
    top_level: bool
    typing_only: bool = False


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def all_modules(root: Path = ROOT) -> dict[str, Path]:
    return {module_name(p, root): p for p in sorted(root.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _walk(node: ast.AST, top_level: bool, typing: bool = False) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool, bool]]:
    """Every import under `node` with whether it runs at module load (function bodies and
    `if TYPE_CHECKING:` blocks do not; class bodies and module-level try/if blocks do) and whether it
    never runs (under `if TYPE_CHECKING:`)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child, top_level and not typing, typing
        elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            yield from _walk(child, False, typing)
        elif isinstance(child, ast.If) and _is_type_checking(child.test):
            for stmt in child.body:
                yield from _walk(ast.Module(body=[stmt], type_ignores=[]), top_level, True)
            for stmt in child.orelse:
                yield from _walk(ast.Module(body=[stmt], type_ignores=[]), top_level, typing)
        else:
            yield from _walk(child, top_level, typing)


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> list[Import]:
    """The platobench imports of module `name` (source `path`). `from P import m` where P.m is a module
    targets P.m; a package's own __init__ is not counted as imported when one of its modules is."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node, top_level, typing in _walk(ast.parse(path.read_text(encoding="utf-8"), str(path)), True):
        if isinstance(node, ast.Import):
            out += [Import(a.name, (), top_level, typing) for a in node.names if a.name.split(".")[0] == "platobench"]
            continue
        base = node.module or ""
        if node.level:
            anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
            base = ".".join([*anchor, *([base] if base else [])])
        if base.split(".")[0] != "platobench":
            continue
        plain = [a.name for a in node.names if f"{base}.{a.name}" not in modules]
        out += [Import(f"{base}.{a.name}", (), top_level, typing) for a in node.names if f"{base}.{a.name}" in modules]
        if plain:
            out.append(Import(base, tuple(plain), top_level, typing))
    return out


def import_graph(root: Path = ROOT) -> dict[str, list[Import]]:
    modules = all_modules(root)
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


EXPERIMENTS = "platobench.experiments"
API = "platobench.api"


def subpackage(module: str) -> str:
    """The stage a module belongs to: platobench.<first part> ("platobench.bench.runner" -> "platobench.bench"),
    or for an experiment platobench.experiments.<its name>."""
    parts = module.split(".")
    return ".".join(parts[:3] if ".".join(parts[:2]) == EXPERIMENTS else parts[:2])


def is_experiment(module: str) -> bool:
    return module == EXPERIMENTS or module.startswith(EXPERIMENTS + ".")


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node, or a node importing itself (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in edges.get(v, ()):
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def module_edges(graph: dict[str, list[Import]]) -> dict[str, set[str]]:
    """Module -> the platobench modules it imports when it loads."""
    return {m: {i.module for i in imps if i.top_level and i.module in graph} for m, imps in graph.items()}


def runtime_edges(graph: dict[str, list[Import]]) -> dict[str, set[str]]:
    """Module -> the platobench modules it imports at run time: when it loads or inside a function (a
    deferred import hides a circle from the loader, not from the design); `TYPE_CHECKING` ones never run."""
    return {m: {i.module for i in imps if not i.typing_only and i.module in graph} for m, imps in graph.items()}


def subpackage_edges(graph: dict[str, list[Import]], deferred: bool = False) -> dict[str, set[str]]:
    """Subpackage -> the other subpackages its modules import when they load (`deferred`: or inside a
    function)."""
    edges: dict[str, set[str]] = {}
    for m, targets in (runtime_edges if deferred else module_edges)(graph).items():
        edges.setdefault(subpackage(m), set()).update(subpackage(t) for t in targets if subpackage(t) != subpackage(m))
    return edges


def private_imports(graph: dict[str, list[Import]]) -> list[tuple[str, str, str]]:
    """(importer, name, module) for every `_private` name (dunders excepted) taken from another subpackage."""
    return [(m, n, i.module) for m, imps in graph.items() for i in imps if subpackage(i.module) != subpackage(m)
            for n in i.names if n.startswith("_") and not n.startswith("__")]


@pytest.fixture(scope="module")
def graph() -> dict[str, list[Import]]:
    return import_graph()


def _offenders(graph: dict[str, list[Import]], package: str, banned: tuple[str, ...]) -> list[str]:
    return [f"{m} imports {i.module}" for m, imps in graph.items() if subpackage(m) == package
            for i in imps if any(i.module == b or i.module.startswith(b + ".") for b in banned)]


def test_the_leaderboard_never_imports_the_bench(graph):
    assert any(subpackage(m) == "platobench.leaderboard" for m in graph)
    assert _offenders(graph, "platobench.leaderboard", ("platobench.bench",)) == []


def test_result_records_import_no_scoring_or_rendering_stage(graph):
    banned = ("platobench.bench", "platobench.leaderboard", "platobench.metrics", "platobench.features",
              "platobench.encoders")
    assert {"platobench.results", "platobench.results.schema", "platobench.results.io"} <= set(graph)
    assert _offenders(graph, "platobench.results", banned) == []


def test_no_import_cycle_between_modules(graph):
    """Deferred (function-level) imports count: they only hide a circle from the loader."""
    assert cycles(runtime_edges(graph)) == []


def test_no_import_cycle_between_subpackages(graph):
    """Subpackage level: results <- leaderboard <- bench, and no cycle of subpackages anywhere (zoo below
    encoders below features, for instance)."""
    edges = subpackage_edges(graph)
    assert "platobench.results" in edges["platobench.leaderboard"]
    assert "platobench.leaderboard" in edges["platobench.bench"]
    assert cycles(edges) == []


def test_no_import_cycle_between_subpackages_counting_deferred_imports(graph):
    assert cycles(subpackage_edges(graph, deferred=True)) == []


def test_no_private_name_is_imported_across_subpackages(graph):
    assert private_imports(graph) == []


def api_offenders(graph: dict[str, list[Import]]) -> list[str]:
    """Every import, deferred and TYPE_CHECKING ones included, that breaks the core / experiments line: an
    experiment takes from the core anything but `platobench.api`'s own names, or from another experiment;
    the core (anything outside platobench.experiments) imports an experiment."""
    out = []
    for m, imps in graph.items():
        for i in imps:
            if is_experiment(m):
                if subpackage(i.module) != subpackage(m) and i.module != API:
                    out.append(f"{m} imports {i.module}")
            elif is_experiment(i.module):
                out.append(f"{m} imports {i.module}")
    return out


def test_experiments_use_the_core_only_through_its_public_api(graph):
    experiments = {subpackage(m) for m in graph if is_experiment(m) and m != EXPERIMENTS}
    assert {"platobench.experiments.jepa", "platobench.experiments.stitch"} <= experiments
    assert any(i.module == API for m in graph if is_experiment(m) for i in graph[m])
    assert api_offenders(graph) == []


def test_every_api_name_resolves():
    """The lazy table of `platobench.api` and its TYPE_CHECKING imports name the same objects."""
    import platobench.api as api

    tree = ast.parse((ROOT / "api" / "__init__.py").read_text(encoding="utf-8"))
    typed = {a.name: node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
             and node.module and node.module.startswith("platobench") for a in node.names}
    assert typed == api._NAMES
    assert sorted(api.__all__) == sorted(api._NAMES)
    for name in api.__all__:
        assert getattr(api, name) is getattr(__import__(api._NAMES[name], fromlist=[name]), name)


# ----------------------------------------------------------------------------- the checks can fail


def _package(tmp_path: Path, files: dict[str, str]) -> dict[str, list[Import]]:
    root = tmp_path / "platobench"
    for rel, text in {"__init__.py": "", **files}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return import_graph(root)


def test_a_deferred_cycle_is_found_but_a_type_checking_import_is_not(tmp_path):
    g = _package(tmp_path, {
        "a/__init__.py": "", "a/x.py": "from platobench.a import y\n",
        "a/y.py": "from . import x\n",
        "b/__init__.py": "", "b/p.py": "from platobench.b.q import f\n",
        "b/q.py": "def f():\n    from platobench.b.p import g\n",
        "c/__init__.py": "", "c/s.py": "from platobench.c.t import f\n",
        "c/t.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from platobench.c import s\n"
                  "def f():\n    if TYPE_CHECKING:\n        from platobench.c.s import g\n",
    })
    assert cycles(module_edges(g)) == [["platobench.a.x", "platobench.a.y"]]
    assert cycles(runtime_edges(g)) == [["platobench.a.x", "platobench.a.y"], ["platobench.b.p", "platobench.b.q"]]


def test_a_cycle_between_subpackages_and_a_banned_import_are_found(tmp_path):
    g = _package(tmp_path, {
        "leaderboard/__init__.py": "", "leaderboard/m.py": "def f():\n    from platobench.bench.r import X\n",
        "bench/__init__.py": "", "bench/r.py": "from platobench.leaderboard.m import f\nX = 1\n",
        "bench/s.py": "", "leaderboard/n.py": "import platobench.bench.s\n",
    })
    assert _offenders(g, "platobench.leaderboard", ("platobench.bench",)) == [
        "platobench.leaderboard.m imports platobench.bench.r", "platobench.leaderboard.n imports platobench.bench.s"]
    assert cycles(subpackage_edges(g)) == [["platobench.bench", "platobench.leaderboard"]]


def test_an_experiment_reaching_past_the_api_and_the_core_importing_one_are_found(tmp_path):
    g = _package(tmp_path, {
        "api/__init__.py": "", "api/probe.py": "", "bench/__init__.py": "", "bench/r.py": "X = 1\n",
        "experiments/__init__.py": "", "experiments/a/__init__.py": "", "experiments/b/__init__.py": "",
        "experiments/a/ok.py": "from platobench.api import X\nfrom platobench.experiments.a import ok\n",
        "experiments/a/deep.py": "def f():\n    from platobench.bench.r import X\n",
        "experiments/a/sub.py": "from platobench.api import probe\n",
        "experiments/a/other.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                  "    from platobench.experiments.b import y\n",
        "bench/s.py": "def f():\n    import platobench.experiments.a.ok\n",
    })
    assert sorted(api_offenders(g)) == [
        "platobench.bench.s imports platobench.experiments.a.ok",
        "platobench.experiments.a.deep imports platobench.bench.r",
        "platobench.experiments.a.other imports platobench.experiments.b",
        "platobench.experiments.a.sub imports platobench.api.probe"]


def test_a_private_name_from_another_subpackage_is_found(tmp_path):
    g = _package(tmp_path, {
        "a/__init__.py": "", "a/x.py": "_hidden = 1\n__all__ = []\n", "a/y.py": "from platobench.a.x import _hidden\n",
        "b/__init__.py": "", "b/z.py": "def f():\n    from platobench.a.x import _hidden, __all__\n",
    })
    assert private_imports(g) == [("platobench.b.z", "_hidden", "platobench.a.x")]
