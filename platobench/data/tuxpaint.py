"""Paired and class datasets built offline from Debian's `tuxpaint-stamps-default` package (GPL-2).

A stamp is a PNG under `stamps/<category>/...` with a `.txt` beside it whose first line is an English
caption (the other lines are translations, `fr.utf8=...`). SVG-only stamps are skipped (no SVG renderer is
a dependency), so are the alternative `_mirror`/`_flip`/`_back` images of a stamp and PNGs whose picture
repeats an earlier one in path order (`platobench.data.quality.file_digest`). The paired set keeps one stamp per caption (`platobench.data.captions`); the
top-level folder is the sample's group and, in the class set, its label. Order: sorted by path, then
permuted with `random.Random(seed)`, as in `platobench/data/openclipart.py`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from platobench.data.base import (
    ClassDataset,
    FileImageLoader,
    PairedDataset,
    balanced_classes,
    first_n,
    seeded_order,
)
from platobench.data.captions import caption_key, clean_title, unique_by
from platobench.data.debian import package_version, require_dir
from platobench.data.quality import file_digest, require_unique_captions
from platobench.errors import UserError

DEFAULT_ROOT = Path("/usr/share/tuxpaint/stamps")
PACKAGES = ["tuxpaint-stamps-default"]
VARIANTS = ("_mirror", "_flip", "_back")  # alternative images of one stamp, not new stamps
MIN_PER_CLASS = 20
PER_CLASS = 100
RULES = "variants=skipped;images=unique-pixels"
CAPTIONS_RULE = "captions=clean-v1"
# Folder names that are not plain English words; the others are used as they are ("vehicles").
CLASS_NAMES = {"naturalforces": "natural forces"}


@dataclass(frozen=True)
class Stamp:
    """One stamp: `id` is its path under stamps/ without the extension, e.g. "animals/birds/blackbird";
    `caption` the English line of its .txt file, whitespace-collapsed."""

    id: str
    png: Path
    category: str
    caption: str


def english_caption(txt: Path) -> str:
    """The first non-empty line of a stamp's .txt file that is not a translation (`xx.utf8=...`)."""
    for line in txt.read_text("utf-8", errors="replace").splitlines():
        text = " ".join(line.split())
        head = text.split("=", 1)[0]
        if text and not ("=" in text and ".utf8" in head and " " not in head):
            return text
    return ""


def _scan(root: Path) -> tuple[Stamp, ...]:
    require_dir(root, PACKAGES, "Tux Paint stamps")
    stamps, digests = [], []
    for png in sorted(root.rglob("*.png")):
        if png.is_symlink() or not png.is_file() or png.stem.endswith(VARIANTS):
            continue
        txt = png.with_suffix(".txt")
        caption = english_caption(txt) if txt.is_file() else ""
        rel = png.relative_to(root).with_suffix("")
        if caption and len(rel.parts) > 1:
            stamps.append(Stamp(rel.as_posix(), png, rel.parts[0], caption))
            digests.append(file_digest(png))
    unique = unique_by(zip(stamps, digests), lambda pair: pair[1])
    return tuple(stamp for stamp, _ in unique)


@functools.lru_cache(maxsize=4)
def catalogue(root: Path = DEFAULT_ROOT) -> tuple[Stamp, ...]:
    """Every usable stamp under `root`, sorted by id (PNG with an English caption, no variant images,
    each picture once). Raises UserError naming the Debian package when it is missing."""
    stamps = _scan(root)
    if not stamps:
        raise UserError(f"no Tux Paint stamp with a caption found under {root} (package {PACKAGES[0]})")
    return stamps


def _revision(root: Path, seed: int) -> str:
    if root == DEFAULT_ROOT:
        source = "debian:" + ",".join(f"{p}={package_version(p) or 'unpackaged'}" for p in PACKAGES)
    else:
        source = f"local:{root}"
    return f"{source};seed={seed};{RULES}"


def paired(name: str, *, n: int | None = None, seed: int = 0, root: Path = DEFAULT_ROOT) -> PairedDataset:
    """Paired dataset: stamps in seeded order with cleaned captions, one stamp per caption key, the first
    `n` of them (all when None); groups are the top-level folders. Raises UserError when fewer than `n`
    qualify, DuplicateCaptionError if two samples would share a caption."""
    rows = [(s, clean_title(s.caption)) for s in seeded_order(catalogue(root), seed)]
    rows = unique_by([r for r in rows if r[1]], lambda row: caption_key(row[1]))
    rows = first_n(rows, n, name, root)
    pool = [s for s, _ in rows]
    return require_unique_captions(
        PairedDataset(
            name,
            f"{_revision(root, seed)};{CAPTIONS_RULE}",
            [s.id for s in pool],
            [[caption] for _, caption in rows],
            FileImageLoader([x.png for x in pool]),
            groups=[s.category for s in pool],
        )
    )


def class_name(folder: str) -> str:
    """Readable class name of a top-level folder: "naturalforces" -> "natural forces", "food" -> "food"."""
    return CLASS_NAMES.get(folder, folder.replace("_", " "))


def categories(
    name: str,
    templates: list[str],
    *,
    per_class: int = PER_CLASS,
    min_per_class: int = MIN_PER_CLASS,
    limit: int | None = None,
    seed: int = 0,
    root: Path = DEFAULT_ROOT,
) -> ClassDataset:
    """Class dataset over the top-level folders with at least `min_per_class` stamps; up to `per_class`
    stamps per folder from the seeded permutation, in permutation order; `limit` keeps the first ones."""
    pool = seeded_order(catalogue(root), seed)
    kept, chosen = balanced_classes(pool, lambda s: s.category, per_class=per_class, min_per_class=min_per_class)
    if len(kept) < 2:
        raise UserError(f"dataset {name!r}: fewer than 2 folders with >= {min_per_class} stamps under {root}")
    index = {k: i for i, k in enumerate(kept)}
    chosen = chosen[:limit]
    revision = _revision(root, seed) + f";per_class={per_class};min_per_class={min_per_class}"
    return ClassDataset(
        name,
        revision,
        [s.id for s in chosen],
        [index[s.category] for s in chosen],
        [class_name(k) for k in kept],
        templates,
        FileImageLoader([x.png for x in chosen]),
    )
