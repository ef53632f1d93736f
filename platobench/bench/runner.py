"""`platobench run`: plan the work, extract each model once per dataset through the cache, score every
pair x setting, write one record each. A failing model or pair does not lose the others' results."""

from __future__ import annotations

import contextlib
import sys
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from platobench.bench.cost import JobCost, check_cost
from platobench.bench.jobs import JobInputs, Scorer, SideInputs, entry_digests, score_job
from platobench.bench.protocols import protocol_for, scorer_for, side_names
from platobench.bench.setting_rules import check_selection_fits
from platobench.bench.settings import Setting
from platobench.encoders import layer_count_of
from platobench.encoders.runtime import resolve_device
from platobench.errors import UserError
from platobench.features.extract import extract, feature_key, parallel_state
from platobench.features.slices import cached_superset
from platobench.features.store import FeatureEntry, FeatureStore
from platobench.files.ids import shown
from platobench.metrics import get_metric
from platobench.metrics.stats import draw_bars, interval_scheme
from platobench.results import ResultRecord, load_record, record_limit, record_path, write_record
from platobench.zoo import ModelSpec


@dataclass(frozen=True)
class Job:
    """One pair (`x`, `y`: zoo specs of any modalities) under one setting."""

    setting: Setting
    x: ModelSpec
    y: ModelSpec

    @property
    def pair(self) -> tuple[ModelSpec, ModelSpec]:
        return self.x, self.y

    @property
    def label(self) -> str:
        return f"{self.setting.id}: {self.x.name} x {self.y.name}"


@dataclass
class RunOptions:
    out: Path
    limit: int | None = None
    device: str = "cpu"
    batch_size: int = 32
    workers: int = 2
    force: bool = False
    skip_existing: bool = False
    progress: bool = True
    yes: bool = False  # run even when the statistics are estimated above `cost.CONFIRM_S`
    encoder_timeout: float | None = None  # seconds per call into an encoder (0: none; None: guard.limit_for's default)


@dataclass
class RunSummary:
    """`written`: record paths scored in this run; `up_to_date`: labels of jobs whose record was reused
    (inputs unchanged); `reused`: the paths of those records; `failed`: label -> reason; `worker`: this
    process only helped a multi-process run extract (the main process scores, writes and reports)."""

    written: list[str] = field(default_factory=list)
    up_to_date: list[str] = field(default_factory=list)
    reused: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    worker: bool = False

    @property
    def record_paths(self) -> list[str]:
        """Every record this run stands behind: written or reused, in job order."""
        return self.written + self.reused

    def as_dict(self) -> dict[str, Any]:
        return {"written": self.written, "up_to_date": self.up_to_date, "reused": self.reused, "failed": self.failed}


def estimate_gpu_gib(spec: ModelSpec) -> float | None:
    """Weights-only memory in GiB at 2 bytes/parameter (bf16) plus 20% for activations; None if unknown."""
    if spec.params_m is None:
        return None
    return round(spec.params_m * 1e6 * 2 * 1.2 / 2**30, 1)


def check_selection(job: Job) -> None:
    """UserError when the job's fixed layer selection is outside its models' layer counts (known from the
    zoo entries, without loading anything); a model whose num_layers is unknown fails at extraction."""
    counts = layer_count_of(job.x), layer_count_of(job.y)
    if counts[0] is not None and counts[1] is not None:
        check_selection_fits(job.setting, (counts[0], counts[1]), (job.x.name, job.y.name))


def job_cost(job: Job, inputs: JobInputs) -> JobCost | None:
    """The estimated cost of the job's statistics (`platobench.bench.cost`) from its inputs' size, its
    models' layer counts and the setting's counts; None while a model's layer count is unknown."""
    from platobench.metrics.selection import select_index

    counts = layer_count_of(job.x), layer_count_of(job.y)
    if counts[0] is None or counts[1] is None:
        return None
    shape = (counts[0], counts[1])
    widths = [w for w in (job.x.width, job.y.width) if w is not None]
    return protocol_for(job.setting.kind).cost(job.setting, job.label, inputs, shape,
                                               select_index(shape, job.setting.selection), widths)


def pair_reads(setting: Setting, pair: tuple[ModelSpec, ModelSpec] | None = None) -> tuple[str, str]:
    """What each side of `pair` (None: a text x vision pair) reads under `setting`, as its kind's protocol
    says (zero-shot: "prompts" and "image"; paired: `Setting.input_for` of each side). UserError naming both
    models when a side cannot read its input (a vision model reads images, a text model captions)."""
    modalities, names = side_names(pair)
    return protocol_for(setting.kind).reads(setting, modalities, names)


def job_inputs(
    setting: Setting, limit: int | None, cache: dict[Any, Any], pair: tuple[ModelSpec, ModelSpec] | None = None,
) -> JobInputs:
    """The inputs of `setting` for `pair` (x spec, y spec; None: a text x vision pair); datasets are
    memoised in `cache` (failures included). Paired: the first `limit` samples, each side reading what
    `pair_reads` says (each caption checked to exist for every sample). Zero-shot (text x vision only): the
    first `limit` images of each class and the class prompts (`zeroshot_inputs`). A pair that cannot read
    its inputs is a UserError naming both models, raised before any model runs. The memo's key holds
    everything that changes the inputs (`Protocol.memo_key`: kind, dataset, limit, zero-shot options)."""
    reads = pair_reads(setting, pair)
    protocol = protocol_for(setting.kind)
    k = protocol.memo_key(setting, limit)
    if k not in cache:
        try:
            cache[k] = protocol.build(setting, limit)
        except Exception as exc:  # noqa: BLE001 -- one unavailable dataset must not stop the others
            cache[k] = exc
    got = cache[k]
    if isinstance(got, UserError):
        raise got
    if isinstance(got, Exception):
        raise RuntimeError(f"inputs of setting {setting.id} (dataset {setting.dataset}): {got}") from got  # noqa: TRY004
    return protocol.job_inputs(setting, got, reads, pair)


def plan_rows(jobs: list[Job], opts: RunOptions, store: FeatureStore) -> list[dict[str, Any]]:
    """One row per (model, dataset, input) extraction the jobs need: name, dataset, input read, samples n, params, GPU GiB,
    cached (True, False, or how a cached superset serves it) and bytes (on disk, when cached)."""
    rows: dict[tuple[str, str, str], dict[str, Any]] = {}
    cache: dict[Any, Any] = {}
    dev = resolve_device(opts.device)
    for job in jobs:
        for i, spec in enumerate(job.pair):
            try:
                side = job_inputs(job.setting, opts.limit, cache, job.pair).side(i)
                data, prompt = side.data, side.prompt
                k = (spec.name, data.fingerprint, prompt)
                key = feature_key(spec, data, prompt=prompt, device=dev)
                entry = store.get(key)
                cached: Any = entry is not None
                size = None if entry is None else sum(f.stat().st_size for f in entry.path.iterdir() if f.is_file())
                if not cached and (superset := cached_superset(store, key, data.ids)) is not None:
                    cached = f"first {len(data)} of {len(superset)} cached samples"
                dataset, n, reads = data.name, len(data), side.input
            except (UserError, RuntimeError) as exc:
                k, dataset, n, size = (spec.name, job.setting.dataset, "?"), job.setting.dataset, None, None
                cached, reads = f"unavailable: {exc}", "?"
            if k in rows:
                continue
            rows[k] = {
                "model": spec.name, "dataset": dataset, "input": reads, "n": n, "params_m": spec.params_m,
                "est_gpu_gib": estimate_gpu_gib(spec), "cached": cached, "bytes": size,
            }
    return list(rows.values())


def plan_costs(jobs: list[Job], opts: RunOptions) -> list[JobCost]:
    """The estimated statistics cost of every job whose inputs can be built (`--dry-run`: records that
    would be reused are counted too)."""
    cache: dict[Any, Any] = {}
    out = []
    for job in jobs:
        try:
            cost = job_cost(job, job_inputs(job.setting, opts.limit, cache, job.pair))
        except (UserError, RuntimeError):  # unavailable inputs: the plan's rows say why
            continue
        if cost is not None:
            out.append(cost)
    return out


def warn_limited(limit: int | None) -> None:
    """One stderr line when `limit` is set: a limited run is a test, not a result to compare."""
    if limit is not None:
        print(f"--limit {limit}: a limited run is for testing only; its scores are not comparable with records "
              "on the full datasets (its records carry provenance.limit and, having other samples, rank on boards "
              "of their own)", file=sys.stderr, flush=True)


def record_limits(record: ResultRecord) -> list[int | None]:
    """The limits `check` rebuilds `record`'s inputs with, in order: the run's --limit (`provenance.limit`,
    when a positive integer), the record's n (a paired set's first n samples), then none (all samples)."""
    own = record_limit(record)
    first = [] if own is None else [own]
    return list(dict.fromkeys([*first, record.dataset.n, None]))


def prepare_inputs(jobs: list[Job], opts: RunOptions, cache: dict[Any, Any]) -> None:
    """Build and check the inputs of every setting of `jobs` (memoised in `cache`, failures included)
    before any model runs; one stderr line per setting whose inputs fail (its jobs then fail with that
    reason in `execute`, the others run)."""
    seen: set[tuple[str, str, str]] = set()
    for job in jobs:
        sid = job.setting.id
        if (sid, job.x.modality, job.y.modality) in seen or (opts.skip_existing and record_path(opts.out, sid, job.x.name, job.y.name, opts.limit).is_file()):
            continue
        seen.add((sid, job.x.modality, job.y.modality))
        try:
            job_inputs(job.setting, opts.limit, cache, job.pair)
        except Exception as exc:  # noqa: BLE001 -- reported here, failed per job by `execute`
            kinds = f"{job.x.modality} x {job.y.modality}"
            print(f"setting {sid} ({kinds} pairs): inputs cannot be built ({str(exc)[:300]}); those records are skipped",
                  file=sys.stderr, flush=True)


def rank_plan(jobs: list[Job], pending: list[bool], limit: int | None, inputs: Any, device: Any) -> dict[str, Any]:
    """What one process of a launcher means to extract: its --limit, its jobs (labels, and whether each is
    to be computed as the main process decided) and, for those, the full feature key of each side (model,
    revision, dtype, pooling, layers, dataset revision, ids hash, prompt, options)."""
    keys = {}
    for job, todo in zip(jobs, pending):
        if todo:
            job_in = inputs(job)
            for i, spec in enumerate(job.pair):
                keys[f"{job.label} / {spec.name}"] = feature_key(spec, job_in.side(i).data, prompt=job_in.side(i).prompt,
                                                                  device=device).as_dict()
    return {"limit": limit, "jobs": [job.label for job in jobs], "pending": list(pending), "keys": keys}


def gather_plans(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """Every process's `rank_plan`, by rank (a collective: every process of the launcher calls it)."""
    from accelerate.utils import gather_object

    return gather_object([plan])


def plan_disagreement(plans: list[dict[str, Any]]) -> str | None:
    """Why the processes of a launcher cannot extract together, naming the first rank and field that differ
    from rank 0's plan (another --limit, other jobs, another feature key: another zoo entry, revision or
    encoder code), or None when they agree. Checked before any process encodes: merged chunks of two
    different encoders would be one entry of neither."""
    first = plans[0]
    for rank, plan in enumerate(plans[1:], start=1):
        for part in ("limit", "jobs", "pending"):
            if plan[part] != first[part]:
                return (f"the processes of this launch disagree on the plan: rank {rank}'s {part} is "
                        f"{shown(plan[part], 200)}, rank 0's {shown(first[part], 200)}; start every process with "
                        "the same command, zoo and code")
        for name in sorted(first["keys"].keys() | plan["keys"].keys()):
            a, b = first["keys"].get(name, {}), plan["keys"].get(name, {})
            for key_field in sorted(a.keys() | b.keys()):
                if a.get(key_field) != b.get(key_field):
                    return (f"the processes of this launch disagree on the plan: for {name}, rank {rank}'s feature "
                            f"key has {key_field} = {shown(b.get(key_field), 120)}, rank 0's "
                            f"{shown(a.get(key_field), 120)}; start every process with the same command, zoo and code")
    return None


def record_up_to_date(path: Path, inputs: dict[str, Any], setting: Setting, limit: int | None,
                      pair: tuple[ModelSpec, ModelSpec]) -> bool:
    """The record at `path` was computed from these feature entries, this setting and this --limit (a
    limit that cut nothing gives the full run's entries, but the record must not keep a stale mark), its
    interval was drawn as this version draws it (`stats.interval_scheme`: an older version's scheme
    is not this version's interval), its metric's resolved parameters are this version's (a parameter a
    version adds, such as mutual kNN's `ties`, changes what the score is), a paired record states what its
    board's flags read (`details.copy_cka`), and it restates the `pair`'s loaders and disclosures
    (`trained_on`, `fitted_on_eval`) as the zoo states them now."""
    if not path.is_file():
        return False
    try:
        old = load_record(path)
    except UserError:
        return False
    restated = all((side.loader, side.trained_on, side.fitted_on_eval)
                   == (spec.loader, None if spec.trained_on is None else list(spec.trained_on), spec.fitted_on_eval)
                   for side, spec in zip((old.x, old.y), pair))
    flagged = old.kind != "paired" or "copy_cka" in old.details
    return (old.provenance.inputs == inputs and old.provenance.setting_config == setting.model_dump(mode="json")
            and old.provenance.limit == limit and not _stale_interval(old, setting) and not _stale_params(old, setting)
            and restated and flagged)


def _stale_params(old: ResultRecord, setting: Setting) -> bool:
    """A paired record whose metric parameters are not those this version resolves for its setting."""
    if old.kind != "paired":
        return False
    return old.metric.params != get_metric(setting.metric).resolve_params(setting.params)


def _stale_interval(old: ResultRecord, setting: Setting) -> bool:
    """A paired record whose interval states another scheme than this version's for its setting."""
    if old.kind != "paired" or old.ci is None or old.ci.scheme is None:
        return False
    return old.ci.scheme != interval_scheme(setting.metric, setting.selection, old.dataset.n, setting.ci_fraction,
                                            setting.params)


@dataclass(frozen=True)
class Planned:
    """A job after the checks that load no model: its scorer and record path, and the inputs with their
    two feature-cache key digests; `inputs` None: its record is reused (`--skip-existing`, or inputs and
    setting unchanged)."""

    scorer: Scorer
    path: Path
    inputs: JobInputs | None
    digests: dict[str, str] | None


def execute(
    jobs: list[Job],
    opts: RunOptions,
    store: FeatureStore,
    scorers: Mapping[str, Scorer] | None = None,
) -> RunSummary:
    """Run every job (`score_job`); errors are caught per model and per pair and reported in the summary.
    Every setting's inputs are built (and a failing one reported) and every job is planned (its record
    reused or not) before the first model runs. `scorers`: setting kind -> scorer (None: the registered
    ones, `scorer_for`).

    Started by a launcher with several processes (`parallel_state`): the main process plans and sends the
    plan to all, every process takes part in extracting each model its pending jobs need, once and in
    plan order (each process encodes chunks, the main process writes the one entry), then the main
    process alone scores and writes the records; the others read no record and return an empty summary
    marked `worker`."""
    summary = RunSummary()
    entries: dict[tuple[str, str, str], FeatureEntry | Exception] = {}
    inputs_cache: dict[Any, Any] = {}
    dev = resolve_device(opts.device)
    state = parallel_state(opts.device)
    main = state is None or state.is_main_process
    if main:
        warn_limited(opts.limit)
        prepare_inputs(jobs, opts, inputs_cache)

    def key_digest(spec: ModelSpec, side: SideInputs) -> str:
        return feature_key(spec, side.data, prompt=side.prompt, device=dev).digest()

    def features(spec: ModelSpec, side: SideInputs) -> FeatureEntry:
        data, prompt, texts = side.data, side.prompt, side.texts
        k = (spec.name, data.fingerprint, prompt)
        if k not in entries:
            try:
                entries[k], _ = extract(
                    spec, data, store=store, prompt=prompt, texts=texts, device=opts.device,
                    batch_size=opts.batch_size, num_workers=opts.workers, progress=opts.progress,
                    encoder_timeout=opts.encoder_timeout,
                )
            except Exception as exc:  # one model failing must not stop the others
                entries[k] = exc
        got = entries[k]
        if isinstance(got, Exception):
            raise RuntimeError(f"features of {spec.name} on {data.name}: {got}") from got
        return got

    def plan(job: Job) -> Planned:
        if scorers is None:
            scorer = scorer_for(job.setting.kind)
        elif (scorer := scorers.get(job.setting.kind)) is None:
            raise UserError(f"setting kind {job.setting.kind!r} is not supported by this runner")
        check_selection(job)
        path = record_path(opts.out, job.setting.id, job.x.name, job.y.name, opts.limit)
        if opts.skip_existing and path.is_file():
            return Planned(scorer, path, None, None)
        job_in = job_inputs(job.setting, opts.limit, inputs_cache, job.pair)
        # The cache key of each input is known without extracting: a record whose inputs and setting
        # are unchanged is reused before any model runs (a fresh clone reuses the committed records).
        digests = {"x": key_digest(job.x, job_in.x), "y": key_digest(job.y, job_in.y)}
        if not opts.force and record_up_to_date(path, digests, job.setting, opts.limit, job.pair):
            return Planned(scorer, path, None, None)
        return Planned(scorer, path, job_in, digests)

    planned: list[Planned | Exception] = []
    for job in jobs if main else []:
        try:
            planned.append(plan(job))
        except Exception as exc:  # noqa: BLE001 -- reported per job below
            planned.append(exc)
    # The statistics of the jobs left to score are estimated before any model runs (`cost.check_cost`);
    # under a launcher the refusal reaches every process with the plan.
    refusal = None
    if main:
        costs = [c for job, p in zip(jobs, planned) if isinstance(p, Planned) and p.inputs is not None
                 and (c := job_cost(job, p.inputs)) is not None]
        try:
            check_cost(costs, opts.yes)
        except UserError as exc:
            refusal = str(exc)
    if state is not None:
        from accelerate.utils import broadcast_object_list

        pending = [isinstance(p, Planned) and p.inputs is not None for p in planned]
        pending, refusal = broadcast_object_list([(pending, refusal)])[0]
    if refusal is not None:
        raise UserError(refusal)
    if state is not None:
        plan = rank_plan(jobs, pending, opts.limit, lambda job: job_inputs(job.setting, opts.limit, inputs_cache, job.pair),
                         dev)
        disagreement = plan_disagreement(gather_plans(plan))
        if disagreement is not None:
            raise UserError(disagreement)
        for job, todo in zip(jobs, pending):
            if todo:
                job_in = job_inputs(job.setting, opts.limit, inputs_cache, job.pair)
                for i, spec in enumerate(job.pair):
                    with contextlib.suppress(RuntimeError):  # the failure is the main process's to report
                        features(spec, job_in.side(i))
        state.wait_for_everyone()
        if not main:
            summary.worker = True
            return summary

    bar = tqdm(list(zip(jobs, planned)), desc="pairs x settings", unit="job", disable=not opts.progress,
               dynamic_ncols=True)
    for job, p in bar:
        label = job.label
        bar.set_postfix_str(label, refresh=True)
        try:
            if isinstance(p, Exception):
                raise p
            if p.inputs is None:
                summary.up_to_date.append(label)
                summary.reused.append(str(p.path))
                continue
            a, b = features(job.x, p.inputs.x), features(job.y, p.inputs.y)
            if p.digests != entry_digests(a, b):
                raise RuntimeError(f"{label}: the cache returned entries of other keys than planned")
            with draw_bars(opts.progress and sys.stderr.isatty()):  # long nulls and intervals show a bar
                record = score_job(job.setting, job.x, job.y, (a, b), p.inputs, scorer=p.scorer,
                                   limit=opts.limit)
            summary.written.append(str(write_record(opts.out, record)))
        except Exception as exc:
            summary.failed[label] = f"{type(exc).__name__}: {exc}"
            if not isinstance(exc, (UserError, RuntimeError)):
                summary.failed[label] += "\n" + traceback.format_exc(limit=3)
    return summary
