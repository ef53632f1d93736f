"""Limited runs from cached supersets: the features of the first n samples cut out of a cached entry.

`extract --limit 128` after a full extraction need not run the model again: when a complete entry has
every field of the wanted key but the sample ids, and its first n stored ids are exactly the wanted ids
in the same order, its rows [:n] are copied (stored dtype, bit for bit) into an entry of their own under
the normal key of the n ids, whose manifest records `sliced_from: <digest of the superset>`. Cache keys
stay what a fresh extraction of those ids computes, so records and `check` find the slice like any other
entry. A fresh extraction of the n samples could differ in the last float bits (other batches, other
padding); the slice is what the superset's scores were computed on.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from platobench.features.store import CorruptEntryError, FeatureEntry, FeatureKey, FeatureStore


def cached_superset(store: FeatureStore, key: FeatureKey, ids: Sequence[str]) -> FeatureEntry | None:
    """The complete entry of `store` whose key equals `key` except for the sample ids and whose first
    len(ids) stored ids are `ids` (more rows than that), or None. Several: the largest, then the first
    digest. Reads every manifest of the store (no layer file)."""
    want = {k: v for k, v in key.as_dict().items() if k != "ids_hash"}
    n, wanted = len(ids), list(ids)

    def match(manifest: dict[str, Any]) -> bool:
        other = {k: v for k, v in manifest["key"].items() if k != "ids_hash"}
        return other == want and manifest["n"] > n and manifest["ids"][:n] == wanted

    found = store.find(match)
    return min(found, key=lambda e: (-len(e), e.digest)) if found else None


def write_slice(store: FeatureStore, key: FeatureKey, ids: Sequence[str], source: FeatureEntry) -> FeatureEntry:
    """The entry of `key` (its ids are `ids`, the first len(ids) of `source`) written from rows [:n] of
    every layer of `source` in the stored dtype, its manifest noting `sliced_from`. Returns the entry
    another process completed meanwhile as is. CorruptEntryError when a layer of `source` fails its
    checksum."""
    n = len(ids)
    with store.writer(key, ids, source.layer_ids, source.widths) as writer:
        pending = writer.pending(n)
        if pending:
            rows = [source.layer(i, upcast=False)[:n].clone() for i in range(len(source.layer_ids))]
            for start, stop in pending:
                writer.write_chunk(start, [r[start:stop] for r in rows])
        return writer.finalize(sliced_from=source.digest)


def reuse_superset(store: FeatureStore, key: FeatureKey, ids: Sequence[str], *, say: bool = True) -> FeatureEntry | None:
    """The entry of `key` sliced from a cached superset (`cached_superset`), with one line on stderr
    ("reusing the first n of N cached samples of <model> on <dataset>") when `say`; None when there is
    no superset or it is damaged (then one line says so and the caller extracts)."""
    source = cached_superset(store, key, ids)
    if source is None:
        return None
    if say:
        print(f"reusing the first {len(ids)} of {len(source)} cached samples of {key.model} on {key.dataset} "
              f"(entry {source.digest[:12]})", file=sys.stderr, flush=True)
    try:
        return write_slice(store, key, ids, source)
    except CorruptEntryError as exc:
        print(f"cannot slice cache entry {source.digest[:12]} ({exc}); extracting instead", file=sys.stderr, flush=True)
        return None
