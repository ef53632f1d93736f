"""Ranks the data can support: entries whose confidence intervals overlap the leader's share a rank.

The rule (used by the terminal board and the leaderboard alike): sort the entries best first (by the
metric's direction; equal scores keep their input order). Walk down the sorted list. The first entry
leads group 1. An entry joins the current group when both it and the group's leader have a CI and the
two intervals overlap (closed intervals: touching ends overlap); otherwise it starts a new group and
leads it. Entries without a CI therefore never tie. A group's rank is 1 + the number of entries in the
groups before it (competition ranking: 1, 1, 1, 4, 5, 5, ...).
"""

from __future__ import annotations

import math


def _overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


def tie_ranks(scores: list[float], cis: list[tuple[float, float] | None], higher_is_better: bool) -> list[int]:
    """Rank of each input (1-based, same order as `scores`); ties as in the module docstring.

    scores: one score per entry (NaN sorts last and never ties); cis: the entry's (lo, hi) confidence
    interval or None; higher_is_better: the metric's direction.
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
        if (leader is not None and lead_ci is not None and ci is not None and not math.isnan(scores[i])
                and _overlap(lead_ci, ci)):
            ranks[i] = ranks[leader]
        else:
            leader = i
            ranks[i] = pos + 1
    return ranks
