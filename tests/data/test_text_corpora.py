"""Text corpora of good views: the dedup rule, each parser on a tiny fixture, the installed corpora, `data show`."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from platobench.cli import main
from platobench.data import bible, emoji_corpora, get_dataset, wordnet_corpus
from platobench.data.text_corpus import TextCorpus
from platobench.errors import UserError


def test_dedup_rule_known_answer():
    items = [
        ("c", ["Dog", "a barking pet"]),  # shares "dog" (case-insensitively) with a: one view left, dropped
        ("a", ["dog", "  domestic   dog ", "DOG"]),  # repeated view inside the item dropped
        ("b", ["cat", "Cat"]),  # one distinct view: too few
        ("d", ["wolf", "wild canine"]),
        ("e", ["WOLF", "grey wolf", "a wild dog of the north"]),  # loses "WOLF" (d's view), keeps two
    ]
    corpus = TextCorpus.build("toy", "r1", items)
    assert corpus.ids == ["a", "d", "e"]
    assert corpus.views == [["dog", "domestic dog"], ["wolf", "wild canine"], ["grey wolf", "a wild dog of the north"]]
    stats = corpus.stats
    assert (stats.read, stats.too_few_views, stats.duplicates, stats.kept, stats.shared_views_removed) == (5, 1, 1, 3, 1)
    assert TextCorpus.build("toy", "r1", items, limit=1).ids == ["a"]
    edited = TextCorpus.build("toy", "r1", [*items[:3], ("d", ["wolf", "wild dog"]), items[4]])
    assert edited.ids == corpus.ids and edited.fingerprint != corpus.fingerprint
    with pytest.raises(UserError, match="only 3"):
        TextCorpus.build("toy", "r1", items, limit=4)


WORDNET_LINES = [
    "  1 This software and database is being provided to you, the LICENSEE, by  ",
    "02084071 05 n 03 dog 0 domestic_dog 0 Canis_familiaris 0 @ 02083346 n 0000 | a member of the genus Canis; "
    '"the dog barked all night"  ',
    "02121620 05 n 02 cat 0 true_cat 0 001 @ 02120997 n 0000 | feline mammal usually having thick soft fur  ",
    "02130000 05 n 01 bark 0 000 | a noise; \"the bark woke me\"; \"a loud bark\"  ",
]


def test_wordnet_parser_fixture(tmp_path: Path):
    (tmp_path / "data.noun").write_text("\n".join(WORDNET_LINES) + "\n", encoding="utf-8")
    for name in ("data.verb", "data.adj", "data.adv"):
        (tmp_path / name).write_text("", encoding="utf-8")
    got = dict(wordnet_corpus.synsets(tmp_path))
    assert got == {
        "n02084071": ["dog, domestic dog, Canis familiaris", "a member of the genus Canis", "the dog barked all night"],
        "n02121620": ["cat, true cat", "feline mammal usually having thick soft fur"],
        "n02130000": ["bark", "a noise", "the bark woke me", "a loud bark"],
    }
    assert wordnet_corpus.synset_views("01 00 s 01 galore(ip) 0 000 | in great numbers")[1][0] == "galore"


def test_openmoji_parser_fixture(tmp_path: Path):
    rows = (
        "emoji,hexcode,annotation,tags,openmoji_tags\n"
        '😀,1F600,grinning face,"face, grin",smile\n'
        "👋🏻,1F44B-1F3FB,waving hand: light skin tone,,\n"
        '🐶,1F436,dog face,"dog, face",\n'
    ).encode()
    tarball = tmp_path / "openmoji-17.0.0.tgz"
    with tarfile.open(tarball, "w:gz") as tf:
        info = tarfile.TarInfo(emoji_corpora.OPENMOJI_CSV)
        info.size = len(rows)
        tf.addfile(info, io.BytesIO(rows))
    assert list(emoji_corpora.openmoji_items(tarball)) == [
        ("1F600", ["grinning face", "face, grin", "smile"]),
        ("1F44B-1F3FB", ["waving hand: light skin tone"]),
        ("1F436", ["dog face", "dog, face"]),
    ]
    with pytest.raises(UserError, match="install_npm.sh"):
        list(emoji_corpora.openmoji_items(tmp_path / "absent.tgz"))


def test_cldr_parser_fixture(tmp_path: Path):
    (tmp_path / "annotations").mkdir()
    (tmp_path / "annotations" / "en.xml").write_text(
        '<?xml version="1.0" encoding="UTF-8" ?><ldml><annotations>'
        '<annotation cp="🐶">dog | face | pet</annotation><annotation cp="🐶" type="tts">dog face</annotation>'
        '<annotation cp="{">brace | curly bracket</annotation><annotation cp="{" type="tts">open curly bracket</annotation>'
        "</annotations></ldml>",
        encoding="utf-8",
    )
    assert dict(emoji_corpora.cldr_items(tmp_path)) == {
        "1F436": ["dog face", "dog, face, pet"],
        "7B": ["open curly bracket", "brace, curly bracket"],
    }


def test_osis_text_strips_markup():
    raw = (
        '<q who="Jesus"><w lemma="strong:G3439">only</w> born</q><note placement="foot">3:16 Or, begotten</note>'
        '<q who="Jesus"><w>Son</w>, that</q> <title type="x-acrostic">ALEPH</title>¶ ye<l eID="1"/><l sID="2"/>'
        "shall<note>x</note>."
    )
    assert bible.osis_text(raw) == "only born Son, that ye shall."


def _installed(loader):
    try:
        return loader()
    except UserError as exc:
        pytest.skip(f"corpus data not installed: {exc}")


def _check_corpus(corpus: TextCorpus, low: int, high: int) -> None:
    assert low <= len(corpus) <= high
    assert len(set(corpus.ids)) == len(corpus.ids) and corpus.ids == sorted(corpus.ids)
    owner: dict[str, str] = {}
    for item_id, views in zip(corpus.ids, corpus.views):
        keys = {v.casefold() for v in views}
        assert len(keys) == len(views) >= 2, item_id
        for key in keys:
            assert owner.setdefault(key, item_id) == item_id, (key, item_id, owner[key])


def test_installed_wordnet():
    corpus = _installed(lambda: get_dataset("wordnet"))
    _check_corpus(corpus, 90_000, 117_659)
    assert corpus.stats.read == 117_659
    dog = corpus.caption_views(corpus.ids.index("n02084071"))
    assert "domestic dog" in dog[0] and dog[-1] == "the dog barked all night"


def test_installed_kjv_web():
    corpus = _installed(lambda: get_dataset("kjv-web"))
    _check_corpus(corpus, 29_000, 31_102)
    kjv, web = corpus.caption_views(corpus.ids.index("Gen.1.1"))
    assert kjv.startswith("In the beginning God created") and web.startswith("In the beginning, God created")
    assert not any("<" in v or "¶" in v for views in corpus.views for v in views)


def test_installed_emoji_corpora():
    moji = _installed(lambda: get_dataset("openmoji"))
    _check_corpus(moji, 1_500, 4_500)
    assert moji.caption_views(moji.ids.index("1F600"))[0] == "grinning face"
    cldr = _installed(lambda: get_dataset("cldr-emoji"))
    _check_corpus(cldr, 2_500, 4_500)
    assert cldr.caption_views(cldr.ids.index("1F436")) == ["dog face", "dog, face, pet"]


def test_data_show_corpus(capsys):
    first = _installed(lambda: get_dataset("cldr-emoji", limit=50)).ids[:3]
    assert main(["data", "show", "cldr-emoji", "--limit", "50", "--samples", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kind"] == "corpus" and out["n"] == 50 and len(out["samples"]) == 3
    shown = [s["id"] for s in out["samples"]]
    assert len(set(shown)) == 3 and shown != first  # seeded random items, not the first three
    assert out["items_read"] >= out["dropped_too_few_views"] + out["duplicates_removed"] + 50
    assert main(["data", "show", "cldr-emoji", "--limit", "50", "--samples", "2"]) == 0
    text = capsys.readouterr().out
    assert "items read" in text and "views per item" in text
    assert main(["data", "list"]) == 0
    assert "corpus" in capsys.readouterr().out


def test_setting_on_corpus_is_refused(tmp_path: Path):
    from platobench.bench.settings import Catalog

    f = tmp_path / "s.yaml"
    f.write_text("settings:\n  bad:\n    dataset: wordnet\n    metric: mutual_knn\n", encoding="utf-8")
    with pytest.raises(UserError, match="text corpus"):
        Catalog([f])
