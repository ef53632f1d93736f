"""The held-out split of a dataset by sample id, shared by every experiment that trains on a dataset and
scores on the rest (JEPA runs, `jepa compare`, stitching): one rule, so they all hold out the same samples."""

from __future__ import annotations

import hashlib


def is_heldout(sample_id: str, fraction: float) -> bool:
    """Whether `sample_id` is in the held-out split: sha256(id) read as a number in [0, 1) is below
    `fraction`. Depends on the id alone (not on seed or order), so every run holds out the same samples."""
    digest = hashlib.sha256(sample_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction
