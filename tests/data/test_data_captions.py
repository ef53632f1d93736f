"""Caption cleaning rules (platobench/data/captions.py) and the quality checks (platobench/data/quality.py)."""

from __future__ import annotations

import pytest
from PIL import Image

from platobench.data import PairedDataset, quality
from platobench.data.captions import (
    caption_key,
    clean_description,
    clean_title,
    is_boilerplate,
    is_file_like,
    normalise,
    set_labels,
    shared_descriptions,
    strip_credit,
    unique_by,
)


def test_normalise_and_key():
    assert normalise("  sleeping_cat \n") == "sleeping cat"
    assert normalise("Chodovian&#39;s Dog") == "Chodovian's Dog"
    assert caption_key("Old  Hanging Sign.") == caption_key("old hanging sign") == "old hanging sign"
    assert caption_key("Ice Cream (4 Scoop)") == "ice cream 4 scoop"
    assert caption_key("red apple") != caption_key("green apple")


@pytest.mark.parametrize(
    "text",
    [
        "image_001.png",
        "photo.JPG",
        "DSC1234",
        "IMG_0042",
        "deadbeef42",
        "0x1f2e3d4c",
        "12345",
        "2004-08-25",
        "HASH(0x861a740)",
        "jigsaw_red_10",
        "Tigre01",
        "BlueMan#101",
        "",
    ],
)
def test_file_like_names(text):
    assert is_file_like(text)


@pytest.mark.parametrize(
    "text", ["sleeping_cat", "Red apple", "GPS Geko 101", "Ice Cream Cone (4 Scoop)", "A US 25 cent piece."]
)
def test_descriptions_are_not_file_like(text):
    assert not is_file_like(text)


@pytest.mark.parametrize(
    "text",
    [
        "Part of the Flat Icon Collection (Wed Aug 25 23:29:46 2004)",
        "Lemon SVG theme",
        "plastik-icon-theme",
        "blueberry - iconset",
        "Etiquette Icons",
        "Various Cliparts",
        "AIGA_Symbol_Signs",
        "R16 sibmission",
        "EPS converted from http://aiga.org",
        "jean.victor.balin@gmail.com",
        "This work is hereby released into the Public Domain.",
    ],
)
def test_boilerplate(text):
    assert is_boilerplate(text)
    assert clean_title(text) == ""


@pytest.mark.parametrize("text", ["Hotel Icon Casino", "Golden Hug", "Map of Scandinavia", "Icon of a bee"])
def test_real_titles_are_not_boilerplate(text):
    assert not is_boilerplate(text) and clean_title(text) == text


def test_credit_prefix_is_stripped_only_when_the_rest_describes():
    assert strip_credit("Clipart by Steve Hall - United States - Alabama") == "United States - Alabama"
    assert strip_credit("Clipart by Jon A. Cruz - United States - California") == "United States - California"
    assert strip_credit("Drawing by Jane Doe") == ""
    assert strip_credit("Red apple") is None
    assert clean_title("Clipart by Steve Hall - United States - Alabama") == "United States - Alabama"
    assert clean_title("Clipart by Nicu Buculei - pear") == "pear"
    assert clean_title("Clipart by Nicu Buculei - jigsaw_red_10") == ""  # the rest is a file name
    assert clean_title("Clipart by Nicu Buculei - Lemon SVG theme") == ""  # the rest is boilerplate
    assert clean_title("Drawing by Jane Doe") == ""  # a credit and nothing else
    assert clean_title("Clipart by Someone - Someone", creator="Someone") == ""


def test_uploader_name_is_dropped():
    assert clean_title("Jane Doe", creator="jane  doe") == ""
    assert clean_title("Jane's Duck", creator="Jane Doe") == "Jane's Duck"
    titles = ["gramastar"] * 25 + ["card"] * 3 + ["Lamp"] * 30 + ["Road Signs"] * 25 + ["Stick man"] * 21
    groups = ["shapes"] * 25 + ["games"] * 3 + ["house", "office"] * 15 + ["signs", "roads"] * 12 + ["signs"]
    groups += ["people"] * 21
    labels = set_labels(titles, groups)
    # a one-word title on >= 20 images names a person or a batch, whatever the folders
    assert "gramastar" in labels and clean_title("gramastar", labels=labels) == ""
    assert "lamp" in labels  # one word on 30 images in 2 folders: also a label
    # many images over >= 2 folders: a collection label; within one folder a multi-word title survives
    assert "road signs" in labels and "stick man" not in labels
    assert "card" not in labels and clean_title("card", labels=labels) == "card"


def test_credit_batches_are_set_labels():
    titles = ["Clipart by Nicu Buculei - bee"] * 3 + ["Clipart by Steve Hall - Texas"]
    labels = set_labels(titles, ["animals", "food", "tools", "flags"])
    assert clean_title("Clipart by Nicu Buculei - bee", labels=labels) == ""  # titles an umbrella too
    assert clean_title("Clipart by Steve Hall - Texas", labels=labels) == "Texas"


def test_description_rules():
    shared = shared_descriptions(["UK roadsigns"] * 3 + ["A shiny red apple.", "a shiny red apple"])
    assert shared == frozenset({"uk roadsigns"})
    assert clean_description("UK roadsigns", "Stop sign", shared=shared) == ""
    assert clean_description("Soft Drink in a Cup.", "soft drink in a cup") == ""  # same text as the title
    assert clean_description("HASH(0x8a40c04)", "Staff") == ""
    assert clean_description("Part of Hotel Icons Collection", "Hotel Icon Casino") == ""
    assert clean_description(" A  shiny red apple. ", "Apple", shared=shared) == "A shiny red apple."


def test_unique_by_keeps_the_first():
    items = [("a", "Owl"), ("b", "owl."), ("c", "Cat"), ("d", "OWL")]
    assert unique_by(items, lambda x: caption_key(x[1])) == [("a", "Owl"), ("c", "Cat")]


def blank(i: int) -> Image.Image:
    return Image.new("RGBA", (2, 2), (0, 0, 0, 0) if i == 2 else (i * 50, 0, 0, 255))


def test_quality_report_and_guarantee():
    ds = PairedDataset("p", "r", ["a", "b", "c", "d"], [["Owl"], ["owl."], ["Cat"], ["Dog"]], blank)
    report = quality.check(ds)
    assert report.n == 4 and report.distinct_captions == 3
    assert (
        report.duplicate_captions == [["a", "b"]]
        and report.duplicate_images == []
        and report.extra_images() == 0
    )
    with pytest.raises(quality.DuplicateCaptionError, match=r"1 caption\(s\) shared.*'Owl': a, b"):
        quality.require_unique_captions(ds)
    same = PairedDataset("p", "r", ["a", "b"], [["Owl"], ["Cat"]], lambda i: blank(1))
    assert quality.check(same).duplicate_images == [["a", "b"]]
    assert quality.check(same, images=False).extra_images() is None
    assert quality.require_unique_captions(same) is same


def test_image_digest_sees_what_the_model_sees():
    transparent = Image.new("RGBA", (2, 2), (0, 0, 0, 0))
    white = Image.new("RGB", (2, 2), (255, 255, 255))
    assert quality.image_digest(transparent) == quality.image_digest(white)  # composited on white
    assert quality.image_digest(white) != quality.image_digest(Image.new("RGB", (4, 1), (255, 255, 255)))
    palette = white.convert("P")
    assert quality.image_digest(palette) == quality.image_digest(white)  # encoding does not matter
