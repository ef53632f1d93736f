"""Sentences and labels the leaderboard's README.md and index.html print beside each ranked table: the
tie-group marker of a rank, the rule behind shared ranks, and the floor of a permutation p-value.

Plain text without Markdown or HTML markup (no backticks, no brackets that could start a link), so the
README and the page can both print it after their own escaping.
"""

from __future__ import annotations

from collections.abc import Sequence

from platobench.results import ResultRecord

MISSING = "missing"

TIE_RULE = ("A rank marked = is shared: walking down the table best first, a row joins the group of the "
            "row that leads it when both have a CI and the two CIs overlap, and a row without a CI never "
            "shares a rank (competition ranking: 1=, 1=, 3, ...).")


def rank_labels(ranks: Sequence[int | None]) -> list[str]:
    """Display labels of a table's ranks, in order: "2=" for a rank two or more rows share, "2" for a
    rank of one row, "missing" for None (a score that is not finite)."""
    counts: dict[int, int] = {}
    for rank in ranks:
        if rank is not None:
            counts[rank] = counts.get(rank, 0) + 1
    return [MISSING if rank is None else f"{rank}=" if counts[rank] > 1 else str(rank) for rank in ranks]


def _floor(n_perm: int) -> str:
    """1/(B+1) to three significant digits, with the table's three-decimal rounding when that differs."""
    floor = 1 / (n_perm + 1)
    exact, shown = f"{floor:.3g}", f"{floor:.3f}"
    return exact if float(exact) == float(shown) else f"{exact} (shown as {shown})"


def p_floor_sentence(records: Sequence[ResultRecord]) -> str | None:
    """One sentence on how small the p-values of `records` (one board) can be: a permutation p-value
    from B permutations is (1 + permutations scoring at least as well) / (B + 1), so never below
    1/(B+1); a null computed exactly (B = 0) has no such floor. None when no record has a p-value."""
    perms = sorted({r.null.n_perm for r in records if r.null is not None and r.null.n_perm > 0})
    exact = any(r.null is not None and r.null.n_perm == 0 for r in records)
    parts = []
    if perms:
        b = " or ".join(str(n) for n in perms)
        floor = " or ".join(_floor(n) for n in perms)
        parts.append(
            f"p is a permutation p-value, (1 + permutations scoring at least as well) / (B + 1) with B = {b} "
            f"permutations, so it is never below 1/(B+1) = {floor}: a p at that floor means no permutation "
            "reached the score, not that p is exactly that small")
    if exact:
        parts.append("p of a record with B = 0 permutations comes from an exact null distribution and has "
                     "no 1/(B+1) floor" if perms else
                     "p comes from an exact null distribution (B = 0 permutations), so it has no 1/(B+1) floor")
    return "; ".join(parts) + "." if parts else None
