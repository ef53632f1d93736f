"""Statistics of a feature entry's layers, saved beside the entry (`CachedLayers`' cache for the store).

Layout inside an entry folder (see `platobench.features.store`)::

    statistics/<name>-<h>.safetensors    one statistic (e.g. the per-sample prh quantiles [N], float32)

where h hashes the statistic's name, parameter and layer positions. Its safetensors metadata names the
entry digest, the sha256 of every layer file it was computed from, the statistic, parameter and
positions, this module's format version, the torch version (the quantile arithmetic follows torch's,
which has changed between releases) and the value's own sha256. A file that disagrees with any of these
(a changed entry, another torch, a damaged or edited value) is not used: the value is computed again and
the file replaced. A statistics file is a cache, never a result: a read-only or removed entry keeps none,
and nothing fails for it. Like the rest of the store, nothing is read or written through a symbolic link
(a linked `statistics` folder makes the whole entry refused, as any link in it).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save as st_save

from platobench.files.atomic import WriteError, atomic_write_bytes
from platobench.metrics.cached_layers import StatisticKey

if TYPE_CHECKING:
    from platobench.features.store import FeatureEntry

STATISTICS_FORMAT = 1
FOLDER = "statistics"


def _value_sha256(value: torch.Tensor) -> str:
    return hashlib.sha256(value.contiguous().numpy().tobytes()).hexdigest()


class EntryStatistics:
    """The `StatisticsCache` of one complete entry: values are float32 [N] tensors (N the entry's samples)."""

    def __init__(self, entry: FeatureEntry) -> None:
        self._entry = entry

    def _metadata(self, key: StatisticKey) -> dict[str, str]:
        name, q, positions = key
        files = self._entry.manifest["files"]
        return {
            "format": str(STATISTICS_FORMAT), "entry": self._entry.digest, "statistic": name, "q": repr(float(q)),
            "positions": json.dumps(list(positions)), "torch": torch.__version__,
            "layer_sha256": json.dumps([files[p]["sha256"] for p in positions]),
        }

    def path(self, key: StatisticKey) -> Path:
        """The file that holds `key`'s value."""
        name, q, positions = key
        h = hashlib.sha256(json.dumps([name, repr(float(q)), list(positions)]).encode()).hexdigest()[:16]
        return self._entry.path / FOLDER / f"{name}-{h}.safetensors"

    def load(self, key: StatisticKey) -> torch.Tensor | None:
        """The saved value of `key`, or None (absent, a link, unreadable, or not what `key` on these exact
        layer files under this torch would give: see the module docstring)."""
        path = self.path(key)
        if path.parent.is_symlink() or path.is_symlink() or not path.is_file():
            return None
        try:
            with safe_open(path, framework="pt") as fh:
                meta = fh.metadata() or {}
                value = fh.get_tensor("value")
        except (OSError, SafetensorError, ValueError):
            return None
        want = self._metadata(key)
        if {k: meta.get(k) for k in want} != want:
            return None
        if value.dtype != torch.float32 or tuple(value.shape) != (len(self._entry),):
            return None
        return value if meta.get("value_sha256") == _value_sha256(value) else None

    def save(self, key: StatisticKey, value: torch.Tensor) -> None:
        """Keep `value` for `key` (float32 [N] only; anything else, or an entry that cannot be written, keeps
        nothing)."""
        value = value.detach().cpu()
        path = self.path(key)
        if value.dtype != torch.float32 or tuple(value.shape) != (len(self._entry),) or path.parent.is_symlink():
            return
        meta = self._metadata(key) | {"value_sha256": _value_sha256(value)}
        try:
            atomic_write_bytes(path, st_save({"value": value.contiguous()}, metadata=meta))
        except WriteError:
            return

