"""Zero-shot top-1 with classes the kernels cannot tell apart (identical embeddings on one side): counted
in expectation over their relabellings, so float rounding that decides the solver's pick among them
cannot move the score (platobench/metrics/zeroshot.py, step 4)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from platobench.metrics.zeroshot import (
    NULL_DRAWS,
    assignment_weights,
    match_classes,
    null_tail,
    random_matching_tail,
    tie_groups,
)


def test_tie_groups_are_rows_equal_after_normalisation():
    E = np.array([[1.0, 0.0], [2.0, 0.0], [0.0, 1.0], [1.0, 1e-9]])
    g = tie_groups(E)
    assert g[0] == g[1] and len({g[0], g[2], g[3]}) == 3  # a near tie is not a tie


def test_without_ties_the_weights_are_the_identity_and_top1_counts_fixed_points():
    groups = np.arange(6)
    assert np.array_equal(assignment_weights(groups, groups), np.eye(6))
    rng = np.random.default_rng(0)
    image, text = rng.normal(size=(6, 4)), rng.normal(size=(6, 5))
    r = match_classes(image, text, seed=1)
    assert r["top1"] == np.mean(np.asarray(r["permutation"]) == np.arange(6))
    assert r["tied_classes"] == {"image": [], "text": []}
    assert r["null_tail"] == random_matching_tail(6, round(r["top1"] * 6))


def test_relabelling_within_a_tie_group_leaves_the_count_unchanged():
    image_groups = np.array([0, 1, 2, 2, 3, 4])
    text_groups = np.array([0, 0, 1, 2, 3, 3])
    W = assignment_weights(image_groups, text_groups)
    truth = np.arange(6)
    for p in itertools.permutations(range(6)):
        p = np.array(p)
        count = W[truth, p].sum()
        for a, b in ((0, 1), (4, 5)):  # swap which tied names two image classes got
            q = p.copy()
            ia, ib = np.flatnonzero(p == a)[0], np.flatnonzero(p == b)[0]
            q[ia], q[ib] = b, a
            assert W[truth, q].sum() == pytest.approx(count, abs=1e-12)
        r = p.copy()
        r[[2, 3]] = r[[3, 2]]  # swap the names of two tied image classes
        assert W[truth, r].sum() == pytest.approx(count, abs=1e-12)
    # a uniform random matching still finds one correct class in expectation
    assert np.mean([W[truth, np.array(p)].sum() for p in itertools.permutations(range(6))]) == pytest.approx(1.0)


def test_monte_carlo_tail_matches_enumeration():
    image_groups, text_groups = np.arange(6), np.array([0, 0, 0, 1, 2, 3])
    W = assignment_weights(image_groups, text_groups)
    counts = np.array([W[np.arange(6), np.array(p)].sum() for p in itertools.permutations(range(6))])
    for observed in sorted(set(np.round(counts, 9)))[1:4]:
        exact = np.mean(counts >= observed - 1e-9)
        assert null_tail(W, observed, seed=0) == pytest.approx(exact, abs=4 * np.sqrt(exact * (1 - exact) / NULL_DRAWS) + 1e-4)


def test_rounding_noise_on_the_other_side_does_not_move_a_tied_top1():
    """Names 0-2 and 3-4 share embeddings; image classes carry the same structure plus tiny noise,
    re-drawn at the 1e-6 level: the raw fixed-point count may change, the expected one may not."""
    rng = np.random.default_rng(0)
    base = rng.normal(size=(8, 6))
    text = base.copy()
    text[1] = text[2] = text[0]
    text[4] = text[3]
    image = base + 0.3 * rng.normal(size=base.shape)
    raw, tops = set(), set()
    for s in range(6):
        noisy = image * (1 + 1e-6 * np.random.default_rng(100 + s).normal(size=image.shape))
        r = match_classes(noisy, text, seed=0)
        assert r["tied_classes"]["text"] == [[0, 1, 2], [3, 4]]
        raw.add(float(np.mean(np.asarray(r["permutation"]) == np.arange(8))))
        tops.add(round(r["top1"], 12))
    assert len(raw) > 1  # the solver's pick among tied names does follow the noise (.125 / .25 / .375)
    assert len(tops) == 1
