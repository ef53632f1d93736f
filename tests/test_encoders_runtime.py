"""Cache root, device and dtype policy (bf16 only on cc >= 8 GPUs; fp32 on CPU)."""

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
