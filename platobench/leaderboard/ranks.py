"""Ranks the data can support: entries the data cannot tell from the leader share its rank.

The rule (used by the terminal board and the leaderboard alike): sort the entries best first (by the
metric's direction; equal scores keep their input order). Walk down the sorted list. The first entry
leads group 1. An entry joins the current group unless the data separate it from the group's leader:
by `separated(leader, entry)` where the caller can test the two (records of one board: their paired
difference on the same subsets, platobench/leaderboard/paired.py); otherwise (`separated` absent or
None for the two) when both have a CI and the two intervals overlap (closed intervals: touching ends
overlap). Otherwise it starts a new group and leads it. Entries without a CI and no paired test never
tie. A group's rank is 1 + the number of entries in the
groups before it (competition ranking: 1, 1, 1, 4, 5, 5, ...).
"""

from __future__ import annotations

import math
from collections.abc import Callable


def _overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


def tie_ranks(
    scores: list[float],
    cis: list[tuple[float, float] | None],
    higher_is_better: bool,
    separated: Callable[[int, int], bool | None] | None = None,
) -> list[int]:
    """Rank of each input (1-based, same order as `scores`); ties as in the module docstring.

    scores: one score per entry (NaN sorts last and never ties); cis: the entry's (lo, hi) confidence
    interval or None; higher_is_better: the metric's direction; separated(i, j): whether entries i and j
    (input positions) differ by a test of the two, None where it cannot tell.
    """
    if len(scores) != len(cis):
        raise ValueError(f"tie_ranks: {len(scores)} scores but {len(cis)} confidence intervals")

    def key(i: int) -> tuple[bool, float, int]:
        s = scores[i]
        bad = math.isnan(s)
        return (bad, 0.0 if bad else (-s if higher_is_better else s), i)

    order = sorted(range(len(scores)), key=key)
    ranks = [0] * len(scores)
    leader: int | None = None
    for pos, i in enumerate(order):
        lead_ci = None if leader is None else cis[leader]
        ci = cis[i]
        apart = None if separated is None or leader is None or math.isnan(scores[i]) else separated(leader, i)
        if apart is not None:
            tie = not apart
        else:
            tie = (leader is not None and lead_ci is not None and ci is not None and not math.isnan(scores[i])
                   and _overlap(lead_ci, ci))
        if tie:
            ranks[i] = ranks[leader]
        else:
            leader = i
            ranks[i] = pos + 1
    return ranks
