"""Datasets: paired image–caption sets (WIT-1024, COCO, Flickr30k, openclipart) and class-labelled sets
for zero-shot matching (ImageNet-100, CIFAR-10/100, CINIC-10, Fashion-MNIST, openclipart categories), and
text corpora of good views for text JEPAs (WordNet, OpenMoji, CLDR emoji, KJV/WEB verses).

    from platobench.data import get_dataset
    ds = get_dataset("openclipart-1024", limit=256)    # PairedDataset: ds.ids, ds.image(i), ds.captions()
    cs = get_dataset("fashion-mnist", limit=16)        # ClassDataset: the first 16 images of each class
    tc = get_dataset("wordnet", limit=1000)            # TextCorpus: ds.ids, ds.caption_views(i), no images

Offline sets come from Debian packages; hub sets load through `datasets` at a pinned revision.
"""

from __future__ import annotations

from typing import Any

from platobench.data.base import ClassDataset, DatasetInfo, PairedDataset, fingerprint, ids_hash
from platobench.data.catalog import build as _build
from platobench.data.catalog import entries, lookup, options_of
from platobench.data.subset import first_per_class
from platobench.data.templates import get_templates, template_sets
from platobench.data.text_corpus import TextCorpus
from platobench.errors import UserError

DEFAULT_PAIRED = "openclipart-1024"

__all__ = [
    "DEFAULT_PAIRED",
    "ClassDataset",
    "DatasetInfo",
    "PairedDataset",
    "TextCorpus",
    "fingerprint",
    "get_dataset",
    "get_templates",
    "ids_hash",
    "list_datasets",
    "options_of",
    "template_sets",
]


def list_datasets() -> list[DatasetInfo]:
    """Every dataset name `get_dataset` accepts, with its kind (paired/class/corpus), source and revision
    (the built-in ones, then those of datasets files in force: `platobench.data.datasets_file`)."""
    return [entry.info for entry in entries().values()]


def get_dataset(
    name: str, *, limit: int | None = None, **options: Any
) -> PairedDataset | ClassDataset | TextCorpus:
    """Build dataset `name`. `limit` keeps, for a paired set or a corpus, its first `limit` samples; for a class set,
    the first `limit` images of each class in the dataset's order (`first_per_class`: no class is left
    empty, so a limited zero-shot run still has every class). Options are per dataset (see
    `options_of(name)`), e.g. `seed` for openclipart, `templates` for class sets. UserError for unknown
    names (with close suggestions), unknown options, a limit that is not a positive integer, and data
    that is not installed or cached."""
    if limit is None or lookup(name).info.kind != "class":
        return _build(name, limit, options)
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise UserError(f"limit={limit!r}: expected a positive integer")
    dataset = _build(name, None, options)
    assert isinstance(dataset, ClassDataset)
    return first_per_class(dataset, limit)
