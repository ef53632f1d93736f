"""Caption cleaning for paired sets built from human-written titles (openclipart, tuxpaint).

A caption is kept only when it can describe its own image. Dropped: titles that are only a person's name
(equal to the creator, or one word shared by many images), collection/theme boilerplate, file-like names
("image_001.png", "DSC1234", "Tigre01", hex or number ids) and set labels (one title stamped on a whole
upload batch). "Clipart by NAME - rest" keeps `rest` when `rest` passes the same rules. `caption_key` is the
comparison form: two captions with one key give (nearly) identical text features, so a paired set keeps one
image per key (`unique_by`, first in the dataset's seeded order wins).
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import TypeVar

T = TypeVar("T")

# How many images must share a title before it counts as a set label (one word, or over >= 2 groups).
SET_LABEL_MIN_IMAGES = 20
# A description shared by this many images is a collection note, not a description of one image.
SHARED_DESCRIPTION_MIN_IMAGES = 3

_EXTENSION = re.compile(r"\.(png|jpe?g|gif|svgz?|bmp|tiff?|eps|ai|pdf|xcf|webp|ico|wmf)$", re.IGNORECASE)
_CAMERA = re.compile(
    r"^(dsc[nf]?|img|pict?|p|scan|photo|image|picture|clipart|untitled|file|cimg)[ _-]*\d+$", re.IGNORECASE
)
_HEX_ID = re.compile(r"^(0x)?[0-9a-f]{6,}$|^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-", re.IGNORECASE)
_PERL_REF = re.compile(r"\b(hash|array|scalar|code)\(0x[0-9a-f]+\)", re.IGNORECASE)
_LETTER = re.compile(r"[^\W\d_]")
_BOILERPLATE = re.compile(
    r"""\bcollection\b | \btheme\b | \bicon\ ?set\b | \bicons\b | ^various\b | \bsymbol\ signs\b
    | \bs[iu]bmission\b | ^r\d+\b | \bopenclipart\b | \bclip\ ?arts\b
    | https?:// | \bwww\. | \S@\S+\.[a-z]{2,} | \bconverted\ from\b | \bpublic\ domain\b
    | \breleased\ into\b""",
    re.VERBOSE,
)
_CREDIT = re.compile(
    r"^(?:clip\s?art|drawing|image|picture|icon|artwork)s?\s+by\s+[^-\u2013\u2014:]+?\s*[-\u2013\u2014:]\s+(?P<rest>.+)$",
    re.IGNORECASE,
)
_CREDIT_ONLY = re.compile(r"^(?:clip\s?art|drawing|image|picture|icon|artwork)s?\s+by\s+\S", re.IGNORECASE)


def _raw(text: str) -> str:
    """HTML entities decoded, NFKC, whitespace collapsed (underscores kept: they mark file names)."""
    return " ".join(unicodedata.normalize("NFKC", html.unescape(text)).split())


def normalise(text: str) -> str:
    """Display form of a caption: HTML entities decoded, NFKC, underscores as spaces, whitespace collapsed."""
    return " ".join(_raw(text).replace("_", " ").split())


def caption_key(text: str) -> str:
    """Comparison form: the case-folded words of `normalise(text)` joined by single spaces, so
    "Old  Hanging Sign." and "old hanging sign" share the key "old hanging sign"."""
    return " ".join(re.findall(r"\w+", normalise(text).casefold()))


def is_file_like(text: str) -> bool:
    """True for file names and ids rather than words: a file extension, a camera/scan name ("DSC1234"),
    a hex id, a stringified reference ("HASH(0x8a40c04)"), no letter at all, or one token that carries a
    number ("jigsaw_red_10", "Tigre01", "fc23")."""
    raw = _raw(text)
    if not raw or not _LETTER.search(raw):
        return True
    if _EXTENSION.search(raw) or _CAMERA.match(raw) or _PERL_REF.search(raw):
        return True
    if _HEX_ID.match(raw) and any(ch.isdigit() for ch in raw):
        return True
    return " " not in raw and any(ch.isdigit() for ch in raw)


def is_boilerplate(text: str) -> bool:
    """True for collection/theme/upload notes ("Part of the Flat Icon Collection (...)", "Lemon SVG theme",
    "Etiquette Icons", "R16 sibmission"), web/e-mail addresses and licence or conversion notes."""
    return bool(_BOILERPLATE.search(normalise(text).casefold()))


def strip_credit(title: str) -> str | None:
    """`rest` of a "Clipart by NAME - rest" title; "" for a credit with no rest ("Drawing by NAME");
    None when `title` carries no credit."""
    raw = _raw(title)
    match = _CREDIT.match(raw)
    if match:
        return match["rest"]
    return "" if _CREDIT_ONLY.match(raw) else None


def set_labels(
    titles: Sequence[str],
    groups: Sequence[str],
    *,
    min_images: int = SET_LABEL_MIN_IMAGES,
) -> frozenset[str]:
    """Keys of titles that label a batch of images rather than one image: shared by >= `min_images`
    images and either one word ("gramastar": an uploader's name) or spread over >= 2 `groups` (top-level
    categories); or a credit-prefixed title shared by >= 2 images (an upload batch named after one file).
    `titles[i]` and `groups[i]` belong to image i."""
    where: dict[str, list[str]] = defaultdict(list)
    credited: set[str] = set()
    for title, group in zip(titles, groups, strict=True):
        key = caption_key(title)
        where[key].append(group)
        if strip_credit(title) is not None:
            credited.add(key)
    labels = set()
    for key, seen in where.items():
        many = len(seen) >= min_images and (" " not in key or len(set(seen)) >= 2)
        if many or (key in credited and len(seen) >= 2):
            labels.add(key)
    return frozenset(labels)


def clean_title(title: str, *, creator: str = "", labels: frozenset[str] = frozenset()) -> str:
    """The title in display form, or "" when it is not a description: file-like, boilerplate, a set label
    (see `set_labels`), the creator's name, or a credit whose rest fails these same rules."""
    if caption_key(title) in labels:
        return ""
    rest = strip_credit(title)
    if rest is not None:
        return clean_title(rest, creator=creator, labels=labels) if rest else ""
    if is_file_like(title) or is_boilerplate(title):
        return ""
    key = caption_key(title)
    if not key or key in labels or (creator and key == caption_key(creator)):
        return ""
    return normalise(title)


def shared_descriptions(
    descriptions: Iterable[str], *, min_images: int = SHARED_DESCRIPTION_MIN_IMAGES
) -> frozenset[str]:
    """Keys of descriptions given to >= `min_images` images (collection notes such as "UK roadsigns")."""
    counts: dict[str, int] = defaultdict(int)
    for text in descriptions:
        key = caption_key(text)
        if key:
            counts[key] += 1
    return frozenset(k for k, n in counts.items() if n >= min_images)


def clean_description(description: str, title: str, *, shared: frozenset[str] = frozenset()) -> str:
    """The description in display form, or "" when it is empty, file-like, boilerplate, shared by many
    images (`shared`, from `shared_descriptions`) or the same text as `title` (it must be a second view)."""
    key = caption_key(description)
    if not key or key in shared or key == caption_key(title):
        return ""
    if is_boilerplate(description) or is_file_like(description):
        return ""
    return normalise(description)


def unique_by(items: Iterable[T], key: Callable[[T], Hashable]) -> list[T]:
    """`items` in order, keeping only the first item of each `key` value."""
    seen: set[Hashable] = set()
    kept = []
    for item in items:
        k = key(item)
        if k not in seen:
            seen.add(k)
            kept.append(item)
    return kept
