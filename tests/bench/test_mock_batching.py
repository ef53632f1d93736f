"""`submit`'s mock pass encodes its samples in two batchings (all at once, then in halves): an encoder whose
features of a sample depend on the other samples of its batch (normalising over the batch) fails it, since
the batch size is not part of the feature-cache key; one whose features are its own passes, with the
difference reported.

The encoders are tiny functions of the text written next to the test (wiring only, no weights); the data
are the first tuxpaint stamps.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from platobench.errors import UserError
from platobench.zoo import python_code
from platobench.zoo.spec import ModelSpec

MODULE = "pb_mock_batching"
ENCODERS = '''
import numpy as np


def features(texts):
    return np.array([[len(t), t.count("a"), t.count("e"), t.count(" ")] for t in texts], dtype=np.float32)


class Own:
    def encode(self, texts):
        return features(texts)


class BatchNorm:
    """Each feature standardised over the batch: a sample's features depend on the others."""

    def encode(self, texts):
        x = features(texts)
        return (x - x.mean(axis=0)) / (x.std(axis=0) + 1.0)
'''


def spec(source: str, modality: str = "text") -> ModelSpec:
    return ModelSpec(name="user/batching", modality=modality, kind="text_encoder", loader="python",
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


def test_an_encoder_that_normalises_over_the_batch_fails_the_mock_pass(env: Path) -> None:
    from platobench.bench.submit import mock_pass

    with pytest.raises(UserError, match=r"layer 0: the features of a sample depend on its batch: encoded in "
                                        r"batches of 4 instead of one of 8, they differ by \d+% of the layer's "
                                        r"spread over the samples"):
        mock_pass(spec("BatchNorm"), "tuxpaint", samples=8)


def test_an_encoder_of_each_sample_alone_passes_and_reports_no_difference(env: Path) -> None:
    from platobench.bench.submit import mock_pass

    report = mock_pass(spec("Own"), "tuxpaint", samples=8)
    assert report.max_batch_diff == 0.0 and report.as_dict()["max_batch_diff"] == 0.0
