"""Emoji names and keywords as good views: OpenMoji's annotations (npm `openmoji`) and Unicode CLDR's
English annotations (Debian `unicode-cldr-core`).

OpenMoji (CC-BY-SA-4.0): `data/openmoji.csv` read straight from the npm tarball (`scripts/install_npm.sh`
fetches it); an item per `hexcode` with views `annotation`, `tags` and `openmoji_tags` (empty ones skipped).
CLDR (Unicode licence, LDML TR35 annotations): `annotations/en.xml` plus `annotationsDerived/en.xml`
(skin-tone and other sequences); an item per code-point sequence (id: hex code points joined by "-", like
OpenMoji's hexcode) with views the `type="tts"` name and the keywords ("|"-separated, joined with ", ").
"""

from __future__ import annotations

import csv
import io
import tarfile
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

from platobench import paths
from platobench.data.debian import require_dir
from platobench.errors import UserError

OPENMOJI_VERSION = "17.0.0"
OPENMOJI_CSV = "package/data/openmoji.csv"
CLDR_DIR = Path("/usr/share/unicode/cldr/common")
CLDR_PACKAGE = "unicode-cldr-core"
CLDR_FILES = ("annotations/en.xml", "annotationsDerived/en.xml")


def openmoji_tarball(version: str = OPENMOJI_VERSION, root: Path | None = None) -> Path:
    """Where `scripts/install_npm.sh` puts the npm tarball: `<PLATOBENCH_HOME>/npm/openmoji-<version>.tgz`."""
    return (root if root is not None else paths.home()) / "npm" / f"openmoji-{version}.tgz"


def openmoji_items(tarball: Path) -> Iterator[tuple[str, list[str]]]:
    """(hexcode, [annotation, tags, openmoji_tags]) of every CSV row, empty fields left out; UserError
    naming the install command when the tarball is absent."""
    if not tarball.is_file():
        raise UserError(
            f"OpenMoji data not found at {tarball}: run `bash scripts/install_npm.sh` (or `make install`), "
            f"which runs `npm pack openmoji@{OPENMOJI_VERSION}` into {tarball.parent}"
        )
    with tarfile.open(tarball, "r:gz") as tf:
        member = tf.extractfile(OPENMOJI_CSV)
        if member is None:
            raise UserError(f"{tarball} has no {OPENMOJI_CSV} (expected the openmoji npm package)")
        text = member.read().decode("utf-8")
    for row in csv.DictReader(io.StringIO(text)):
        views = [row.get(k) or "" for k in ("annotation", "tags", "openmoji_tags")]
        yield row["hexcode"], [v for v in views if v.strip()]


def cldr_items(folder: Path = CLDR_DIR) -> Iterator[tuple[str, list[str]]]:
    """(code points, [tts name, keywords]) of every annotated sequence in the English annotation files
    under `folder` (`annotationsDerived` is optional); a sequence in both files is taken from the first."""
    require_dir(folder / "annotations", [CLDR_PACKAGE], "Unicode CLDR annotations")
    names: dict[str, str] = {}
    keywords: dict[str, str] = {}
    for rel in CLDR_FILES:
        if not (folder / rel).is_file():
            continue
        file_names: dict[str, str] = {}
        file_keywords: dict[str, str] = {}
        for node in ET.parse(folder / rel).getroot().iter("annotation"):
            target = file_names if node.get("type") == "tts" else file_keywords
            target[node.get("cp", "")] = node.text or ""
        for cp in file_names.keys() | file_keywords.keys():
            if cp not in names and cp not in keywords:
                names[cp] = file_names.get(cp, "")
                keywords[cp] = file_keywords.get(cp, "")
    for cp in names:
        words = ", ".join(w.strip() for w in keywords[cp].split("|") if w.strip())
        yield "-".join(f"{ord(ch):X}" for ch in cp), [v for v in (names[cp], words) if v]
