"""Every zoo field that changes features is in the cache key; the feature-neutral ones are listed.

A user entry that keeps a built-in name but changes what is extracted (image size, quantisation,
truncation, loader, kind, source) must get another cache key, never the built-in's cached features."""

from __future__ import annotations

import pytest
import torch

from platobench.features.extract import (
    FEATURE_NEUTRAL,
    KEYED_FIELDS,
    OPTION_FIELDS,
    feature_key,
    spec_options,
)
from platobench.zoo import ModelSpec, load_zoo

ZOO = load_zoo()
CPU = torch.device("cpu")


class _Data:
    name, revision, ids = "tiny", "r1", ("a", "b", "c")


def _key(spec: ModelSpec) -> str:
    prompt = "image" if spec.modality == "vision" else "caption:0"
    return feature_key(spec, _Data(), prompt=prompt, device=CPU).digest()


def test_every_spec_field_is_keyed_or_declared_neutral():
    fields = set(ModelSpec.model_fields)
    declared = KEYED_FIELDS | set(OPTION_FIELDS) | FEATURE_NEUTRAL
    assert fields <= declared, f"fields neither in the cache key nor declared feature-neutral: {fields - declared}"
    assert declared <= fields, f"declared fields the spec no longer has: {declared - fields}"
    assert not FEATURE_NEUTRAL & (KEYED_FIELDS | set(OPTION_FIELDS))


# (built-in entry, field, another value): each must change the key
CHANGES = [
    ("demo/dinov2-s-imgfocus", "image_size", 518),
    ("demo/minilm-l6", "max_tokens", 512),
    ("demo/minilm-l6", "quantization", "8bit"),
    ("demo/minilm-l6", "loader", "hf_causal"),
    ("demo/minilm-l6", "kind", "text_jepa"),
    ("demo/minilm-l6", "source", "packaged:mpnet-base"),
    ("demo/minilm-l6", "source", "./my-minilm"),
    ("demo/minilm-l6", "pooling", "cls"),
    ("demo/minilm-l6", "dtype", "bfloat16"),
    ("demo/minilm-l6", "layers", (0, 6)),
    ("demo/minilm-l6", "num_layers", 5),
    ("demo/minilm-l6", "name", "demo/minilm-l6-copy"),
    ("sentence-transformers/all-minilm-l6-v2", "source", "someone/all-MiniLM-L6-v2"),
    ("sentence-transformers/all-minilm-l6-v2", "revision", "0" * 40),
    ("demo/smollm2-135m", "modality", "vision"),
]


@pytest.mark.parametrize("name, field, value", CHANGES, ids=[f"{n}:{f}={v}" for n, f, v in CHANGES])
def test_a_feature_changing_field_changes_the_key(name, field, value, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my-minilm").mkdir()
    (tmp_path / "my-minilm" / "config.json").write_text("{}")
    spec = ZOO.get(name)
    changed = spec.model_copy(update={field: value})  # unvalidated: only the key is computed
    assert _key(changed) != _key(spec)


@pytest.mark.parametrize("field, value", [("width", 999), ("params_m", 1.0), ("license", "other"),
                                          ("notes", "edited"), ("trust_remote_code", True)])
def test_a_neutral_field_keeps_the_key(field, value):
    spec = ZOO.get("demo/minilm-l6")
    assert _key(spec.model_copy(update={field: value})) == _key(spec)


def test_entries_without_options_keep_their_digest_and_a_user_copy_of_a_builtin_name_does_not():
    vision = ZOO.get("demo/dinov2-s-imgfocus")
    assert spec_options(vision) == {}
    assert "options" not in feature_key(vision, _Data(), prompt="image", device=CPU).as_dict()
    user = ModelSpec.model_validate({**vision.model_dump(), "image_size": 518})  # the entry, validated
    assert spec_options(user) == {"image_size": 518}
    assert _key(user) != _key(vision)
    text = ZOO.get("demo/minilm-l6")
    assert spec_options(text) == {"max_tokens": 256}
    # a new name is keyed by its loader, kind and source too
    new = ModelSpec.model_validate({**text.model_dump(), "name": "mine/minilm"})
    assert set(spec_options(new)) == {"loader", "kind", "source", "max_tokens"}


def test_max_tokens_is_validated_and_shown():
    text = ZOO.get("demo/minilm-l6")
    assert text.truncation == "256 tokens (max_tokens)"
    with pytest.raises(ValueError, match="does not truncate"):
        ModelSpec.model_validate({**ZOO.get("demo/dinov2-s-imgfocus").model_dump(), "max_tokens": 10})
    with pytest.raises(ValueError):
        ModelSpec.model_validate({**text.model_dump(), "max_tokens": 0})


def test_builtin_sentence_transformers_entries_truncate_as_sentence_transformers():
    assert {n: ZOO.get(n).max_tokens for n in ("demo/minilm-l6", "demo/mpnet-base", "demo/minilm-l3",
                                             "sentence-transformers/all-minilm-l6-v2",
                                             "sentence-transformers/all-mpnet-base-v2")} == {
        "demo/minilm-l6": 256, "demo/mpnet-base": 384, "demo/minilm-l3": 128,
        "sentence-transformers/all-minilm-l6-v2": 256, "sentence-transformers/all-mpnet-base-v2": 384}




@pytest.mark.slow  # prepares the MiniLM weights into a fresh home
def test_a_builtin_name_with_other_settings_never_gets_the_cached_features(tmp_path, monkeypatch):
    """The built-in entry's features are cached; the same name with 8-bit quantisation on a CPU stops with
    the quantisation error instead of returning those fp32 features."""
    from bench_fixtures import seed_features

    from platobench.data import get_dataset
    from platobench.errors import UserError
    from platobench.features.extract import extract
    from platobench.features.store import FeatureStore

    monkeypatch.setenv("PLATOBENCH_HOME", str(tmp_path))
    seed_features(tmp_path, "demo/minilm-l6", 8)
    store, ds = FeatureStore(tmp_path / "features"), get_dataset("openclipart-1024", limit=8)
    text = ZOO.get("demo/minilm-l6")
    _, report = extract(text, ds, store=store, progress=False, home=tmp_path)
    assert report.cached
    eight_bit = ModelSpec.model_validate({**text.model_dump(), "quantization": "8bit"})
    with pytest.raises(UserError, match="needs a CUDA device"):
        extract(eight_bit, ds, store=store, progress=False, home=tmp_path)
