"""The stitching experiment's split of a paired dataset: train images (the map's pairs), held-out test images
(captioned and scored), and the decoder's training text.

The split hashes each sample id (`platobench.data.heldout.is_heldout`: the same rule as the JEPA runs,
so it depends on the id alone). The decoder learns from train captions only, and a train caption whose
normalised text (lower-cased, whitespace collapsed) equals any held-out reference is dropped from its
training text too, so no held-out caption reaches the decoder even when two images share a caption.
"""

from __future__ import annotations

from dataclasses import dataclass

from platobench.api import PairedDataset, UserError, is_heldout, paired_subset

MIN_TRAIN = 8
MIN_TEST = 4


def normalised_text(text: str) -> str:
    """Lower-cased, whitespace collapsed: the key under which two captions count as the same text."""
    return " ".join(text.lower().split())


@dataclass(frozen=True)
class StitchSplit:
    """dataset: the whole paired set; train / test: sample indices into it; views: how many captions per
    sample are used (captions 0..views-1 of every sample; the decoder reads all of them for train samples);
    decoder_items: (train sample index, caption index) of the decoder's training text, held-out duplicates
    removed; dropped: train captions removed because a held-out reference has the same text."""

    dataset: PairedDataset
    fraction: float
    train: list[int]
    test: list[int]
    views: int
    decoder_items: list[tuple[int, int]]
    dropped: int

    @property
    def test_set(self) -> PairedDataset:
        """The held-out samples as a dataset of their own ("<name>:heldout<fraction>"): what records cite."""
        return paired_subset(self.dataset, self.test, tag=f"heldout{self.fraction:g}")

    def references(self) -> list[list[str]]:
        """Every caption of each test image (all its views, not only the first `views`)."""
        return [self.dataset.caption_views(i) for i in self.test]

    def decoder_captions(self) -> list[str]:
        return [self.dataset.caption_views(i)[j] for i, j in self.decoder_items]

    def as_dict(self) -> dict[str, int | float]:
        return {"train": len(self.train), "test": len(self.test), "heldout_fraction": self.fraction,
                "decoder_train_captions": len(self.decoder_items), "dropped_duplicates": self.dropped}


def split_dataset(dataset: PairedDataset, fraction: float, *, views: int | None = None) -> StitchSplit:
    """Split `dataset` by id hash into train and held-out (`fraction` of the ids, in (0, 1)). `views`:
    captions per sample to use (None: as many as every sample has). UserError when a side is too small."""
    if not 0 < fraction < 1:
        raise UserError(f"--heldout {fraction}: expected a share strictly between 0 and 1")
    common = min(len(dataset.caption_views(i)) for i in range(len(dataset)))
    if views is None:
        views = common
    if not 1 <= views <= common:
        raise UserError(f"--captions {views}: every sample of {dataset.name!r} has at least 1 and at most "
                        f"{common} captions in common; choose 1..{common}")
    test = [i for i, sid in enumerate(dataset.ids) if is_heldout(sid, fraction)]
    train = [i for i, sid in enumerate(dataset.ids) if not is_heldout(sid, fraction)]
    if len(train) < MIN_TRAIN or len(test) < MIN_TEST:
        raise UserError(
            f"dataset {dataset.name!r} ({len(dataset)} samples) splits into {len(train)} train and {len(test)} "
            f"held-out samples at --heldout {fraction}; stitching needs at least {MIN_TRAIN} and {MIN_TEST}"
        )
    held = {normalised_text(c) for i in test for c in dataset.caption_views(i)}
    items = [(i, j) for i in train for j in range(views)]
    kept = [(i, j) for i, j in items if normalised_text(dataset.caption_views(i)[j]) not in held]
    return StitchSplit(dataset, fraction, train, test, views, kept, len(items) - len(kept))
