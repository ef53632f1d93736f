"""The simple encoder protocol (`encode(texts | images) -> [N, L, D]`) and the examples/ encoders.

End to end: examples/text_encoder.yaml and examples/image_encoder.yaml go through `platobench submit`
against one reference each (synthetic cached features, as in test_submit_encoder.py; wiring only). Fast:
the protocol wrapper alone, with its named errors.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import PIL.Image
import pytest
import torch
from bench_fixtures import TINY_SETTINGS, seed_features

from platobench.cli import main
from platobench.encoders import load_encoder
from platobench.encoders.python_loader import (
    EncodeBatchSizeError,
    EncodeLayerCountError,
    EncodeNonFiniteError,
    EncodeRankError,
    EncodeTypeError,
    EncodeWidthChangedError,
    ImageBatch,
    SimpleEncodeError,
    wrap,
)
from platobench.errors import UserError
from platobench.features.extract import encode_images, encode_texts
from platobench.results import load_record, record_path
from platobench.zoo import ModelSpec, python_code

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
N = 32
TEXT_REF, VISION_REF = "demo/minilm-l6", "demo/dinov2-s-imgfocus"
PAIR = f"{TEXT_REF}:{VISION_REF}"
CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    """Cached synthetic features of both references on the first N samples, and the tiny settings."""
    tmp = tmp_path_factory.mktemp("examples")
    seed_features(tmp / "home", TEXT_REF, N, seed=1)
    seed_features(tmp / "home", VISION_REF, N, seed=2)
    (tmp / "tiny.yaml").write_text(TINY_SETTINGS)
    return tmp / "home", tmp / "tiny.yaml"


@pytest.mark.parametrize("example, name, reference", [
    ("text_encoder", "example/char-ngrams", VISION_REF),
    ("image_encoder", "example/colour-hist", TEXT_REF),
])
def test_example_is_submitted_and_scored(seeded, tmp_path, monkeypatch, capsys, example, name, reference):
    home, settings = seeded
    monkeypatch.setenv("PLATOBENCH_HOME", str(home))
    monkeypatch.setattr(sys, "path", list(sys.path))  # submit puts examples/ on the path: undo it afterwards
    out = tmp_path / "results"
    assert main(["submit", str(EXAMPLES / f"{example}.yaml"), "--settings", "tiny", "--settings-file", str(settings),
                 "--pairs", PAIR, "--limit", str(N), "--out", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    (mock,) = report["mock"]
    assert mock["model"] == name and mock["layers"] == [0, 1] and mock["max_repeat_diff"] == 0.0
    assert report["run"]["failed"] == {} and len(report["run"]["written"]) == 2
    text, vision = (name, reference) if example == "text_encoder" else (reference, name)
    for setting in ("tiny-mknn", "tiny-cka"):
        record = load_record(record_path(out, setting, text, vision, N))
        assert record.dataset.n == N and math.isfinite(record.score)
        assert all(math.isfinite(x) for row in record.grid for x in row)
    assert {row["reference"] for row in report["ranks"][name]} == {reference}


def spec(modality: str = "text", num_layers: int = 1, source: str = "toy_simple:Enc", **fields) -> ModelSpec:
    kind = "text_encoder" if modality == "text" else "vision_cnn"
    return ModelSpec(name="toy/simple", modality=modality, kind=kind, loader="python", source=source,
                     pooling="avg", num_layers=num_layers, **fields)


class Fixed:
    """encode returns make(n, calls) for a batch of n inputs (calls: how many calls came before)."""

    def __init__(self, make):
        self.make, self.calls = make, 0

    def encode(self, inputs):
        self.calls += 1
        return self.make(len(inputs), self.calls - 1)


def rows(n: int, layers: int = 2, width: int = 3, dtype=np.float64) -> np.ndarray:
    return np.arange(n * layers * width, dtype=dtype).reshape(n, layers, width) + 1


def test_numpy_nld_is_split_into_float32_layers():
    enc = wrap(spec(), Fixed(lambda n, _: rows(n)), CPU)
    assert enc.layer_ids == [0, 1] and enc.widths == [3, 3]
    outs = encode_texts(enc, ["bb", "a", "ccc"], batch_size=2)
    assert [o.dtype for o in outs] == [torch.float32] * 2 and [tuple(o.shape) for o in outs] == [(3, 3)] * 2
    # length-bucketed batches (["ccc", "bb"], ["a"]) are put back in input order
    assert outs[0][:, 0].tolist() == [7.0, 1.0, 1.0] and outs[1][:, 0].tolist() == [10.0, 4.0, 4.0]


def test_torch_output_layer_selection_and_one_layer_arrays():
    enc = wrap(spec(num_layers=2, layers=(2,)), Fixed(lambda n, _: torch.ones(n, 3, 5, dtype=torch.float16)), CPU)
    assert enc.layer_ids == [2] and enc.widths == [5]
    single = wrap(spec(num_layers=0), Fixed(lambda n, _: np.ones((n, 7), dtype=np.int32)), CPU)
    (out,) = single.encode(single.tokenize(["x", "y"]))
    assert single.widths == [7] and out.dtype == torch.float32 and out.shape == (2, 7)


def test_a_list_of_layers_may_have_different_widths():
    enc = wrap(spec(), Fixed(lambda n, _: [np.zeros((n, 2)), torch.zeros(n, 6)]), CPU)
    assert enc.widths == [2, 6]


@pytest.mark.parametrize("make, error, message", [
    (lambda n, _: rows(n + 1), EncodeBatchSizeError, "returned [3] rows for 2 inputs"),
    (lambda n, _: rows(n)[:, 0, 0], EncodeRankError, "rank 1"),
    (lambda n, _: [rows(n)[:, 0], rows(n)], EncodeRankError, "layer 1 of encode's list"),
    (lambda n, _: rows(n, layers=3), EncodeLayerCountError, "set num_layers: 2"),
    (lambda n, c: rows(n) * (np.nan if c else 1), EncodeNonFiniteError, "NaN or inf"),
    (lambda n, c: rows(n, width=3 + c), EncodeWidthChangedError, "width 4 in this call but 3 in the probe call"),
    (lambda n, _: ["a"] * n, EncodeTypeError, "expected a numpy array or torch tensor"),
    (lambda n, _: {"x": rows(n)}, EncodeTypeError, "is a dict"),
    (lambda n, _: torch.zeros(n, 2, 3, dtype=torch.complex64), EncodeTypeError, "real numbers"),
])
def test_bad_outputs_are_named_user_errors(make, error, message):
    with pytest.raises(error) as info:
        enc = wrap(spec(), Fixed(make), CPU)
        encode_texts(enc, ["one", "two", "six"], batch_size=3)
    assert isinstance(info.value, UserError) and message in str(info.value) and "toy/simple" in str(info.value)


def test_float64_overflowing_float32_is_non_finite():
    with pytest.raises(EncodeNonFiniteError, match="after conversion to float32"):
        wrap(spec(), Fixed(lambda n, _: rows(n) * 1e300), CPU)


def test_optional_token_lengths_orders_buckets_and_is_checked():
    seen = []

    class Counting(Fixed):
        def token_lengths(self, texts):
            return [-t.count("x") for t in texts]

    enc = wrap(spec(), Counting(lambda n, _: rows(n)), CPU)
    enc.user.encode = lambda texts: seen.append(list(texts)) or rows(len(texts))
    encode_texts(enc, ["xxx", "x", "xx"], batch_size=3)
    assert seen == [["x", "xx", "xxx"]]
    enc.user.token_lengths = lambda texts: [1]
    with pytest.raises(SimpleEncodeError, match="one int per text"):
        encode_texts(enc, ["a", "b"], batch_size=2)


class FakeImages:
    """Grey images of the given sizes (mode L: the extractor converts them to RGB)."""

    name = "fake"

    def __init__(self, sizes):
        self.sizes = sizes

    def image(self, i):
        return PIL.Image.new("L", self.sizes[i], color=10 * i)


class Recording:
    """Remembers the (mode, size) of the images of every call after the probe."""

    def __init__(self):
        self.batches = []

    def encode(self, images):
        self.batches.append([(im.mode, im.size) for im in images])
        return rows(len(images))


def test_vision_encoder_gets_rgb_pil_images_of_any_size():
    user = Recording()
    enc = wrap(spec("vision"), user, CPU)
    outs = encode_images(enc, FakeImages([(5, 7), (9, 3), (4, 4)]), [0, 1, 2], batch_size=2, num_workers=0)
    assert [tuple(o.shape) for o in outs] == [(3, 3), (3, 3)]
    assert user.batches[1:] == [[("RGB", (5, 7)), ("RGB", (9, 3))], [("RGB", (4, 4))]]
    batch = ImageBatch(["a", "b", "c"])
    assert batch[[2, 0]] == ["c", "a"] and isinstance(batch[[1]], ImageBatch) and batch[1] == "b"


TOY_MODULE = '''
import numpy as np


class Enc:
    def encode(self, texts):
        return np.ones((len(texts), 2, 4)) * np.arange(len(texts))[:, None, None]


class NeedsArgs:
    def __init__(self, path):
        pass

    def encode(self, texts):
        return np.ones((len(texts), 4))


instance = Enc()


def factory(spec, device, dtype, home):
    return Enc()


def not_an_encoder(spec, device, dtype, home):
    return 42


number = 3
'''


@pytest.fixture
def trusted():
    """The toy modules as with `--trust-code 'toy/*'`."""
    with python_code.allowed(["toy/*"]):
        yield


@pytest.mark.parametrize("attr, widths", [("Enc", [4, 4]), ("instance", [4, 4]), ("factory", [4, 4])])
def test_source_may_name_a_class_an_object_or_a_factory(tmp_path, monkeypatch, trusted, attr, widths):
    (tmp_path / "toy_simple.py").write_text(TOY_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "toy_simple", raising=False)
    enc = load_encoder(spec(source=f"toy_simple:{attr}"))
    assert enc.widths == widths and enc.encode(enc.tokenize(["a", "b"]))[1][:, 0].tolist() == [0.0, 1.0]


def test_missing_num_layers_is_a_user_error():
    with pytest.raises(UserError, match="num_layers"):
        wrap(spec(num_layers=None), Fixed(lambda n, _: rows(n)), CPU)


@pytest.mark.parametrize("attr, message", [
    ("NeedsArgs", "must be constructible with no arguments"),
    ("not_an_encoder", "returned int, not an encoder"),
    ("number", "is of type int; expected a class or object with encode"),
    ("missing", "cannot import 'toy_simple:missing'"),
])
def test_unusable_sources_are_user_errors(tmp_path, monkeypatch, trusted, attr, message):
    (tmp_path / "toy_simple.py").write_text(TOY_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "toy_simple", raising=False)
    with pytest.raises(UserError) as info:
        load_encoder(spec(source=f"toy_simple:{attr}"))
    assert message in str(info.value)


BROKEN_MODULE = '''
import numpy as np


class Noisy:
    def encode(self, texts):
        return np.random.default_rng().standard_normal((len(texts), 2, 4))


class Collapsed:
    def encode(self, texts):
        return np.ones((len(texts), 2, 4))


class NanLater:
    calls = 0

    def encode(self, texts):
        self.calls += 1
        return np.full((len(texts), 2, 4), np.nan if self.calls > 1 else 1.0) + np.arange(len(texts))[:, None, None]


class ThreeLayers:
    def encode(self, texts):
        return np.arange(len(texts) * 12.0).reshape(len(texts), 3, 4)
'''


@pytest.mark.parametrize("cls, message", [
    ("Noisy", "not deterministic"),
    ("Collapsed", "the same vector for every sample"),
    ("NanLater", "layer 0 of encode's output holds NaN or inf"),
    ("ThreeLayers", "encode returned 3 layers but the entry's num_layers: 1 needs 2"),
])
def test_mock_pass_names_the_problem_of_a_simple_encoder(tmp_path, monkeypatch, capsys, cls, message):
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, "pb_broken_simple", raising=False)
    (tmp_path / "pb_broken_simple.py").write_text(BROKEN_MODULE)
    name = f"toy/{cls.lower()}"
    (tmp_path / "sub.yaml").write_text(
        f"version: 1\nmodels:\n  - name: {name}\n    modality: text\n    kind: text_encoder\n    loader: python\n"
        f"    source: pb_broken_simple:{cls}\n    pooling: avg\n    num_layers: 1\n")
    assert main(["submit", str(tmp_path / "sub.yaml"), "--mock-only", "--out", str(tmp_path / "results")]) == 2
    err = capsys.readouterr().err
    assert f"mock pass of {name} failed" in err and message in err
