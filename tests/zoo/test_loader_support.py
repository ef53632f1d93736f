"""Loader support declared once (platobench.zoo.support): the zoo schema, `layer_ids_of` and the
leaderboard plots read it, it agrees with the loader modules and schema names, and it stays light."""

from __future__ import annotations

import dataclasses
import importlib
import json
import subprocess
import sys
from pathlib import Path
from typing import get_args

import pydantic
import pytest

from platobench.encoders import layer_ids_of
from platobench.errors import UserError
from platobench.leaderboard.plots import OTHER_MARKER, kind_marker
from platobench.zoo import ModelSpec, load_zoo, support
from platobench.zoo.kinds import MODALITY_OF_KIND
from platobench.zoo.spec import Kind, Modality, Pooling, SourceType

ROOT = Path(__file__).resolve().parents[2]

# Highest layer index (layers "all" -> 0..top) of every built-in entry, taken before the loader facts moved
# into platobench.zoo.support: the feature-cache keys of these entries must not change.
TOP_LAYER_BEFORE = {
    "baseline/bag-of-words": 0, "baseline/caption-length": 0, "baseline/colour-histogram": 0,
    "baseline/random-init-efficientnet-lite0": 8, "baseline/random-init-minilm-l6": 6,
    "bloomz/bloomz-1b1": 24, "bloomz/bloomz-1b7": 24, "bloomz/bloomz-3b": 30, "bloomz/bloomz-560m": 24,
    "bloomz/bloomz-7b1": 30, "clip/vit-b16.laion2b": 12, "clip/vit-b16.laion2b-ft-in12k": 12,
    "clip/vit-h14.laion2b": 32, "clip/vit-h14.laion2b-ft-in12k": 32, "clip/vit-l14.laion2b": 24,
    "clip/vit-l14.laion2b-ft-in12k": 24, "demo/dinov2-s-imgfocus": 12, "demo/efficientnet-lite0": 8,
    "demo/efficientnet-lite1": 8, "demo/efficientnet-lite2": 8, "demo/gemma3-270m": 18, "demo/minilm-l3": 3,
    "demo/minilm-l6": 6, "demo/mpnet-base": 12, "demo/smollm2-135m": 30, "dinov2-hf/vit-b14": 12,
    "dinov2-hf/vit-g14": 40, "dinov2-hf/vit-l14": 24, "dinov2-hf/vit-s14": 12, "dinov2/vit-b14.lvd142m": 12,
    "dinov2/vit-g14.lvd142m": 40, "dinov2/vit-l14.lvd142m": 24, "dinov2/vit-s14.lvd142m": 12,
    "dinov3/vit-7b16.lvd1689m": 40, "dinov3/vit-b16.lvd1689m": 12, "dinov3/vit-h16plus.lvd1689m": 32,
    "dinov3/vit-l16.lvd1689m": 24, "dinov3/vit-s16.lvd1689m": 12, "dinov3/vit-s16plus.lvd1689m": 12,
    "gemma/gemma-2b": 18, "gemma/gemma-7b": 28, "llama/llama-13b": 40, "llama/llama-30b": 60,
    "llama/llama-65b": 80, "llama/llama-7b": 32, "llama3/llama-3-70b": 80, "llama3/llama-3-8b": 32,
    "mae/vit-b16.mae": 12, "mae/vit-h14.mae": 32, "mae/vit-l16.mae": 24, "mistral/mistral-7b-v0.1": 32,
    "mistral/mixtral-8x7b-v0.1": 32, "olmo/olmo-1b": 16, "olmo/olmo-7b": 32, "open-llama/open-llama-13b": 40,
    "open-llama/open-llama-3b": 26, "open-llama/open-llama-7b": 32, "openai-clip/vit-b32.image": 13,
    "openai-clip/vit-b32.text": 13, "openai-clip/vit-l14.image": 25, "openai-clip/vit-l14.text": 13,
    "openclip/vit-h14.laion2b-image": 33, "openclip/vit-h14.laion2b-text": 25, "qwen2.5/qwen2.5-0.5b": 24,
    "qwen2.5/qwen2.5-1.5b": 28, "qwen2.5/qwen2.5-14b": 48, "qwen2.5/qwen2.5-32b": 64,
    "qwen2.5/qwen2.5-3b": 36, "qwen2.5/qwen2.5-72b": 80, "qwen2.5/qwen2.5-7b": 28,
    "qwen3/qwen3-0.6b-base": 28, "qwen3/qwen3-1.7b-base": 28, "qwen3/qwen3-4b-base": 36,
    "qwen3/qwen3-8b-base": 36, "sentence-transformers/all-minilm-l6-v2": 6,
    "sentence-transformers/all-mpnet-base-v2": 12, "vit/vit-b16.augreg-in21k": 12,
    "vit/vit-l16.augreg-in21k": 24, "vit/vit-s16.augreg-in21k": 12, "vit/vit-t16.augreg-in21k": 12
}

TIMM = {"name": "t/vit", "modality": "vision", "kind": "vision_vit", "loader": "timm", "source": "vit_x",
        "revision": "main", "pooling": "cls", "num_layers": 12}
CLIP = {"name": "c/clip", "modality": "vision", "kind": "clip_image", "loader": "openclip", "source": "ViT-B-32/x",
        "revision": "main", "pooling": "cls", "num_layers": 12}
BERT = {"name": "b/bert", "modality": "text", "kind": "text_encoder", "loader": "hf_text", "source": "org/bert",
        "revision": "main", "pooling": "cls", "num_layers": 6}


def declare(monkeypatch: pytest.MonkeyPatch, loader: str, **changes: object) -> None:
    """Replace `loader`'s declaration for this test by a copy with `changes`."""
    monkeypatch.setitem(support.LOADERS._entries, loader, dataclasses.replace(support.loader_support(loader), **changes))


def error_text(**fields: object) -> str:
    with pytest.raises(pydantic.ValidationError) as info:
        ModelSpec(**fields)
    return str(info.value)


# --- the declarations agree with the loader modules and the schema's names -----------------------------


def test_every_declared_loader_names_a_module_with_load() -> None:
    for name, s in support.LOADERS.items():
        assert name == s.loader and callable(importlib.import_module(s.module).load), name


def test_a_registered_loader_is_a_valid_zoo_loader(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loaders are open: a plugin's registered declaration is all the schema needs (no Literal to extend)."""
    fields = {"name": "mine/enc", "modality": "text", "kind": "text_encoder", "source": "org/enc", "revision": "main",
              "pooling": "avg",
              "num_layers": 2}
    assert "unknown loader 'my_loader'" in error_text(loader="my_loader", **fields)
    mine = dataclasses.replace(support.loader_support("hf_text"), loader="my_loader", module="my_package.loader")
    monkeypatch.setitem(support.LOADERS._entries, "my_loader", mine)
    assert ModelSpec(loader="my_loader", **fields).loader == "my_loader"


def test_schema_names_match_the_declared_kinds_poolings_dtypes_and_quantisation() -> None:
    assert set(get_args(Kind)) == set(support.KINDS) and list(MODALITY_OF_KIND) == list(support.KINDS)
    assert {k.modality for k in support.KINDS.values()} == set(get_args(Modality))
    declared_poolings = set().union(*(k.poolings for k in support.KINDS.values()))
    assert declared_poolings == set(get_args(Pooling))
    assert set().union(*(s.poolings for s in support.LOADERS.values())) <= declared_poolings
    assert {s.source_type for s in support.LOADERS.values()} <= set(get_args(SourceType))
    fields = ModelSpec.model_fields
    assert get_args(fields["dtype"].annotation) == support.DTYPE_POLICIES
    assert get_args(fields["quantization"].annotation) == support.QUANTIZATIONS
    for s in support.LOADERS.values():
        assert s.kinds <= set(support.KINDS), s.loader
        assert s.dtypes <= set(support.DTYPE_POLICIES) and s.quantization <= set(support.QUANTIZATIONS), s.loader
        assert "none" in s.quantization, s.loader


def test_each_loader_implements_every_pooling_of_the_kinds_it_builds() -> None:
    for s in support.LOADERS.values():
        for kind in s.kinds:
            assert support.KINDS[kind].poolings <= s.poolings, (s.loader, kind)


def test_lookups_name_the_known_entries() -> None:
    assert support.loader_support("openclip").extra_layers == ("projected embedding",)
    assert support.kind_support("clip_image").modality == "vision"
    with pytest.raises(ValueError, match="unknown loader 'onnx'.*hf_causal"):
        support.loader_support("onnx")
    with pytest.raises(ValueError, match="unknown kind 'audio'.*causal_lm"):
        support.kind_support("audio")


# --- cache keys: layer ids of every built-in entry unchanged ---------------------------------------------


def test_layer_ids_of_every_builtin_entry_are_unchanged() -> None:
    zoo = {spec.name: spec for spec in load_zoo()}
    missing = sorted(set(TOP_LAYER_BEFORE) - set(zoo))
    assert not missing, f"built-in entries gone: {missing}"
    for name, top in TOP_LAYER_BEFORE.items():
        assert layer_ids_of(zoo[name]) == list(range(top + 1)), name
    assert TOP_LAYER_BEFORE["openai-clip/vit-b32.image"] == zoo["openai-clip/vit-b32.image"].num_layers + 1


# --- the schema and layer_ids_of read the declaration ----------------------------------------------------


def test_extra_layers_are_read_from_the_declaration(monkeypatch: pytest.MonkeyPatch) -> None:
    assert layer_ids_of(ModelSpec(**TIMM)) == list(range(13))
    assert "valid indices 0..12)" in error_text(**{**TIMM, "layers": [13]})
    declare(monkeypatch, "timm", extra_layers=("head", "logits"))
    spec = ModelSpec(**{**TIMM, "layers": [13, 14]})
    assert spec.top_layer == 14 and layer_ids_of(spec) == [13, 14]
    assert layer_ids_of(ModelSpec(**TIMM)) == list(range(15))
    assert "valid indices 0..14; 13: head; 14: logits" in error_text(**{**TIMM, "layers": [15]})


def test_openclip_projection_is_named_where_layers_are_explained() -> None:
    assert "0..13; 13: projected embedding" in error_text(**{**CLIP, "layers": [14]})
    problem = ModelSpec(**{**CLIP, "num_layers": None}).extraction_problem()
    assert problem is not None and "index num_layers + 1 is the projected embedding" in problem
    with pytest.raises(UserError, match="projected embedding"):
        layer_ids_of(ModelSpec(**{**CLIP, "num_layers": None}))
    assert "projected" not in (ModelSpec(**{**TIMM, "num_layers": None}).extraction_problem() or "")


def test_kinds_the_loader_does_not_build_are_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    assert ModelSpec(**TIMM).kind == "vision_vit"
    declare(monkeypatch, "timm", kinds=frozenset({"vision_cnn"}))
    assert "cannot build kind 'vision_vit' (it builds: vision_cnn)" in error_text(**TIMM)


def test_poolings_the_loader_does_not_implement_are_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    assert ModelSpec(**BERT).pooling == "cls"
    declare(monkeypatch, "hf_text", poolings=frozenset({"avg"}))
    assert "loader 'hf_text' does not implement pooling 'cls' (use one of: avg)" in error_text(**BERT)
    assert "does not apply to kind" in error_text(**{**BERT, "pooling": "mean_patch"})  # the kind's rule first


def test_quantization_is_read_from_the_declaration(monkeypatch: pytest.MonkeyPatch) -> None:
    assert ModelSpec(**BERT, quantization="4bit").quantization == "4bit"
    text = error_text(**TIMM, quantization="8bit")
    assert "quantization '8bit' is not supported by loader 'timm'" in text and "hf_causal, hf_text" in text
    declare(monkeypatch, "timm", quantization=frozenset({"none", "8bit"}))
    assert ModelSpec(**TIMM, quantization="8bit").quantization == "8bit"


def test_dtypes_are_read_from_the_declaration(monkeypatch: pytest.MonkeyPatch) -> None:
    for dtype in support.DTYPE_POLICIES:
        assert ModelSpec(**TIMM, dtype=dtype).dtype == dtype
    declare(monkeypatch, "timm", dtypes=frozenset({"auto", "float32"}))
    assert "dtype 'float16' is not supported by loader 'timm' (use one of: auto, float32)" in error_text(
        **TIMM, dtype="float16")


def test_zero_blocks_only_where_declared(monkeypatch: pytest.MonkeyPatch) -> None:
    text = error_text(**{**BERT, "num_layers": 0})
    assert "greater than 0" in text and "baseline, python" in text
    baseline = {"name": "baseline/len", "modality": "text", "kind": "text_encoder", "loader": "baseline",
                "source": "caption-length", "pooling": "avg", "num_layers": 0}
    assert layer_ids_of(ModelSpec(**baseline)) == [0]
    declare(monkeypatch, "hf_text", no_blocks=True)
    assert layer_ids_of(ModelSpec(**{**BERT, "num_layers": 0})) == [0]


@pytest.mark.parametrize(("loader", "kind", "source", "expected"), [
    ("timm", "vision_vit", "vit_x", "timm"), ("timm", "vision_vit", "./weights", "local"),
    ("openclip", "clip_image", "ViT-B-32/x", "openclip"), ("hf_vision", "vision_vit", "org/dino", "hub"),
    ("hf_vision", "vision_vit", "packaged:dinov2", "packaged"), ("efficientnet_lite", "vision_cnn", "org/e", "hub"),
    ("baseline", "vision_cnn", "colour-histogram", "baseline"),
])
def test_source_type_follows_the_declaration(loader: str, kind: str, source: str, expected: str) -> None:
    pooling = "avg" if kind == "vision_cnn" else "cls"
    revision = "main" if expected in {"hub", "timm", "openclip"} else None
    name = "baseline/y" if loader == "baseline" else "x/y"  # the family is the baseline loader's alone
    spec = ModelSpec(name=name, modality="vision", kind=kind, loader=loader, source=source, revision=revision,
                     pooling=pooling)
    assert spec.source_type == expected


def test_a_closed_source_list_is_enforced(monkeypatch: pytest.MonkeyPatch) -> None:
    fields = {"name": "baseline/x", "modality": "vision", "kind": "vision_cnn", "loader": "baseline", "pooling": "avg"}
    assert "unknown baseline 'pixels' (known: random-init:minilm-l6" in error_text(**fields, source="pixels")
    declare(monkeypatch, "baseline", sources=(*support.BASELINE_SOURCES, "pixels"))
    assert ModelSpec(**fields, source="pixels").source_type == "baseline"


# --- the plots read the declared kind families -----------------------------------------------------------


def test_the_baseline_family_is_the_baseline_loaders_alone() -> None:
    """Verdicts compare every pair with the built-in controls of the `baseline/` family: a user's entry of
    another loader cannot join it, and a baseline entry cannot leave it."""
    fields = {"modality": "vision", "kind": "vision_cnn", "pooling": "avg"}
    assert "reserved to the built-in negative controls" in error_text(
        **fields, name="baseline/mine", loader="timm", source="resnet18", revision="main")
    assert "must be named 'baseline/...'" in error_text(**fields, name="mine/x", loader="baseline",
                                                        source="colour-histogram")


def test_plot_markers_come_from_the_kind_declarations(monkeypatch: pytest.MonkeyPatch) -> None:
    assert kind_marker("causal_lm") == ("o", 6) and kind_marker("text_jepa") == ("*", 8)
    assert kind_marker("?") == kind_marker("vision_vit") == OTHER_MARKER == ("D", 6)
    jepa = dataclasses.replace(support.KINDS["text_jepa"], marker="P", marker_size=9)
    monkeypatch.setitem(support.KINDS, "text_jepa", jepa)
    assert kind_marker("text_jepa") == ("P", 9)


# --- light: the declarations load without torch (the CLI's --help and zoo list read them) ----------------


def test_declarations_import_nothing_heavy() -> None:
    code = (
        "import json, sys\nimport platobench.zoo.support, platobench.zoo.kinds\n"
        "print(json.dumps(sorted(m for m in ('torch', 'transformers', 'pydantic', 'timm', 'open_clip') "
        "if m in sys.modules)))"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []
