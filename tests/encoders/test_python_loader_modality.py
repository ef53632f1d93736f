"""A `loader: python` entry whose encoder is of the other modality fails with a UserError that names the
entry's modality and what to declare instead, not with the AttributeError (or TypeError) it raises inside."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
import torch

from platobench.encoders import python_loader
from platobench.errors import UserError
from platobench.zoo import ModelSpec, python_code

MODULE = "pb_modality_encoders"
SOURCE = '''
import torch
from platobench.encoders.base import TextEncoder


class SimpleText:
    def encode(self, texts):
        return torch.tensor([[float(len(t.lower()))] * 4 for t in texts])


class InternalText(TextEncoder):
    def __init__(self, spec, device=None, dtype=None, home=None):
        self.spec, self.layer_ids, self.widths, self.device = spec, [0], [4], torch.device("cpu")

    def tokenize(self, texts):
        return {"n": len(texts)}

    def token_lengths(self, texts):
        return [len(t) for t in texts]

    def encode(self, batch):
        return [torch.ones(batch["n"], 4)]


def build_text(spec, device, dtype, home):
    return InternalText(spec)
'''


@pytest.fixture
def module(tmp_path, monkeypatch) -> Iterator[None]:
    (tmp_path / f"{MODULE}.py").write_text(SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    sys.modules.pop(MODULE, None)


def spec(attr: str, modality: str) -> ModelSpec:
    kind = "vision_vit" if modality == "vision" else "text_encoder"
    return ModelSpec(name=f"mine/{attr.lower()}", modality=modality, kind=kind, loader="python",
                     source=f"{MODULE}:{attr}", pooling="cls" if modality == "vision" else "avg", num_layers=0)


def load(s: ModelSpec):
    with python_code.allowed([s.name]):
        return python_loader.load(s, device=torch.device("cpu"))


@pytest.mark.parametrize(
    ("attr", "expected"),
    [
        ("SimpleText", "failed on the load-time probe call encode(<2 PIL images>) with AttributeError"),
        ("InternalText", "builds InternalText, a text encoder, but the entry declares modality vision"),
        ("build_text", "builds InternalText, a text encoder, but the entry declares modality vision"),
    ],
)
def test_a_text_encoder_declared_vision_is_a_user_error(module, attr, expected):
    with pytest.raises(UserError) as err:
        load(spec(attr, "vision"))
    assert expected in str(err.value) and "modality: text" in str(err.value)


@pytest.mark.parametrize("attr", ["SimpleText", "InternalText", "build_text"])
def test_the_same_encoders_declared_text_load(module, attr):
    encoder = load(spec(attr, "text"))
    assert encoder.widths == [4]
