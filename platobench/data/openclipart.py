"""Paired and class datasets built offline from Debian's `openclipart-png` + `openclipart-svg` packages.

A sample is one real PNG file (symlinks that file the same image under a second category are folded into
it; PNGs over `max_bytes` are skipped; a PNG whose picture repeats an earlier one in path order is dropped:
`platobench.data.quality.file_digest` compares decoded pixels, as some copies differ only in encoding),
its title (`dc:title` of the matching SVG) and, where present, its description (`dc:description`) as a
second caption: two human-written *good views* of one image. Paired sets use cleaned captions
(`platobench.data.captions`: names, boilerplate and file names dropped) and keep one image per caption, so
no two samples share caption 0 (checked by `platobench.data.quality.require_unique_captions`).
Selection is deterministic: candidates are sorted by path, then permuted with `random.Random(seed)`;
the first n of that permutation are the dataset, so a `limit` is a random subset, never one category.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import astuple, dataclass
from pathlib import Path

from platobench import paths
from platobench.data.base import (
    ClassDataset,
    FileImageLoader,
    PairedDataset,
    balanced_classes,
    first_n,
    seeded_order,
)
from platobench.data.captions import (
    caption_key,
    clean_description,
    clean_title,
    set_labels,
    shared_descriptions,
    unique_by,
)
from platobench.data.debian import package_version, require_dir
from platobench.data.quality import file_digest, require_unique_captions
from platobench.data.svgmeta import read_svg_meta
from platobench.errors import UserError
from platobench.files.atomic import atomic_write_text

DEFAULT_ROOT = Path("/usr/share/openclipart")
PACKAGES = ["openclipart-png", "openclipart-svg"]
MAX_BYTES = 400_000
# Top-level folders that are not a visual category ("unsorted", "special": mixed leftovers).
NON_CATEGORIES = frozenset({"unsorted", "special"})
CATALOGUE_FORMAT = 2  # bump when the catalogue rules change: cached catalogues are then rebuilt
IMAGES_RULE = "images=unique-pixels"  # in every revision: PNGs that repeat a picture are dropped
CAPTIONS_RULE = "captions=clean-v1"  # in paired revisions: bump with the rules of platobench/data/captions.py


@dataclass(frozen=True)
class Clip:
    """One image: `id` is its path under png/ without the extension, e.g. "animals/birds/owl_01";
    `title`, `description` and `creator` as the SVG states them; `digest` of the picture (`file_digest`)."""

    id: str
    png: Path
    category: str
    title: str
    description: str
    creator: str
    digest: str


def _revision(root: Path, seed: int, max_bytes: int) -> str:
    if root == DEFAULT_ROOT:
        source = "debian:" + ",".join(f"{p}={package_version(p) or 'unpackaged'}" for p in PACKAGES)
    else:
        source = f"local:{root}"
    return f"{source};seed={seed};max_bytes={max_bytes};{IMAGES_RULE}"


def _scan(root: Path, max_bytes: int) -> tuple[Clip, ...]:
    png_root = require_dir(root / "png", PACKAGES, "openclipart PNG images")
    svg_root = require_dir(root / "svg", PACKAGES, "openclipart SVG metadata")
    clips = []
    for png in sorted(png_root.rglob("*.png")):
        if png.is_symlink() or not png.is_file() or png.stat().st_size > max_bytes:
            continue
        rel = png.relative_to(png_root).with_suffix("")
        svg = svg_root / rel.with_suffix(".svg")
        meta = read_svg_meta(svg) if svg.is_file() else None
        if meta is None or not meta.title:
            continue
        digest = file_digest(png)
        clips.append(
            Clip(rel.as_posix(), png, rel.parts[0], meta.title, meta.description, meta.creator, digest)
        )
    return tuple(unique_by(clips, lambda c: c.digest))


def _cache_file(root: Path, max_bytes: int) -> Path | None:
    """Where the catalogue of the installed packages is cached (None for other roots or unpackaged data):
    the name hashes both package versions, the size limit and CATALOGUE_FORMAT."""
    versions = [package_version(p) for p in PACKAGES]
    if root != DEFAULT_ROOT or None in versions:
        return None
    tag = hashlib.sha256(json.dumps([versions, max_bytes, CATALOGUE_FORMAT]).encode()).hexdigest()[:16]
    return paths.home() / "data" / f"openclipart-catalogue-{tag}.json"


@functools.lru_cache(maxsize=4)
def catalogue(root: Path = DEFAULT_ROOT, max_bytes: int = MAX_BYTES) -> tuple[Clip, ...]:
    """Every usable clip under `root` (png/ and svg/ trees), sorted by id: real files only, at most
    `max_bytes`, with a non-empty title, each picture once. Raises UserError naming the Debian packages when missing.
    Parsing the 7,000 SVGs and decoding the PNGs takes about half a minute, so the installed packages' catalogue is cached as JSON under
    `$PLATOBENCH_HOME/data` (its name changes with the package versions)."""
    cache = _cache_file(root, max_bytes)
    if cache is not None and cache.is_file():
        try:
            rows = json.loads(cache.read_text("utf-8"))
            return tuple(Clip(r[0], Path(r[1]), r[2], r[3], r[4], r[5], r[6]) for r in rows)
        except (ValueError, IndexError, TypeError):
            pass  # unreadable: rebuilt below
    clips = _scan(root, max_bytes)
    if not clips:
        raise UserError(
            f"no openclipart image with a title found under {root} (packages {' '.join(PACKAGES)})"
        )
    if cache is not None:
        atomic_write_text(cache, json.dumps([[str(v) for v in astuple(c)] for c in clips], ensure_ascii=False))
    return clips


def captioned(
    clips: tuple[Clip, ...], seed: int, *, with_description: bool = False
) -> list[tuple[Clip, list[str]]]:
    """(clip, captions) in seeded order with cleaned captions: [title] or [title, description] (the
    description cleaned too, and different from the title); clips whose title is dropped are skipped,
    `with_description` also skips clips without a description; one clip per title key, the first.
    Set labels and shared descriptions are counted over all of `clips`, so any n gives a prefix."""
    labels = set_labels([c.title for c in clips], [c.category for c in clips])
    shared = shared_descriptions(c.description for c in clips)
    rows = []
    for c in seeded_order(clips, seed):
        title = clean_title(c.title, creator=c.creator, labels=labels)
        if not title:
            continue
        description = clean_description(c.description, title, shared=shared)
        if description and caption_key(description) == caption_key(c.title):
            description = ""
        if with_description and not description:
            continue
        rows.append((c, [title, description] if description else [title]))
    return unique_by(rows, lambda row: caption_key(row[1][0]))


def paired(
    name: str,
    *,
    n: int | None,
    with_description: bool = False,
    seed: int = 0,
    root: Path = DEFAULT_ROOT,
    max_bytes: int = MAX_BYTES,
) -> PairedDataset:
    """Paired dataset: the first `n` captioned clips of the seeded permutation (all when None), see
    `captioned`. Raises DuplicateCaptionError if two samples would share caption 0."""
    rows = first_n(captioned(catalogue(root, max_bytes), seed, with_description=with_description), n, name, root)
    pool = [c for c, _ in rows]
    return require_unique_captions(
        PairedDataset(
            name,
            f"{_revision(root, seed, max_bytes)};{CAPTIONS_RULE}",
            [c.id for c in pool],
            [views for _, views in rows],
            FileImageLoader([x.png for x in pool]),
            groups=[c.category for c in pool],
        )
    )


def categories(
    name: str,
    templates: list[str],
    *,
    per_class: int = 100,
    min_per_class: int = 40,
    limit: int | None = None,
    seed: int = 0,
    root: Path = DEFAULT_ROOT,
    max_bytes: int = MAX_BYTES,
) -> ClassDataset:
    """Class dataset over the top-level categories with at least `min_per_class` clips (leftover folders
    excluded); up to `per_class` clips per category from the seeded permutation, in permutation order.
    Class names are the folder names with underscores as spaces ("signs_and_symbols" -> "signs and
    symbols"). `limit` keeps the first clips of that order."""
    pool = seeded_order(catalogue(root, max_bytes), seed)
    kept, chosen = balanced_classes(
        pool, lambda c: c.category, per_class=per_class, min_per_class=min_per_class, exclude=NON_CATEGORIES
    )
    if len(kept) < 2:
        raise UserError(
            f"dataset {name!r}: fewer than 2 categories with >= {min_per_class} images under {root}"
        )
    index = {k: i for i, k in enumerate(kept)}
    chosen = chosen[:limit]
    revision = _revision(root, seed, max_bytes) + f";per_class={per_class};min_per_class={min_per_class}"
    return ClassDataset(
        name,
        revision,
        [c.id for c in chosen],
        [index[c.category] for c in chosen],
        [k.replace("_", " ") for k in kept],
        templates,
        FileImageLoader([x.png for x in chosen]),
    )
