"""The committed boards hold no copy: no record of two different models reaches the `copy` threshold or its
metric's best value, so no rank is withheld (platobench/leaderboard/flags.py); the flags that only inform
(`tied`) fall on control rows alone."""

from __future__ import annotations

from pathlib import Path

from platobench.leaderboard import build_boards
from platobench.leaderboard.baselines import is_baseline_record
from platobench.leaderboard.flags import COPY_CKA, INTEGRITY, TIED, record_flags
from platobench.results import load_records

RESULTS = Path(__file__).resolve().parents[2] / "results" / "offline"


def test_no_committed_pair_is_flagged_as_a_copy_and_none_is_withheld():
    records = load_records(RESULTS)
    paired = [r for r in records if r.kind == "paired"]
    assert paired and all(isinstance(r.details.get("copy_cka"), float) for r in paired)
    largest = max(r.details["copy_cka"] for r in paired)
    assert largest < COPY_CKA - 0.05, largest  # .928 (EfficientNet-Lite1 x the random-init Lite0, their stems)
    assert not any(INTEGRITY.intersection(record_flags(r)) for r in records)
    assert all(row.rank is not None for b in build_boards(records) for row in b.rows)
    tied = [r for r in records if TIED in record_flags(r)]
    assert tied and all(is_baseline_record(r) for r in tied)
