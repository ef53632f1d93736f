"""An encoder (or a probe's encode function) that returns a view of one buffer it overwrites on every call
keeps each batch it returned: extraction, `submit`'s mock pass and `AlignmentProbe.encode` copy a batch
before the next call, so the cache holds every batch (not copies of the last one) and the mock pass's
repeat comparison compares two encodings (not one buffer with itself).

The encoders are tiny functions of the text written next to the test (wiring only, no weights); the data
are the first tuxpaint stamps.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch

from platobench.data import get_dataset
from platobench.errors import UserError
from platobench.features import extract as ex
from platobench.features.store import FeatureStore
from platobench.zoo import python_code
from platobench.zoo.spec import ModelSpec

MODULE = "pb_reused_buffers"
ENCODERS = '''
import numpy as np
import torch


def features(texts):
    return np.array([[len(t), t.count("a"), t.count("e"), t.count(" ")] for t in texts], dtype=np.float32)


class Reused:
    """Writes every batch's features into one float32 tensor and returns a view of it."""

    def __init__(self):
        self.buffer = torch.zeros(64, 4)

    def encode(self, texts):
        out = self.buffer[: len(texts)]
        out.copy_(torch.from_numpy(features(texts)))
        return out


class NoisyReused(Reused):
    """Not deterministic (noise on every call), and still one buffer: two passes are one memory."""

    def encode(self, texts):
        out = super().encode(texts)
        out.add_(torch.randn(out.shape))
        return out
'''
N = 12


def features(texts: list[str]) -> np.ndarray:
    return np.array([[len(t), t.count("a"), t.count("e"), t.count(" ")] for t in texts], dtype=np.float32)


def spec(source: str) -> ModelSpec:
    return ModelSpec(name="user/reused", modality="text", kind="text_encoder", loader="python",
                     source=f"{MODULE}:{source}", pooling="avg", num_layers=0)


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / f"{MODULE}.py").write_text(ENCODERS)
    monkeypatch.setenv("PLATOBENCH_HOME", str(tmp_path / "home"))
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop(MODULE, None)
    with python_code.allowed(["user/*"]):
        yield tmp_path
    sys.modules.pop(MODULE, None)


def test_extraction_keeps_every_batch_of_an_encoder_that_reuses_its_buffer(env: Path) -> None:
    data = get_dataset("tuxpaint", limit=N)
    entry, _ = ex.extract(spec("Reused"), data, store=FeatureStore(env / "features"), batch_size=4, chunk_size=N,
                          progress=False)
    assert torch.equal(entry.layer(0), torch.from_numpy(features(data.captions(0))))


def test_the_mock_pass_keeps_every_batch_of_an_encoder_that_reuses_its_buffer(env: Path) -> None:
    from platobench.bench.submit import mock_pass

    report = mock_pass(spec("Reused"), "tuxpaint", samples=8)  # its halves are not the last half twice
    assert report.max_repeat_diff == 0.0 and report.max_batch_diff == 0.0


def test_the_mock_pass_compares_two_encodings_not_one_buffer(env: Path) -> None:
    from platobench.bench.submit import mock_pass

    with pytest.raises(UserError, match="layer 0: not deterministic"):
        mock_pass(spec("NoisyReused"), "tuxpaint", samples=8)


def test_the_probe_keeps_every_batch_of_an_encode_fn_that_reuses_its_buffer(env: Path) -> None:
    from platobench.api.probe import AlignmentProbe

    settings = env / "tiny.yaml"
    settings.write_text("settings:\n  tiny-cka:\n    dataset: tuxpaint\n    metric: cka\n    selection: best\n")
    probe = AlignmentProbe("baseline/colour-histogram", setting="tiny-cka", settings_files=[settings], limit=N,
                           batch_size=5, workers=0)
    buffer = np.zeros((64, 4), dtype=np.float32)

    def encode(texts: list[str]) -> np.ndarray:
        out = buffer[: len(texts)]
        out[:] = features(texts)
        return out

    (layer,) = probe.encode(encode)
    assert torch.equal(layer, torch.from_numpy(features(probe.inputs())))
