"""ModelSpec: the schema of one zoo entry (unknown keys rejected, consistency rules, layer resolution)."""

from __future__ import annotations

import pydantic
import pytest

from platobench.zoo import ModelSpec

BASE = {
    "name": "qwen2.5/qwen2.5-7b",
    "modality": "text",
    "kind": "causal_lm",
    "loader": "hf_causal",
    "source": "Qwen/Qwen2.5-7B",
    "revision": "main",
    "pooling": "avg",
}


def make(**overrides):
    fields = {**BASE, **overrides}
    return ModelSpec(**{k: v for k, v in fields.items() if v is not ...})


def error_text(**overrides) -> str:
    with pytest.raises(pydantic.ValidationError) as info:
        make(**overrides)
    return str(info.value)


def test_defaults_follow_prh_and_the_contract():
    spec = make()
    assert spec.layers == "all"
    assert spec.dtype == "auto"
    assert spec.quantization == "none"
    assert spec.trust_remote_code is False
    assert spec.image_size is None and spec.params_m is None and spec.notes == ""


def test_spec_is_frozen_and_hashable():
    spec = make(layers=[3, 1])
    with pytest.raises(pydantic.ValidationError):
        spec.pooling = "last"
    assert hash(spec) == hash(make(layers=[1, 3]))
    assert {spec, make(layers=[1, 3])} == {spec}


def test_unknown_key_is_rejected():
    text = error_text(pooling_mode="avg")
    assert "pooling_mode" in text and "Extra inputs are not permitted" in text


@pytest.mark.parametrize("field", ["name", "modality", "kind", "loader", "source", "pooling"])
def test_required_fields(field):
    text = error_text(**{field: ...})
    assert field in text and "Field required" in text


@pytest.mark.parametrize("name", ["Qwen/qwen", "qwen", "a/b/c", "a/", "/b", "a b/c", "-a/b"])
def test_bad_names(name):
    assert "family/arch.tag" in error_text(name=name)


@pytest.mark.parametrize("name", ["qwen2.5/qwen2.5-7b", "dinov2/vit-g14.lvd142m", "demo/minilm-l6", "a_b/c+d.e"])
def test_good_names(name):
    assert make(name=name).name == name


def test_modality_must_match_kind():
    assert "is a text model" in error_text(modality="vision")


def test_loader_must_build_kind():
    assert "cannot build kind" in error_text(loader="timm")


@pytest.mark.parametrize(
    ("kind", "loader", "modality", "pooling"),
    [("causal_lm", "hf_causal", "text", "mean_patch"), ("vision_cnn", "timm", "vision", "cls"),
     ("text_encoder", "hf_text", "text", "last"), ("vision_vit", "hf_vision", "vision", "last")],
)
def test_pooling_must_apply_to_kind(kind, loader, modality, pooling):
    assert "does not apply to kind" in error_text(kind=kind, loader=loader, modality=modality, pooling=pooling)


def test_hub_sources_need_a_revision():
    assert "needs a pinned 'revision'" in error_text(revision=None)
    assert "needs a pinned 'revision'" in error_text(
        loader="openclip", kind="clip_text", source="ViT-B-32/openai", revision=None, pooling="last"
    )


def test_packaged_and_local_sources_have_no_revision():
    assert "has no hub revision" in error_text(source="packaged:smollm2-135m")
    assert "has no hub revision" in error_text(source="/models/x")
    assert make(source="packaged:smollm2-135m", revision=None).revision is None


def test_python_loader_needs_module_function():
    assert "module:function" in error_text(loader="python", source="mymodule", revision=None)
    spec = make(loader="python", source="mymodule.encoders:build", revision=None)
    assert spec.source_type == "python"


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({}, "hub"),
        ({"source": "packaged:minilm-l6", "revision": None}, "packaged"),
        ({"source": "/abs/folder", "revision": None}, "local"),
        ({"source": "./rel/folder", "revision": None}, "local"),
        ({"source": "~/folder", "revision": None}, "local"),
        ({"loader": "timm", "kind": "vision_vit", "modality": "vision", "pooling": "cls",
          "source": "vit_small_patch14_dinov2.lvd142m"}, "timm"),
        ({"loader": "openclip", "kind": "clip_image", "modality": "vision", "pooling": "cls",
          "source": "ViT-H-14/laion2b_s32b_b79k"}, "openclip"),
    ],
)
def test_source_type(overrides, expected):
    assert make(**overrides).source_type == expected


def test_packaged_asset_and_family():
    spec = make(name="demo/minilm-l6", source="packaged:minilm-l6", revision=None)
    assert spec.packaged_asset == "minilm-l6"
    assert spec.family == "demo"
    assert make().packaged_asset is None


def test_explicit_layers_are_sorted_unique_and_non_negative():
    assert make(layers=[4, 0, 2]).layers == (0, 2, 4)
    assert "unique" in error_text(layers=[1, 1])
    assert ">= 0" in error_text(layers=[-1])
    assert "must not be empty" in error_text(layers=[])
    assert "does not exist" in error_text(layers=[29], num_layers=28)


def test_layer_ids_resolution():
    assert make().layer_ids(3) == [0, 1, 2, 3]  # embeddings + every block (PRH)
    assert make(layers=[2, 0]).layer_ids(3) == [0, 2]
    with pytest.raises(ValueError, match="do not exist"):
        make(layers=[5]).layer_ids(4)


def test_image_size_only_for_vision_and_quantization_only_for_transformers_text():
    assert "only to vision" in error_text(image_size=518)
    assert "quantization" in error_text(
        quantization="4bit", loader="timm", kind="vision_vit", modality="vision", pooling="cls", source="vit_x"
    )
    assert make(quantization="4bit").quantization == "4bit"


@pytest.mark.parametrize("field", ["image_size", "num_layers", "width", "params_m"])
def test_sizes_must_be_positive(field):
    overrides = {field: 0}
    if field == "image_size":
        overrides.update(loader="hf_vision", kind="vision_vit", modality="vision", pooling="cls")
    assert "greater than 0" in error_text(**overrides)


@pytest.mark.parametrize(("field", "value"), [("num_layers", 4097), ("num_layers", 10**12), ("width", (1 << 20) + 1),
                                              ("image_size", 8193), ("params_m", 1.5e7)])
def test_counts_are_bounded_by_something_physical(field, value):
    overrides = {field: value}
    if field == "image_size":
        overrides.update(loader="hf_vision", kind="vision_vit", modality="vision", pooling="cls")
    assert "less than or equal to" in error_text(**overrides)


def test_the_bounds_themselves_are_accepted():
    assert make(num_layers=4096, width=1 << 20, params_m=1e7, layers=[0, 4096]).num_layers == 4096
    assert make(layers=[4097]).layers == (4097,)  # num_layers unknown: a projection after block 4096
    assert "above 4097" in error_text(layers=[0, 10**12])
