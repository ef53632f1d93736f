"""Good, bad and mixed views are built as specified, and seeded."""

from __future__ import annotations

import pytest

from platobench.errors import UserError
from platobench.experiments.jepa.views import ViewMode, ViewSampler, corrupt, distinct_captions, parse_views

CAPTIONS = [
    [
        f"a {colour} {animal} sleeps on the {place} near the old wooden door",
        f"{place} with a {animal}",
        f"the {colour} one",
    ]
    for colour, animal, place in [
        ("red", "cat", "sofa"),
        ("blue", "dog", "rug"),
        ("green", "frog", "leaf"),
        ("black", "horse", "field"),
        ("white", "goose", "pond"),
        ("grey", "owl", "branch"),
    ]
]


def test_parse_views_accepts_the_three_forms_and_names_the_argument_otherwise():
    assert parse_views("good") == ViewMode("good", 1.0)
    assert parse_views("bad") == ViewMode("bad", 0.0)
    assert parse_views("mix:0.25") == ViewMode("mix", 0.25)
    assert parse_views("mix:0.25").label == "mix:0.25"
    for wrong in ["mix", "mix:1.5", "mix:-0.1", "mix:abc", "GOOD", ""]:
        with pytest.raises(UserError, match="--views"):
            parse_views(wrong)


def test_good_pairs_never_come_from_one_caption():
    sampler = ViewSampler(CAPTIONS, parse_views("good"), seed=0)
    for _ in range(200):
        sample = sampler.rng.randrange(len(CAPTIONS))
        pair = sampler.pair(sample)
        assert pair.kind == "good" and pair.source_a != pair.source_b
        assert pair.a == CAPTIONS[sample][pair.source_a] and pair.b == CAPTIONS[sample][pair.source_b]
        assert pair.a != pair.b


def is_bad_view_of(view: str, caption: str, mask: str) -> bool:
    """True when `view` is a contiguous span of >= 60% of caption's words with some words masked."""
    words, got = caption.split(), view.split()
    if not got or len(got) < round(0.6 * len(words)):
        return False
    for start in range(len(words) - len(got) + 1):
        if all(g == w or g == mask for g, w in zip(got, words[start : start + len(got)])):
            return True
    return False


def test_bad_pairs_always_come_from_one_caption_as_span_and_mask_corruptions():
    sampler = ViewSampler(CAPTIONS, parse_views("bad"), seed=1)
    masked = shortened = 0
    for _ in range(300):
        sample = sampler.rng.randrange(len(CAPTIONS))
        pair = sampler.pair(sample)
        assert pair.kind == "bad" and pair.source_a == pair.source_b
        caption = CAPTIONS[sample][pair.source_a]
        assert is_bad_view_of(pair.a, caption, "[MASK]") and is_bad_view_of(pair.b, caption, "[MASK]")
        masked += "[MASK]" in pair.a
        shortened += len(pair.a.split()) < len(caption.split())
    assert masked > 0 and shortened > 0  # both corruptions actually happen


def test_mix_draws_good_pairs_at_the_requested_share():
    sampler = ViewSampler(CAPTIONS, parse_views("mix:0.3"), seed=2)
    kinds = [sampler.pair(i % len(CAPTIONS)).kind for i in range(4000)]
    assert kinds.count("good") / len(kinds) == pytest.approx(0.3, abs=0.03)  # binomial sd 0.007
    assert {k for k in kinds} == {"good", "bad"}


def test_batches_reproduce_with_the_seed_and_cover_each_sample_once_per_epoch():
    def first_batches(seed: int) -> list:
        stream = ViewSampler(CAPTIONS, parse_views("mix:0.5"), seed=seed).batches(3)
        return [next(stream) for _ in range(4)]

    assert first_batches(7) == first_batches(7)
    assert first_batches(7) != first_batches(8)
    epoch = first_batches(7)[:2]  # 6 samples, batches of 3: one epoch
    assert sorted(p.sample for batch in epoch for p in batch) == list(range(len(CAPTIONS)))


def test_sampler_rejects_samples_without_two_distinct_captions_and_bad_batch_sizes():
    assert distinct_captions(["  a  cat ", "a cat", "", "a dog"]) == ["a cat", "a dog"]
    with pytest.raises(ValueError, match="fewer than two distinct captions"):
        ViewSampler([["a cat", "a cat "], ["x", "y"]], parse_views("bad"), seed=0)
    with pytest.raises(ValueError, match="batch_size"):
        next(ViewSampler(CAPTIONS, parse_views("good"), seed=0).batches(len(CAPTIONS) + 1))


def test_corrupting_a_one_word_caption_keeps_a_word():
    import random

    rng = random.Random(0)
    assert all(corrupt("hello", rng, "[MASK]") in {"hello", "[MASK]"} for _ in range(50))
