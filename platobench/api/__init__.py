"""platobench from Python, and the core's public API.

For users: `evaluate` (pairs x settings -> `Results`, as `platobench run`), `AlignmentProbe` (a model under
training against a cached reference) and `AlignmentCallback` (the probe as a `transformers.TrainerCallback`).

For experiments and plugins: everything `platobench.experiments` (jepa, stitch, theory, scaling) uses from
the core, by theme: records, models and features, datasets, scoring, boards and reports, commands and files.
An experiment imports the core only from here (`tests/core/test_package_layering.py` enforces it), so the core's
modules may move behind these names without breaking one.

Every name is imported on first use: importing this module loads no torch, transformers or pydantic.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from platobench.api.probe import AlignmentProbe, ProbeScore
    from platobench.api.trainer_callback import AlignmentCallback
    from platobench.bench.check_fields import Diff, Mismatch, Outcome
    from platobench.bench.evaluation import Results, evaluate
    from platobench.bench.jobs import JobInputs, SideInputs, score_job
    from platobench.bench.protocols import scorer_for
    from platobench.bench.run_command import add_catalog_options
    from platobench.bench.runner import job_inputs
    from platobench.bench.scoring import model_ref
    from platobench.bench.settings import Catalog, Setting
    from platobench.bench.terminal_board import board_rows, print_board
    from platobench.cli_options import (
        add_datasets_file_option,
        add_device_option,
        add_json_option,
        add_renamed_option,
        progress_log,
    )
    from platobench.data import get_dataset
    from platobench.data.base import PairedDataset, ids_hash
    from platobench.data.heldout import is_heldout
    from platobench.data.subset import paired_subset
    from platobench.encoders.cpu_memory import keep_freed_memory
    from platobench.encoders.pooling import masked_mean
    from platobench.encoders.runtime import resolve_device
    from platobench.encoders.sources import hub_errors, pretrained_args
    from platobench.errors import UserError
    from platobench.features.extract import extract
    from platobench.features.store import FeatureEntry, FeatureStore
    from platobench.files.atomic import atomic_write_bytes, atomic_write_text
    from platobench.files.figures import save_figure
    from platobench.files.ids import check_id, contained
    from platobench.files.stable_numbers import round_floats
    from platobench.leaderboard.boards import build_boards
    from platobench.leaderboard.markdown import stitch_lines
    from platobench.leaderboard.safe_text import md_text
    from platobench.leaderboard.stitch_table import (
        STITCH_HEADER,
        StitchExtra,
        StitchRow,
        map_label,
        stitch_extra,
        stitch_section,
    )
    from platobench.metrics import score
    from platobench.metrics.matching import DEFAULT_RESTARTS, blind_match, centered_linear_kernel
    from platobench.metrics.procrustes import fit_rotation
    from platobench.metrics.stats import chance_level
    from platobench.metrics.unpaired_rotation import stiefel_params
    from platobench.metrics.validation import as_features, check_int
    from platobench.paths import home
    from platobench.results import (
        DatasetRef,
        IntervalRef,
        MetricRef,
        ModelRef,
        Provenance,
        ResultRecord,
        SideRef,
        load_records,
        write_record,
    )
    from platobench.table import format_table
    from platobench.version import __version__
    from platobench.zoo.loading import read_zoo_file
    from platobench.zoo.options import add_zoo_option, zoo_from_args
    from platobench.zoo.registry import load_zoo
    from platobench.zoo.spec import ModelSpec

#: For users: exported name -> the module that defines it.
_USER: dict[str, str] = {
    "evaluate": "platobench.bench.evaluation",
    "Results": "platobench.bench.evaluation",
    "AlignmentProbe": "platobench.api.probe",
    "ProbeScore": "platobench.api.probe",
    "AlignmentCallback": "platobench.api.trainer_callback",
}

#: For experiments and plugins: exported name -> the core module that defines it.
_CORE: dict[str, str] = {
    # records
    "ResultRecord": "platobench.results",
    "ModelRef": "platobench.results",
    "SideRef": "platobench.results",
    "DatasetRef": "platobench.results",
    "MetricRef": "platobench.results",
    "IntervalRef": "platobench.results",
    "Provenance": "platobench.results",
    "load_records": "platobench.results",
    "write_record": "platobench.results",
    "Outcome": "platobench.bench.check_fields",
    "Diff": "platobench.bench.check_fields",
    "Mismatch": "platobench.bench.check_fields",
    # models and features
    "ModelSpec": "platobench.zoo.spec",
    "load_zoo": "platobench.zoo.registry",
    "read_zoo_file": "platobench.zoo.loading",
    "add_zoo_option": "platobench.zoo.options",
    "zoo_from_args": "platobench.zoo.options",
    "extract": "platobench.features.extract",
    "FeatureStore": "platobench.features.store",
    "FeatureEntry": "platobench.features.store",
    "resolve_device": "platobench.encoders.runtime",
    "keep_freed_memory": "platobench.encoders.cpu_memory",
    "masked_mean": "platobench.encoders.pooling",
    "pretrained_args": "platobench.encoders.sources",
    "hub_errors": "platobench.encoders.sources",
    # datasets
    "PairedDataset": "platobench.data.base",
    "get_dataset": "platobench.data",
    "paired_subset": "platobench.data.subset",
    "ids_hash": "platobench.data.base",
    "is_heldout": "platobench.data.heldout",
    # scoring
    "Setting": "platobench.bench.settings",
    "Catalog": "platobench.bench.settings",
    "JobInputs": "platobench.bench.jobs",
    "SideInputs": "platobench.bench.jobs",
    "job_inputs": "platobench.bench.runner",
    "score_job": "platobench.bench.jobs",
    "scorer_for": "platobench.bench.protocols",
    "model_ref": "platobench.bench.scoring",
    "score": "platobench.metrics",
    "as_features": "platobench.metrics.validation",
    "check_int": "platobench.metrics.validation",
    "chance_level": "platobench.metrics.stats",
    "fit_rotation": "platobench.metrics.procrustes",
    "blind_match": "platobench.metrics.matching",
    "centered_linear_kernel": "platobench.metrics.matching",
    "DEFAULT_RESTARTS": "platobench.metrics.matching",
    "stiefel_params": "platobench.metrics.unpaired_rotation",
    # boards and reports
    "build_boards": "platobench.leaderboard.boards",
    "board_rows": "platobench.bench.terminal_board",
    "print_board": "platobench.bench.terminal_board",
    "format_table": "platobench.table",
    "md_text": "platobench.leaderboard.safe_text",
    "stitch_lines": "platobench.leaderboard.markdown",
    "stitch_section": "platobench.leaderboard.stitch_table",
    "stitch_extra": "platobench.leaderboard.stitch_table",
    "map_label": "platobench.leaderboard.stitch_table",
    "StitchExtra": "platobench.leaderboard.stitch_table",
    "StitchRow": "platobench.leaderboard.stitch_table",
    "STITCH_HEADER": "platobench.leaderboard.stitch_table",
    "save_figure": "platobench.files.figures",
    # commands and files
    "UserError": "platobench.errors",
    "add_catalog_options": "platobench.bench.run_command",
    "add_device_option": "platobench.cli_options",
    "add_json_option": "platobench.cli_options",
    "add_datasets_file_option": "platobench.cli_options",
    "add_renamed_option": "platobench.cli_options",
    "progress_log": "platobench.cli_options",
    "home": "platobench.paths",
    "atomic_write_text": "platobench.files.atomic",
    "atomic_write_bytes": "platobench.files.atomic",
    "round_floats": "platobench.files.stable_numbers",
    "check_id": "platobench.files.ids",
    "contained": "platobench.files.ids",
    "__version__": "platobench.version",
}
_NAMES = {**_USER, **_CORE}

__all__ = [
    "AlignmentCallback",
    "AlignmentProbe",
    "Catalog",
    "DEFAULT_RESTARTS",
    "DatasetRef",
    "Diff",
    "FeatureEntry",
    "FeatureStore",
    "IntervalRef",
    "JobInputs",
    "MetricRef",
    "Mismatch",
    "ModelRef",
    "ModelSpec",
    "Outcome",
    "PairedDataset",
    "ProbeScore",
    "Provenance",
    "ResultRecord",
    "Results",
    "STITCH_HEADER",
    "Setting",
    "SideInputs",
    "SideRef",
    "StitchExtra",
    "StitchRow",
    "UserError",
    "__version__",
    "add_catalog_options",
    "add_datasets_file_option",
    "add_device_option",
    "add_json_option",
    "add_renamed_option",
    "add_zoo_option",
    "as_features",
    "atomic_write_bytes",
    "atomic_write_text",
    "blind_match",
    "board_rows",
    "build_boards",
    "centered_linear_kernel",
    "chance_level",
    "check_id",
    "check_int",
    "contained",
    "evaluate",
    "extract",
    "fit_rotation",
    "format_table",
    "get_dataset",
    "home",
    "hub_errors",
    "ids_hash",
    "is_heldout",
    "job_inputs",
    "keep_freed_memory",
    "load_records",
    "load_zoo",
    "map_label",
    "masked_mean",
    "md_text",
    "model_ref",
    "paired_subset",
    "pretrained_args",
    "print_board",
    "progress_log",
    "read_zoo_file",
    "resolve_device",
    "round_floats",
    "save_figure",
    "score",
    "score_job",
    "scorer_for",
    "stiefel_params",
    "stitch_extra",
    "stitch_lines",
    "stitch_section",
    "write_record",
    "zoo_from_args",
]


def __getattr__(name: str) -> Any:
    """An exported name, imported from its module on first access."""
    if name not in _NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_NAMES[name]), name)
    globals()[name] = value
    return value
