"""The one registry (`platobench.registry`): names, lazy targets, did-you-mean, globs, plugins."""

from __future__ import annotations

import importlib.metadata
import sys
import types

import pytest

from platobench import registry
from platobench.bench.protocols import PROTOCOLS
from platobench.cli import COMMANDS
from platobench.errors import UserError
from platobench.metrics.registry import METRICS, get_metric, list_metrics
from platobench.registry import Registry


def test_lookup_listing_and_refusals():
    r: Registry[int] = Registry("number")
    r.register("one", 1)
    r.register("two", 2)
    r.register("three", 3)
    assert r.get("two") == 2 and "one" in r and "four" not in r
    assert r.names() == ["one", "two", "three"] and r.names("t*") == ["two", "three"] and len(r) == 3
    with pytest.raises(UserError, match=r"unknown number 'thre' \(did you mean 'three'\?\); available"):
        r.get("thre")
    with pytest.raises(ValueError, match="registered twice"):
        r.register("one", 11)


def test_a_lazy_target_is_imported_on_first_lookup(monkeypatch):
    module = types.ModuleType("fake_lazy_module")
    module.thing = object()
    monkeypatch.setitem(sys.modules, "fake_lazy_module", module)
    r: Registry[object] = Registry("thing")
    r.register_lazy("t", "fake_lazy_module:thing")
    assert r.names() == ["t"] and r.get("t") is module.thing
    with pytest.raises(ValueError, match="module:attribute"):
        r.register_lazy("u", "fake_lazy_module.thing")


def test_builtins_and_plugins_register_on_the_first_lookup(monkeypatch):
    calls = []
    r: Registry[str] = Registry("gadget", builtins=["fake_builtin_gadgets"])
    builtin = types.ModuleType("fake_builtin_gadgets")
    monkeypatch.setitem(sys.modules, "fake_builtin_gadgets", builtin)
    entry = importlib.metadata.EntryPoint("mine", "fake_plugin:setup", registry.ENTRY_POINT_GROUP)
    plugin = types.ModuleType("fake_plugin")
    plugin.setup = lambda: calls.append(r.register("from-plugin", "made by a plugin"))
    monkeypatch.setitem(sys.modules, "fake_plugin", plugin)
    monkeypatch.setattr(registry.importlib.metadata, "entry_points",
                        lambda group: [entry] if group == registry.ENTRY_POINT_GROUP else [])
    monkeypatch.setattr(registry, "_plugins_loaded", False)
    assert r.get("from-plugin") == "made by a plugin" and calls == ["made by a plugin"]


def test_the_project_registries():
    assert get_metric("mutual_knn") is METRICS.get("mutual_knn")
    assert [m.id for m in list_metrics("*knn")] == sorted(METRICS.names("*knn"))
    assert {"paired", "zeroshot"} <= set(PROTOCOLS.names()) and "run" not in COMMANDS
    assert COMMANDS.names()[0] == "zoo" and callable(COMMANDS.get("bench"))


def test_a_registered_setting_kind_is_a_valid_setting_kind(monkeypatch):
    """Setting kinds are open: a plugin's protocol is all a setting of its kind needs (no Literal to extend);
    settings validation, the reads and the scorer come from it."""
    import pydantic

    from platobench.bench.protocols import PairedProtocol, protocol_for, scorer_for
    from platobench.bench.scoring import score_paired
    from platobench.bench.settings import Setting

    class Toy(PairedProtocol):
        kind = "toy-paired"

    with pytest.raises(pydantic.ValidationError, match="unknown setting kind 'toy-paired'"):
        Setting(id="t", kind="toy-paired", dataset="tuxpaint", metric="cka")
    monkeypatch.setitem(PROTOCOLS._entries, "toy-paired", Toy())
    setting = Setting(id="t", kind="toy-paired", dataset="tuxpaint", metric="cka")
    assert protocol_for(setting.kind).reads(setting, ("text", "vision"), ("a", "b")) == ("caption:0", "image")
    assert scorer_for("toy-paired") is score_paired
    with pytest.raises(pydantic.ValidationError, match="did you mean 'toy-paired'"):
        Setting(id="t", kind="toy-pared", dataset="tuxpaint", metric="cka")
