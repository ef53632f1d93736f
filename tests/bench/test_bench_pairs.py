"""`--pairs`: pair-set names and explicit 'LANGUAGE:VISION' pairs, comma-separated, give their union."""

from __future__ import annotations

import pytest

from platobench.bench.pairs import resolve_pairs
from platobench.bench.settings import Catalog
from platobench.errors import UserError
from platobench.zoo import load_zoo

CATALOG, ZOO = Catalog(), load_zoo()


def names(spec: str) -> list[tuple[str, str]]:
    return [(a.name, b.name) for a, b in resolve_pairs(spec, CATALOG, ZOO)]


def test_a_comma_list_of_pair_sets_is_their_union_in_order_without_repeats():
    offline, demo = names("offline"), names("demo")
    both = names("offline,demo")
    assert both == offline + [p for p in demo if p not in offline]
    assert set(names("demo, offline")) == set(both) and len(both) == len(set(both))


def test_pair_sets_and_explicit_pairs_mix():
    extra = ("demo/minilm-l3", "demo/efficientnet-lite0")
    got = names("demo," + ":".join(extra))
    assert got[: len(names("demo"))] == names("demo") and extra in got


def test_spaces_around_the_colon_are_ignored():
    assert names(" demo/minilm-l6 : demo/dinov2-s-imgfocus ") == [("demo/minilm-l6", "demo/dinov2-s-imgfocus")]


def test_an_unknown_token_is_named_with_what_it_could_be():
    with pytest.raises(UserError) as err:
        names("offline,nope")
    msg = str(err.value)
    assert "'nope' is neither a pair set name (" in msg and "offline" in msg and "X_MODEL:Y_MODEL" in msg
    with pytest.raises(UserError, match="--pairs is empty"):
        names(" , ")
