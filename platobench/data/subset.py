"""Subset views of a paired dataset: some of its samples, under a name and revision of their own.

A subset is an ordinary `PairedDataset` (same captions, images read from the parent), so the features
cache and result records key it correctly: its name and revision say which parent and which rule chose
the samples, and its fingerprint hashes its own ordered ids (the cache key and the result record).
"""

from __future__ import annotations

from collections.abc import Sequence

from PIL import Image

from platobench.data.base import PairedDataset


class _ParentImages:
    """Subset position -> the parent's image (a class, not a closure, so DataLoader workers can pickle it)."""

    def __init__(self, parent: PairedDataset, indices: Sequence[int]) -> None:
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
