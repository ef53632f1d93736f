"""Registries looked up from several threads at once (issue 55, item 12): a thread never sees a registry
whose built-ins or plugins another thread is still importing, so two `evaluate` calls in threads of a fresh
process both run (they failed with "unknown metric" while the first lookup imported the metrics)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import time
import types
from pathlib import Path

import pytest
from bench_fixtures import CHECK_N, CHECK_PAIR, TINY_SETTINGS, seed_features

from platobench import registry
from platobench.paths import home
from platobench.registry import Registry


def _slow_builtins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> Registry[int]:
    """A registry whose built-in module takes 0.3 s to import and registers 'late' at its end."""
    holder = types.ModuleType(f"{name}_holder")
    holder.registry = Registry("gadget", builtins=[name])
    monkeypatch.setitem(sys.modules, holder.__name__, holder)
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(f"""
        import time
        import {holder.__name__} as holder
        time.sleep(0.3)
        holder.registry.register("late", 1)
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)
    return holder.registry


def _in_threads(calls: int, fn) -> list[object]:  # noqa: ANN001
    """fn() in `calls` threads started together -> what each returned or raised."""
    out: list[object] = [None] * calls

    def run(i: int) -> None:
        try:
            out[i] = fn()
        except Exception as exc:
            out[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(calls)]
    for t in threads:
        t.start()
        time.sleep(0.05)  # the first thread is importing the built-ins when the others look up
    for t in threads:
        t.join()
    return out


def test_a_lookup_waits_for_the_builtins_another_thread_imports(tmp_path, monkeypatch):
    r = _slow_builtins(tmp_path, monkeypatch, "slow_builtin_gadgets")
    monkeypatch.setattr(registry, "_plugins_loaded", True)
    assert _in_threads(3, lambda: r.get("late")) == [1, 1, 1]


def test_a_lookup_waits_for_the_plugins_another_thread_loads(monkeypatch):
    r: Registry[str] = Registry("widget")
    plugin = types.ModuleType("slow_widget_plugin")

    def setup() -> None:
        time.sleep(0.3)
        r.register("from-plugin", "made by a plugin")

    plugin.setup = setup
    monkeypatch.setitem(sys.modules, "slow_widget_plugin", plugin)
    import importlib.metadata

    entry = importlib.metadata.EntryPoint("mine", "slow_widget_plugin:setup", registry.ENTRY_POINT_GROUP)
    monkeypatch.setattr(registry.importlib.metadata, "entry_points",
                        lambda group: [entry] if group == registry.ENTRY_POINT_GROUP else [])
    monkeypatch.setattr(registry, "_plugins_loaded", False)
    assert _in_threads(3, lambda: r.get("from-plugin")) == ["made by a plugin"] * 3


def test_a_lazy_entry_is_resolved_once_across_threads(monkeypatch):
    calls = []
    module = types.ModuleType("slow_lazy_module")

    class Slow(types.ModuleType):
        def __getattr__(self, name: str) -> object:
            calls.append(name)
            time.sleep(0.2)
            return "resolved"

    module.__class__ = Slow
    monkeypatch.setitem(sys.modules, "slow_lazy_module", module)
    monkeypatch.setattr(registry, "_plugins_loaded", True)
    r: Registry[str] = Registry("thing")
    r.register_lazy("t", "slow_lazy_module:thing")
    assert _in_threads(3, lambda: r.get("t")) == ["resolved"] * 3 and calls == ["thing"]


SCRIPT = """
import json, sys, threading
import platobench

def run(setting, out):
    try:
        r = platobench.evaluate({pair!r}, setting, settings_files={settings!r}, limit={n}, progress=False)
        out[setting] = [r.failed, [x.score for x in r.records]]
    except Exception as exc:
        out[setting] = repr(exc)

out = {{}}
threads = [threading.Thread(target=run, args=(s, out)) for s in ("tiny-mknn", "tiny-cka")]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps(out))
"""


@pytest.mark.slow
def test_two_evaluate_calls_in_threads_of_a_fresh_process(tmp_path):
    seed_features(tmp_path / "home", CHECK_PAIR.split(":")[0], CHECK_N, seed=1)
    seed_features(tmp_path / "home", CHECK_PAIR.split(":")[1], CHECK_N, seed=2)
    shutil.copytree(home() / "data", tmp_path / "home" / "data")  # the dataset catalogue seeding built
    (tmp_path / "tiny.yaml").write_text(TINY_SETTINGS)
    code = SCRIPT.format(pair=CHECK_PAIR, settings=str(tmp_path / "tiny.yaml"), n=CHECK_N)
    env = {**os.environ, "PLATOBENCH_HOME": str(tmp_path / "home")}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    for setting in ("tiny-mknn", "tiny-cka"):
        assert isinstance(out[setting], list), out[setting]  # else the exception the call raised
        failed, scores = out[setting]
        assert failed == {} and len(scores) == 1, (setting, failed)
