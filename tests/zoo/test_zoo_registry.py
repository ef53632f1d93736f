"""Zoo lookup: by name (case-insensitive), glob, set, or a comma-separated mix; unknown names suggest."""

from __future__ import annotations

import pytest

from platobench.errors import UserError
from platobench.zoo import load_zoo


@pytest.fixture(scope="module")
def zoo():
    return load_zoo()


def test_get_is_case_insensitive(zoo):
    assert zoo.get("Qwen2.5/Qwen2.5-7B").name == "qwen2.5/qwen2.5-7b"
    assert "DEMO/MINILM-L6" in zoo and "demo/minilm-l7" not in zoo and 3 not in zoo


@pytest.mark.parametrize(
    ("query", "first_suggestion"),
    [
        ("qwen2.5-7b", "qwen2.5/qwen2.5-7b"),  # the part after '/'
        ("Qwen/Qwen2.5-7B", "qwen2.5/qwen2.5-7b"),  # a hub id
        ("dinov2/vit-g14", "dinov2/vit-g14.lvd142m"),  # a prefix
        ("demo/minilm-l7", "demo/minilm-l6"),  # a typo
    ],
)
def test_unknown_name_suggests_the_closest(zoo, query, first_suggestion):
    with pytest.raises(UserError) as info:
        zoo.get(query)
    message = str(info.value)
    assert message.startswith(f"unknown model {query!r}")
    assert f"did you mean: {first_suggestion}" in message


def test_unknown_name_without_close_match_points_to_the_list(zoo):
    with pytest.raises(UserError, match="see `platobench zoo list`"):
        zoo.get("zzzzzzzz")


def test_list_filters(zoo):
    assert [s.name for s in zoo.list("demo/*", modality="text")] == [
        "demo/smollm2-135m", "demo/minilm-l6", "demo/minilm-l3", "demo/mpnet-base", "demo/gemma3-270m"]
    assert {s.name for s in zoo.list("*DINOV2*", kind="vision_vit")} >= {"dinov2/vit-g14.lvd142m",
                                                                          "dinov2-hf/vit-s14"}
    assert all(s.modality == "vision" for s in zoo.list(modality="vision"))
    assert len(zoo.list()) == len(zoo)
    assert zoo.list("no-such-family/*") == []


def test_list_rejects_bad_filters(zoo):
    with pytest.raises(UserError, match="modality must be"):
        zoo.list(modality="audio")
    with pytest.raises(UserError, match="kind must be one of"):
        zoo.list(kind="llm")


def test_resolve_name_set_glob_and_mix(zoo):
    assert [s.name for s in zoo.resolve("demo/minilm-l6")] == ["demo/minilm-l6"]
    assert [s.name for s in zoo.resolve("demo")] == zoo.sets["demo"]
    assert [s.name for s in zoo.resolve("qwen3/*")] == [
        "qwen3/qwen3-0.6b-base", "qwen3/qwen3-1.7b-base", "qwen3/qwen3-4b-base", "qwen3/qwen3-8b-base"]
    mixed = [s.name for s in zoo.resolve("demo/minilm-l6, demo, qwen3/qwen3-8b*")]
    assert mixed == ["demo/minilm-l6", "demo/dinov2-s-imgfocus", "demo/efficientnet-lite0", "demo/smollm2-135m",
                     "qwen3/qwen3-8b-base"]  # order kept, each model once


@pytest.mark.parametrize(
    ("query", "expected"),
    [("", "empty string"), (" , ", "empty string"), ("nope/*", "no model matches the glob"),
     ("prh-vall", "did you mean: prh-val")],
)
def test_resolve_errors(zoo, query, expected):
    with pytest.raises(UserError, match=expected):
        zoo.resolve(query)


def test_sets_are_a_copy(zoo):
    zoo.sets["demo"].append("x/y")
    zoo.sets.pop("prh-val")
    assert "x/y" not in zoo.sets["demo"] and "prh-val" in zoo.sets


def test_sets_of(zoo):
    assert set(zoo.sets_of("dinov2/vit-g14.lvd142m")) == {
        "prh-val-vision", "prh-val", "prh-custom-vision", "default21-vision", "dinov2"}
    assert zoo.sets_of("demo/gemma3-270m") == ["demo-extra"]
