"""Build-time quality checks of paired datasets: duplicate captions and duplicate images.

Two samples with the same caption get bit-identical text features, so which of them is a kNN neighbour is
decided by rounding noise and results stop reproducing across machines; `require_unique_captions` refuses
such a set. Captions are compared by `platobench.data.captions.caption_key` (case and spacing ignored);
images by the sha256 of their pixels as the models see them (RGB, transparency composited on white) and
size: two PNG files with different bytes can hold the same picture.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from platobench.data.base import PairedDataset, _rgb
from platobench.data.captions import caption_key


class DuplicateCaptionError(ValueError):
    """A paired dataset meant for kNN metrics holds two samples with the same caption."""


@dataclass(frozen=True)
class QualityReport:
    """Counts over caption `index` of a paired set: `n` samples, `distinct_captions` caption keys;
    `duplicate_captions` / `duplicate_images` list the groups of sample ids (>= 2 each) that share a caption
    key / an image digest (`duplicate_images` is None when images were not checked)."""

    n: int
    distinct_captions: int
    duplicate_captions: list[list[str]]
    duplicate_images: list[list[str]] | None

    def extra_images(self) -> int | None:
        """How many samples repeat an earlier sample's image (0 when all are distinct; None: unchecked)."""
        if self.duplicate_images is None:
            return None
        return sum(len(g) - 1 for g in self.duplicate_images)


def duplicate_groups(ids: Sequence[str], keys: Sequence[Hashable]) -> list[list[str]]:
    """Groups of `ids` (in order, first-seen group first) whose `keys` coincide; singletons left out."""
    groups: dict[Hashable, list[str]] = defaultdict(list)
    for sample_id, key in zip(ids, keys, strict=True):
        groups[key].append(sample_id)
    return [g for g in groups.values() if len(g) > 1]


def image_digest(image: Image.Image) -> str:
    """sha256 (hex) of an image's pixels as a model sees them (RGB, transparency on white) and its size:
    equal for the same picture stored twice, whatever the file's encoding."""
    rgb = _rgb(image)
    digest = hashlib.sha256(f"{rgb.size[0]}x{rgb.size[1]}:".encode())
    digest.update(rgb.tobytes())
    return digest.hexdigest()


def file_digest(path: Path) -> str:
    """`image_digest` of the image file at `path` (decodes it)."""
    with Image.open(path) as im:
        im.load()
        return image_digest(im)


def check(ds: PairedDataset, *, index: int = 0, images: bool = True) -> QualityReport:
    """Quality report of caption `index` of `ds`; `images=False` skips decoding every image."""
    keys = [caption_key(c) for c in ds.captions(index)]
    dup_images = None
    if images:
        dup_images = duplicate_groups(ds.ids, [image_digest(ds.image(i)) for i in range(len(ds))])
    return QualityReport(len(ds), len(set(keys)), duplicate_groups(ds.ids, keys), dup_images)


def require_unique_captions(ds: PairedDataset, *, index: int = 0) -> PairedDataset:
    """`ds` itself when no two samples share caption `index` (by `caption_key`); else a
    DuplicateCaptionError naming how many groups collide and the first few."""
    groups = duplicate_groups(ds.ids, [caption_key(c) for c in ds.captions(index)])
    if groups:
        shown = "; ".join(
            f"{ds.captions(index)[ds.ids.index(g[0])]!r}: {', '.join(g[:4])}" for g in groups[:3]
        )
        raise DuplicateCaptionError(
            f"dataset {ds.name!r}: {len(groups)} caption(s) shared by several samples, which makes kNN "
            f"neighbours depend on rounding noise (first: {shown})"
        )
    return ds
