"""The leaderboard's output folder, written whole or not at all.

A build writes every file into a staging folder beside OUT and swaps it in at the end
(`platobench.files.atomic.atomic_dir`): a full disk or a crash mid-build leaves the previous build as
it was, never a cut README.md beside an older index.html. The swap replaces OUT with everything in
it, so an existing OUT is only replaced when it is empty, carries the marker file every build writes
(`MARKER`), or holds nothing but what a build writes (`BUILD_FILES`, PNGs under plots/) — a build from
before the marker. Any other folder is refused before anything is written. Staging left beside OUT by a
killed build is removed by the next one (platobench/files/staging.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from platobench.errors import UserError
from platobench.files.atomic import WriteError, atomic_dir
from platobench.files.ids import shown

MARKER = ".platobench-leaderboard"
MARKER_TEXT = "Written by `platobench leaderboard`, which replaces this whole folder on every build.\n"
BUILD_FILES = ("README.md", "leaderboard.csv", "index.html")
PLOTS = "plots"


def _foreign(folder: Path) -> str | None:
    """The first entry under `folder` (relative path) that a build does not write, or None."""
    for entry in sorted(folder.iterdir()):
        if entry.is_symlink():
            return entry.name
        if entry.name in BUILD_FILES and entry.is_file():
            continue
        if entry.name == PLOTS and entry.is_dir():
            for sub in sorted(entry.rglob("*")):
                if sub.is_symlink() or not (sub.is_dir() or (sub.is_file() and sub.suffix == ".png")):
                    return str(sub.relative_to(folder))
            continue
        return entry.name
    return None


def check_out_dir(out_dir: Path, results_dir: Path) -> Path:
    """The folder a build of `results_dir` may replace: `out_dir` with symlinks resolved. UserError
    naming `out_dir` when it is not a folder, holds the records, or is a folder of other files."""
    try:
        target = Path(out_dir).resolve()
        results = Path(results_dir).resolve()
        if target == results or target in results.parents:
            raise UserError(f"--out: {out_dir} holds the result records of --results {results_dir}; a build "
                            "replaces its folder whole, so choose another --out")
        if not target.exists():
            return target
        if not target.is_dir():
            raise UserError(f"--out: {out_dir} exists and is not a folder")
        if (target / MARKER).is_file():
            return target
        foreign = _foreign(target)
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop
        raise UserError(f"--out: cannot read {out_dir}: {getattr(exc, 'strerror', None) or exc}") from exc
    if foreign is not None:
        raise UserError(f"--out: {out_dir} is a folder that is not a leaderboard build (it holds "
                        f"{shown(foreign)}); a build replaces its folder whole, so choose a new or empty folder")
    return target


@contextmanager
def staged_build(target: Path) -> Iterator[Path]:
    """An empty staging folder that replaces `target` whole when the block ends without an error (and
    is removed when it raises). An OSError in the block becomes a WriteError naming `target`."""
    with atomic_dir(target) as staging:
        yield staging


def write_file(staging: Path, out_dir: Path, name: str, text: str) -> None:
    """`text` as UTF-8 in `staging/name` (lone surrogates become '?'); an OSError (a full disk) becomes a
    WriteError naming the file's final path `out_dir/name`."""
    try:
        (staging / name).write_text(text, encoding="utf-8", errors="replace", newline="")
    except OSError as exc:
        raise WriteError(f"cannot write {Path(out_dir) / name}: {exc.strerror or exc}") from exc
