"""Kept for old imports: result records now live in `platobench.results` (schema, reading, writing)."""

from __future__ import annotations

from platobench.results import (
    SCHEMA_VERSION,
    DatasetRef,
    IntervalRef,
    MetricRef,
    ModelRef,
    NullRef,
    ResultRecord,
    git_sha,
    load_record,
    load_records,
    load_records_checked,
    record_files,
    record_path,
    write_record,
)

__all__ = [
    "SCHEMA_VERSION",
    "DatasetRef",
    "IntervalRef",
    "MetricRef",
    "ModelRef",
    "NullRef",
    "ResultRecord",
    "git_sha",
    "load_record",
    "load_records",
    "load_records_checked",
    "record_files",
    "record_path",
    "write_record",
]
