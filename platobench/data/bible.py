"""Bible verses in two English translations as good views: the King James Version (Debian `sword-text-kjv`,
module engKJV2006eb) and the World English Bible (`sword-text-web`, engWEB2015eb), both public domain.

Read through pysword (SWORD zText modules under /usr/share/sword). An item is a verse present in both,
id "Book.chapter.verse" (OSIS book names, e.g. "Gen.1.1"); its views are the two texts with the OSIS markup
stripped (`osis_text`). pysword 0.2.8 decompresses a whole book block for every verse it reads; memoising
`_decompressed_text` on the module object makes reading both Bibles take well under a second, so nothing
is cached on disk.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from pathlib import Path

from platobench.data.debian import require_dir
from platobench.errors import UserError

SWORD_DIR = Path("/usr/share/sword")
MODULES = {"engKJV2006eb": "sword-text-kjv", "engWEB2015eb": "sword-text-web"}
_DROPPED = re.compile(  # elements whose content is not verse text: notes, editorial headings, speaker labels
    r"<note\b.*?</note>|<title\b(?![^>]*canonical=\"true\")[^>]*>.*?</title>|<speaker\b.*?</speaker>", re.S
)
_BLOCK_TAG = re.compile(r"<(?:l|lg|lb|div|chapter|milestone|p|item|list)\b[^>]*>|</(?:l|lg|div|p|item|list)>")
_TAG = re.compile(r"<[^>]*>")
_SPACE_BEFORE_PUNCT = re.compile(r"\s+([,.;:!?’”)])")
_GLOSSARY = re.compile(r"<div\b[^>]*type=\"glossary\".*", re.S)


def osis_text(raw: str) -> str:
    """Plain text of one OSIS verse: notes, non-canonical titles (section headings, acrostic letters),
    speaker labels, KJV paragraph signs (¶) and a trailing glossary dropped; block tags become a space, inline tags vanish; no
    space before closing punctuation; whitespace collapsed."""
    text = _DROPPED.sub(" ", _GLOSSARY.sub("", raw))
    text = _TAG.sub("", _BLOCK_TAG.sub(" ", text)).replace("¶", " ")
    text = text.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"').replace("&amp;", "&")
    return _SPACE_BEFORE_PUNCT.sub(r"\1", " ".join(text.split()))


def _verses(modules, module: str) -> dict[str, str]:
    """{"Book.chapter.verse": raw OSIS text} of every non-empty verse of `module`."""
    bible = modules.get_bible_from_module(module)
    bible._decompressed_text = functools.lru_cache(maxsize=2)(bible._decompressed_text)  # one block per book
    out: dict[str, str] = {}
    for books in bible.get_structure().get_books().values():
        for book in books:
            refs = [(c + 1, v + 1) for c, n in enumerate(book.chapter_lengths) for v in range(n)]
            texts = list(bible.get_iter(books=[book.name], clean=False))
            if len(texts) != len(refs):
                raise ValueError(f"{module} {book.osis_name}: {len(texts)} texts for {len(refs)} verses")
            out.update((f"{book.osis_name}.{c}.{v}", t) for (c, v), t in zip(refs, texts) if t.strip())
    return out


def kjv_web_items(folder: Path = SWORD_DIR) -> Iterator[tuple[str, list[str]]]:
    """(verse id, [KJV text, WEB text]) of every verse both modules under `folder` hold."""
    try:
        from pysword.modules import SwordModules
    except ImportError:
        raise UserError("the kjv-web corpus reads SWORD modules with pysword: pip install pysword==0.2.8 "
                        "(requirements-demo.txt)") from None
    require_dir(folder / "mods.d", list(MODULES.values()), "SWORD Bible modules")
    modules = SwordModules(str(folder))
    found = modules.parse_modules()
    missing = [m for m in MODULES if m not in found]
    if missing:
        packages = " ".join(MODULES[m] for m in missing)
        raise UserError(f"SWORD module(s) {', '.join(missing)} not found under {folder}: install {packages}")
    kjv, web = (_verses(modules, m) for m in MODULES)
    for verse in kjv.keys() & web.keys():
        yield verse, [osis_text(kjv[verse]), osis_text(web[verse])]
