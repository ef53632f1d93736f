"""tuxpaint: stamp catalogue rules (English caption line, variants and SVG-only stamps skipped, duplicate
pictures dropped), one stamp per caption, folder classes; and the real Debian package when installed."""

from __future__ import annotations

import collections
import pickle
from pathlib import Path

import pytest
from PIL import Image

from platobench.data import get_dataset, get_templates, quality, tuxpaint
from platobench.data.base import seeded_order
from platobench.data.captions import caption_key
from platobench.errors import UserError


def stamp(root: Path, rel: str, caption: str | None, colour: int, mode: str = "RGBA") -> None:
    png = root / f"{rel}.png"
    png.parent.mkdir(parents=True, exist_ok=True)
    Image.new(mode, (6, 6), (colour, 20, 20, 255)[: len(mode)]).save(png)
    if caption is not None:
        png.with_suffix(".txt").write_text(f"{caption}\nfr.utf8=traduction\nde.utf8=Übersetzung\n", "utf-8")


def make_stamps(root: Path) -> None:
    """Three folders; a mirror variant, an SVG-only stamp, a stamp without caption, a repeated caption and a
    picture stored twice (RGBA and RGB encodings of the same pixels)."""
    stamp(root, "animals/birds/owl", "An owl.", 10)
    stamp(root, "animals/birds/owl_mirror", "An owl.", 11)
    stamp(root, "animals/cat", "A cat.", 20)
    stamp(root, "animals/cartoon/cat", "A  cat", 21)
    stamp(root, "food/apple", "A red apple.", 30)
    stamp(root, "food/apple_again", "Another apple.", 30, mode="RGB")
    stamp(root, "food/pear", "A pear.", 40)
    stamp(root, "food/nothing", None, 50)
    stamp(root, "vehicles/bus", "A yellow school bus.", 60)
    (root / "vehicles" / "car.svg").write_text("<svg/>", "utf-8")
    (root / "vehicles" / "car.txt").write_text("A car.\n", "utf-8")


def test_english_caption_skips_translations(tmp_path):
    txt = tmp_path / "x.txt"
    txt.write_text("\nfr.utf8=Une pomme.\n  A red   apple. \nde.utf8=Ein Apfel.\n", "utf-8")
    assert tuxpaint.english_caption(txt) == "A red apple."
    txt.write_text("fr.utf8=Une pomme.\n", "utf-8")
    assert tuxpaint.english_caption(txt) == ""


def test_catalogue_rules(tmp_path):
    make_stamps(tmp_path)
    ids = [s.id for s in tuxpaint.catalogue(tmp_path)]
    assert ids == [
        "animals/birds/owl",
        "animals/cartoon/cat",
        "animals/cat",
        "food/apple",
        "food/pear",
        "vehicles/bus",
    ]  # no mirror, no caption-less or SVG-only stamp; food/apple_again repeats food/apple's picture


@pytest.mark.parametrize("seed", range(3))
def test_paired_keeps_one_stamp_per_caption(tmp_path, seed):
    make_stamps(tmp_path)
    ds = tuxpaint.paired("tux", seed=seed, root=tmp_path)
    cats = [i for i in ds.ids if i.endswith("/cat")]
    order = [s.id for s in seeded_order(tuxpaint.catalogue(tmp_path), seed)]
    assert cats == [min(["animals/cat", "animals/cartoon/cat"], key=order.index)]
    assert len(ds) == 5 and quality.check(ds).distinct_captions == 5
    assert ds.groups == [i.split("/")[0] for i in ds.ids]
    assert "captions=clean-v1" in ds.revision and f"seed={seed}" in ds.revision
    image = pickle.loads(pickle.dumps(ds)).image(0)
    assert image.mode == "RGB" and image.size == (6, 6)
    with pytest.raises(UserError, match="asks for 9 images but only 5"):
        tuxpaint.paired("tux", n=9, root=tmp_path)


def test_categories(tmp_path):
    make_stamps(tmp_path)
    c = tuxpaint.categories("tc", ["a picture of {}."], min_per_class=2, root=tmp_path)
    assert c.class_names == ["animals", "food"] and sorted(c.labels) == [0, 0, 0, 1, 1]
    assert tuxpaint.class_name("naturalforces") == "natural forces"
    with pytest.raises(UserError, match="fewer than 2 folders with >= 3"):
        tuxpaint.categories("tc", ["{}"], min_per_class=3, root=tmp_path)


def test_missing_package_names_it(tmp_path):
    with pytest.raises(UserError, match="tuxpaint-stamps-default"):
        tuxpaint.catalogue(tmp_path / "nothing")


needs_tuxpaint = pytest.mark.skipif(
    not tuxpaint.DEFAULT_ROOT.is_dir(),
    reason="Debian tuxpaint-stamps-default not installed (sh scripts/install_system.sh installs it)",
)


@needs_tuxpaint
def test_real_tuxpaint():
    ds = get_dataset("tuxpaint")
    # tuxpaint-stamps-default 2022.06.04-1: 796 PNGs, 784 stamps, 644 distinct captions
    assert 500 < len(ds) < 784
    assert "tuxpaint-stamps-default=" in ds.revision and "seed=0" in ds.revision
    report = quality.check(ds)
    assert report.duplicate_captions == [] and report.extra_images() == 0
    assert len({caption_key(c) for c in ds.captions(0)}) == len(ds)
    assert not any(i.endswith(tuxpaint.VARIANTS) for i in ds.ids)
    assert all(".utf8=" not in c for c in ds.captions(0))
    for i in (0, len(ds) // 2, len(ds) - 1):
        assert ds.image(i).mode == "RGB"
    assert get_dataset("tuxpaint", limit=10).ids == ds.ids[:10]
    assert get_dataset("tuxpaint", seed=1).ids != ds.ids


@needs_tuxpaint
def test_real_tuxpaint_categories():
    c = get_dataset("tuxpaint-categories")
    counts = collections.Counter(c.class_names[y] for y in c.labels)
    assert {"animals", "food", "vehicles"} <= set(c.class_names)
    assert all(tuxpaint.MIN_PER_CLASS <= n <= tuxpaint.PER_CLASS for n in counts.values())
    assert c.templates == get_templates("tuxpaint") and c.prompts(0)[0] == "a photo of animals."
    assert quality.duplicate_groups(c.ids, [quality.image_digest(c.image(i)) for i in range(len(c))]) == []
    assert c.image(0).mode == "RGB"
