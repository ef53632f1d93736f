"""WordNet 3.0 synsets (Miller 1995) as good views, parsed from Debian `wordnet-base`'s data files.

A line of `data.{noun,verb,adj,adv}` (wndb(5WN)) reads
"02084071 05 n 07 dog 0 domestic_dog 0 Canis_familiaris 0 ... | a member of the genus Canis ...; "the dog
barked all night"": offset, lexicographer file, synset type, word count (2 hex digits), word/lex-id pairs,
pointers, and after "|" the gloss. An item's id is the file's part-of-speech letter (n, v, a, r) and the
8-digit offset; its views are the lemma list ("dog, domestic dog, Canis familiaris"), the definition (the
gloss before its first quoted example) and each quoted example sentence as its own view.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from platobench.data.debian import require_dir
from platobench.data.wordnet import DEFAULT_DIR, PACKAGE

FILES = {"n": "data.noun", "v": "data.verb", "a": "data.adj", "r": "data.adv"}
_ADJ_MARKER = re.compile(r"\((?:a|p|ip)\)$")  # syntactic marker of an adjective lemma, e.g. "galore(ip)"
_QUOTED = re.compile(r'"([^"]*)"')


def synset_views(line: str) -> tuple[str, list[str]]:
    """(offset, views) of one data-file synset line: [lemma list, definition, example, ...]."""
    head, _, gloss = line.partition(" | ")
    fields = head.split()
    count = int(fields[3], 16)
    lemmas = [_ADJ_MARKER.sub("", w).replace("_", " ") for w in fields[4 : 4 + 2 * count : 2]]
    definition = gloss.split('"', 1)[0].strip().rstrip(";").strip()
    examples = [e.strip() for e in _QUOTED.findall(gloss)]
    return fields[0], [", ".join(lemmas), definition, *examples]


def synsets(folder: Path = DEFAULT_DIR) -> Iterator[tuple[str, list[str]]]:
    """(id, views) of every synset of the four data files under `folder` (license header lines skipped)."""
    require_dir(folder, [PACKAGE], "WordNet 3.0 data")
    for pos, filename in FILES.items():
        with open(folder / filename, encoding="utf-8") as fh:
            for line in fh:
                if not line.startswith("  "):
                    offset, views = synset_views(line.rstrip("\n"))
                    yield pos + offset, views
