"""Whether the Hugging Face hub may be reached: one reading of `HF_HUB_OFFLINE` for datasets and models.

Read at call time (not at import), so `HF_HUB_OFFLINE=1 platobench ...` works even after
huggingface_hub was imported. Standard library only: importing this loads no torch.
"""

from __future__ import annotations

import os

TRUE_VALUES = frozenset({"1", "true", "yes", "on"})


def hub_offline() -> bool:
    """True when `HF_HUB_OFFLINE` is set to a true value (1, true, yes, on; any case, spaces ignored)."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in TRUE_VALUES
