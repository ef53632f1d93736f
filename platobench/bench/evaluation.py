"""`evaluate`: `platobench run` from Python, returning the records as objects and tables.

`evaluate(pairs=..., settings=...)` plans, extracts through the feature cache, scores and writes exactly
as `platobench run` does (the command calls this function), and returns a `Results`: the records, the
run's summary (written, reused, failed) and `to_pandas()` / `board(setting)`, one row per record with the
columns of the leaderboard's CSV (`leaderboard.csv_table.CSV_COLUMNS`), absent values as None.
In the spirit of `mteb.evaluate` and `lm_eval.simple_evaluate`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from platobench.errors import UserError

if TYPE_CHECKING:
    import pandas as pd

    from platobench.bench.runner import Job, RunSummary
    from platobench.bench.settings import Catalog
    from platobench.results import ResultRecord
    from platobench.zoo import Zoo


def _joined(value: str | Sequence[str], what: str) -> str:
    """A comma-separated CLI spec from a string or a sequence of names."""
    if isinstance(value, str):
        return value
    if not isinstance(value, Sequence) or not all(isinstance(v, str) for v in value):
        raise UserError(f"{what} must be a string or a list of strings, got {type(value).__name__}")
    return ",".join(value)


def as_paths(value: str | os.PathLike[str] | Iterable[str | os.PathLike[str]], what: str) -> list[Path]:
    """`value` as a list of paths: one path (a string or a Path) is a list of one, not the characters of
    the string; UserError, naming argument `what`, for anything else."""
    items = [value] if isinstance(value, (str, os.PathLike)) else _items(value)
    if items is None or not all(isinstance(v, (str, os.PathLike)) for v in items):
        raise UserError(f"{what} must be a path or a list of paths, got {type(value).__name__}")
    return [Path(v) for v in items]


def as_names(value: str | Iterable[str] | None, what: str) -> list[str] | None:
    """`value` (model names or globs) as a list: one name is a list of one, not the characters of the
    string (each of which would be a pattern, "*" trusting every model); None stays None; UserError, naming
    argument `what`, for anything else."""
    if value is None:
        return None
    items = [value] if isinstance(value, str) else _items(value)
    if items is None or not all(isinstance(v, str) for v in items):
        raise UserError(f"{what} must be a model name or a list of them, got {type(value).__name__}")
    return items


def _items(value: object) -> list[object] | None:
    """The items of an iterable other than a string or bytes, else None."""
    if isinstance(value, (str, bytes, bytearray)) or not isinstance(value, Iterable):
        return None
    return list(value)


def as_zoo(zoo: Zoo | str | Path | Sequence[str | Path] | None) -> Zoo:
    """A loaded `Zoo`, or the built-in zoo merged with the given zoo file(s) (None: the built-in one)."""
    from platobench.zoo.registry import Zoo, load_zoo

    if isinstance(zoo, Zoo):
        return zoo
    if zoo is None:
        return load_zoo(())
    return load_zoo([zoo] if isinstance(zoo, (str, Path)) else list(zoo))


def plan_jobs(pairs: str | Sequence[str], settings: str | Sequence[str], catalog: Catalog, zoo: Zoo,
              limit: int | None) -> list[Job]:
    """Every pair x setting job of the specs (`run --pairs` / `--settings` grammar), settings-major;
    UserError, before anything runs, for a limit a setting refuses or a layer selection outside a model."""
    from platobench.bench.pairs import resolve_pairs
    from platobench.bench.runner import Job, check_selection
    from platobench.bench.setting_rules import check_limit

    chosen = catalog.resolve_settings(_joined(settings, "settings"))
    check_limit(chosen, limit)
    resolved = resolve_pairs(_joined(pairs, "pairs"), catalog, zoo)
    jobs = [Job(s, a, b) for s in chosen for a, b in resolved]
    for job in jobs:
        check_selection(job)
    return jobs


@dataclass(frozen=True)
class Results:
    """What a run stands behind: `records` (written or reused, in job order) and the run's `summary`
    (record paths written and reused, labels up to date, failures: label -> reason, `worker`); `out`: the
    results folder the records are in (None when `evaluate` used a temporary one, since removed); `pool`:
    every consistent record of that folder (the run's records when there is none), where verdicts find each
    record's matched controls, as the leaderboard built from the folder does."""

    records: list[ResultRecord]
    summary: RunSummary
    out: Path | None
    pool: list[ResultRecord] = field(default_factory=list)

    @property
    def failed(self) -> dict[str, str]:
        """label ("setting: x x y") -> why that job failed."""
        return dict(self.summary.failed)

    def __len__(self) -> int:
        return len(self.records)

    def to_pandas(self) -> pd.DataFrame:
        """One row per record, the leaderboard's columns (`CSV_COLUMNS`), boards in the leaderboard's order
        and each best first with its CI-aware rank and baseline verdict; absent values are None."""
        import pandas as pd

        from platobench.leaderboard.boards import build_boards
        from platobench.leaderboard.csv_table import CSV_COLUMNS, board_row

        rows = []
        for b in build_boards(self.records, self.pool or None):
            got = b.verdicts
            rows += [board_row(r.rank, r.record, got[r.record.pair_id]) for r in b.rows]
        return pd.DataFrame(rows, columns=list(CSV_COLUMNS))

    def board(self, setting: str, modalities: str | tuple[str, str] | None = None) -> pd.DataFrame:
        """The rows of `to_pandas` of one setting (every sample set it was run on), of one modality pair
        when `modalities` names it ("vision x vision" or ("vision", "vision"); None: every pair); UserError
        naming what there is when nothing matches."""
        table = self.to_pandas()
        if setting not in set(table["setting"]):
            raise UserError(f"no record of setting {setting!r} in these results; settings: "
                            f"{sorted(set(table['setting']))}")
        table = table[table["setting"] == setting]
        if modalities is not None:
            wanted = modalities if isinstance(modalities, str) else " x ".join(modalities)
            if wanted not in set(table["modalities"]):
                raise UserError(f"no {wanted} record of setting {setting!r} in these results; modality pairs: "
                                f"{sorted(set(table['modalities']))}")
            table = table[table["modalities"] == wanted]
        return table.reset_index(drop=True)


def evaluate(
    pairs: str | Sequence[str],
    settings: str | Sequence[str],
    *,
    zoo: Zoo | str | Path | Sequence[str | Path] | None = None,
    settings_files: str | Path | Sequence[str | Path] = (),
    datasets_files: str | Path | Sequence[str | Path] = (),
    out: str | Path | None = None,
    limit: int | None = None,
    device: str = "cpu",
    batch_size: int = 32,
    workers: int = 2,
    encoder_timeout: float | None = None,
    force: bool = False,
    skip_existing: bool = False,
    yes: bool = False,
    progress: bool = True,
    trust_remote_code: str | Sequence[str] | None = None,
    trust_code: str | Sequence[str] | None = None,
) -> Results:
    """Run `pairs` x `settings` as `platobench run` does and return the `Results`.

    `pairs`: pair sets and/or "X:Y" zoo names of any two modalities (a comma-separated string or a list);
    `settings`: setting ids or groups; `zoo`: a `Zoo` or extra zoo file(s); `settings_files`: extra
    settings YAML file(s); `datasets_files`: datasets file(s) of your own (`platobench.data.datasets_file`),
    which the settings may name; `out`: the results folder (records there whose inputs are unchanged are reused; None:
    a temporary folder, removed afterwards, so nothing is reused or kept but the feature cache); `limit`
    and the rest as the options of `platobench run`. `trust_remote_code` / `trust_code`: models allowed to
    run their own code, a name or glob or a list of them (None: those already allowed, e.g. by the command
    line). A failing pair does not lose the others: it is in `failed`."""
    from platobench.bench.runner import RunOptions, execute
    from platobench.bench.settings import Catalog
    from platobench.data.datasets_file import using
    from platobench.features.store import FeatureStore
    from platobench.results import load_record
    from platobench.zoo import python_code, remote_code

    settings_paths = as_paths(settings_files, "settings_files")
    datasets_paths = as_paths(datasets_files, "datasets_files")
    remote_names, code_names = as_names(trust_remote_code, "trust_remote_code"), as_names(trust_code, "trust_code")
    with ExitStack() as stack:
        stack.enter_context(using(datasets_paths))
        catalog = Catalog(tuple(settings_paths))
        jobs = plan_jobs(pairs, settings, catalog, as_zoo(zoo), limit)
        if remote_names is not None:
            stack.enter_context(remote_code.allowed(remote_names))
        if code_names is not None:
            stack.enter_context(python_code.allowed(code_names))
        folder = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix="platobench-evaluate-"))
        if out is None:
            stack.callback(shutil.rmtree, folder, True)
        opts = RunOptions(out=folder, limit=limit, device=device, batch_size=batch_size, workers=workers,
                          force=force, skip_existing=skip_existing, progress=progress, yes=yes,
                          encoder_timeout=encoder_timeout)
        summary = execute(jobs, opts, FeatureStore())
        records = [load_record(Path(p)) for p in summary.record_paths]
        pool = folder_pool(folder, records) if out is not None else records
    return Results(records=records, summary=summary, out=folder if out is not None else None, pool=pool)


def folder_pool(folder: Path, records: list[ResultRecord]) -> list[ResultRecord]:
    """The records a run's verdicts read their controls from: every consistent record of the results folder
    (`consistency.consistent_records`; an unreadable or contradictory file is left out, as the leaderboard
    leaves it out), the run's own `records` included."""
    from platobench.leaderboard.consistency import consistent_records
    from platobench.results import load_records_checked

    found, _ = load_records_checked(folder)
    kept, _ = consistent_records(found)
    by_id = {(r.setting, r.dataset.fingerprint, r.dataset.n, r.pair_id): r for r in kept}
    for r in records:  # the run's records, whatever else the folder holds
        by_id[(r.setting, r.dataset.fingerprint, r.dataset.n, r.pair_id)] = r
    return list(by_id.values())
