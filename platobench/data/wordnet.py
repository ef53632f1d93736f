"""WordNet 3.0 noun glosses (Miller 1995) from Debian's `wordnet-base` package, by ImageNet WordNet id.

An ImageNet class id "n02869837" is the part of speech plus the synset's byte offset in `data.noun`
(Deng et al. 2009), so a gloss is one seek: the line at that offset reads
"02869837 06 n 02 bonnet 0 poke_bonnet 0 ... | a hat tied under the chin".
"""

from __future__ import annotations

from pathlib import Path

from platobench.data.debian import require_dir
from platobench.errors import UserError

DEFAULT_DIR = Path("/usr/share/wordnet")
PACKAGE = "wordnet-base"


def noun_glosses(wnids: list[str], *, folder: Path = DEFAULT_DIR) -> list[str]:
    """The gloss of each noun synset id ("n" + 8-digit offset), in order."""
    data = require_dir(folder, [PACKAGE], "WordNet 3.0 data") / "data.noun"
    glosses = []
    with open(data, "rb") as fh:
        for wnid in wnids:
            if len(wnid) != 9 or wnid[0] != "n" or not wnid[1:].isdigit():
                raise UserError(f"WordNet id {wnid!r}: expected 'n' followed by 8 digits")
            fh.seek(int(wnid[1:]))
            line = fh.readline().decode("utf-8")
            if not line.startswith(wnid[1:] + " ") or "|" not in line:
                raise UserError(f"WordNet id {wnid!r} is not a noun synset of {data} (WordNet 3.0 expected)")
            glosses.append(line.split("|", 1)[1].strip())
    return glosses
