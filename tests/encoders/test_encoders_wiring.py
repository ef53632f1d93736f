"""timm and open_clip loaders with the real architectures built with pretrained=False and a state dict
saved locally (wiring and layer counts only: random weights, never results)."""

import json
import pickle

import open_clip
import PIL.Image
import pytest
import timm
import torch
from safetensors.torch import save_file

from platobench.encoders import load_encoder
from platobench.encoders.openclip import OpenClipTextEncoder
from platobench.zoo.spec import ModelSpec


def image() -> PIL.Image.Image:
    gen = torch.Generator().manual_seed(0)
    return PIL.Image.fromarray((torch.rand(90, 130, 3, generator=gen) * 255).to(torch.uint8).numpy(), mode="RGB")


@pytest.fixture(scope="module")
def timm_vit(tmp_path_factory):
    torch.manual_seed(0)
    model = timm.create_model("vit_tiny_patch16_224", pretrained=False).eval()
    folder = tmp_path_factory.mktemp("vit")
    timm.models.save_for_hf(model, str(folder), safe_serialization=True)
    return model, folder


def test_timm_vit_blocks_and_closed_forms(timm_vit):
    model, folder = timm_vit
    spec = ModelSpec(name="test/vit-tiny", modality="vision", kind="vision_vit", loader="timm", source=str(folder), pooling="cls")
    enc = load_encoder(spec)
    assert enc.layer_ids == list(range(13)) and enc.widths == [192] * 13
    pixels = enc.transform(image())
    assert pixels.shape == (3, 224, 224)
    x = torch.stack([pixels, pixels.flip(-1)])
    feats = enc.encode(x)
    with torch.inference_mode():
        embedded = model.norm_pre(model._pos_embed(model.patch_embed(x)))
        final = model.forward_features(x)  # final norm applied
        torch.testing.assert_close(feats[0], embedded[:, 0])
        torch.testing.assert_close(model.norm(feats[12]), final[:, 0], rtol=1e-4, atol=1e-4)
    pickle.loads(pickle.dumps(enc.transform))


def test_timm_vit_mean_patch_and_layer_subset(timm_vit):
    model, folder = timm_vit
    spec = ModelSpec(name="test/vit-tiny", modality="vision", kind="vision_vit", loader="timm", source=str(folder),
                     pooling="mean_patch", layers=(3,))
    enc = load_encoder(spec)
    x = torch.randn(2, 3, 224, 224)
    (feat,) = enc.encode(x)
    with torch.inference_mode():
        tokens = model.forward_intermediates(x, indices=[2], norm=False, output_fmt="NLC", intermediates_only=True)[0]
    torch.testing.assert_close(feat, tokens.mean(1))  # patch tokens only, CLS excluded


def test_timm_cnn_stages(tmp_path):
    model = timm.create_model("resnet18", pretrained=False).eval()
    timm.models.save_for_hf(model, str(tmp_path), safe_serialization=True)
    spec = ModelSpec(name="test/resnet18", modality="vision", kind="vision_cnn", loader="timm", source=str(tmp_path), pooling="avg")
    enc = load_encoder(spec)
    assert enc.layer_ids == [0, 1, 2, 3, 4] and enc.widths == [64, 64, 128, 256, 512]
    x = torch.randn(2, 3, 224, 224)
    feats = enc.encode(x)
    with torch.inference_mode():
        pooled = model.forward_head(model.forward_features(x), pre_logits=True)
    torch.testing.assert_close(feats[-1], pooled)


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    torch.manual_seed(0)
    model = open_clip.create_model("ViT-S-32", pretrained=None).eval()
    folder = tmp_path_factory.mktemp("clip")
    config = {"model_cfg": open_clip.get_model_config("ViT-S-32"), "preprocess_cfg": {}}
    (folder / "open_clip_config.json").write_text(json.dumps(config))
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(folder / "open_clip_model.safetensors"))
    return model, folder


def test_open_clip_image_tower(clip):
    model, folder = clip
    spec = ModelSpec(name="test/clip-s32", modality="vision", kind="clip_image", loader="openclip", source=str(folder), pooling="cls")
    enc = load_encoder(spec)
    assert enc.layer_ids == list(range(14))  # embeddings + 12 blocks + projected embedding
    assert enc.widths == [384] * 14
    x = enc.transform(image()).unsqueeze(0)
    feats = enc.encode(x)
    with torch.inference_mode():
        torch.testing.assert_close(feats[-1], model.encode_image(x), rtol=1e-5, atol=1e-5)
        # ViT-S-32 pools its class token: projection of the last block's CLS = the embedding
        torch.testing.assert_close(model.visual.ln_post(feats[12]) @ model.visual.proj, feats[-1], rtol=1e-4, atol=1e-5)
    pickle.loads(pickle.dumps(enc.transform))


def test_open_clip_text_tower(clip):
    model, folder = clip
    spec = ModelSpec(name="test/clip-s32", modality="text", kind="clip_text", loader="openclip", source=str(folder), pooling="last")
    last = load_encoder(spec)
    mean = OpenClipTextEncoder(spec.model_copy(update={"pooling": "avg"}), last.model, last.tokenizer, last.device)
    for enc in (last, mean):
        check_text_tower(model, enc)


def check_text_tower(model, enc):
    assert enc.layer_ids == list(range(14))
    batch = enc.tokenize(["a dog", "a photo of a big cat on a sofa"])
    assert enc.token_lengths(["a dog"]) == [4]  # SOT a dog EOT
    feats = enc.encode(batch)
    with torch.inference_mode():
        torch.testing.assert_close(feats[-1], model.encode_text(batch["input_ids"]), rtol=1e-5, atol=1e-5)
    alone = enc.encode(enc.tokenize(["a dog"]))
    for t, a in zip(feats, alone):
        torch.testing.assert_close(t[0], a[0], rtol=1e-5, atol=1e-5)


def test_hf_vision_dinov3_registers_are_not_patches(tmp_path):
    # A tiny DINOv3 (random weights, real architecture class) saved with its processor, loaded like a hub folder.
    from transformers import DINOv3ViTConfig, DINOv3ViTImageProcessorFast, DINOv3ViTModel

    config = DINOv3ViTConfig(hidden_size=64, num_hidden_layers=3, num_attention_heads=4, intermediate_size=128,
                             image_size=64, patch_size=16, num_register_tokens=4)
    model = DINOv3ViTModel(config).eval()
    model.save_pretrained(tmp_path)
    DINOv3ViTImageProcessorFast(size={"height": 64, "width": 64}).save_pretrained(tmp_path)
    spec = ModelSpec(name="test/dinov3-tiny", modality="vision", kind="vision_vit", loader="hf_vision",
                     source=str(tmp_path), pooling="mean_patch")
    enc = load_encoder(spec)
    assert enc.layer_ids == [0, 1, 2, 3] and enc.widths == [64] * 4 and enc.num_prefix == 5  # CLS + 4 registers
    x = enc.transform(image()).unsqueeze(0)
    assert x.shape == (1, 3, 64, 64)
    feats = enc.encode(x)
    with torch.inference_mode():
        hidden = model(pixel_values=x, output_hidden_states=True).hidden_states
    for f, h in zip(feats, hidden):
        torch.testing.assert_close(f, h[:, 5:].mean(1))  # the 16 patch tokens only
