"""Reading and writing result records: one JSON file per model pair x setting under
RESULTS/<setting>/<x>__<y>.json, and a run with `--limit N` under RESULTS/<setting>/<x>__<y>--limit-N.json (a test on fewer samples never replaces the record of
the full datasets).

`load_record` upgrades records of older schema versions (`_upgrade`) and validates them; the
leaderboard and `platobench check` read only these files. `write_record` is the one writer (atomic).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from platobench.errors import UserError
from platobench.files.atomic import atomic_write_text
from platobench.files.ids import check_id, check_model_name, contained, shown
from platobench.results.schema import JSON_TYPES, SCHEMA_VERSION, ResultRecord

MAX_RECORD_BYTES = 64 * 2**20
MAX_PROBLEMS_SHOWN = 10


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


def record_limit(record: ResultRecord) -> int | None:
    """The `--limit` of the run that wrote `record` (`provenance.limit`), else None."""
    return record.provenance.limit


def record_path(results_dir: Path, setting: str, x: str, y: str, limit: int | None = None) -> Path:
    """results/<setting>/<x>__<y>.json (the pair's two model names) with '/' in model names replaced by '--'; a limited
    run's record (`limit` set) ends in `--limit-<limit>.json` instead (model names hold no '--' of their
    own, so no full record's name can spell it).

    The setting must be an id and both names model names; InvalidIdError unless the path (symlinks
    resolved) stays inside `results_dir`."""
    check_id(setting, "setting id")
    check_model_name(x, "x model name")
    check_model_name(y, "y model name")
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
        raise UserError(f"a record's limit must be a positive integer, not {shown(limit)}")
    suffix = "" if limit is None else f"--limit-{limit}"
    name = f"{x}__{y}".replace("/", "--") + suffix + ".json"
    contained(results_dir, setting, name)
    return Path(results_dir) / setting / name


def write_record(results_dir: Path, record: ResultRecord) -> Path:
    """Write atomically (fsynced temp file + rename; WriteError naming the path) and return the path
    (`record_path`, limited by `record_limit`). JSON with indent 1, non-ASCII escaped and a trailing
    newline."""
    path = record_path(results_dir, record.setting, record.x.name, record.y.name, record_limit(record))
    return atomic_write_text(path, json.dumps(record.model_dump(mode="json"), indent=1) + "\n")


#: Keys of a schema-1 record's `extra` whose values are keyed by side ("language", "vision").
V1_SIDE_KEYED = ("inputs", "excluded_layers", "layers")


def _v1_text_input(data: dict[str, Any]) -> str:
    """What the text side of a schema-1 record read: the class prompts (zero-shot) or the caption its
    setting names (`caption_index`, 0 when the record does not state its setting)."""
    if data.get("kind") == "zeroshot":
        return "prompts"
    config = (data.get("extra") or {}).get("setting_config")
    index = config.get("caption_index", 0) if isinstance(config, dict) else 0
    return f"caption:{index}" if isinstance(index, int) and not isinstance(index, bool) and index >= 0 else "caption:0"


def _v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    """Schema 1 -> 2: the `language` side becomes `x` (modality text, reading its caption or prompts) and
    the `vision` side `y` (modality vision, reading the image); `extra` entries keyed by side are keyed
    "x" / "y". Nothing else changes: scores, grids and intervals are carried over as they are."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key == "language":
            out["x"] = {**value, "modality": "text", "input": _v1_text_input(data)} if isinstance(value, dict) else value
        elif key == "vision":
            out["y"] = {**value, "modality": "vision", "input": "image"} if isinstance(value, dict) else value
        else:
            out[key] = value
    extra = out.get("extra")
    if isinstance(extra, dict):
        extra = dict(extra)
        for key in V1_SIDE_KEYED:
            block = extra.get(key)
            if isinstance(block, dict):
                extra[key] = {{"language": "x", "vision": "y"}.get(k, k): v for k, v in block.items()}
        out["extra"] = extra
    out["schema_version"] = 2
    return out


#: Keys of a schema-2 record's `extra` that schema 3 moves into typed fields.
V2_PROVENANCE = ("inputs", "setting_config", "limit")
V2_REPRODUCIBILITY = ("rounding", "check_tolerance", "check_tolerance_why")


def _v2_to_v3(data: dict[str, Any]) -> dict[str, Any]:
    """Schema 2 -> 3: `git_sha` and `extra`'s inputs, setting_config and limit become `provenance`; its
    rounding, check_tolerance and check_tolerance_why `reproducibility` (None when it has none of them);
    the rest of `extra` (the kind's own entries) `details`. Values are carried over as they are."""
    out = {k: v for k, v in data.items() if k not in ("git_sha", "extra")}
    extra = data.get("extra", {})
    if not isinstance(extra, dict):
        raise UserError(f"a schema_version 2 record's 'extra' must be an object, not {shown(extra)}")
    out["provenance"] = {"git_sha": data.get("git_sha"), **{k: extra[k] for k in V2_PROVENANCE if k in extra}}
    kept = {k: extra[k] for k in V2_REPRODUCIBILITY if k in extra}
    out["reproducibility"] = kept or None
    out["details"] = {k: v for k, v in extra.items() if k not in (*V2_PROVENANCE, *V2_REPRODUCIBILITY)}
    out["schema_version"] = 3
    return out


def _upgrade(data: dict[str, Any]) -> dict[str, Any]:
    """Bring a record of an older schema to the current one, one version at a time (`_v1_to_v2`,
    `_v2_to_v3`)."""
    version = data.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1 or version > SCHEMA_VERSION:
        raise UserError(
            f"unsupported schema_version {shown(version)} (this platobench reads 1..{SCHEMA_VERSION})"
        )
    if version == 1:
        if "x" in data or "y" in data:
            raise UserError("a schema_version 1 record has 'language' and 'vision' sides, not 'x' / 'y'")
        data = _v1_to_v2(data)
        version = 2
    if version == 2:
        if any(k in data for k in ("provenance", "reproducibility", "details")):
            raise UserError("a schema_version 2 record keeps its provenance and details in 'extra'")
        data = _v2_to_v3(data)
    return data


def _read_json(path: Path) -> dict[str, Any]:
    """The JSON object in the regular file `path`; UserError naming the file otherwise."""
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise UserError(f"result record {path} is not a regular file")
        if info.st_size > MAX_RECORD_BYTES:
            raise UserError(f"result record {path} is larger than {MAX_RECORD_BYTES // 2**20} MiB")
        data = json.loads(Path(path).read_bytes().decode("utf-8"))
    except OSError as exc:
        raise UserError(f"cannot read result record {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise UserError(f"result record {path} is not UTF-8 text (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise UserError(f"result record {path} is not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    except RecursionError:
        raise UserError(f"result record {path} is nested too deeply to be a record") from None
    if not isinstance(data, dict):
        raise UserError(f"result record {path} must be a JSON object, not a {JSON_TYPES.get(type(data), 'null')}")
    return data


def load_record(path: Path) -> ResultRecord:
    """The validated record in `path`; UserError (naming the file, one short line) when it is not one."""
    data = _read_json(path)
    try:
        return ResultRecord.model_validate(_upgrade(data))
    except UserError as exc:
        raise UserError(f"invalid result record {path}: {exc}") from None
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_context=False, include_input=False)
        where = ".".join(str(p) for p in errors[0]["loc"])[:120]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise UserError(f"invalid result record {path}: {where}: {errors[0]['msg'][:300]}{more}") from None


def record_files(results_dir: Path) -> list[Path]:
    """Every *.json under `results_dir`, recursively and sorted, skipping hidden files and folders."""
    root = Path(results_dir)
    return sorted(
        p for p in root.rglob("*.json") if not any(part.startswith(".") for part in p.relative_to(root).parts)
    )


def load_records_checked(results_dir: Path) -> tuple[list[ResultRecord], list[str]]:
    """(the valid records under `results_dir` sorted by setting then pair, one line per problem).

    A problem is a file that is not a valid record, or two or more files holding the same (setting,
    x, y, limit): one line naming them all, and none of them is returned. A limited run's
    record on the same samples as the full record of its pair and setting (a limit that cut nothing)
    measures the same thing: the full record is returned, not both."""
    problems: list[str] = []
    loaded: dict[tuple[str, str, str, int | None], list[tuple[Path, ResultRecord]]] = {}
    for path in record_files(results_dir):
        try:
            record = load_record(path)
        except UserError as exc:
            problems.append(str(exc))
            continue
        key = (record.setting, record.x.name, record.y.name, record_limit(record))
        loaded.setdefault(key, []).append((path, record))
    same_samples: dict[tuple[str, str, str, str], ResultRecord] = {}
    for (setting, x, y, limit), found in sorted(loaded.items(), key=lambda kv: kv[0][3] or 0):
        if len(found) == 1:
            # the full record first, then the smallest limit: one record per pair on the same samples
            same_samples.setdefault((setting, x, y, found[0][1].dataset.fingerprint), found[0][1])
        else:
            files = ", ".join(str(p) for p, _ in found)
            limited = "" if limit is None else f" with --limit {limit}"
            problems.append(
                f"{len(found)} result records measure setting {setting} for {x} x {y}{limited}: "
                f"{files}; keep one (none of them is used)"
            )
    return sorted(same_samples.values(), key=lambda r: (r.setting, r.pair_id)), problems


def load_records(results_dir: Path) -> list[ResultRecord]:
    """Every record under results_dir (recursively), sorted by setting then pair; UserError listing the
    problems (`load_records_checked`) when any file is invalid or duplicated."""
    records, problems = load_records_checked(results_dir)
    if problems:
        listed = "; ".join(problems[:MAX_PROBLEMS_SHOWN])
        more = f"; and {len(problems) - MAX_PROBLEMS_SHOWN} more" if len(problems) > MAX_PROBLEMS_SHOWN else ""
        raise UserError(f"{len(problems)} problem(s) with the result records under {results_dir}: {listed}{more}")
    return records
