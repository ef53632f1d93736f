"""Whether the Hugging Face hub may be reached: one reading of `HF_HUB_OFFLINE` for datasets and models.

Read at call time (not at import), so `HF_HUB_OFFLINE=1 platobench ...` works even after
huggingface_hub was imported. The hub libraries read it once, when they are imported: `offline_libraries`
tells them at call time (the Python API may set the variable after `datasets` is imported, and
`datasets.load_dataset` would then retry the network for about 23 s before failing). Standard library
only: importing this loads no torch.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator
from contextlib import contextmanager

TRUE_VALUES = frozenset({"1", "true", "yes", "on"})


def hub_offline() -> bool:
    """True when `HF_HUB_OFFLINE` is set to a true value (1, true, yes, on; any case, spaces ignored)."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in TRUE_VALUES


#: (module, attribute) of the hub libraries' own offline switches, read by them at call time.
_LIBRARY_SWITCHES = (("huggingface_hub.constants", "HF_HUB_OFFLINE"), ("datasets.config", "HF_HUB_OFFLINE"),
                     ("datasets.config", "HF_DATASETS_OFFLINE"))


@contextmanager
def offline_libraries() -> Iterator[None]:
    """While `hub_offline()`, the hub libraries' offline switches are on inside the block (restored after);
    otherwise nothing changes. Imports huggingface_hub and datasets when offline."""
    if not hub_offline():
        yield
        return
    saved = []
    for module_name, attribute in _LIBRARY_SWITCHES:
        module = importlib.import_module(module_name)
        if hasattr(module, attribute):
            saved.append((module, attribute, getattr(module, attribute)))
            setattr(module, attribute, True)
    try:
        yield
    finally:
        for module, attribute, value in saved:
            setattr(module, attribute, value)
