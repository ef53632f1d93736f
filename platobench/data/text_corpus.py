"""Text corpora of good views: items (one concept or content each) with >= 2 texts that describe it.

A `TextCorpus` feeds the text JEPA like a paired dataset's captions (`caption_views(i)`), without images.
`TextCorpus.build` applies the one dedup rule every corpus shares:

1. a view is normalised by collapsing whitespace (stored so) and compared case-insensitively;
2. a view repeated inside an item is dropped (first occurrence kept);
3. items are taken in order of their id; a view equal to a view of an earlier kept item is removed from
   the later item (WordNet's senses of one word share their lemma list: "bank" keeps its first sense's
   lemma view, the later senses keep their definitions and examples), so no exact-duplicate text lies on
   both sides of the held-out split and no kNN tie comes from a duplicated text;
4. an item is kept only with >= 2 distinct views left; `limit` then keeps the first n kept items.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from platobench.errors import UserError


def normalise(text: str) -> str:
    """`text` with runs of whitespace collapsed to one space and the ends stripped."""
    return " ".join(text.split())


@dataclass(frozen=True)
class CorpusStats:
    """Counts of `TextCorpus.build`: items read from the source, dropped for fewer than 2 distinct views,
    dropped for having fewer than 2 views left once views of earlier kept items are removed (duplicates),
    kept (before `limit`), and views removed from kept items for repeating an earlier item's view."""

    read: int
    too_few_views: int
    duplicates: int
    kept: int
    shared_views_removed: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


def corpus_fingerprint(name: str, revision: str, ids: Sequence[str], views: Sequence[Sequence[str]]) -> str:
    """sha256 (hex) of the name, revision, ordered ids and every view text (JSON-encoded): an edited text
    changes it, unlike `base.fingerprint`, which hashes the ids alone."""
    payload = json.dumps([name, revision, list(ids), [list(v) for v in views]], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class TextCorpus:
    """Items `ids[i]` (unique, sorted) with views `views[i]` (>= 2 distinct texts each); `fingerprint`
    is `corpus_fingerprint` (it hashes the texts); `stats` the counts of the dedup rule (module doc)."""

    def __init__(
        self, name: str, revision: str, ids: Sequence[str], views: Sequence[Sequence[str]], stats: CorpusStats
    ) -> None:
        if not ids:
            raise UserError(f"corpus {name!r} has no items (revision {revision})")
        if len(set(ids)) != len(ids) or len(views) != len(ids):
            raise ValueError(f"corpus {name!r}: ids must be unique, one view list per id")
        self.name = name
        self.revision = revision
        self.ids = list(ids)
        self.views = [list(v) for v in views]
        self.stats = stats
        self.fingerprint = corpus_fingerprint(name, revision, self.ids, self.views)

    def __len__(self) -> int:
        return len(self.ids)

    def caption_views(self, i: int) -> list[str]:
        """The views of item i (>= 2 distinct texts), as `PairedDataset.caption_views`."""
        return list(self.views[i])

    @classmethod
    def build(
        cls, name: str, revision: str, items: Iterable[tuple[str, Sequence[str]]], limit: int | None = None
    ) -> TextCorpus:
        """The corpus of raw `(id, views)` items under the dedup rule (module doc), first `limit` kept
        items (all when None). Repeated ids are a ValueError (a parser bug, not user input)."""
        raw = sorted(items, key=lambda item: item[0])
        if len({item_id for item_id, _ in raw}) != len(raw):
            raise ValueError(f"corpus {name!r}: an item id occurs twice in the source")
        seen: set[str] = set()
        ids: list[str] = []
        views: list[list[str]] = []
        too_few = duplicates = removed = 0
        for item_id, texts in raw:
            distinct: dict[str, str] = {}
            for text in texts:
                view = normalise(text)
                if view:
                    distinct.setdefault(view.casefold(), view)
            if len(distinct) < 2:
                too_few += 1
                continue
            fresh = {k: v for k, v in distinct.items() if k not in seen}
            if len(fresh) < 2:
                duplicates += 1
                continue
            removed += len(distinct) - len(fresh)
            seen.update(fresh)
            ids.append(item_id)
            views.append(list(fresh.values()))
        stats = CorpusStats(len(raw), too_few, duplicates, len(ids), removed)
        if limit is not None:
            if limit > len(ids):
                raise UserError(f"corpus {name!r} asks for {limit} items but only {len(ids)} are kept")
            ids, views = ids[:limit], views[:limit]
        return cls(name, revision, ids, views, stats)
