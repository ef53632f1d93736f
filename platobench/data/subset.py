"""Subset views of a dataset: some of its samples, images read from the parent.

A paired subset (`paired_subset`) is an ordinary `PairedDataset` under a name and revision of its own:
they say which parent and which rule chose the samples. A class subset (`first_per_class`, what `limit`
means for a class dataset) keeps the parent's name and revision. Either way its fingerprint hashes its own
ordered ids, so the features cache and result records key it correctly.
"""

from __future__ import annotations

from collections.abc import Sequence

from PIL import Image

from platobench.data.base import ClassDataset, PairedDataset


class _ParentImages:
    """Subset position -> the parent's image (a class, not a closure, so DataLoader workers can pickle it)."""

    def __init__(self, parent: PairedDataset | ClassDataset, indices: Sequence[int]) -> None:
        self.parent, self.indices = parent, list(indices)

    def __call__(self, i: int) -> Image.Image:
        return self.parent.image(self.indices[i])


def paired_subset(dataset: PairedDataset, indices: Sequence[int], *, tag: str) -> PairedDataset:
    """The samples of `dataset` at `indices` (in that order) as a PairedDataset named
    "<parent name>:<tag>" with revision "<parent revision>;subset=<tag>". `tag` names the selection
    rule (e.g. "heldout0.2"), so two subsets chosen by different rules never share a name."""
    if not indices:
        raise ValueError(f"subset {tag!r} of {dataset.name!r} is empty")
    bad = [i for i in indices if not 0 <= i < len(dataset)]
    if bad:
        raise IndexError(
            f"subset {tag!r}: indices {bad[:5]} out of range for {dataset.name!r} (n={len(dataset)})"
        )
    groups = [dataset.groups[i] for i in indices] if dataset.groups is not None else None
    return PairedDataset(
        f"{dataset.name}:{tag}",
        f"{dataset.revision};subset={tag}",
        [dataset.ids[i] for i in indices],
        [dataset.caption_views(i) for i in indices],
        _ParentImages(dataset, indices),
        groups=groups,
    )


def first_per_class(dataset: ClassDataset, per_class: int) -> ClassDataset:
    """The first `per_class` images of each class, dataset order kept (a class with fewer keeps all of
    them, so no class is left empty); same name and revision, the ids (and so the cache key and
    fingerprint) name the subset. `dataset` itself when nothing is dropped."""
    if per_class < 1:
        raise ValueError(f"per_class must be >= 1, got {per_class}")
    taken = [0] * len(dataset.class_names)
    keep = []
    for i, y in enumerate(dataset.labels):
        if taken[y] < per_class:
            taken[y] += 1
            keep.append(i)
    if len(keep) == len(dataset):
        return dataset
    return ClassDataset(
        dataset.name, dataset.revision, [dataset.ids[i] for i in keep], [dataset.labels[i] for i in keep],
        dataset.class_names, dataset.templates, _ParentImages(dataset, keep),
        class_descriptions=dataset.class_descriptions,
    )
