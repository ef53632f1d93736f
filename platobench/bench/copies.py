"""Is a submitted model's output another model's? Its cached features against every cached reference.

A record states how alike its two sides are at most (`details.copy_cka`, the largest linear CKA between a
layer of each: platobench/bench/scoring.py), which flags a side that copies the other. A submission can
also copy a model that is not on the other side of any of its records (a "text encoder" returning one
vision model's features, scored against another): `cached_copies` compares the submission's entry with
every complete cache entry of another model on the same samples (same dataset, revision and ordered ids),
by the same statistic and threshold (`flags.COPY_CKA`), so `submit` can name the model it copies.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from platobench.leaderboard.flags import COPY_CKA

if TYPE_CHECKING:
    from platobench.features.store import FeatureEntry, FeatureStore


def cached_copies(entry: FeatureEntry, store: FeatureStore, threshold: float = COPY_CKA) -> list[tuple[str, float]]:
    """(model, largest linear CKA) for every cached entry of another model on the same samples whose
    largest linear CKA with `entry` (any layer of each) is at least `threshold`, largest first."""
    from platobench.bench.scoring import copy_cka
    from platobench.metrics.cached_layers import take_layers
    from platobench.metrics.validation import varying_layers

    def layers(e: FeatureEntry) -> list:
        stack = e.cached_layers()
        return list(take_layers(stack, varying_layers(stack)))

    key = entry.key
    same = ("dataset", "dataset_revision", "ids_hash")

    def match(manifest: dict) -> bool:
        other = manifest.get("key", {})
        return other.get("model") != key["model"] and all(other.get(f) == key[f] for f in same)

    mine = layers(entry)
    found = []
    for other in store.find(match):
        theirs = layers(other)
        if not mine or not theirs:
            continue
        value = copy_cka(mine, theirs)
        if value >= threshold:
            found.append((other.key["model"], value))
    return sorted(found, key=lambda t: -t[1])


__all__ = ["cached_copies"]
