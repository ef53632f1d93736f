"""`platobench check`: regression checks on metric values (MTEB's results CI: a committed score may not
move by more than 0.001).

Every record under the results folder whose inputs are available is recomputed with the record's own
setting (`record.extra["setting_config"]`; records that predate it use the catalog's setting of the same
id) on the same samples (the dataset is rebuilt with the record's n and must have its fingerprint):
features come from the cache under the current cache key, or are extracted when the model is available
offline (a packaged demo model or a local folder). The recomputed score, last-layer score, calibrated
score, null mean, CI bounds and every cell of the layer grid are compared with the record; a difference
above `tol` is a failure, printed as a diff table. Records that cannot be recomputed are listed with the
reason (never skipped silently); with `strict` they count as failures.

`perturb` (relative noise, e.g. 1e-6) multiplies every feature by (1 + perturb * e), e ~ N(0, 1) seeded:
the size of the differences between CPUs' float rounding. A committed score that moves by more than the
tolerance under it depends on rounding (exact or near ties among neighbours) and would not reproduce on
another machine. A record may carry its own tolerance in `extra["check_tolerance"]` (with
`extra["check_tolerance_why"]`); check then uses the larger of that and `tol`, and says so.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from platobench.bench.results import ResultRecord, load_records
from platobench.bench.run_command import SCORERS, add_catalog_options
from platobench.bench.runner import JobInputs, job_inputs
from platobench.bench.settings import Catalog, Setting
from platobench.encoders.runtime import resolve_device
from platobench.errors import UserError
from platobench.features.extract import extract, feature_key
from platobench.features.store import FeatureEntry, FeatureStore, check_same_samples
from platobench.zoo import ModelSpec, Zoo, zoo_from_args

OFFLINE_SOURCES = frozenset({"packaged", "local", "baseline"})
SCORE_FIELDS = ("score", "last_layer_score")
STAT_FIELDS = ("calibrated", "null.mean", "ci.lo", "ci.hi")


@dataclass
class Diff:
    """One compared value: recorded, recomputed and |difference| (None when one side is absent)."""

    field: str
    recorded: float | None
    recomputed: float | None
    delta: float | None
    reshaped: bool = False  # the layer grid changed shape: always a move

    def moved(self, tol: float) -> bool:
        if self.reshaped:
            return True
        if self.recorded is None and self.recomputed is None:
            return False
        if self.delta is None or math.isnan(self.delta):
            return True
        return self.delta > tol


@dataclass
class Outcome:
    """The check of one record: status is "ok", "moved" or "skipped" (then `reason` says why)."""

    setting: str
    language: str
    vision: str
    status: str
    reason: str = ""
    diffs: list[Diff] = field(default_factory=list)
    layers: tuple[Any, Any] | None = None  # (recorded, recomputed) chosen layers
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["diffs"] = [dict(x.__dict__) for x in self.diffs]
        return d


def _get(record: ResultRecord, path: str) -> float | None:
    obj: Any = record
    for part in path.split("."):
        obj = getattr(obj, part, None) if obj is not None else None
    return None if obj is None else float(obj)


def _diff(name: str, a: float | None, b: float | None) -> Diff:
    return Diff(name, a, b, None if a is None or b is None else abs(a - b))


def compare(old: ResultRecord, new: ResultRecord, *, statistics: bool = True) -> list[Diff]:
    """Differences between a recorded and a recomputed record: the scores, (with `statistics`) the
    calibrated score, null mean and CI bounds, and the largest cell difference of the layer grid."""
    diffs = [_diff(f, _get(old, f), _get(new, f)) for f in SCORE_FIELDS + (STAT_FIELDS if statistics else ())]
    if old.grid is not None or new.grid is not None:
        if old.grid is None or new.grid is None or [len(r) for r in old.grid] != [len(r) for r in new.grid]:
            shape = lambda g: None if g is None else f"{len(g)}x{len(g[0])}"
            diffs.append(Diff(f"grid shape {shape(old.grid)} -> {shape(new.grid)}", None, None, None, reshaped=True))
        else:
            # a cell is null where a layer was excluded as constant; null on one side only is a move
            cells = [(0.0 if a is None and b is None else math.inf if a is None or b is None else abs(a - b), i, j)
                     for i, (ra, rb) in enumerate(zip(old.grid, new.grid)) for j, (a, b) in enumerate(zip(ra, rb))]
            worst, i, j = max(cells, key=lambda c: (math.isnan(c[0]), c[0]))
            diffs.append(Diff(f"grid[{i}][{j}] (largest cell change)", old.grid[i][j], new.grid[i][j], worst))
    return diffs


class Checker:
    """Recomputes records; keeps dataset and feature entries across records so each is built once."""

    def __init__(self, zoo: Zoo, catalog: Catalog, store: FeatureStore, *, device: str = "cpu",
                 allow_extract: bool = True, statistics: bool = True, progress: bool = False,
                 perturb: float = 0.0, perturb_seed: int = 0) -> None:
        self.zoo, self.catalog, self.store = zoo, catalog, store
        self.device, self.allow_extract, self.statistics, self.progress = device, allow_extract, statistics, progress
        self.perturb, self.perturb_seed = perturb, perturb_seed
        self._inputs: dict[int | None, dict[Any, Any]] = {}  # per limit: the runner's memo of datasets
        self._entries: dict[tuple[str, str, str], FeatureEntry] = {}

    def setting_of(self, record: ResultRecord) -> tuple[Setting, list[str]]:
        config = record.extra.get("setting_config")
        if config is not None:
            try:
                return Setting.model_validate(config), []
            except ValueError as exc:
                raise UserError(f"the record's setting_config is not a valid setting: {exc}") from None
        if record.setting not in self.catalog.settings:
            raise UserError(f"the record has no setting_config and no setting {record.setting!r} is in the catalog")
        return self.catalog.settings[record.setting], ["no setting_config in the record: used the catalog's setting"]

    def inputs(self, setting: Setting, record: ResultRecord) -> JobInputs:
        """The runner's inputs of `setting` on the record's samples: built with the record's n, else
        whole; UserError when neither has the record's dataset fingerprint."""
        found = []
        for limit in dict.fromkeys((record.dataset.n, None)):
            job_in = job_inputs(setting, limit, self._inputs.setdefault(limit, {}))  # its memo ignores limit
            ds = job_in.image_data
            if ds.fingerprint == record.dataset.fingerprint and len(ds) == record.dataset.n:
                return job_in
            found.append(f"n={len(ds)}, fingerprint {ds.fingerprint[:12]}")
        raise UserError(
            f"the samples of {setting.dataset} ({' or '.join(found)}) differ from the record's "
            f"(n={record.dataset.n}, fingerprint {record.dataset.fingerprint[:12]})"
        )

    def features(self, spec: ModelSpec, job_in: JobInputs) -> FeatureEntry:
        data, prompt, texts = job_in.of(spec)
        k = (spec.name, data.fingerprint, prompt)
        if k not in self._entries:
            entry = self.store.get(feature_key(spec, data, prompt=prompt, device=resolve_device(self.device)))
            if entry is None:
                if not self.allow_extract or spec.source_type not in OFFLINE_SOURCES:
                    why = ("extraction is disabled (--no-extract)" if not self.allow_extract
                           else f"a {spec.source_type} model is not extracted by check")
                    raise UserError(f"features of {spec.name} on {data.name} (n={len(data)}) are not cached and "
                                    f"{why}; run `platobench run` for this pair first")
                entry, _ = extract(spec, data, store=self.store, prompt=prompt, texts=texts, device=self.device,
                                   progress=self.progress)
            self._entries[k] = entry
        return self._entries[k]

    def check(self, record: ResultRecord) -> tuple[Outcome, ResultRecord | None]:
        """Recompute one record: (outcome with its diffs — status is decided by `run_check` —, the
        recomputed record or None when it could not be recomputed)."""
        out = Outcome(record.setting, record.language.name, record.vision.name, status="skipped")
        try:
            setting, out.notes = self.setting_of(record)
            if setting.kind not in SCORERS:
                raise UserError(f"setting kind {setting.kind!r} has no scorer")
            lang, vis = self.zoo.get(record.language.name), self.zoo.get(record.vision.name)
            job_in = self.inputs(setting, record)
            a, b = self.features(lang, job_in), self.features(vis, job_in)
            if job_in.paired:
                check_same_samples(a, b)
        except UserError as exc:
            out.reason = str(exc)
            return out, None
        except Exception as exc:  # noqa: BLE001 — a crashing extraction must not stop the other records' checks
            out.reason = f"inputs could not be prepared: {type(exc).__name__}: {exc}"
            return out, None
        inputs = {"language": a.digest, "vision": b.digest}
        if record.extra.get("inputs") not in (None, inputs):
            out.notes.append("features have a different cache key than when recorded (code or weights changed)")
        if not self.statistics:
            setting = setting.model_copy(update={"n_perm": 0, "n_ci": 0})
        layers_a, layers_b = self._maybe_perturb(list(a.layers)), self._maybe_perturb(list(b.layers))
        if self.perturb:
            out.notes.append(f"features perturbed by relative noise {self.perturb:g} (seed {self.perturb_seed})")
        new = SCORERS[setting.kind](
            setting, lang, vis, layers_a, layers_b, record.dataset, inputs=inputs,
            revisions=(a.key["model_revision"], b.key["model_revision"]), **job_in.scorer_kwargs,
        )
        out.diffs = compare(record, new, statistics=self.statistics)
        out.layers = (record.layers, new.layers)
        return out, new


    def _maybe_perturb(self, layers: list[torch.Tensor]) -> list[torch.Tensor]:
        """Each [N, D] layer times (1 + perturb * e), e ~ N(0, 1) from a seeded generator; as is when 0."""
        if not self.perturb:
            return layers
        gen = torch.Generator().manual_seed(self.perturb_seed)
        return [x * (1 + self.perturb * torch.randn(x.shape, generator=gen, dtype=x.dtype)) for x in layers]


def record_tolerance(record: ResultRecord, tol: float) -> tuple[float, str | None]:
    """The tolerance a record is checked at: the larger of `tol` and the record's own stated tolerance
    (`extra["check_tolerance"]`), with a note when the record's is used."""
    own = record.extra.get("check_tolerance")
    if isinstance(own, (int, float)) and not isinstance(own, bool) and math.isfinite(own) and own > tol:
        why = record.extra.get("check_tolerance_why", "no reason given")
        return float(own), f"checked at the record's own tolerance {own:g} ({why})"
    return tol, None


def run_check(records: list[ResultRecord], checker: Checker, tol: float) -> list[Outcome]:
    """Check every record; status "moved" when any compared value differs by more than its tolerance
    (`record_tolerance`)."""
    outcomes = []
    for record in records:
        out, _ = checker.check(record)
        own_tol, note = record_tolerance(record, tol)
        if note:
            out.notes.append(note)
        if out.diffs:
            out.status = "moved" if any(d.moved(own_tol) for d in out.diffs) else "ok"
        outcomes.append(out)
    return outcomes


def _num(v: float | None) -> str:
    return "absent" if v is None else f"{v:.6f}"


def diff_table(outcomes: list[Outcome], tol: float) -> str:
    """A markdown table: one row per moved value (all of a moved record's values beyond tol), one row per
    record that is within tolerance (its largest change) and one per skipped record (why)."""
    lines = ["| status | setting | pair | value | recorded | recomputed | abs diff |", "|---|---|---|---|---|---|---|"]
    for o in outcomes:
        pair = f"{o.language} x {o.vision}"
        if o.status == "skipped":
            lines.append(f"| skipped | {o.setting} | {pair} | {o.reason} | | | |")
            continue
        shown = [d for d in o.diffs if d.moved(tol)] if o.status == "moved" else [
            max(o.diffs, key=lambda d: d.delta or 0.0)]
        for d in shown:
            delta = "n/a" if d.delta is None else f"{d.delta:.2e}"
            lines.append(f"| {'MOVED' if o.status == 'moved' else 'ok'} | {o.setting} | {pair} | {d.field} | "
                         f"{_num(d.recorded)} | {_num(d.recomputed)} | {delta} |")
        if o.layers and o.layers[0] is not None and o.layers[1] is not None and tuple(o.layers[0]) != tuple(o.layers[1]):
            lines.append(f"| note | {o.setting} | {pair} | chosen layers {tuple(o.layers[0])} -> {tuple(o.layers[1])} | | | |")
    return "\n".join(lines)


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "check", help="recompute result records and fail if a score moved by more than --tol",
        description=(
            "Regression check on metric values: recompute every record under RESULTS whose inputs are "
            "available (cached features, or offline demo models that can be extracted) with the record's own "
            "setting, and exit 1 with a diff table when a score, calibrated score, null mean, CI bound or grid "
            "cell moved by more than --tol (0.001 as in MTEB's results CI). Records that cannot be recomputed "
            "are listed with the reason; --strict makes them failures. Example: platobench check --results results/demo"
        ),
    )
    p.add_argument("--results", type=Path, default=Path("results"), help="folder of result records (default ./results)")
    p.add_argument("--tol", type=float, default=0.001, help="largest allowed absolute change (default 0.001)")
    p.add_argument("--scores-only", action="store_true",
                   help="recompute only the layer grid and scores, not the permutation null and CI (much faster)")
    p.add_argument("--no-extract", action="store_true", help="use cached features only; never load a model")
    p.add_argument("--strict", action="store_true", help="records that cannot be recomputed fail the check")
    p.add_argument("--device", default="cpu", help="device for extractions (cpu, cuda, cuda:N)")
    p.add_argument("--perturb", type=float, default=0.0, metavar="REL",
                   help="multiply every feature by (1 + REL * N(0,1)) before recomputing, e.g. 1e-6: a score that "
                        "moves under CPU-rounding-sized noise would not reproduce on another machine")
    p.add_argument("--perturb-seed", type=int, default=0, help="seed of the --perturb noise (default 0)")
    p.add_argument("--json", action="store_true", help="print the outcome of every record as JSON")
    add_catalog_options(p)
    p.set_defaults(func=_check)


def _check(args: argparse.Namespace) -> int:
    if not (args.tol >= 0 and math.isfinite(args.tol)):
        raise UserError(f"--tol must be a finite number >= 0, got {args.tol}")
    if not args.results.is_dir():
        raise UserError(f"--results: {args.results} is not a folder of result records")
    records = load_records(args.results)
    if not records:
        raise UserError(f"--results: no result records (*.json) under {args.results}")
    if not (0 <= args.perturb < 1 and math.isfinite(args.perturb)):
        raise UserError(f"--perturb must be a relative noise level in [0, 1), got {args.perturb}")
    checker = Checker(zoo_from_args(args), Catalog(args.settings_file), FeatureStore(), device=args.device,
                      allow_extract=not args.no_extract, statistics=not args.scores_only, progress=not args.json,
                      perturb=args.perturb, perturb_seed=args.perturb_seed)
    outcomes = run_check(records, checker, args.tol)
    counts = {s: sum(o.status == s for o in outcomes) for s in ("ok", "moved", "skipped")}
    failed = counts["moved"] > 0 or counts["ok"] + counts["moved"] == 0 or (args.strict and counts["skipped"] > 0)
    if args.json:
        print(json.dumps({"tol": args.tol, "counts": counts, "failed": failed,
                          "records": [o.as_dict() for o in outcomes]}, indent=1))
    else:
        print(diff_table(outcomes, args.tol))
        print(f"\n{len(records)} records: {counts['ok']} within {args.tol:g}, {counts['moved']} moved, "
              f"{counts['skipped']} not recomputed")
        for o in outcomes:
            for note in o.notes:
                print(f"note: {o.setting} {o.language} x {o.vision}: {note}", file=sys.stderr)
        if counts["ok"] + counts["moved"] == 0:
            print("FAILED: no record could be recomputed", file=sys.stderr)
    return 1 if failed else 0
