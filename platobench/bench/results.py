"""Result records: one JSON file per model pair x setting (schema in the design notes).

Records carry `schema_version`; `load_record` upgrades older versions so they keep loading. The
leaderboard and `platobench check` read only these files.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from platobench import __version__
from platobench.errors import UserError

SCHEMA_VERSION = 1


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ModelRef(_Strict):
    name: str
    revision: str | None = None
    params_m: float | None = None
    kind: str | None = None


class DatasetRef(_Strict):
    name: str
    revision: str
    n: int
    fingerprint: str


class MetricRef(_Strict):
    id: str
    params: dict[str, Any]
    preprocess: str
    selection: str  # "best" (max over the layer grid, PRH), "last", or "fixed:i,j"
    higher_is_better: bool


class NullRef(_Strict):
    mean: float
    std: float
    p_value: float
    n_perm: int
    seed: int
    method: str = "permute pairing; layer selection inside each draw"


class IntervalRef(_Strict):
    lo: float
    hi: float
    level: float
    method: str


class ResultRecord(_Strict):
    """One measured score of a (language model, vision model) pair under one setting."""

    schema_version: int = SCHEMA_VERSION
    platobench_version: str = __version__
    git_sha: str | None = None
    setting: str
    kind: Literal["paired", "zeroshot"] = "paired"
    metric: MetricRef
    language: ModelRef
    vision: ModelRef
    dataset: DatasetRef
    score: float
    layers: tuple[int, int] | None = None  # chosen (language layer, vision layer) indices into the grid
    last_layer_score: float | None = None
    chance: float | None = None
    null: NullRef | None = None
    calibrated: float | None = None
    ci: IntervalRef | None = None
    grid: list[list[float | None]] | None = Field(
        default=None, description="[L_language][L_vision] scores; null for layers excluded as constant"
    )
    extra: dict[str, Any] = Field(default_factory=dict)
    runtime_s: float
    created: str = Field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))

    @property
    def pair_id(self) -> str:
        return f"{self.language.name}__{self.vision.name}"


def git_sha(cwd: Path | None = None) -> str | None:
    """The current commit of the platobench checkout, or None outside a git checkout."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd or Path(__file__).resolve().parent,
            capture_output=True, text=True, timeout=5, check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def record_path(results_dir: Path, setting: str, language: str, vision: str) -> Path:
    """results/<setting>/<language>__<vision>.json with '/' in model names replaced by '--'."""
    safe = f"{language}__{vision}".replace("/", "--")
    return Path(results_dir) / setting / f"{safe}.json"


def write_record(results_dir: Path, record: ResultRecord) -> Path:
    """Write atomically (temp file + rename) and return the path."""
    path = record_path(results_dir, record.setting, record.language.name, record.vision.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(record.model_dump(mode="json"), f, indent=1)
        f.write("\n")
    os.replace(tmp, path)
    return path


def _upgrade(data: dict[str, Any]) -> dict[str, Any]:
    """Bring a record of an older schema to the current one (no older schema exists yet)."""
    version = data.get("schema_version")
    if not isinstance(version, int) or version < 1 or version > SCHEMA_VERSION:
        raise UserError(f"result record has unsupported schema_version {version!r} (this platobench reads 1..{SCHEMA_VERSION})")
    return data


def load_record(path: Path) -> ResultRecord:
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise UserError(f"cannot read result record {path}: {exc}") from exc
    try:
        return ResultRecord.model_validate(_upgrade(data))
    except ValueError as exc:
        raise UserError(f"invalid result record {path}: {exc}") from exc


def load_records(results_dir: Path) -> list[ResultRecord]:
    """Every record under results_dir (recursively), sorted by setting then pair."""
    paths = sorted(Path(results_dir).rglob("*.json"))
    records = [load_record(p) for p in paths if not p.name.startswith(".")]
    return sorted(records, key=lambda r: (r.setting, r.pair_id))
