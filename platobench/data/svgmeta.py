"""Title and description of an SVG file from its RDF metadata (Dublin Core, as Inkscape writes it).

Parsed with the standard library's expat-based `xml.etree.ElementTree.XMLParser` driving a small target
(no tree is built, parsing stops after `</metadata>`), with defusedxml's rule applied before parsing:
a document whose DOCTYPE declares anything but plain literal entities (external `SYSTEM`/`PUBLIC`
entities, parameter entities, or entities that reference other entities: the "billion laughs" shape)
is refused and yields no metadata. Only `dc:title`/`dc:description` that are direct children of the
`cc:Work` element count as the work's text; the title inside `dc:creator/cc:Agent` is kept apart as the
creator's name (caption cleaning uses it to recognise titles that are only a name).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from xml.etree.ElementTree import ParseError, XMLParser

DC = "{http://purl.org/dc/elements/1.1/}"
CC = "{http://web.resource.org/cc/}"
CC_NEW = "{http://creativecommons.org/ns#}"
SVG = "{http://www.w3.org/2000/svg}"

_ENTITY = re.compile(
    rb"<!ENTITY\s+(%?)\s*[\w.:-]+\s+(SYSTEM|PUBLIC)?\s*(?:\"([^\"]*)\"|'([^']*)')", re.DOTALL
)
_ENTITY_DECL = re.compile(rb"<!ENTITY", re.DOTALL)


@dataclass(frozen=True)
class SvgMeta:
    """Whitespace-normalised `dc:title`, `dc:description` and creator name of the work ("" when absent)."""

    title: str
    description: str
    creator: str = ""


class _Done(Exception):
    """Raised by the target at `</metadata>` to stop parsing early."""


class _MetaTarget:
    """XMLParser target collecting the text of cc:Work/dc:title, cc:Work/dc:description and
    cc:Work/dc:creator/cc:Agent/dc:title."""

    def __init__(self) -> None:
        self.stack: list[str] = []
        self.fields: dict[str, list[str]] = {"title": [], "description": [], "creator": []}
        self._field: str | None = None

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        parent = self.stack[-1] if self.stack else ""
        self.stack.append(tag)
        if parent in (CC + "Work", CC_NEW + "Work") and tag in (DC + "title", DC + "description"):
            self._field = tag[len(DC) :]
        elif (
            tag == DC + "title"
            and len(self.stack) >= 4
            and self.stack[-4] in (CC + "Work", CC_NEW + "Work")
            and self.stack[-3] == DC + "creator"
            and self.stack[-2] in (CC + "Agent", CC_NEW + "Agent")
        ):
            self._field = "creator"

    def end(self, tag: str) -> None:
        self.stack.pop()
        if tag in (DC + "title", DC + "description"):
            self._field = None
        if tag == SVG + "metadata" or tag == "metadata":
            raise _Done

    def data(self, text: str) -> None:
        if self._field is not None:
            self.fields[self._field].append(text)

    def close(self) -> None:
        return None


def entities_are_safe(prologue: bytes) -> bool:
    """True when every `<!ENTITY` in `prologue` is a general entity with a literal value that references
    no other entity (no external, parameter or nested entities)."""
    declared = len(_ENTITY_DECL.findall(prologue))
    literal = 0
    for match in _ENTITY.finditer(prologue):
        percent, external, v1, v2 = match.groups()
        value = v1 if v1 is not None else v2
        if percent or external or b"&" in value or b"%" in value:
            return False
        literal += 1
    return literal == declared


def _clean(parts: list[str]) -> str:
    return " ".join("".join(parts).split())


def read_svg_meta(path: Path, *, chunk_bytes: int = 1 << 16) -> SvgMeta:
    """Title, description and creator of the SVG at `path`; empty strings when the file has no (safe,
    well-formed) metadata. Reads only up to the end of the `<metadata>` element."""
    target = _MetaTarget()
    parser = XMLParser(target=target)
    with open(path, "rb") as fh:
        head = fh.read(chunk_bytes)
        root_start = head.find(b"<svg")
        prologue = head if root_start < 0 else head[:root_start]
        if b"<!ENTITY" in prologue and not entities_are_safe(prologue):
            return SvgMeta("", "")
        chunk = head
        try:
            while chunk:
                parser.feed(chunk)
                chunk = fh.read(chunk_bytes)
            parser.close()
        except _Done:
            pass
        except ParseError:
            return SvgMeta("", "")
    fields = target.fields
    return SvgMeta(_clean(fields["title"]), _clean(fields["description"]), _clean(fields["creator"]))
