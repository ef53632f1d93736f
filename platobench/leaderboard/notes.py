"""Sentences and labels the leaderboard's README.md and index.html print beside each ranked table: the
tie-group marker of a rank, the rule behind shared ranks, the floor of a permutation p-value (and how a
p at that floor is shown), the words for a parameter count that does not apply or is unknown, and what a
zero-shot row's score and CI mean.

Plain text without Markdown or HTML markup (no backticks, no brackets that could start a link), so the
README and the page can both print it after their own escaping.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from platobench.leaderboard.kinds import record_kind
from platobench.results import NullRef, ResultRecord

MISSING = "missing"
NOT_APPLICABLE = "n/a"  # a parameter count of a baseline without learned weights: there is nothing to count
UNKNOWN = "unknown"  # a parameter count a real model's record does not give
PARAMS_RULE = (f"Parameter counts: {NOT_APPLICABLE} = not applicable (a baseline without learned weights), "
               f"{UNKNOWN} = a real model whose record gives no count.")

WITHHELD = "withheld"  # the rank of a row with an integrity flag (platobench/leaderboard/flags.py)
TIE_RULE = ("Rows that exceed their own null (calibrated CI above 0, p ≤ .05) rank first, the others after "
            "them, each tier best score first. A rank marked = is shared: walking down a tier, a row joins the "
            "group of the row that leads it unless their paired difference on the same subsets separates them "
            "at .05 (records without subset scores: when both have a CI and the two CIs overlap), and a row "
            "without either never shares a rank (competition ranking: 1=, 1=, 3, ...).")


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


def p_at_floor(null: NullRef) -> bool:
    """Whether a permutation p-value is at its floor 1/(B+1): no permutation reached the score."""
    return null.n_perm > 0 and null.p_value <= 1 / (null.n_perm + 1) * (1 + 1e-9)


def fmt_p(null: NullRef | None, digits: int = 3) -> str:
    """A p-value cell: MISSING without a null, "≤0.010" for a permutation p at its floor 1/(B+1) (the
    true p may be far smaller; the floor rounded up, so the bound holds), else the value."""
    if null is None or not math.isfinite(null.p_value):
        return MISSING
    if p_at_floor(null):
        step = 10.0 ** -digits
        return f"≤{math.ceil(1 / (null.n_perm + 1) / step - 1e-9) * step:.{digits}f}"
    return f"{null.p_value:.{digits}f}"


def top5_of(record: ResultRecord) -> tuple[float | None, float | None]:
    """(top-5 accuracy, its chance level) of a zero-shot record: `details.top5.mean` and `details.chance_top5`,
    each None unless a finite number (a record's extra is whatever its file says); (None, None) for other
    kinds."""
    if not record_kind(record.kind).top5:
        return None, None

    def number(value: Any) -> float | None:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        return float(value) if ok else None

    top5 = record.details.get("top5")
    return number(top5.get("mean") if isinstance(top5, dict) else None), number(record.details.get("chance_top5"))


def in_sample_of(record: ResultRecord) -> float | None:
    """A held-out selection's in-sample best (`details.heldout_selection.in_sample`: the mean of its halves'
    best-of-grid scores, at the score's N), None for other records or unless a finite number."""
    if record.metric.selection != "heldout":
        return None
    held = record.details.get("heldout_selection")
    value = held.get("in_sample") if isinstance(held, dict) else None
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


def has_in_sample(records: Sequence[ResultRecord]) -> bool:
    """Whether a board shows the in-sample column: some of its records use held-out layer selection."""
    return any(r.metric.selection == "heldout" for r in records)


def zeroshot_sentence(records: Sequence[ResultRecord]) -> str | None:
    """What the score and CI of zero-shot rows mean, and that a row of zeros is a measured zero: the score
    is a top-1 accuracy over the C classes matched, averaged over seeded image subsamples, and the CI is
    the range over those seeds, so 0.000 [0.000, 0.000] means no class matched on any seed (it has zero
    width whenever every seed scores the same). None when no record is a zero-shot record."""
    zs = [r for r in records if r.kind == "zeroshot"]
    if not zs:
        return None
    zeros = sum(r.score == 0 and r.ci is not None and r.ci.hi == 0 for r in zs)
    levels = " or ".join(sorted({f"{r.ci.level:.3f}" for r in zs if r.ci is not None}))
    text = ("Zero-shot score: top-1 accuracy of matching the classes to the class prompts without labels, "
            "the mean over seeded image subsamples; its CI is the range over those seeds"
            f"{f' (level (S-1)/(S+1) = {levels})' if levels else ''}, of zero width when every seed scores the same. "
            "top-5: the share of classes whose own name is among their five candidate names (the matched one, "
            "then the four of largest gain under the matching), the mean over the same seeds, with its chance "
            "level min(5, C)/C in brackets.")
    if zeros:
        text += (f" {zeros} row(s) read 0.000 [0.000, 0.000]: a measured zero (no class matched on any "
                 "seed, below chance), not a missing score.")
    return text


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
            "reached the score, not that p is exactly that small; such a p is shown as ≤ the floor")
    if exact:
        parts.append("p of a record with B = 0 permutations comes from an exact null distribution and has "
                     "no 1/(B+1) floor" if perms else
                     "p comes from an exact null distribution (B = 0 permutations), so it has no 1/(B+1) floor")
    return "; ".join(parts) + "." if parts else None
