"""The two dataset shapes every stage consumes: paired image–caption sets and class-labelled sets.

Both are ordered lists of sample ids with lazily loaded images; the `fingerprint` identifies exactly which
samples, in which order, a features entry or a result was computed on (the result record's `dataset.fingerprint`).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from PIL import Image

from platobench.errors import UserError

ImageLoader = Callable[[int], Image.Image]
T = TypeVar("T")


def seeded_order(items: Sequence[T], seed: int) -> list[T]:
    """`items` (already in a canonical order, e.g. sorted by path) permuted by `random.Random(seed)`: the
    order the offline sets take their first n samples from, so a limit is a random subset."""
    order = list(items)
    random.Random(seed).shuffle(order)
    return order


def first_n(rows: list[T], n: int | None, name: str, where: object) -> list[T]:
    """The first `n` rows (all when None); UserError naming the dataset when fewer than `n` qualify."""
    if n is None:
        return rows
    if n > len(rows):
        raise UserError(f"dataset {name!r} asks for {n} images but only {len(rows)} qualify under {where}")
    return rows[:n]


def balanced_classes(
    pool: Sequence[T], category_of: Callable[[T], str], *, per_class: int, min_per_class: int,
    exclude: frozenset[str] = frozenset(),
) -> tuple[list[str], list[T]]:
    """Class selection of the offline class sets: the categories (sorted) with at least `min_per_class`
    items of `pool` and not in `exclude`, and up to `per_class` items of each, in `pool` order."""
    counts: dict[str, int] = {}
    for item in pool:
        counts[category_of(item)] = counts.get(category_of(item), 0) + 1
    kept = sorted(k for k, v in counts.items() if v >= min_per_class and k not in exclude)
    taken: dict[str, int] = {}
    chosen = []
    for item in pool:
        c = category_of(item)
        if c in kept and taken.get(c, 0) < per_class:
            taken[c] = taken.get(c, 0) + 1
            chosen.append(item)
    return kept, chosen


class FileImageLoader:
    """Opens image i from a list of files (a class, not a closure, so DataLoader workers can pickle it)."""

    def __init__(self, paths: Sequence[Path]) -> None:
        self.paths = list(paths)

    def __call__(self, i: int) -> Image.Image:
        with Image.open(self.paths[i]) as im:
            im.load()
            return im


def ids_hash(ids: Sequence[str]) -> str:
    """sha256 (hex) of the ordered sample ids (JSON-encoded, so no separator can collide)."""
    return hashlib.sha256(json.dumps(list(ids), ensure_ascii=False).encode("utf-8")).hexdigest()


def fingerprint(name: str, revision: str, ids: Sequence[str]) -> str:
    """sha256 (hex) of the dataset name, its revision and the ordered sample ids."""
    payload = json.dumps([name, revision, list(ids)], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _rgb(image: Image.Image) -> Image.Image:
    """RGB copy of `image`; transparent pixels are composited on white (clip art is drawn on alpha)."""
    if image.mode in ("RGBA", "LA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        canvas = Image.new("RGB", rgba.size, (255, 255, 255))
        canvas.paste(rgba, mask=rgba.getchannel("A"))
        return canvas
    return image.convert("RGB")


@dataclass(frozen=True)
class DatasetInfo:
    """One catalogue line: `kind` is "paired", "class", "corpus" (text only: `text_corpus.TextCorpus`) or
    "ids" (sample ids only, for precomputed embeddings: `IdsDataset`); `source` says where the data comes from
    (a Debian package or a hub dataset id); `offline` is True when no network is ever needed."""

    name: str
    kind: str
    source: str
    revision: str
    offline: bool
    description: str

    def as_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


class _Samples:
    """Shared part: name, revision, ordered ids, lazy images, fingerprint."""

    def __init__(self, name: str, revision: str, ids: Sequence[str], load_image: ImageLoader) -> None:
        if not ids:
            raise UserError(f"dataset {name!r} has no samples (revision {revision})")
        if len(set(ids)) != len(ids):
            raise ValueError(f"dataset {name!r}: sample ids are not unique")
        self.name = name
        self.revision = revision
        self.ids = list(ids)
        self._load_image = load_image
        self.fingerprint = fingerprint(name, revision, self.ids)

    def __len__(self) -> int:
        return len(self.ids)

    def image(self, i: int) -> Image.Image:
        """Sample i's image as RGB (read on each call; nothing is kept in memory)."""
        if not 0 <= i < len(self.ids):
            raise IndexError(f"sample index {i} out of range for {self.name!r} (n={len(self.ids)})")
        return _rgb(self._load_image(i))


class PairedDataset(_Samples):
    """Images paired with captions; `views[i]` lists every caption of sample i (at least one).

    `captions(index)` gives one caption per sample, e.g. index 0 = the PRH protocol's caption for WIT-1024,
    the title for openclipart; `caption_views(i)` gives a sample's captions as good views (JEPA pairs)."""

    def __init__(
        self,
        name: str,
        revision: str,
        ids: Sequence[str],
        views: Sequence[Sequence[str]],
        load_image: ImageLoader,
        *,
        groups: Sequence[str] | None = None,
    ) -> None:
        super().__init__(name, revision, ids, load_image)
        if len(views) != len(self.ids):
            raise ValueError(f"dataset {name!r}: {len(views)} caption lists for {len(self.ids)} samples")
        for sample_id, captions in zip(self.ids, views):
            if not captions or not all(isinstance(c, str) and c.strip() for c in captions):
                raise ValueError(f"dataset {name!r}: sample {sample_id!r} has an empty caption")
        self._views = [list(v) for v in views]
        self.groups = list(groups) if groups is not None else None

    def captions(self, index: int = 0) -> list[str]:
        """Caption number `index` of every sample, in sample order (one string per sample)."""
        missing = [sid for sid, v in zip(self.ids, self._views) if not -len(v) <= index < len(v)]
        if missing:
            raise UserError(
                f"caption index {index} does not exist for {len(missing)} of {len(self.ids)} samples of "
                f"{self.name!r} (first: {missing[0]!r}); use an index below "
                f"{min(len(v) for v in self._views)}"
            )
        return [v[index] for v in self._views]

    def caption_views(self, i: int) -> list[str]:
        """All captions of sample i (>= 1), e.g. openclipart: [title] or [title, description]."""
        return list(self._views[i])


class ClassDataset(_Samples):
    """Images with integer labels into `class_names`, and prompt `templates` with one "{}" slot
    (zero-shot classification, CLIP protocol: Radford et al. 2021). `class_descriptions`, when present,
    holds one longer text per class (e.g. WordNet glosses for ImageNet classes)."""

    def __init__(
        self,
        name: str,
        revision: str,
        ids: Sequence[str],
        labels: Sequence[int],
        class_names: Sequence[str],
        templates: Sequence[str],
        load_image: ImageLoader,
        *,
        class_descriptions: Sequence[str] | None = None,
    ) -> None:
        super().__init__(name, revision, ids, load_image)
        if len(labels) != len(self.ids):
            raise ValueError(f"dataset {name!r}: {len(labels)} labels for {len(self.ids)} samples")
        if any(not 0 <= int(y) < len(class_names) for y in labels):
            raise ValueError(f"dataset {name!r}: a label is outside 0..{len(class_names) - 1}")
        if not templates or any(t.count("{}") != 1 for t in templates):
            raise ValueError(f"dataset {name!r}: every template needs exactly one '{{}}' slot")
        if class_descriptions is not None and len(class_descriptions) != len(class_names):
            raise ValueError(f"dataset {name!r}: one description per class expected")
        self.labels = [int(y) for y in labels]
        self.class_names = list(class_names)
        self.templates = list(templates)
        self.class_descriptions = list(class_descriptions) if class_descriptions is not None else None

    def prompts(self, class_index: int) -> list[str]:
        """Every template filled with class `class_index`'s name."""
        return [t.replace("{}", self.class_names[class_index]) for t in self.templates]


class IdsDataset(_Samples):
    """Sample ids and nothing else: the samples of precomputed embeddings (`loader: features` entries), whose
    images and texts are not here (galaxy images against their spectra, embedded elsewhere). Only a
    features entry can read it; asking for an image or a caption is a UserError naming the dataset."""

    def __init__(self, name: str, revision: str, ids: Sequence[str]) -> None:
        super().__init__(name, revision, ids, self._no_image)

    def _no_image(self, i: int) -> Image.Image:
        raise UserError(f"dataset {self.name!r} holds sample ids only: it has no images (only `loader: features` "
                        "zoo entries, which read their embeddings by id, can be measured on it)")

    def captions(self, index: int = 0) -> list[str]:
        raise UserError(f"dataset {self.name!r} holds sample ids only: it has no captions (only `loader: "
                        "features` zoo entries, which read their embeddings by id, can be measured on it)")
