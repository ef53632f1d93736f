"""Negative-control baselines (platobench/encoders/baselines.py): zoo entries, seeded random-init weights,
caption-length neighbours, colour histograms and the WordLlama bag of words."""

from __future__ import annotations

import importlib.util

import PIL.Image
import pytest
import torch

from platobench.encoders import TextEncoder, VisionEncoder, baselines, layer_ids_of, load_encoder
from platobench.features.extract import encode_texts, model_revision
from platobench.zoo import load_zoo
from platobench.zoo.spec import ModelSpec

NAMES = {  # name -> (layer count, width of the last layer)
    "baseline/random-init-minilm-l6": (7, 384),
    "baseline/random-init-efficientnet-lite0": (9, 1280),
    "baseline/bag-of-words": (1, 256),
    "baseline/caption-length": (1, 40),
    "baseline/colour-histogram": (1, 512),
}
CAPTIONS = ["a red apple", "cat", "a dog on a sofa", "tree", "the big red bus", "sun", "a green apple"]


@pytest.fixture(scope="module")
def zoo():
    return load_zoo()


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return tmp_path_factory.mktemp("platobench-home")  # random-init:minilm-l6 prepares the packaged config


def normalised(x: torch.Tensor) -> torch.Tensor:
    return x / x.norm(dim=1, keepdim=True)


def nearest(x: torch.Tensor) -> list[int]:
    """Index of each row's nearest other row by inner product after l2-normalisation."""
    sims = normalised(x.double()) @ normalised(x.double()).T
    sims.fill_diagonal_(-2.0)
    return sims.argmax(dim=1).tolist()


def test_zoo_entries_and_sets(zoo):
    assert set(zoo.resolve("baselines-text")) | set(zoo.resolve("baselines-vision")) == {zoo.get(n) for n in NAMES}
    for name, (count, width) in NAMES.items():
        spec = zoo.get(name)
        assert spec.loader == "baseline" and spec.source_type == "baseline" and spec.revision is None
        assert len(layer_ids_of(spec)) == count and spec.width == width, name
        assert model_revision(spec) == f"baseline:{spec.source}@v1"
    assert {s.modality for s in zoo.resolve("baselines-text")} == {"text"}
    assert {s.modality for s in zoo.resolve("baselines-vision")} == {"vision"}


def test_spec_rejects_unknown_baselines_and_zero_blocks_elsewhere():
    common = dict(modality="text", kind="text_encoder", pooling="avg", width=8)
    with pytest.raises(ValueError, match="unknown baseline"):
        ModelSpec(name="baseline/x", loader="baseline", source="word-count", **common)
    with pytest.raises(ValueError, match="greater than 0"):
        ModelSpec(name="a/b", loader="hf_text", source="org/model", revision="main", num_layers=0, **common)


@pytest.mark.parametrize("name", ["baseline/caption-length", "baseline/colour-histogram",
                                  "baseline/random-init-efficientnet-lite0"])
def test_layers_and_widths_match_the_zoo_entry(zoo, name):
    spec = zoo.get(name)
    enc = load_encoder(spec)
    assert enc.layer_ids == layer_ids_of(spec) and enc.widths[-1] == spec.width
    if isinstance(enc, VisionEncoder):
        image = PIL.Image.new("RGB", (40, 30), (10, 200, 30))
        out = enc.encode(torch.stack([enc.transform(image)] * 2))
    else:
        out = enc.encode(enc.tokenize(CAPTIONS))
    assert [o.shape[1] for o in out] == enc.widths
    assert all(o.dtype == torch.float32 and torch.isfinite(o).all() for o in out)


def test_random_init_efficientnet_is_seeded_and_leaves_the_global_rng_alone(zoo):
    spec = zoo.get("baseline/random-init-efficientnet-lite0")
    torch.manual_seed(123)
    before = torch.random.get_rng_state()
    a, b = load_encoder(spec), load_encoder(spec)
    assert torch.equal(torch.random.get_rng_state(), before)
    sa, sb = a.model.state_dict(), b.model.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    pixels = torch.stack([a.transform(PIL.Image.new("RGB", (64, 64), c)) for c in [(255, 0, 0), (0, 90, 255)]])
    assert all(torch.equal(x, y) for x, y in zip(a.encode(pixels), b.encode(pixels)))


@pytest.mark.slow
def test_random_init_minilm_is_seeded_and_not_the_trained_model(zoo, home):
    spec = zoo.get("baseline/random-init-minilm-l6")
    a, b = load_encoder(spec, home=home), load_encoder(spec, home=home)
    assert isinstance(a, TextEncoder) and a.layer_ids == layer_ids_of(spec) and a.widths == [384] * 7
    fa, fb = a.encode(a.tokenize(CAPTIONS)), b.encode(b.tokenize(CAPTIONS))
    assert all(torch.equal(x, y) for x, y in zip(fa, fb))
    trained = load_encoder(zoo.get("demo/minilm-l6"), home=home)
    assert not torch.allclose(trained.encode(trained.tokenize(CAPTIONS))[-1], fa[-1], atol=1e-3)


def test_caption_length_neighbours_have_the_same_length(zoo):
    enc = load_encoder(zoo.get("baseline/caption-length"))
    texts = ["a cat", "a dog", "the big red bus stops", "a small red car waits",
             "x" * 300, "y" * 300, "one two three four five six seven eight nine ten", "ten nine eight seven six five four three two one"]
    features = encode_texts(enc, texts, batch_size=3)[0]
    assert features.shape == (len(texts), 40)
    assert nearest(features) == [1, 0, 3, 2, 5, 4, 7, 6]
    # similarity falls with the difference in length: 5 characters is closer to 6 than to 20
    f = normalised(enc.encode(enc.tokenize(["abcde", "abcdef", "a" * 20]))[0])
    assert f[0] @ f[1] > f[0] @ f[2]
    assert (normalised(features).std(dim=0) > 0).any()  # not constant after l2-normalisation


def test_colour_histogram_of_red_blue_and_transparent_images(zoo):
    enc = load_encoder(zoo.get("baseline/colour-histogram"))
    red = PIL.Image.new("RGB", (50, 20), (255, 0, 0))
    blue = PIL.Image.new("RGB", (17, 33), (0, 0, 255))
    clear = PIL.Image.new("RGBA", (30, 30), (0, 0, 0, 0))  # transparent: composited on white
    half = PIL.Image.new("RGB", (64, 64), (255, 0, 0))
    half.paste((0, 0, 255), (0, 0, 32, 64))
    (h,) = enc.encode(torch.stack([enc.transform(im) for im in (red, blue, clear, half)]))
    assert h.shape == (4, 512)
    assert h[0].argmax() == 7 * 64 and h[0].max() == 1.0  # bin r*64 + g*8 + b
    assert h[1].argmax() == 7 and h[1].max() == 1.0
    assert h[2].argmax() == 511
    assert float(h[0] @ h[1]) == 0.0
    assert torch.allclose(h[3][[7, 448]], torch.full((2,), 0.5**0.5))
    assert torch.allclose((h**2).sum(1), torch.ones(4))  # square roots of shares: unit rows


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("wordllama") is None, reason="pip install wordllama==0.4.0.post1")
def test_bag_of_words_puts_captions_sharing_words_closer(zoo):
    enc = load_encoder(zoo.get("baseline/bag-of-words"))
    texts = ["a red apple on a wooden table", "red apples on the table", "the stock market fell sharply today",
             "shares and bonds dropped on the market", ""]
    assert enc.token_lengths(texts)[-1] == 0
    (f,) = encode_texts(enc, texts, batch_size=2)
    assert f.shape == (5, 256) and torch.equal(f[4], torch.zeros(256))
    assert nearest(f[:4]) == [1, 0, 3, 2]
    again = encode_texts(load_encoder(zoo.get("baseline/bag-of-words")), texts[:2], batch_size=1)[0]
    assert torch.allclose(again, f[:2])
    assert baselines.revision("bag-of-words:wordllama") == "baseline:bag-of-words:wordllama@v1"
