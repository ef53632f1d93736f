"""openclipart: safe SVG metadata, catalogue rules (symlinks folded, size filter, titles), determinism."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest
from PIL import Image

from platobench.data import get_dataset, openclipart
from platobench.data.svgmeta import entities_are_safe, read_svg_meta
from platobench.errors import UserError

SVG = """<?xml version="1.0" encoding="UTF-8"?>{doctype}
<svg xmlns="http://www.w3.org/2000/svg" xmlns:dc="http://purl.org/dc/elements/1.1/"
     xmlns:cc="http://web.resource.org/cc/" xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
  <metadata><rdf:RDF><cc:Work rdf:about="">
    <dc:title>{title}</dc:title>
    <dc:description>{description}</dc:description>
    <dc:creator><cc:Agent><dc:title>Some Author</dc:title></cc:Agent></dc:creator>
  </cc:Work></rdf:RDF></metadata>
  <rect width="1" height="1"/>
</svg>
"""


def write_svg(path: Path, title: str, description: str = "", doctype: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(SVG.format(doctype=doctype, title=title, description=description), encoding="utf-8")
    return path


def test_title_and_description_come_from_the_work_not_the_author(tmp_path):
    meta = read_svg_meta(write_svg(tmp_path / "a.svg", "  Red\n  apple ", "A shiny red apple."))
    assert (meta.title, meta.description) == ("Red apple", "A shiny red apple.")
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
    """A small openclipart-like tree: 3 categories, a symlinked duplicate, an oversized PNG, an untitled one."""
    for i, (category, title, desc) in enumerate(
        [
            ("animals", "owl", "an owl at night"),
            ("animals", "cat", ""),
            ("food", "apple", ""),
            ("food", "pear", "a green pear"),
            ("tools", "hammer", ""),
            ("tools", "saw", ""),
        ]
    ):
        png = root / "png" / category / f"{title}.png"
        png.parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGBA", (8, 8), (i * 30, 10, 10, 255)).save(png)
        write_svg(root / "svg" / category / f"{title}.svg", title, desc)
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
        "food/apple",
        "food/pear",
        "tools/hammer",
        "tools/saw",
    ]
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
    owl = a.ids.index("animals/owl")
    assert a.caption_views(owl) == ["owl", "an owl at night"]
    image = a.image(owl)
    assert image.mode == "RGB" and image.size == (8, 8)
    copy = pickle.loads(pickle.dumps(a))  # DataLoader workers may pickle the dataset
    assert copy.ids == a.ids and copy.image(owl).tobytes() == image.tobytes()


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


def test_missing_package_names_it(tmp_path):
    with pytest.raises(UserError, match="openclipart-png openclipart-svg"):
        openclipart.catalogue(tmp_path / "nothing")


needs_openclipart = pytest.mark.skipif(
    not (openclipart.DEFAULT_ROOT / "svg").is_dir(), reason="Debian openclipart-png/-svg not installed"
)


@needs_openclipart
def test_real_openclipart_1024(tmp_path, monkeypatch):
    monkeypatch.setenv("PLATOBENCH_HOME", str(tmp_path))
    openclipart.catalogue.cache_clear()
    ds = get_dataset("openclipart-1024")  # scans the packages, then caches the catalogue
    assert len(ds) == 1024 and len(set(ds.ids)) == 1024
    assert all(c.strip() for c in ds.captions(0))
    assert "seed=0" in ds.revision and "openclipart-png=" in ds.revision
    [cached] = (tmp_path / "data").glob("openclipart-catalogue-*.json")
    openclipart.catalogue.cache_clear()
    again = get_dataset("openclipart-1024")  # read back from the cached catalogue
    assert again.fingerprint == ds.fingerprint and again.caption_views(7) == ds.caption_views(7)
    assert get_dataset("openclipart-1024", limit=10).ids == ds.ids[:10]
    assert get_dataset("openclipart-1024", seed=1).ids != ds.ids
    assert ds.image(0).mode == "RGB"
    described = get_dataset("openclipart-desc")
    assert all(len(described.caption_views(i)) == 2 for i in range(len(described)))
    # bookworm's packages: 8,121 PNG paths of which 1,221 are symlinks (6,900 files), 20 over 400 KB
    assert 6000 < len(openclipart.catalogue()) < 6900
    cached.write_text("[[1]]", encoding="utf-8")  # a damaged cache is rebuilt, not trusted
    openclipart.catalogue.cache_clear()
    assert get_dataset("openclipart-1024").fingerprint == ds.fingerprint
    openclipart.catalogue.cache_clear()
