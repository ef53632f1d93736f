"""The batched extractor (platobench.features.extract) with a deterministic stand-in encoder: order restored
after length bucketing, a sample's features identical alone and in a batch, out-of-memory back-off, NaN
detection, warm cache loads no model, resume after a failure equals an uninterrupted run, cache keys change
with everything that changes the features."""

from __future__ import annotations

import pytest
import torch

from platobench.data import get_dataset
from platobench.errors import UserError
from platobench.features import extract as ex
from platobench.features.store import FeatureStore
from platobench.zoo import load_zoo

SPEC = load_zoo().get("demo/minilm-l6")  # 6 blocks -> layers 0..6; never loaded here
LAYERS = list(range(7))


class FakeText:
    """Features of a text depend only on its characters (mask-aware, like real pooling)."""

    spec, layer_ids, widths = SPEC, LAYERS, [3] * 7

    def __init__(self) -> None:
        self.batches: list[int] = []

    def token_lengths(self, texts):
        return [len(t) for t in texts]

    def tokenize(self, texts):
        longest = max(len(t) for t in texts)
        ids = torch.zeros(len(texts), longest)
        mask = torch.zeros(len(texts), longest)
        for i, t in enumerate(texts):
            ids[i, : len(t)] = torch.tensor([float(ord(c)) for c in t])
            mask[i, : len(t)] = 1
        return {"input_ids": ids, "attention_mask": mask}

    def encode(self, batch):
        self.batches.append(batch["input_ids"].shape[1])
        ids, mask = batch["input_ids"], batch["attention_mask"]
        mean = (ids * mask).sum(1) / mask.sum(1)
        return [torch.stack([mean * (l + 1), mask.sum(1), ids[:, 0]], dim=1) for l in LAYERS]


@pytest.fixture()
def texts():
    return ["a", "a much longer caption here", "mid size", "zz", "another fairly long one", "b c"]


def test_bucketing_restores_order_and_batching_does_not_change_features(texts):
    enc = FakeText()
    together = ex.encode_texts(enc, texts, batch_size=2)
    alone = [ex.encode_texts(enc, [t], batch_size=1) for t in texts]
    for layer in LAYERS:
        assert torch.equal(together[layer], torch.cat([a[layer] for a in alone]))


def test_length_buckets_sort_longest_first_and_cover_everything():
    buckets = ex.length_buckets([3, 9, 1, 9, 5], 2)
    assert buckets == [[1, 3], [4, 0], [2]]


def test_batches_are_padded_to_their_own_longest_text(texts):
    enc = FakeText()
    ex.encode_texts(enc, texts, batch_size=2)
    assert enc.batches == [26, 8, 2]  # per-batch padding after sorting by length, never the global maximum everywhere


def test_oom_halves_the_batch_then_gives_up_at_one():
    seen = []

    def fn(batch):
        seen.append(len(batch))
        if len(batch) > 2:
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return [torch.tensor(batch, dtype=torch.float32)[:, None]]

    outs = ex.run_with_oom_backoff(fn, list(range(7)), batch_size=8)
    assert torch.cat([o[0] for o in outs]).flatten().tolist() == list(range(7))
    assert seen[:3] == [7, 4, 2]

    def always(batch):
        raise RuntimeError("out of memory")

    with pytest.raises(UserError, match="batch size 1"):
        ex.run_with_oom_backoff(always, [0, 1], batch_size=2)


def test_other_runtime_errors_are_not_mistaken_for_oom():
    def fn(batch):
        raise RuntimeError("shape mismatch")

    with pytest.raises(RuntimeError, match="shape mismatch"):
        ex.run_with_oom_backoff(fn, [0, 1], batch_size=2)


def test_non_finite_activations_name_model_and_layer():
    outs = [torch.zeros(2, 3), torch.tensor([[0.0, float("inf"), 0.0], [0, 0, 0]])]
    with pytest.raises(ex.NonFiniteActivations, match=r"demo/minilm-l6: layer 5"):
        ex.check_finite("demo/minilm-l6", [4, 5], outs)


@pytest.fixture()
def small(tmp_path, monkeypatch):
    monkeypatch.setenv("PLATOBENCH_HOME", str(tmp_path / "home"))
    return get_dataset("openclipart-1024", limit=20), FeatureStore(tmp_path / "features")


def test_warm_cache_runs_no_model(small, monkeypatch):
    ds, store = small
    monkeypatch.setattr(ex, "load_encoder", lambda *a, **k: FakeText())
    entry, report = ex.extract(SPEC, ds, store=store, chunk_size=8, progress=False)
    assert not report.cached and report.n == 20 and report.layers == LAYERS

    def forbidden(*a, **k):
        raise AssertionError("a warm cache must not load the model")

    monkeypatch.setattr(ex, "load_encoder", forbidden)
    again, report = ex.extract(SPEC, ds, store=store, chunk_size=8, progress=False)
    assert report.cached and again.digest == entry.digest
    expected = ex.encode_texts(FakeText(), ds.captions(0), batch_size=32)
    for layer in LAYERS:
        assert torch.equal(again.layers[layer], expected[layer])


def test_failure_mid_run_resumes_to_the_same_entry(small, monkeypatch, tmp_path):
    ds, store = small

    class Flaky(FakeText):
        calls = 0

        def encode(self, batch):
            Flaky.calls += 1
            if Flaky.calls == 2:
                raise KeyboardInterrupt  # as if the run were stopped after the first chunk
            return super().encode(batch)

    monkeypatch.setattr(ex, "load_encoder", lambda *a, **k: Flaky())
    with pytest.raises(KeyboardInterrupt):
        ex.extract(SPEC, ds, store=store, chunk_size=8, batch_size=64, progress=False)
    monkeypatch.setattr(ex, "load_encoder", lambda *a, **k: FakeText())
    resumed, _ = ex.extract(SPEC, ds, store=store, chunk_size=8, batch_size=64, progress=False)
    fresh, _ = ex.extract(SPEC, ds, store=FeatureStore(tmp_path / "other"), chunk_size=8, batch_size=64, progress=False)
    for layer in LAYERS:
        assert torch.equal(resumed.layers[layer], fresh.layers[layer])


def test_cache_key_covers_prompt_dtype_samples_and_local_weights(small, tmp_path):
    ds, _ = small
    cpu = torch.device("cpu")
    base = ex.feature_key(SPEC, ds, prompt="caption:0", device=cpu)
    assert ex.feature_key(SPEC, ds, prompt="caption:1", device=cpu).digest() != base.digest()
    assert ex.feature_key(SPEC, ds, prompt="caption:0", device=cpu, dtype="bfloat16").digest() != base.digest()
    fewer = get_dataset("openclipart-1024", limit=19)
    assert ex.feature_key(SPEC, fewer, prompt="caption:0", device=cpu).digest() != base.digest()
    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / "config.json").write_text('{"a": 1}')
    local = SPEC.model_copy(update={"name": "user/local", "source": str(folder)})
    before = ex.model_revision(local)
    (folder / "config.json").write_text('{"a": 2}')
    assert ex.model_revision(local) != before


def test_texts_must_match_the_dataset(small):
    ds, _ = small
    with pytest.raises(UserError, match="3 texts given for 20 samples"):
        ex._texts_for(ds, "caption:0", ["a", "b", "c"])
    with pytest.raises(UserError, match="caption:<index>"):
        ex._texts_for(ds, "title", None)
