"""sha256 of a file's bytes, read in blocks (never whole into memory): the content hash behind feature-entry
checksums and the revisions of users' datasets."""

from __future__ import annotations

import hashlib
from pathlib import Path


def file_sha256(path: Path) -> str:
    """sha256 (hex) of the file at `path`."""
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()
