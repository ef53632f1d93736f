"""`loader: features` files that used to be read wrongly or fail inside a library are named errors when they
are loaded (platobench.encoders.precomputed): two names of one layer (`layer.1` and `layer.01`), values
that are not floats (int, bool: refused in every format, as `.npy` always refused them), an `.npz` archive
named `.npy`, a parquet layer column holding nulls, a parquet id that is null; and a `--limit` run of a
file whose rows are in another order than the dataset's is refused with a message that says so."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch
from safetensors.torch import save_file

from platobench.encoders import precomputed
from platobench.encoders.precomputed import EmbeddingFileError
from platobench.zoo.spec import ModelSpec

IDS = [f"s{i}" for i in range(6)]


def features_spec(path, num_layers: int = 1) -> ModelSpec:
    return ModelSpec(name="mine/emb.v1", modality="text", kind="text_encoder", loader="features", source=str(path),
                     pooling="avg", num_layers=num_layers)


def save(path, tensors: dict[str, torch.Tensor]) -> None:
    save_file(tensors, str(path), metadata={"ids": json.dumps(IDS)})


def test_two_names_of_one_layer_are_refused(tmp_path):
    file = tmp_path / "emb.safetensors"
    save(file, {"layer.0": torch.zeros(6, 2), "layer.1": torch.ones(6, 2), "layer.01": torch.randn(6, 2)})
    with pytest.raises(EmbeddingFileError, match=r"holds both 'layer.01' and 'layer.1' for layer 1"):
        precomputed.load(features_spec(file))
    parquet = tmp_path / "emb.parquet"
    pd.DataFrame({"id": IDS, "layer.0": list(np.zeros((6, 2))), "layer.1": list(np.ones((6, 2))),
                  "layer.001": list(np.ones((6, 2)))}).to_parquet(parquet)
    with pytest.raises(EmbeddingFileError, match=r"holds both 'layer.001' and 'layer.1' for layer 1"):
        precomputed.load(features_spec(parquet))


def test_a_layer_index_of_other_digits_is_refused(tmp_path):
    file = tmp_path / "emb.safetensors"
    save(file, {"layer.0": torch.zeros(6, 2), "layer.\u0661": torch.randn(6, 2)})  # ARABIC-INDIC DIGIT ONE
    with pytest.raises(EmbeddingFileError, match=r"expected only 'layer.<index>' layers"):
        precomputed.load(features_spec(file))


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8, torch.bool])
def test_safetensors_values_that_are_not_floats_are_refused_as_in_npy(tmp_path, dtype):
    file = tmp_path / "emb.safetensors"
    save(file, {"layer.0": torch.ones(6, 2, dtype=dtype)})
    with pytest.raises(EmbeddingFileError, match=rf"'layer.0' holds {str(dtype).removeprefix('torch.')} values; "
                                                 "expected floats"):
        precomputed.load(features_spec(file, num_layers=0))


@pytest.mark.parametrize("values", [[[1, 2]] * 6, [[True, False]] * 6])
def test_parquet_values_that_are_not_floats_are_refused(tmp_path, values):
    file = tmp_path / "emb.parquet"
    pd.DataFrame({"id": IDS, "layer.0": values}).to_parquet(file)
    with pytest.raises(EmbeddingFileError, match=r"column 'layer.0' holds (int64|bool) values; expected floats"):
        precomputed.load(features_spec(file, num_layers=0))


def test_npy_ints_stay_refused(tmp_path):
    file = tmp_path / "emb.npy"
    np.save(file, np.ones((6, 2), dtype=np.int64))
    precomputed.ids_file(file).write_text("\n".join(IDS) + "\n")
    with pytest.raises(EmbeddingFileError, match=r"holds a int64 array .* expected floats"):
        precomputed.load(features_spec(file, num_layers=0))


def test_an_npz_archive_named_npy_is_a_named_error(tmp_path):
    file = tmp_path / "emb.npy"
    with open(file, "wb") as f:
        np.savez(f, layers=np.zeros((6, 2), dtype=np.float32))
    precomputed.ids_file(file).write_text("\n".join(IDS) + "\n")
    with pytest.raises(EmbeddingFileError, match=r"emb.npy is an .npz archive \(arrays 'layers'\), not one .npy array"):
        precomputed.load(features_spec(file, num_layers=0))


def test_an_empty_npy_is_a_named_error(tmp_path):
    file = tmp_path / "emb.npy"
    file.write_bytes(b"")
    precomputed.ids_file(file).write_text("\n".join(IDS) + "\n")
    with pytest.raises(EmbeddingFileError, match=r"emb.npy is not a readable .npy array"):
        precomputed.load(features_spec(file, num_layers=0))


@pytest.mark.parametrize("rows, count", [([None] * 6, 6), ([[1.0, 2.0]] * 4 + [None, None], 2)])
def test_a_parquet_layer_column_with_nulls_is_a_named_error(tmp_path, rows, count):
    file = tmp_path / "emb.parquet"
    pd.DataFrame({"id": IDS, "layer.0": rows}).to_parquet(file)
    with pytest.raises(EmbeddingFileError, match=rf"column 'layer.0' is null in {count} of 6 rows"):
        precomputed.load(features_spec(file, num_layers=0))


def test_a_parquet_null_id_is_a_named_error(tmp_path):
    file = tmp_path / "emb.parquet"
    pd.DataFrame({"id": [*IDS[:5], None], "layer.0": list(np.zeros((6, 2)))}).to_parquet(file)
    with pytest.raises(EmbeddingFileError, match=r"column 'id' is null in 1 of 6 rows"):
        precomputed.load(features_spec(file, num_layers=0))


def test_a_limit_run_of_a_file_in_another_order_says_so(tmp_path):
    file = tmp_path / "emb.safetensors"
    shuffled = IDS[::-1]
    precomputed.write_safetensors(file, shuffled, [0], [torch.randn(6, 2)], input="caption:0")
    table = precomputed.load(features_spec(file, num_layers=0))
    with pytest.raises(EmbeddingFileError) as info:
        table.positions("d", IDS[:3], "caption:0")  # the first 3 samples of d, as --limit 3 reads them
    message = str(info.value)
    assert "that dataset d does not" not in message  # d holds them: only its first 3 samples are read
    assert ("holds 6 ids, 3 of them beyond the 3 samples of dataset d read here ('s5', 's4', 's3'); a file is "
            "for one dataset, and a --limit run reads it only when its first 3 rows are those samples in the "
            "dataset's order, but row 0 is 's5' where sample 0 is 's0': write the rows in the dataset's order "
            "(as `platobench extract --export` does)") in message
    assert table.positions("d", IDS, "caption:0") == [5, 4, 3, 2, 1, 0]  # the whole dataset: any order
