"""Catalogue builders of the offline text corpora (kind "corpus"): each reads its source, stamps the
installed package's version as revision and applies `TextCorpus.build`'s dedup rule."""

from __future__ import annotations

from platobench.data import bible, emoji_corpora, wordnet_corpus
from platobench.data.debian import package_version
from platobench.data.text_corpus import TextCorpus
from platobench.data.wordnet import PACKAGE as WORDNET_PACKAGE


def _version(*packages: str) -> str:
    """"pkg=version" of each Debian package, "+"-joined ("not installed" for a missing one)."""
    return "+".join(f"{p}={package_version(p) or 'not installed'}" for p in packages)


def wordnet(name: str, limit: int | None) -> TextCorpus:
    return TextCorpus.build(name, _version(WORDNET_PACKAGE), wordnet_corpus.synsets(), limit)


def openmoji(name: str, limit: int | None) -> TextCorpus:
    items = emoji_corpora.openmoji_items(emoji_corpora.openmoji_tarball())
    return TextCorpus.build(name, f"npm:openmoji@{emoji_corpora.OPENMOJI_VERSION}", items, limit)


def cldr_emoji(name: str, limit: int | None) -> TextCorpus:
    return TextCorpus.build(name, _version(emoji_corpora.CLDR_PACKAGE), emoji_corpora.cldr_items(), limit)


def kjv_web(name: str, limit: int | None) -> TextCorpus:
    return TextCorpus.build(name, _version(*bible.MODULES.values()), bible.kjv_web_items(), limit)
