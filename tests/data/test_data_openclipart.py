"""openclipart: safe SVG metadata, catalogue rules (symlinks folded, size filter, titles, duplicate pictures),
cleaned and distinct captions, determinism."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest
from PIL import Image

from platobench.data import get_dataset, openclipart, quality
from platobench.data.base import seeded_order
from platobench.data.captions import caption_key
from platobench.data.svgmeta import entities_are_safe, read_svg_meta
from platobench.errors import UserError

SVG = """<?xml version="1.0" encoding="UTF-8"?>{doctype}
<svg xmlns="http://www.w3.org/2000/svg" xmlns:dc="http://purl.org/dc/elements/1.1/"
     xmlns:cc="http://web.resource.org/cc/" xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
  <metadata><rdf:RDF><cc:Work rdf:about="">
    <dc:title>{title}</dc:title>
    <dc:description>{description}</dc:description>
    <dc:creator><cc:Agent><dc:title>{creator}</dc:title></cc:Agent></dc:creator>
  </cc:Work></rdf:RDF></metadata>
  <rect width="1" height="1"/>
</svg>
"""


def write_svg(
    path: Path, title: str, description: str = "", doctype: str = "", creator: str = "Some Author"
) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = SVG.format(doctype=doctype, title=title, description=description, creator=creator)
    path.write_text(text, encoding="utf-8")
    return path


def test_title_and_description_come_from_the_work_not_the_author(tmp_path):
    meta = read_svg_meta(write_svg(tmp_path / "a.svg", "  Red\n  apple ", "A shiny red apple."))
    assert (meta.title, meta.description) == ("Red apple", "A shiny red apple.")
    assert meta.creator == "Some Author"
    meta = read_svg_meta(write_svg(tmp_path / "b.svg", "", ""))
    assert (meta.title, meta.description) == ("", "")


def test_literal_entities_are_expanded(tmp_path):
    doctype = '<!DOCTYPE svg [ <!ENTITY ns_x "http://example.org/x"> ]>'
    meta = read_svg_meta(write_svg(tmp_path / "a.svg", "Floppy &amp; disk", doctype=doctype))
    assert meta.title == "Floppy & disk"


@pytest.mark.parametrize(
    "doctype",
    [
        '<!DOCTYPE svg [ <!ENTITY xxe SYSTEM "file:///etc/passwd"> ]>',
        '<!DOCTYPE svg [ <!ENTITY a "lol"> <!ENTITY b "&a;&a;&a;&a;&a;&a;"> ]>',
        '<!DOCTYPE svg [ <!ENTITY % p SYSTEM "http://example.org/p.dtd"> %p; ]>',
        '<!DOCTYPE svg [ <!ENTITY e PUBLIC "-//x" "http://example.org/e"> ]>',
    ],
)
def test_dangerous_entity_declarations_are_refused(tmp_path, doctype):
    assert not entities_are_safe(doctype.encode())
    meta = read_svg_meta(write_svg(tmp_path / "a.svg", "secret", doctype=doctype))
    assert meta.title == "" and meta.description == ""


def test_malformed_svg_has_no_metadata(tmp_path):
    bad = tmp_path / "bad.svg"
    bad.write_text("<svg><metadata><rdf:RDF>", encoding="utf-8")
    assert read_svg_meta(bad).title == ""


def make_tree(root: Path) -> None:
    """A small openclipart-like tree: 4 categories, a symlinked duplicate, an oversized PNG, an untitled one,
    a second "owl" title, a title that is the creator's name, and a copy of apple's picture in another
    encoding."""
    for i, (category, stem, title, desc) in enumerate(
        [
            ("animals", "owl", "owl", "an owl at night"),
            ("animals", "owl_2", "Owl.", ""),
            ("animals", "cat", "cat", ""),
            ("food", "apple", "apple", ""),
            ("food", "pear", "pear", "a green pear"),
            ("people", "author", "Some Author", ""),
            ("tools", "hammer", "hammer", ""),
            ("tools", "saw", "saw", ""),
        ]
    ):
        png = root / "png" / category / f"{stem}.png"
        png.parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGBA", (8, 8), (i * 30, 10, 10, 255)).save(png)
        write_svg(root / "svg" / category / f"{stem}.svg", title, desc)
    Image.new("RGB", (8, 8), (90, 10, 10)).save(root / "png" / "food" / "apple_copy.png")  # apple's picture
    write_svg(root / "svg" / "food" / "apple_copy.svg", "apple copy")
    (root / "png" / "tools" / "owl.png").symlink_to("../animals/owl.png")
    (root / "svg" / "tools" / "owl.svg").symlink_to("../animals/owl.svg")
    big = root / "png" / "food" / "big.png"
    big.write_bytes(b"\x89PNG" + os.urandom(5000))
    write_svg(root / "svg" / "food" / "big.svg", "big one")
    Image.new("RGB", (8, 8)).save(root / "png" / "food" / "untitled.png")
    write_svg(root / "svg" / "food" / "untitled.svg", "")


def test_catalogue_rules(tmp_path):
    make_tree(tmp_path)
    clips = openclipart.catalogue(tmp_path, 4000)
    assert [c.id for c in clips] == [
        "animals/cat",
        "animals/owl",
        "animals/owl_2",
        "food/apple",
        "food/pear",
        "people/author",
        "tools/hammer",
        "tools/saw",
    ]  # food/apple_copy holds apple's picture in another encoding: dropped
    assert {c.id: c.category for c in clips}["animals/owl"] == "animals"
    assert {c.id: c.description for c in clips}["food/pear"] == "a green pear"


def test_paired_build_is_deterministic_and_seeded(tmp_path):
    make_tree(tmp_path)
    a = openclipart.paired("oc", n=None, root=tmp_path, max_bytes=4000)
    openclipart.catalogue.cache_clear()
    b = openclipart.paired("oc", n=None, root=tmp_path, max_bytes=4000)
    assert a.ids == b.ids and a.fingerprint == b.fingerprint
    others = {
        tuple(openclipart.paired("oc", n=None, seed=s, root=tmp_path, max_bytes=4000).ids)
        for s in range(1, 8)
    }
    assert len(others | {tuple(a.ids)}) > 1  # the seed changes the order
    assert sorted(a.ids) == sorted(b.ids)
    first3 = openclipart.paired("oc", n=3, root=tmp_path, max_bytes=4000)
    assert first3.ids == a.ids[:3]
    pear = a.ids.index("food/pear")
    assert a.caption_views(pear) == ["pear", "a green pear"]
    assert "captions=clean-v1" in a.revision and "images=unique-pixels" in a.revision
    image = a.image(pear)
    assert image.mode == "RGB" and image.size == (8, 8)
    copy = pickle.loads(pickle.dumps(a))  # DataLoader workers may pickle the dataset
    assert copy.ids == a.ids and copy.image(pear).tobytes() == image.tobytes()


@pytest.mark.parametrize("seed", range(4))
def test_paired_sets_drop_names_and_keep_one_image_per_caption(tmp_path, seed):
    make_tree(tmp_path)
    ds = openclipart.paired("oc", n=None, seed=seed, root=tmp_path, max_bytes=4000)
    assert "people/author" not in ds.ids  # its title is the creator's name
    owls = [i for i in ds.ids if i.startswith("animals/owl")]
    order = [c.id for c in seeded_order(openclipart.catalogue(tmp_path, 4000), seed)]
    assert owls == [min(["animals/owl", "animals/owl_2"], key=order.index)]  # the first in seeded order
    report = quality.check(ds)
    assert report.distinct_captions == len(ds) == 6 and report.extra_images() == 0


def test_duplicate_captions_are_refused_at_build_time(tmp_path, monkeypatch):
    make_tree(tmp_path)
    monkeypatch.setattr(openclipart, "unique_by", lambda items, key: list(items))  # dedup switched off
    with pytest.raises(quality.DuplicateCaptionError, match="'oc': 1 caption"):
        openclipart.paired("oc", n=None, root=tmp_path, max_bytes=4000)


def test_description_set_keeps_only_described_clips(tmp_path):
    make_tree(tmp_path)
    d = openclipart.paired("oc-desc", n=None, with_description=True, root=tmp_path, max_bytes=4000)
    assert sorted(d.ids) == ["animals/owl", "food/pear"]
    assert sorted(d.captions(1)) == ["a green pear", "an owl at night"]


def test_asking_for_more_images_than_qualify_is_an_error(tmp_path):
    make_tree(tmp_path)
    with pytest.raises(UserError, match="asks for 100 images but only 6"):
        openclipart.paired("oc", n=100, root=tmp_path, max_bytes=4000)


def test_categories_class_set(tmp_path):
    make_tree(tmp_path)
    c = openclipart.categories(
        "cats", ["clip art of {}."], min_per_class=2, per_class=1, root=tmp_path, max_bytes=4000
    )
    assert c.class_names == ["animals", "food", "tools"]
    assert sorted(c.labels) == [0, 1, 2]
    assert c.prompts(1) == ["clip art of food."]
    every = openclipart.categories("cats", ["{}"], min_per_class=1, root=tmp_path, max_bytes=4000)
    assert "food/apple_copy" not in every.ids and len(every) == 8  # the class set drops the copy too


def test_missing_package_names_it(tmp_path):
    with pytest.raises(UserError, match="openclipart-png openclipart-svg"):
        openclipart.catalogue(tmp_path / "nothing")


needs_openclipart = pytest.mark.skipif(
    not (openclipart.DEFAULT_ROOT / "svg").is_dir(), reason="Debian openclipart-png/-svg not installed"
)


@pytest.mark.slow
@needs_openclipart
def test_real_openclipart_1024(tmp_path, monkeypatch):
    monkeypatch.setenv("PLATOBENCH_HOME", str(tmp_path))
    openclipart.catalogue.cache_clear()
    ds = get_dataset("openclipart-1024")  # scans the packages, then caches the catalogue
    assert len(ds) == 1024 and len(set(ds.ids)) == 1024
    assert all(c.strip() for c in ds.captions(0))
    assert (
        "seed=0" in ds.revision and "openclipart-png=" in ds.revision and "captions=clean-v1" in ds.revision
    )
    assert quality.check(ds, images=False).distinct_captions == 1024
    [cached] = (tmp_path / "data").glob("openclipart-catalogue-*.json")
    openclipart.catalogue.cache_clear()
    again = get_dataset("openclipart-1024")  # read back from the cached catalogue
    assert again.fingerprint == ds.fingerprint and again.caption_views(7) == ds.caption_views(7)
    assert get_dataset("openclipart-1024", limit=10).ids == ds.ids[:10]
    assert get_dataset("openclipart-1024", seed=1).ids != ds.ids
    assert ds.image(0).mode == "RGB"
    described = get_dataset("openclipart-desc")
    assert all(len(described.caption_views(i)) == 2 for i in range(len(described)))
    assert all(
        caption_key(t) != caption_key(d)
        for t, d in (described.caption_views(i) for i in range(len(described)))
    )
    assert quality.check(described, images=False).duplicate_captions == []
    everything = get_dataset("openclipart")
    assert quality.check(everything, images=False).duplicate_captions == []
    # bookworm's packages: 2,698 distinct raw titles, 2,438 after cleaning; 388 cleaned descriptions
    assert 2000 < len(everything) < 2698 and 300 < len(described) < 500
    titles = {caption_key(c) for c in everything.captions(0)}
    assert not titles & {"gramastar", "lemon svg theme", "card", "etiquette icons"}
    # bookworm's packages: 8,121 PNG paths of which 1,221 are symlinks (6,900 files), 20 over 400 KB,
    # 68 more repeat another file's picture
    assert 6000 < len(openclipart.catalogue()) < 6900
    cached.write_text("[[1]]", encoding="utf-8")  # a damaged cache is rebuilt, not trusted
    openclipart.catalogue.cache_clear()
    assert get_dataset("openclipart-1024").fingerprint == ds.fingerprint
    openclipart.catalogue.cache_clear()
