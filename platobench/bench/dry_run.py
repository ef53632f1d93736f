"""`platobench run --dry-run`: what a run would reuse, compute and extract, and what it lacks — without
loading any model.

Per record: reused (its record's feature-cache keys, setting and --limit are unchanged, as `execute`
decides), kept (`--skip-existing` and a record exists), computed, or unavailable (its inputs cannot be
built: the reason). Per extraction that a computed record needs: whether the features are cached, their
size on disk (cached) or estimated (N x layers x the entry's width x 4 bytes, float32: an upper bound for
CNNs, whose early stages are narrower), and for hub models
whether the weights are in the local Hugging Face cache (else the estimated download at the entry's
parameter count and 2 bytes per parameter for bf16 checkpoints; hub checkpoints are often float32, twice
that).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from platobench.bench.runner import Job, RunOptions, job_inputs, plan_rows, record_up_to_date
from platobench.encoders.runtime import resolve_device
from platobench.errors import UserError
from platobench.features.extract import feature_key
from platobench.features.store import FeatureStore
from platobench.results import record_path
from platobench.zoo import ModelSpec

REUSE, KEEP, COMPUTE = "reuse", "keep (--skip-existing)", "compute"


@dataclass(frozen=True)
class RecordPlan:
    """What a run does with one job's record: `status` is REUSE, KEEP, COMPUTE or "unavailable: why"."""

    job: Job
    status: str


def record_plans(jobs: list[Job], opts: RunOptions) -> list[RecordPlan]:
    """The fate of every job's record, decided as `runner.execute` decides it (no model is loaded)."""
    cache: dict[Any, Any] = {}
    dev = resolve_device(opts.device)
    out = []
    for job in jobs:
        path = record_path(opts.out, job.setting.id, job.x.name, job.y.name, opts.limit)
        if opts.skip_existing and path.is_file():
            out.append(RecordPlan(job, KEEP))
            continue
        try:
            job_in = job_inputs(job.setting, opts.limit, cache, job.pair)
            digests = {side: feature_key(spec, got.data, prompt=got.prompt, device=dev).digest()
                       for side, spec, got in (("x", job.x, job_in.x), ("y", job.y, job_in.y))}
        except (UserError, RuntimeError) as exc:
            out.append(RecordPlan(job, f"unavailable: {str(exc)[:200]}"))
            continue
        fresh = not opts.force and record_up_to_date(path, digests, job.setting, opts.limit, job.pair)
        out.append(RecordPlan(job, REUSE if fresh else COMPUTE))
    return out


def hub_weights(spec: ModelSpec) -> str:
    """Whether a hub model's weights are in the local Hugging Face cache ("cached" / "missing, ~X GB to
    download"); "local", "packaged" or "-" for the other sources; timm and open_clip: "not checked"."""
    if spec.source_type in {"local", "packaged"}:
        return spec.source_type
    if spec.source_type in {"timm", "openclip"}:
        return "not checked"
    if spec.source_type != "hub":
        return "-"
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(spec.source, "config.json", revision=spec.revision)
    if isinstance(found, str):
        return "cached"
    size = "" if spec.params_m is None else f", ~{human_bytes(spec.params_m * 1e6 * 2)} to download"
    return f"missing{size}"


def feature_size(spec: ModelSpec, n: int) -> int | None:
    """Estimated bytes of `spec`'s float32 features on `n` samples (every extracted layer at the entry's
    width: an upper bound where layers are narrower); None while width or layer count is unknown."""
    from platobench.encoders import layer_count_of

    layers = layer_count_of(spec)
    if spec.width is None or layers is None:
        return None
    return n * layers * spec.width * 4


def human_bytes(size: float | None) -> str:
    """1234567 -> "1.2 MB" (powers of 1000); "?" for None."""
    if size is None:
        return "?"
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if size < 1000 or unit == "TB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return "?"


def extraction_rows(plans: list[RecordPlan], opts: RunOptions, store: FeatureStore) -> list[dict[str, Any]]:
    """`runner.plan_rows` of the records to compute, each with its features' size (on disk when cached,
    else estimated) and the hub weights' state."""
    jobs = [p.job for p in plans if p.status == COMPUTE]
    rows = plan_rows(jobs, opts, store)
    specs = {s.name: s for job in jobs for s in (job.x, job.y)}
    for row in rows:
        spec, n = specs.get(row["model"]), row.get("n")
        row["features"] = (human_bytes(row["bytes"]) if row.get("bytes") is not None
                           else "?" if n is None or spec is None else f"~{human_bytes(feature_size(spec, n))}")
        row["weights"] = "-" if row["cached"] is True else "?" if spec is None else hub_weights(spec)
    return rows


def summary_line(plans: list[RecordPlan]) -> str:
    """"N records: R reused (inputs unchanged), C to compute, K kept, U unavailable"."""
    counts = Counter("unavailable" if p.status.startswith("unavailable") else p.status for p in plans)
    parts = [f"{counts[REUSE]} reused (inputs unchanged)", f"{counts[COMPUTE]} to compute"]
    if counts[KEEP]:
        parts.append(f"{counts[KEEP]} kept (--skip-existing)")
    if counts["unavailable"]:
        parts.append(f"{counts['unavailable']} unavailable")
    return f"{len(plans)} records: " + ", ".join(parts)


__all__ = ["COMPUTE", "KEEP", "REUSE", "RecordPlan", "extraction_rows", "feature_size", "hub_weights",
           "human_bytes", "record_plans", "summary_line"]
