"""Datasets: paired image–caption sets (WIT-1024, COCO, Flickr30k, openclipart) and class-labelled sets
for zero-shot matching (ImageNet-100, CIFAR-10/100, CINIC-10, Fashion-MNIST, openclipart categories).

    from platobench.data import get_dataset
    ds = get_dataset("openclipart-1024", limit=256)    # PairedDataset: ds.ids, ds.image(i), ds.captions()

Offline sets come from Debian packages; hub sets load through `datasets` at a pinned revision.
"""

from __future__ import annotations

from typing import Any

from platobench.data.base import ClassDataset, DatasetInfo, PairedDataset, fingerprint, ids_hash
from platobench.data.catalog import CATALOG, options_of
from platobench.data.catalog import build as _build
from platobench.data.templates import get_templates, template_sets

DEFAULT_PAIRED = "openclipart-1024"

__all__ = [
    "DEFAULT_PAIRED",
    "ClassDataset",
    "DatasetInfo",
    "PairedDataset",
    "fingerprint",
    "get_dataset",
    "get_templates",
    "ids_hash",
    "list_datasets",
    "options_of",
    "template_sets",
]


def list_datasets() -> list[DatasetInfo]:
    """Every dataset name `get_dataset` accepts, with its kind (paired/class), source and revision."""
    return [entry.info for entry in CATALOG.values()]


def get_dataset(name: str, *, limit: int | None = None, **options: Any) -> PairedDataset | ClassDataset:
    """Build dataset `name` (its first `limit` samples when given). Options are per dataset (see
    `options_of(name)`), e.g. `seed` for openclipart, `templates` for class sets. UserError for unknown
    names (with close suggestions), unknown options, and data that is not installed or cached."""
    return _build(name, limit, options)
