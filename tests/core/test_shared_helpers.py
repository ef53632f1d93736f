"""One home for names several stages share: the dtype names (loaders' compute dtype, the cache's stored
dtype) and the reading of HF_HUB_OFFLINE (datasets and models)."""

from __future__ import annotations

import json
import struct
import typing

import pytest
import torch
from safetensors.torch import save

from platobench.dtypes import DTYPE_NAMES, SAFETENSORS_CODES, torch_dtype
from platobench.encoders.runtime import resolve_dtype
from platobench.errors import UserError
from platobench.hub import hub_offline
from platobench.zoo.spec import ModelSpec


def test_dtype_names_match_the_zoo_schema_and_the_safetensors_codes():
    allowed = typing.get_args(ModelSpec.model_fields["dtype"].annotation)
    assert allowed == ("auto", *DTYPE_NAMES)
    for name in DTYPE_NAMES:
        data = save({"t": torch.zeros(2, dtype=torch_dtype(name))})
        (size,) = struct.unpack("<Q", data[:8])
        assert json.loads(data[8 : 8 + size])["t"]["dtype"] == SAFETENSORS_CODES[name]
    assert set(SAFETENSORS_CODES) == set(DTYPE_NAMES)


def test_torch_dtype_and_resolve_dtype_refuse_unknown_names():
    assert torch_dtype("bfloat16") is torch.bfloat16
    assert resolve_dtype("float16", torch.device("cpu")) is torch.float16
    with pytest.raises(UserError, match="expected one of float32, bfloat16, float16"):
        torch_dtype("int8")
    with pytest.raises(UserError, match=r"^--dtype: 'fp8' is not one of auto, float32, bfloat16, float16"):
        resolve_dtype("fp8", torch.device("cpu"))


@pytest.mark.parametrize(("value", "offline"), [
    ("1", True), (" TRUE ", True), ("yes", True), ("On", True),
    ("0", False), ("", False), ("false", False), ("offline", False),
])
def test_hub_offline_reads_the_variable_at_call_time(monkeypatch, value, offline):
    monkeypatch.setenv("HF_HUB_OFFLINE", value)
    assert hub_offline() is offline
    monkeypatch.delenv("HF_HUB_OFFLINE")
    assert hub_offline() is False


def test_datasets_and_models_share_one_hub_offline():
    from platobench.data import hub as data_hub
    from platobench.encoders import sources

    assert data_hub.hub_offline is hub_offline and sources.hub_offline is hub_offline


def test_the_hub_libraries_are_told_offline_at_call_time(monkeypatch):
    """datasets and huggingface_hub read HF_HUB_OFFLINE once, at import: set later (the Python API, a
    notebook), a hub dataset load retried the network for ~23 s. `offline_libraries` switches them for the
    call and restores them."""
    import datasets.config
    import huggingface_hub.constants

    from platobench.hub import offline_libraries

    before = huggingface_hub.constants.HF_HUB_OFFLINE, datasets.config.HF_HUB_OFFLINE
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    with offline_libraries():
        assert (huggingface_hub.constants.HF_HUB_OFFLINE, datasets.config.HF_HUB_OFFLINE) == before
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with offline_libraries():
        assert huggingface_hub.constants.HF_HUB_OFFLINE is True and datasets.config.HF_HUB_OFFLINE is True
    assert (huggingface_hub.constants.HF_HUB_OFFLINE, datasets.config.HF_HUB_OFFLINE) == before
