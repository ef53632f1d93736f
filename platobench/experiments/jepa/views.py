"""Positive pairs for the text JEPA: good views, bad views, and mixtures of the two.

Balestriero & LeCun ("Proving and Improving the Platonic Representation Hypothesis with JEPAs", 2026):
- good: two *different* captions of one image (COCO's 5 captions; openclipart's title and description).
  They share only the scene they describe, so invariance to the pair teaches what the image shows.
- bad: two random corruptions of *one* caption: a random contiguous span of its words, then random words
  replaced by the mask token. The views share the wording, so invariance can be met by surface overlap.
- mix:P: each pair is good with probability P, bad otherwise.

Pairs are drawn from a seeded `random.Random`, so a (captions, mode, seed) triple always yields the same
batches.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from platobench.api import UserError

SPAN_MIN_FRACTION = 0.6  # a bad view keeps a contiguous span of at least 60% of the caption's words
MASK_PROBABILITY = 0.15  # then masks each kept word with this probability (BERT's rate, Devlin et al. 2019)


@dataclass(frozen=True)
class ViewMode:
    """Which pairs to build: kind good | bad | mix, with `p_good` the share of good pairs (1, 0, or P)."""

    kind: Literal["good", "bad", "mix"]
    p_good: float

    @property
    def label(self) -> str:
        """Command-line spelling: "good", "bad" or "mix:P"."""
        return f"mix:{self.p_good:g}" if self.kind == "mix" else self.kind


def parse_views(text: str) -> ViewMode:
    """Parse `--views`: "good", "bad", or "mix:P" with P in [0, 1] the share of good pairs."""
    if text == "good":
        return ViewMode("good", 1.0)
    if text == "bad":
        return ViewMode("bad", 0.0)
    if text.startswith("mix:"):
        try:
            p = float(text[4:])
        except ValueError:
            p = float("nan")
        if 0.0 <= p <= 1.0:
            return ViewMode("mix", p)
    raise UserError(f"--views: expected good, bad or mix:P with P a number in [0, 1], got {text!r}")


@dataclass(frozen=True)
class ViewPair:
    """Two views of sample `sample`. `source_a`/`source_b` index the caption each view was made from
    (equal for a bad pair, different for a good pair)."""

    sample: int
    a: str
    b: str
    source_a: int
    source_b: int
    kind: Literal["good", "bad"]


def distinct_captions(captions: Sequence[str]) -> list[str]:
    """Non-empty captions with surrounding whitespace removed, duplicates dropped, first occurrence kept."""
    seen: dict[str, None] = {}
    for caption in captions:
        text = " ".join(caption.split())
        if text:
            seen.setdefault(text, None)
    return list(seen)


def corrupt(caption: str, rng: random.Random, mask_token: str) -> str:
    """One bad view of `caption`: a random contiguous span of >= 60% of its words (at least one word),
    each kept word replaced by `mask_token` with probability 0.15."""
    words = caption.split()
    keep = max(1, round(len(words) * rng.uniform(SPAN_MIN_FRACTION, 1.0)))
    start = rng.randrange(len(words) - keep + 1)
    span = words[start : start + keep]
    return " ".join(mask_token if rng.random() < MASK_PROBABILITY else word for word in span)


class ViewSampler:
    """Seeded stream of view pairs over samples that each have at least two distinct captions.

    `captions[i]` lists the captions of sample i (duplicates and blanks are removed; samples left with
    fewer than two are rejected, so good and bad runs train on exactly the same samples).
    """

    def __init__(
        self, captions: Sequence[Sequence[str]], mode: ViewMode, seed: int, mask_token: str = "[MASK]"
    ):
        self.captions = [distinct_captions(c) for c in captions]
        short = [i for i, c in enumerate(self.captions) if len(c) < 2]
        if short:
            raise ValueError(
                f"{len(short)} samples have fewer than two distinct captions (first: {short[:5]}); "
                "filter them out first (see platobench.experiments.jepa.train.eligible)"
            )
        if len(self.captions) < 2:
            raise ValueError(f"need at least 2 samples to draw batches, got {len(self.captions)}")
        self.mode = mode
        self.mask_token = mask_token
        self.rng = random.Random(seed)

    def pair(self, sample: int) -> ViewPair:
        """Draw one pair of `sample`: good with probability `mode.p_good`, else bad."""
        captions = self.captions[sample]
        if self.mode.kind == "good" or (self.mode.kind == "mix" and self.rng.random() < self.mode.p_good):
            i, j = self.rng.sample(range(len(captions)), 2)
            return ViewPair(sample, captions[i], captions[j], i, j, "good")
        i = self.rng.randrange(len(captions))
        a = corrupt(captions[i], self.rng, self.mask_token)
        b = corrupt(captions[i], self.rng, self.mask_token)
        return ViewPair(sample, a, b, i, i, "bad")

    def batches(self, batch_size: int) -> Iterator[list[ViewPair]]:
        """Endless batches of `batch_size` pairs (`epoch_batches` order). Needs batch_size <= samples."""
        for indices in epoch_batches(len(self.captions), batch_size, self.rng):
            yield [self.pair(i) for i in indices]


def epoch_batches(count: int, batch_size: int, rng: random.Random) -> Iterator[list[int]]:
    """Endless batches of `batch_size` sample indices out of `count`: each epoch visits the samples in a
    fresh order shuffled by `rng` (an epoch's last incomplete batch is dropped). ValueError unless
    1 <= batch_size <= count."""
    if not 1 <= batch_size <= count:
        raise ValueError(f"batch_size must be in [1, {count}] (the number of samples), got {batch_size}")
    while True:
        order = list(range(count))
        rng.shuffle(order)
        for start in range(0, count - batch_size + 1, batch_size):
            yield order[start : start + batch_size]
