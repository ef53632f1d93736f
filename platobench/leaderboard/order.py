"""The order of boards on the leaderboard and of settings on the terminal board, defined here only.

The headline board comes first: paired settings scored by mutual k-nearest neighbours (the Platonic
Representation Hypothesis' own metric), then the other paired settings, then zero-shot matching, then
stitching; settings of one group follow in order of their id.
"""

from __future__ import annotations

HEADLINE_METRIC = "mutual_knn"
GROUPS = ("paired, mutual kNN", "paired, other metrics", "zero-shot", "stitching")


def board_group(kind: str, metric_id: str) -> int:
    """The index into GROUPS of a record's setting (`kind` is the record's kind: paired/zeroshot/stitch)."""
    if kind == "paired":
        return 0 if metric_id == HEADLINE_METRIC else 1
    return 2 if kind == "zeroshot" else 3


def setting_key(setting: str, kind: str, metric_id: str) -> tuple[int, str]:
    """The sort key of a setting: its group, then its id."""
    return board_group(kind, metric_id), setting
