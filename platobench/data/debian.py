"""Locating data that arrives through Debian packages, with errors that name the package to install."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from platobench.errors import UserError

INSTALL_HINT = "run `make install` as root, or: sudo apt-get update && sudo apt-get install -y {packages}"


def package_version(package: str) -> str | None:
    """The installed version of a Debian package (`dpkg-query`), or None when dpkg is absent or the
    package is not installed."""
    if shutil.which("dpkg-query") is None:
        return None
    proc = subprocess.run(
        ["dpkg-query", "-W", "-f=${Status}\t${Version}", package], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0 or "\t" not in proc.stdout:
        return None
    status, version = proc.stdout.split("\t", 1)
    return version.strip() if status.endswith(" installed") else None


def require_dir(path: Path, packages: list[str], what: str) -> Path:
    """`path` if it is a folder, else a UserError naming the Debian package(s) that provide `what`."""
    if not path.is_dir():
        names = " ".join(packages)
        raise UserError(
            f"{what} not found at {path}: it comes from the Debian package(s) {names}; "
            + INSTALL_HINT.format(packages=names)
        )
    return path
