"""Cache root, device and dtype policy (bf16 only on cc >= 8 GPUs; fp32 on CPU)."""

import re
from pathlib import Path

import pytest
import torch

from platobench import paths
from platobench.encoders import runtime
from platobench.errors import UserError


def test_home_from_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("PLATOBENCH_HOME", str(tmp_path))
    assert paths.home() == tmp_path
    assert paths.models_dir() == tmp_path / "models"
    monkeypatch.delenv("PLATOBENCH_HOME")
    assert paths.home() == Path.home() / ".cache" / "platobench"


def test_auto_dtype_is_float32_on_cpu():
    assert runtime.resolve_dtype("auto", torch.device("cpu")) == torch.float32
    assert runtime.resolve_dtype("bfloat16", torch.device("cpu")) == torch.bfloat16


@pytest.mark.parametrize(("capability", "expected"), [((7, 0), torch.float32), ((8, 0), torch.bfloat16), ((9, 0), torch.bfloat16)])
def test_auto_dtype_by_compute_capability(monkeypatch, capability, expected):
    # V100 (7.0) must stay fp32: the PRH reference's ">= 7" check is wrong there.
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: capability)
    assert runtime.resolve_dtype("auto", torch.device("cuda")) == expected


def test_bad_dtype_and_device_name_the_argument(monkeypatch):
    with pytest.raises(UserError, match="--dtype"):
        runtime.resolve_dtype("float8", torch.device("cpu"))
    with pytest.raises(UserError, match="--device"):
        runtime.resolve_device("tpu0")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(UserError, match="no CUDA"):
        runtime.resolve_device("cuda")


def causal_spec(**update):
    from platobench.zoo.spec import ModelSpec

    return ModelSpec(name="qwen2.5/qwen2.5-72b", modality="text", kind="causal_lm", loader="hf_causal",
                     source="Qwen/Qwen2.5-72B", revision="main", pooling="avg", **update)


def test_big_models_shard_with_device_map_auto_on_cuda():
    from platobench.encoders.hf_text import model_kwargs

    spec = causal_spec()
    assert model_kwargs(spec, torch.device("cuda"), torch.bfloat16, shard=True) == {"dtype": torch.bfloat16, "device_map": "auto"}
    assert model_kwargs(spec, torch.device("cuda:1"), torch.bfloat16, shard=True)["device_map"] == {"": 1}
    assert model_kwargs(spec, torch.device("cpu"), torch.float32, shard=True) == {"dtype": torch.float32}
    assert "device_map" not in model_kwargs(spec, torch.device("cuda"), torch.bfloat16, shard=False)


def test_quantisation_is_opt_in_and_needs_bitsandbytes(monkeypatch):
    import importlib.util

    from platobench.encoders.hf_text import model_kwargs

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "bitsandbytes" else real_find_spec(name, *a))
    with pytest.raises(UserError, match=re.escape("needs bitsandbytes, which is not installed: pip install 'platobench[gpu]'")):
        model_kwargs(causal_spec(quantization="8bit"), torch.device("cuda"), torch.bfloat16, shard=True)
    with pytest.raises(UserError, match="needs a CUDA device"):
        model_kwargs(causal_spec(quantization="4bit"), torch.device("cpu"), torch.float32, shard=True)
