"""How the leaderboard shows and judges the records of each kind: the rendering half of a setting kind's
protocol (`bench.protocols` holds the running half; the leaderboard never imports the bench).

`RECORD_KINDS` (a `platobench.registry.Registry`) holds one `RecordKind` per kind a record may have:
"paired" (a metric over the layer grid, judged by paired tests on its subset scores and null draws),
"zeroshot" (top-1 class matching, calibrated against chance, top-5 beside it) and "stitch" (captioning
scores, with their own table). A record of any other kind (a plugin's setting kind) is shown by
`GENERIC`: its boards sort after the built-in ones, its calibrated score is its excess over its null, and
it is judged by interval overlap; a plugin registers a `RecordKind` of its own to say otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from platobench.registry import Registry


@dataclass(frozen=True)
class RecordKind:
    """`order`: boards sort by it, then by setting id (paired mutual kNN boards come first: `order` 0 is
    split by `headline_metric`). `calibration`: what the calibrated score is the excess over — "null" (the
    permutation null's mean, toward the metric's best value), "chance" (the chance level, toward 1) or
    "none" (no calibrated score). `top5`: boards show top-5 accuracy and its chance beside the score.
    `paired_draws`: records state subset scores and null draws that pair draw by draw with their controls'.
    `alignment_plots`: the size and LLM-vs-JEPA plots apply (not to captioning scores). `verdicts`: its
    records are judged against matched baseline records (platobench/leaderboard/verdicts.py); a stitch
    board's controls are its own map variants, in its own table."""

    order: int
    calibration: Literal["null", "chance", "none"] = "null"
    top5: bool = False
    paired_draws: bool = False
    alignment_plots: bool = True
    verdicts: bool = True


#: The view of a record whose kind no one registered.
GENERIC = RecordKind(order=4)

RECORD_KINDS: Registry[RecordKind] = Registry("record kind")
RECORD_KINDS.register("paired", RecordKind(order=0, paired_draws=True))
RECORD_KINDS.register("zeroshot", RecordKind(order=2, calibration="chance", top5=True))
RECORD_KINDS.register("stitch", RecordKind(order=3, calibration="none", alignment_plots=False, verdicts=False))


def record_kind(kind: str) -> RecordKind:
    """The view of records of `kind` (`GENERIC` for a kind no one registered)."""
    return RECORD_KINDS.get(kind) if kind in RECORD_KINDS else GENERIC
