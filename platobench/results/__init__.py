"""Result records: the schema of one measured score (one JSON file per model pair x setting), reading
it with version upgrades and writing it atomically. No scoring and no rendering live here.

- `platobench.results.schema`: the pydantic models and `SCHEMA_VERSION`;
- `platobench.results.io`: `load_record(s)`, `write_record`, `record_path`, `record_limit`, `git_sha`.
"""

from __future__ import annotations

from platobench.results.io import (
    git_sha,
    load_record,
    load_records,
    load_records_checked,
    record_files,
    record_limit,
    record_path,
    write_record,
)
from platobench.results.schema import (
    SCHEMA_VERSION,
    DatasetRef,
    IntervalRef,
    MetricRef,
    ModelRef,
    NullRef,
    Provenance,
    Reproducibility,
    ResultRecord,
    Rounding,
    SideRef,
)

__all__ = [
    "SCHEMA_VERSION",
    "DatasetRef",
    "IntervalRef",
    "MetricRef",
    "ModelRef",
    "NullRef",
    "Provenance",
    "Reproducibility",
    "ResultRecord",
    "Rounding",
    "SideRef",
    "git_sha",
    "load_record",
    "load_records",
    "load_records_checked",
    "record_files",
    "record_limit",
    "record_path",
    "write_record",
]
