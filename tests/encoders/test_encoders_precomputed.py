"""`loader: features` (platobench.encoders.precomputed): embeddings read from a file by sample id.

An exported zoo model's features come back bit for bit (so every score is the zoo model's), in every
format and any row order; missing, duplicated and foreign ids, other layers, another input and
non-finite values are named errors; the cache key follows the file's bytes."""

from __future__ import annotations

import json
import random

import numpy as np
import pandas as pd
import pytest
import torch

from platobench.data import get_dataset
from platobench.encoders import precomputed
from platobench.encoders.base import EncoderOutputError
from platobench.errors import UserError
from platobench.features import extract as ex
from platobench.features.store import FeatureStore
from platobench.metrics import layer_grid
from platobench.zoo import load_zoo
from platobench.zoo.spec import ModelSpec

ZOO_MODEL = load_zoo().get("demo/minilm-l6")
N = 20


def features_spec(path, *, modality: str = "text", num_layers: int = 2, **kw) -> ModelSpec:
    kind = "text_encoder" if modality == "text" else "vision_cnn"
    return ModelSpec(name="mine/emb.v1", modality=modality, kind=kind, loader="features", source=str(path),
                     pooling="avg", num_layers=num_layers, **kw)


@pytest.fixture()
def dataset():
    return get_dataset("openclipart-1024", limit=N)


def random_layers(n: int, widths=(4, 3, 5), seed: int = 0) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(n, w, generator=g) for w in widths]


def write(path, ids, layers, input: str = "caption:0") -> None:
    precomputed.write_safetensors(path, ids, range(len(layers)), layers, input=input)


def test_an_exported_zoo_model_comes_back_bit_for_bit_and_scores_the_same(tmp_path, dataset):
    store = FeatureStore(tmp_path / "features")
    entry, _ = ex.extract(ZOO_MODEL, dataset, store=store, progress=False)
    original = [entry.layer(i) for i in range(len(entry.layer_ids))]
    file = tmp_path / "minilm.safetensors"
    precomputed.write_safetensors(file, entry.ids, entry.layer_ids, original, input="caption:0")
    spec = features_spec(file, num_layers=ZOO_MODEL.num_layers)
    mine, report = ex.extract(spec, dataset, store=store, progress=False)
    assert not report.cached and mine.ids == entry.ids and mine.layer_ids == entry.layer_ids
    back = [mine.layer(i) for i in range(len(mine.layer_ids))]
    assert all(torch.equal(a, b) for a, b in zip(original, back))
    vision = [torch.randn(N, 8, generator=torch.Generator().manual_seed(1))]
    assert torch.equal(layer_grid("mutual_knn", back, vision, k=5, preprocess="prh"),
                       layer_grid("mutual_knn", original, vision, k=5, preprocess="prh"))
    assert mine.key["model_revision"].startswith("features:sha256:") and mine.key["dtype"] == "float32"
    assert ex.extract(spec, dataset, store=store, progress=False)[1].cached  # a warm cache reads no file


@pytest.mark.parametrize("fmt", ["safetensors", "npy", "parquet"])
def test_every_format_is_matched_by_id_in_any_row_order(tmp_path, dataset, fmt):
    ids, layers = list(dataset.ids), random_layers(N, widths=(4, 4, 4))
    order = list(range(N))
    random.Random(0).shuffle(order)
    shuffled_ids, shuffled = [ids[i] for i in order], [x[order] for x in layers]
    file = tmp_path / f"emb.{fmt}"
    if fmt == "safetensors":
        write(file, shuffled_ids, shuffled)
    elif fmt == "npy":
        np.save(file, torch.stack(shuffled).numpy().astype(np.float16).astype(np.float32))
        precomputed.ids_file(file).write_text("\n".join(shuffled_ids) + "\n")
        layers = [x.half().float() for x in layers]
    else:
        frame = pd.DataFrame({"id": shuffled_ids, **{f"layer.{i}": list(x.numpy()) for i, x in enumerate(shuffled)}})
        frame.to_parquet(file)
    entry, _ = ex.extract(features_spec(file), dataset, store=FeatureStore(tmp_path / "f"), progress=False)
    assert entry.ids == ids
    assert all(torch.equal(entry.layer(i), x) for i, x in enumerate(layers))


def test_a_limit_prefix_of_the_file_is_served_and_other_extra_ids_are_refused(tmp_path, dataset):
    file = tmp_path / "emb.safetensors"
    write(file, list(dataset.ids), random_layers(N))
    fewer = get_dataset("openclipart-1024", limit=8)
    entry, _ = ex.extract(features_spec(file), fewer, store=FeatureStore(tmp_path / "f"), progress=False)
    assert entry.ids == list(dataset.ids[:8])
    table = precomputed.load(features_spec(file))
    with pytest.raises(UserError, match=r"holds 20 ids, 19 of them beyond the 1 samples of dataset d read here .* a "
                                        r"--limit run reads it only when its first 1 rows are those samples"):
        table.positions("d", [dataset.ids[3]], "caption:0")


def test_missing_and_duplicated_ids_are_named(tmp_path, dataset):
    ids = list(dataset.ids)
    file = tmp_path / "emb.safetensors"
    write(file, ids[:-2], random_layers(N - 2))
    with pytest.raises(UserError, match=rf"lacks 2 of the {N} ids of dataset openclipart-1024: '{ids[-2]}', '{ids[-1]}'"):
        ex.extract(features_spec(file), dataset, store=FeatureStore(tmp_path / "f"), progress=False)
    write(file, ids[:-1] + ids[:1], random_layers(N))
    with pytest.raises(UserError, match=rf"1 ids appear more than once: '{ids[0]}'"):
        precomputed.load(features_spec(file))


def test_other_layers_another_input_and_non_finite_values_are_refused(tmp_path, dataset):
    ids, file = list(dataset.ids), tmp_path / "emb.safetensors"
    write(file, ids, random_layers(N))
    with pytest.raises(EncoderOutputError, match=r"holds layers \[0, 1, 2\], but the entry .* says \[0, 1, 2, 3\]"):
        precomputed.load(features_spec(file, num_layers=3))
    with pytest.raises(UserError, match=r"embeds 'caption:0', but 'caption:1' is asked for"):
        ex.extract(features_spec(file), dataset, store=FeatureStore(tmp_path / "f"), prompt="caption:1", progress=False)
    with pytest.raises(UserError, match=r"embeds 'caption:0', but 'image' is asked for"):
        ex.extract(features_spec(file, modality="vision"), dataset, store=FeatureStore(tmp_path / "f"), progress=False)
    with pytest.raises(UserError, match=f"cannot encode the {N} texts"):
        ex.extract(features_spec(file), dataset, store=FeatureStore(tmp_path / "f"), texts=["a"] * N, progress=False)
    layers = random_layers(N)
    layers[1][3, 0] = float("nan")
    write(file, ids, layers)
    with pytest.raises(UserError, match="layer 1 has NaN or infinite values in 1 rows"):
        precomputed.load(features_spec(file))


@pytest.mark.parametrize("content, match", [
    (None, "does not exist"),
    (b"not a safetensors file", "not a readable safetensors file"),
])
def test_unreadable_files_are_one_named_error(tmp_path, content, match):
    file = tmp_path / "emb.safetensors"
    if content is not None:
        file.write_bytes(content)
    with pytest.raises(UserError, match=match):
        precomputed.load(features_spec(file))


def test_a_file_without_ids_or_with_foreign_tensors_is_refused(tmp_path):
    from safetensors.torch import save_file

    file = tmp_path / "emb.safetensors"
    save_file({"layer.0": torch.zeros(2, 2)}, str(file))
    with pytest.raises(UserError, match="no JSON list of sample ids under 'ids'"):
        precomputed.load(features_spec(file, num_layers=0))
    save_file({"weights": torch.zeros(2, 2)}, str(file), metadata={"ids": json.dumps(["a", "b"])})
    with pytest.raises(UserError, match=r"holds 'weights'; expected only 'layer.<index>'"):
        precomputed.load(features_spec(file, num_layers=0))


def test_the_cache_revision_follows_the_bytes_not_the_name(tmp_path, dataset):
    ids, a, b = list(dataset.ids), tmp_path / "a.safetensors", tmp_path / "b.safetensors"
    write(a, ids, random_layers(N))
    write(b, ids, random_layers(N, seed=1))
    rev_a, rev_b = ex.model_revision(features_spec(a)), ex.model_revision(features_spec(b))
    assert rev_a != rev_b
    b.write_bytes(a.read_bytes())
    assert ex.model_revision(features_spec(b)) == rev_a


def test_the_entry_must_name_a_file_path():
    with pytest.raises(ValueError, match="loader 'features' needs a file path as source"):
        features_spec("emb.safetensors")
    with pytest.raises(ValueError, match="dtype 'bfloat16' is not supported by loader 'features'"):
        features_spec("./emb.safetensors", dtype="bfloat16")


def test_submits_mock_pass_reads_a_few_samples_from_a_file_in_any_order(tmp_path, dataset):
    from platobench.bench.submit import mock_pass

    ids, layers = list(dataset.ids), random_layers(N)
    file = tmp_path / "emb.safetensors"
    write(file, ids[::-1], [x.flip(0) for x in layers])
    report = mock_pass(features_spec(file), "openclipart-1024", samples=4)
    assert report.samples == 4 and report.layers == [0, 1, 2] and report.widths == [4, 3, 5]
