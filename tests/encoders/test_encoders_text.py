"""A real text encoder (all-MiniLM-L6-v2 from pip, prepared into a tmp cache root): layers, widths,
padding invariance, determinism, dtype override."""

import pytest
import torch

from platobench.encoders import load_encoder
from platobench.zoo.spec import ModelSpec

CAPTION = "a small red bicycle leaning against a brick wall"
OTHERS = ["a cat", "two people walking a large brown dog along a sandy beach at sunset", "the quick brown fox"]


def minilm(pooling: str) -> ModelSpec:
    return ModelSpec(name="demo/minilm-l6", modality="text", kind="text_encoder", loader="hf_text",
                     source="packaged:minilm-l6", pooling=pooling)


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return tmp_path_factory.mktemp("platobench-home")


@pytest.fixture(scope="module", params=["avg", "cls"])
def encoder(request, home):
    return load_encoder(minilm(request.param), home=home)


def test_layers_and_widths(encoder):
    assert encoder.layer_ids == list(range(7))  # embeddings + 6 blocks
    assert encoder.widths == [384] * 7
    feats = encoder.encode(encoder.tokenize(OTHERS))
    assert len(feats) == 7
    assert all(f.shape == (3, 384) and f.dtype == torch.float32 and f.device.type == "cpu" for f in feats)


def test_padding_never_changes_a_caption(encoder):
    batch = encoder.tokenize([CAPTION, *OTHERS])
    assert batch["attention_mask"].sum(1)[1] < batch["attention_mask"].shape[1]  # "a cat" is padded
    together = encoder.encode(batch)
    alone = encoder.encode(encoder.tokenize([OTHERS[0]]))
    for t, a in zip(together, alone):
        torch.testing.assert_close(t[1], a[0], rtol=1e-4, atol=1e-5)


def test_encoding_is_deterministic(encoder):
    batch = encoder.tokenize(OTHERS)
    for a, b in zip(encoder.encode(batch), encoder.encode(batch)):
        assert torch.equal(a, b)


def test_token_lengths_match_the_mask(encoder):
    texts = [CAPTION, *OTHERS]
    assert encoder.token_lengths(texts) == encoder.tokenize(texts)["attention_mask"].sum(1).tolist()
    assert encoder.token_lengths(["a cat"]) == [4]  # [CLS] a cat [SEP]


def test_last_layer_mean_is_a_sentence_embedding(home):
    # all-MiniLM-L6-v2 was trained with mean pooling: paraphrases must be closer than unrelated text.
    enc = load_encoder(minilm("avg"), home=home)
    last = enc.encode(enc.tokenize(["a puppy playing in the grass", "a young dog plays on a lawn", "quarterly tax report"]))[-1]
    sim = torch.nn.functional.normalize(last, dim=1) @ torch.nn.functional.normalize(last, dim=1).T
    assert sim[0, 1] > sim[0, 2] + 0.3


def test_layer_selection_and_dtype_override(home):
    spec = minilm("avg").model_copy(update={"layers": (0, 6)})
    enc = load_encoder(spec, home=home, dtype="bfloat16")
    assert enc.layer_ids == [0, 6] and next(enc.model.parameters()).dtype == torch.bfloat16
    feats = enc.encode(enc.tokenize(OTHERS))
    assert [f.dtype for f in feats] == [torch.float32, torch.float32]
