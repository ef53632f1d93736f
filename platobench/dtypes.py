"""The floating-point dtypes by name: what a zoo entry or `--dtype` may ask loaders to compute in, and what
the features cache stores (`FeatureKey.stored_dtype`).

Names only at import (no torch), so command modules can list them; `torch_dtype` imports torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from platobench.errors import UserError

if TYPE_CHECKING:
    import torch

#: In the order error messages list them.
DTYPE_NAMES: tuple[str, ...] = ("float32", "bfloat16", "float16")
#: The dtype code of each name in a safetensors header.
SAFETENSORS_CODES: dict[str, str] = {"float32": "F32", "bfloat16": "BF16", "float16": "F16"}


def torch_dtype(name: str) -> torch.dtype:
    """The torch dtype called `name` (one of DTYPE_NAMES); UserError for any other name."""
    if name not in DTYPE_NAMES:
        raise UserError(f"dtype {name!r}: expected one of {', '.join(DTYPE_NAMES)}")
    import torch

    dtype = getattr(torch, name)
    assert isinstance(dtype, torch.dtype)
    return dtype
