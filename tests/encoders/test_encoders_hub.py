"""Hub sources with HF_HUB_OFFLINE=1: a clear error naming the model and the download command; other
loader errors (missing local folder, quantisation on CPU, a bad python factory)."""

import huggingface_hub.constants
import pytest

from platobench.encoders import load_encoder
from platobench.errors import UserError
from platobench.zoo import python_code
from platobench.zoo.spec import ModelSpec

MISSING = "platobench-tests/not-a-cached-model"


@pytest.fixture
def offline_empty_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    return tmp_path


@pytest.mark.parametrize(
    ("kind", "loader", "source", "pooling", "repo"),
    [
        ("causal_lm", "hf_causal", MISSING, "avg", MISSING),
        ("text_encoder", "hf_text", MISSING, "cls", MISSING),
        ("vision_vit", "hf_vision", MISSING, "cls", MISSING),
        ("vision_vit", "timm", "vit_tiny_patch16_224.augreg_in21k", "cls", "timm/vit_tiny_patch16_224.augreg_in21k"),
        ("clip_image", "openclip", "ViT-B-32/openai", "cls", "timm/vit_base_patch32_clip_224.openai"),
    ],
)
def test_uncached_hub_model_names_model_and_download_command(offline_empty_cache, kind, loader, source, pooling, repo):
    modality = "vision" if kind in {"vision_vit", "clip_image"} else "text"
    spec = ModelSpec(name="test/uncached", modality=modality, kind=kind, loader=loader, source=source,
                     revision="abc123", pooling=pooling)
    with pytest.raises(UserError) as info:
        load_encoder(spec)
    message = str(info.value)
    assert "test/uncached" in message
    assert "HF_HUB_OFFLINE is set and it is not cached" in message
    assert f"hf download {repo} --revision abc123" in message
    assert f"huggingface-cli download {repo} --revision abc123" in message


def test_missing_local_folder(tmp_path):
    spec = ModelSpec(name="test/local", modality="text", kind="text_encoder", loader="hf_text",
                     source=str(tmp_path / "nowhere"), pooling="avg")
    with pytest.raises(UserError, match="local source .*nowhere does not exist"):
        load_encoder(spec)


def test_quantisation_needs_cuda():
    spec = ModelSpec(name="test/q", modality="text", kind="causal_lm", loader="hf_causal", source=MISSING,
                     revision="main", pooling="avg", quantization="4bit")
    with pytest.raises(UserError, match="4bit quantisation needs a CUDA device"):
        load_encoder(spec, device="cpu")


def not_an_encoder(spec, *, device, dtype, home):
    return "just a string"


def test_python_loader_checks_what_the_factory_returns():
    spec = ModelSpec(name="test/py", modality="text", kind="text_jepa", loader="python",
                     source=f"{__name__}:not_an_encoder", pooling="cls", num_layers=1)
    with python_code.allowed(["test/py"]):
        with pytest.raises(UserError, match="returned str, not an encoder"):
            load_encoder(spec)
        missing = spec.model_copy(update={"source": f"{__name__}:no_such_function"})
        with pytest.raises(UserError, match="cannot import"):
            load_encoder(missing)
