"""`platobench check`: regression checks on metric values (MTEB's results CI: a committed score may not
move by more than 0.001).

Every record under the results folder whose inputs are available is recomputed with the setting that
would be run: the catalog's setting of the record's id (the record's `provenance.setting_config` must equal
it, description aside), or, for an id the catalog lacks, the record's own `setting_config` of that id. A
record naming neither is invalid. It is recomputed on the same samples (the dataset is rebuilt with the
record's n and must have its fingerprint): features come from the cache under the current cache key, or
are extracted when the model is available offline (a packaged demo model or a local folder).

Every field the leaderboard shows is verified (platobench/bench/check_fields.py): measured values (score,
last-layer score, chance, calibrated score, null mean/std/p-value, CI bounds and level, grid cells) are
compared with the recomputation, a difference above `tol` is "moved"; stated metadata (setting, kind,
metric id/params/preprocessing/selection, model names/revisions/sizes/kinds, dataset, chosen layers, null
draws and seed) must equal exactly what was run, else the record is "invalid". The verdict is verified too:
each recomputed record is judged against its recomputed matched controls of the same folder by the
leaderboard's own rule (platobench/leaderboard/verdicts.py) and a verdict that differs from the one the
stated records give is "moved". Both are failures, printed as a diff table. Records that cannot be recomputed are listed with the reason (never skipped silently);
with `strict` they count as failures.

`perturb` (relative noise, e.g. 1e-6) multiplies every feature by (1 + perturb * e), e ~ N(0, 1) seeded:
the size of the differences between CPUs' float rounding. A committed score that moves by more than the
tolerance under it depends on rounding (exact or near ties among neighbours) and would not reproduce on
another machine. The recomputation measures that itself for neighbour metrics
(`bench.scoring.rounding_sensitivity`); where rounding-sized noise moves a record by more than half of
0.001, the record is checked at twice the movement *recomputed now*, capped at `MAX_ROUNDING_TOLERANCE`.
A tolerance written in the record (`reproducibility.check_tolerance`) is never used: an edited number cannot
widen it.

A record that cannot be verified is not a record that passed: by default `check` exits 1 when any record
was not recomputed (each listed with its reason); `--allow-skipped` lists them without failing. Records
whose own numbers contradict each other (platobench/leaderboard/consistency.py) or that are duplicated are
failures too.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from platobench.bench.check_fields import (
    Diff,
    Mismatch,
    Outcome,
    chosen_layers,
    compare,
    mismatches,
    setting_mismatches,
)
from platobench.bench.jobs import entry_digests, score_job
from platobench.bench.protocols import scorer_for
from platobench.bench.run_command import add_catalog_options
from platobench.bench.setting_rules import UnscorableSamplesError
from platobench.bench.settings import Catalog, Setting
from platobench.cli_options import add_device_option, add_json_option
from platobench.errors import UserError
from platobench.files.ids import shown
from platobench.leaderboard.consistency import inconsistencies
from platobench.leaderboard.flags import record_flags
from platobench.registry import Registry
from platobench.results import ResultRecord, load_records_checked
from platobench.zoo import zoo_from_args

if TYPE_CHECKING:  # torch (features, scorers, runner) loads when a record is checked, not for `check --help`
    from collections.abc import Sequence

    import torch

    from platobench.bench.jobs import JobInputs, SideInputs
    from platobench.features.store import FeatureEntry, FeatureStore
    from platobench.zoo import ModelSpec, Zoo

OFFLINE_SOURCES = frozenset({"packaged", "local", "baseline"})

#: Record kinds that `check` verifies with a function of their own (record -> its outcome and the
#: recomputed record or None) instead of re-scoring features. A stitch record's stored captions are re-scored
#: (only a rerun retrains its decoder); the stitch experiment lives beside the core and is named here only.
VERIFIERS: Registry[Callable[[ResultRecord], tuple[Outcome, ResultRecord | None]]] = Registry("record kind")
VERIFIERS.register_lazy("stitch", "platobench.experiments.stitch.verify:verify_stitch")
STATUSES = ("ok", "moved", "invalid", "skipped")
STATUS_ORDER = {"invalid": 0, "moved": 1, "skipped": 2, "ok": 3}  # failures first in the table
UNKNOWN_SETTING = "a setting of the catalog (or of a --settings-file) or of the record's setting_config"

__all__ = ["Checker", "Diff", "Mismatch", "Outcome", "compare", "diff_table", "record_tolerance", "run_check"]


class Checker:
    """Recomputes records; keeps dataset and feature entries across records so each is built once."""

    def __init__(self, zoo: Zoo, catalog: Catalog, store: FeatureStore, *, device: str = "cpu",
                 allow_extract: bool = True, statistics: bool = True, progress: bool = False,
                 perturb: float = 0.0, perturb_seed: int = 0) -> None:
        self.zoo, self.catalog, self.store = zoo, catalog, store
        self.device, self.allow_extract, self.statistics, self.progress = device, allow_extract, statistics, progress
        self.perturb, self.perturb_seed = perturb, perturb_seed
        self._inputs: dict[Any, Any] = {}  # the runner's memo of datasets (`job_inputs`)
        self._entries: dict[tuple[str, str, str], FeatureEntry] = {}

    def setting_of(self, record: ResultRecord) -> tuple[Setting | None, list[Mismatch], list[str]]:
        """(the setting that would be run — None when the record names none —, the record's stated
        setting fields that differ from it, notes)."""
        config, own = record.provenance.setting_config, None
        if config is not None:
            try:
                own = Setting.model_validate(config)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"])
                why = f"not a valid setting ({where + ': ' if where else ''}{first['msg']})"
                return None, [Mismatch("setting_config", shown(config), why)], []
        catalog = self.catalog.settings.get(record.setting)
        if catalog is not None:
            if own is None:
                return catalog, [], ["no setting_config in the record: used the catalog's setting"]
            return catalog, setting_mismatches(own, catalog), []
        if own is not None and own.id == record.setting:
            return own, [], [f"setting {record.setting!r} is not in the catalog: checked against the record's "
                             "own setting_config"]
        return None, [Mismatch("setting", record.setting, own.id if own is not None else UNKNOWN_SETTING)], []

    def inputs(self, setting: Setting, record: ResultRecord, pair: tuple[ModelSpec, ModelSpec]) -> JobInputs:
        """The runner's inputs of `setting` for `pair` on the record's samples: built with the run's recorded limit,
        else the record's n, else whole (`record_limits`); UserError when none has the record's dataset
        fingerprint."""
        from platobench.bench.runner import job_inputs, record_limits

        found = []
        for limit in record_limits(record):
            job_in = job_inputs(setting, limit, self._inputs, pair)
            ds = job_in.dataset
            if ds.fingerprint == record.dataset.fingerprint and len(ds) == record.dataset.n:
                return job_in
            found.append(f"n={len(ds)}, fingerprint {ds.fingerprint[:12]}")
        raise UserError(
            f"the samples of {setting.dataset} ({' or '.join(found)}) differ from the record's "
            f"(n={record.dataset.n}, fingerprint {record.dataset.fingerprint[:12]})"
        )

    def features(self, spec: ModelSpec, side: SideInputs) -> FeatureEntry:
        from platobench.encoders.runtime import resolve_device
        from platobench.features.extract import extract, feature_key

        data, prompt, texts = side.data, side.prompt, side.texts
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
        from platobench.features.store import SampleMismatchError

        out = Outcome(record.setting, record.x.name, record.y.name, status="skipped")
        if record.kind in VERIFIERS:
            return VERIFIERS.get(record.kind)(record)
        setting, out.mismatches, out.notes = self.setting_of(record)
        if setting is None:
            out.status = "invalid"
            return out, None
        try:
            scorer_for(setting.kind)
            lang, vis = self.zoo.get(record.x.name), self.zoo.get(record.y.name)
            job_in = self.inputs(setting, record, (lang, vis))
            a, b = self.features(lang, job_in.x), self.features(vis, job_in.y)
        except UnscorableSamplesError as exc:  # the record states a score its setting cannot have on its samples
            out.mismatches.append(Mismatch("setting_config", shown(record.provenance.setting_config), str(exc)))
            out.status = "invalid"
            return out, None
        except UserError as exc:
            out.reason = str(exc)
            return out, None
        except Exception as exc:  # noqa: BLE001 — a crashing extraction must not stop the other records' checks
            out.reason = f"inputs could not be prepared: {type(exc).__name__}: {exc}"
            return out, None
        if record.provenance.inputs not in (None, entry_digests(a, b)):
            out.notes.append("features have a different cache key than when recorded (code or weights changed)")
        if not self.statistics:
            setting = setting.model_copy(update={"n_perm": 0, "n_ci": 0})
        if self.perturb:
            out.notes.append(f"features perturbed by relative noise {self.perturb:g} (seed {self.perturb_seed})")
        try:
            new = score_job(setting, lang, vis, (a, b), job_in, scorer=scorer_for(setting.kind),
                            transform=self._maybe_perturb)
        except SampleMismatchError as exc:  # the inputs do not pair up: not recomputed
            out.reason = str(exc)
            return out, None
        except Exception as exc:  # noqa: BLE001 — inputs are there, so the record does not reproduce
            why = f"none: the recomputation failed: {type(exc).__name__}: {exc}"
            out.mismatches.append(Mismatch("score", record.score, why[:300]))
            out.status = "invalid"
            return out, None
        out.diffs = compare(record, new, statistics=self.statistics, perturbed=bool(self.perturb))
        out.mismatches += mismatches(record, new, statistics=self.statistics)
        out.layers = (record.layers, new.layers)
        return out, new

    def _maybe_perturb(self, layers: Sequence[torch.Tensor]) -> Sequence[torch.Tensor]:
        """Each [N, D] layer times (1 + perturb * e), e ~ N(0, 1) from a seeded generator; as is when 0."""
        if not self.perturb:
            return layers
        import torch

        gen = torch.Generator().manual_seed(self.perturb_seed)
        return [x * (1 + self.perturb * torch.randn(x.shape, generator=gen, dtype=x.dtype)) for x in layers]


def record_tolerance(record: ResultRecord, new: ResultRecord | None, tol: float) -> tuple[float, str | None]:
    """The tolerance `record` is checked at, with a note when it is not `tol`: the larger of `tol` and the
    rounding tolerance of the recomputation `new` (`reproducibility.check_tolerance` as `rounding_sensitivity`
    measured it just now, at most `MAX_ROUNDING_TOLERANCE`). The tolerance the record itself states is
    never used; when it states more than was recomputed, the note says so."""
    from platobench.bench.scoring import MAX_ROUNDING_TOLERANCE

    measured = new.reproducibility.check_tolerance if new is not None and new.reproducibility else None
    stated = record.reproducibility.check_tolerance if record.reproducibility else None
    notes = []
    use = tol
    if isinstance(measured, float) and math.isfinite(measured) and measured > tol:
        use = min(measured, MAX_ROUNDING_TOLERANCE)
        notes.append(f"checked at {use:g}: relative noise of 1e-6 on the features moves it by up to "
                     f"{measured / 2:.2g} now (near ties among neighbours), twice that"
                     + (f", capped at {MAX_ROUNDING_TOLERANCE:g}" if measured > MAX_ROUNDING_TOLERANCE else ""))
    if stated is not None and stated != measured and new is not None:
        notes.append(f"the record states check_tolerance {shown(stated)}; not used (recomputed: "
                     f"{'none' if measured is None else f'{measured:g}'})")
    return use, "; ".join(notes) or None


def run_check(records: list[ResultRecord], checker: Checker, tol: float, *, progress: bool = False) -> list[Outcome]:
    """Check every record: "invalid" when a stated field (chosen layers included, up to a near tie within
    the tolerance) is not what would be run or the record contradicts itself (`inconsistencies`, even when
    it cannot be recomputed), else "moved" when a compared value differs by more than its
    tolerance (`record_tolerance`) or its verdict differs from the recomputed one (`judge_again`), else
    "ok"; "skipped" when it could not be recomputed."""
    from tqdm.auto import tqdm

    outcomes, recomputed = [], {}
    for record in tqdm(records, desc="check", unit="record", disable=not progress, dynamic_ncols=True):
        out, new = checker.check(record)
        own_tol, note = record_tolerance(record, new, tol)
        if note:
            out.notes.append(note)
        if new is not None:
            layers, note = chosen_layers(record, new, own_tol)
            out.mismatches += [layers] if layers is not None else []
            out.notes += [note] if note else []
            out.flags = record_flags(new)
            out.notes += [f"flagged on the board: {', '.join(out.flags)}"] if out.flags else []
            out.status = "moved" if any(d.moved(own_tol) for d in out.diffs) else "ok"
            recomputed[id(record)] = new
        out.mismatches += [Mismatch("record", "contradicts itself", why) for why in inconsistencies(record)]
        if out.mismatches:
            out.status = "invalid"
        outcomes.append(out)
    if checker.statistics:
        judge_again(records, recomputed, outcomes)
    return outcomes


def judge_again(records: list[ResultRecord], recomputed: dict[int, ResultRecord], outcomes: list[Outcome]) -> None:
    """Set each recomputed record's `Outcome.verdict`: (its verdict among the stated records, its recomputed
    verdict against the recomputed records — a control that was not recomputed counts as stated), by the
    leaderboard's rule; an "ok" record whose verdict differs becomes "moved"."""
    from platobench.leaderboard.verdicts import judge

    stated = [r for r in records if not inconsistencies(r)]  # the leaderboard leaves the others out as well
    again = [recomputed.get(id(r), r) for r in stated]
    for record, out in zip(records, outcomes):
        new = recomputed.get(id(record))
        if new is None:
            continue
        out.verdict = (judge(record, stated).text, judge(new, again).text)
        if out.verdict_moved and out.status == "ok":
            out.status = "moved"


def _num(v: float | None) -> str:
    return "absent" if v is None else f"{v:.6f}"


def diff_table(outcomes: list[Outcome], tol: float) -> str:
    """A markdown table: one row per stated field that is not what would be run (stated, expected), one
    per moved value (all of a failing record's values beyond tol), one per record that is within tolerance
    (its largest change) and one per skipped record (why)."""
    lines = ["| status | setting | pair | value | recorded | recomputed or expected | abs diff |",
             "|---|---|---|---|---|---|---|"]
    for o in outcomes:
        pair = f"{o.x} x {o.y}"
        if o.status == "skipped":
            lines.append(f"| skipped | {o.setting} | {pair} | {o.reason} | | | |")
            continue
        for m in o.mismatches:
            lines.append(f"| INVALID | {o.setting} | {pair} | {m.field} | {_cell(m.stated)} | {_cell(m.expected)} "
                         "| stated != expected |")
        if o.verdict_moved:
            lines.append(f"| MOVED | {o.setting} | {pair} | verdict | {_cell(o.verdict[0])} | {_cell(o.verdict[1])} "
                         "| another verdict |")
        if o.status == "ok":
            shown_diffs = [max(o.diffs, key=lambda d: d.delta or 0.0)] if o.diffs else []
        else:
            shown_diffs = [d for d in o.diffs if d.moved(tol)]
        for d in shown_diffs:
            delta = "n/a" if d.delta is None else f"{d.delta:.2e}"
            label = "ok" if o.status == "ok" else "MOVED"
            lines.append(f"| {label} | {o.setting} | {pair} | {d.field} | {_num(d.recorded)} | {_num(d.recomputed)} "
                         f"| {delta} |")
    return "\n".join(lines)


def _cell(value: Any) -> str:
    """A stated or expected value as a table cell: its repr, capped, with '|' escaped."""
    return shown(value, 120).replace("|", "\\|")


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "check", help="recompute result records and fail if a value moved by more than --tol or a stated "
                      "field is not what would be run",
        description=(
            "Regression check on result records: recompute every record under RESULTS whose inputs are "
            "available (cached features, or offline demo models that can be extracted) with the setting that "
            "would be run, and exit 1 with a diff table when a score, chance, calibrated score, null statistic, "
            "CI bound or level or grid cell moved by more than --tol (0.001 as in MTEB's results CI), or its "
            "verdict against its matched baselines (recomputed from the recomputed records of RESULTS) changed, or when a "
            "stated field (setting, metric and its params, model revisions, sizes and kinds, dataset, chosen "
            "layers, null draws and seed) differs from what would be run, or when a record contradicts itself "
            "(its score is not its grid cell, its interval does not contain it, its calibrated score does not "
            "follow from score and null). Records that cannot be recomputed are listed with the reason and "
            "fail the check unless --allow-skipped. Failures are printed first. "
            "Example: platobench check --results results/offline --scores-only"
        ),
    )
    p.add_argument("--results", type=Path, default=Path("results"), help="folder of result records (default ./results)")
    p.add_argument("--tol", type=float, default=0.001, help="largest allowed absolute change (default 0.001)")
    p.add_argument("--scores-only", action="store_true",
                   help="recompute only the layer grid and scores, not the permutation null and CI (much faster)")
    p.add_argument("--no-extract", action="store_true", help="use cached features only; never load a model")
    p.add_argument("--allow-skipped", action="store_true",
                   help="records that cannot be recomputed (listed with the reason) do not fail the check; by "
                        "default they do: a record that was not verified has not passed")
    add_device_option(p)
    p.add_argument("--perturb", type=float, default=0.0, metavar="REL",
                   help="multiply every feature by (1 + REL * N(0,1)) before recomputing, e.g. 1e-6: a score that "
                        "moves under CPU-rounding-sized noise would not reproduce on another machine")
    p.add_argument("--perturb-seed", type=int, default=0, help="seed of the --perturb noise (default 0)")
    add_json_option(p, what="the outcome of every record")
    add_catalog_options(p)
    p.set_defaults(func=_check)


def _check(args: argparse.Namespace) -> int:
    from platobench.features.store import FeatureStore

    if not (args.tol >= 0 and math.isfinite(args.tol)):
        raise UserError(f"--tol must be a finite number >= 0, got {args.tol}")
    if not args.results.is_dir():
        raise UserError(f"--results: {args.results} is not a folder of result records")
    records, problems = load_records_checked(args.results)
    if not records and not problems:
        raise UserError(f"--results: no result records (*.json) under {args.results}")
    if not (0 <= args.perturb < 1 and math.isfinite(args.perturb)):
        raise UserError(f"--perturb must be a relative noise level in [0, 1), got {args.perturb}")
    checker = Checker(zoo_from_args(args), Catalog(args.settings_file), FeatureStore(), device=args.device,
                      allow_extract=not args.no_extract, statistics=not args.scores_only, progress=not args.json,
                      perturb=args.perturb, perturb_seed=args.perturb_seed)
    outcomes = sorted(run_check(records, checker, args.tol, progress=not args.json and sys.stderr.isatty()),
                      key=lambda o: STATUS_ORDER[o.status])
    counts = {s: sum(o.status == s for o in outcomes) for s in STATUSES}
    failed = (counts["moved"] > 0 or counts["invalid"] > 0 or bool(problems) or not outcomes
              or (counts["skipped"] > 0 and (not args.allow_skipped or counts["skipped"] == len(outcomes))))
    if args.json:
        print(json.dumps({"tol": args.tol, "counts": counts, "failed": failed, "unreadable": problems,
                          "records": [o.as_dict() for o in outcomes]}, indent=1))
    else:
        for problem in problems:
            print(f"INVALID: {problem}")
        print(diff_table(outcomes, args.tol))
        print(f"\n{len(records) + len(problems)} records: {counts['ok']} within {args.tol:g}, {counts['moved']} "
              f"moved, {counts['invalid'] + len(problems)} invalid, {counts['skipped']} not recomputed")
        for o in outcomes:
            for note in o.notes:
                print(f"note: {o.setting} {o.x} x {o.y}: {note}", file=sys.stderr)
        if outcomes and counts["skipped"] == len(outcomes):
            print("FAILED: no record could be recomputed", file=sys.stderr)
        elif counts["skipped"] and not args.allow_skipped:
            print(f"FAILED: {counts['skipped']} record(s) could not be recomputed, so they are not verified "
                  "(--allow-skipped lists them without failing)", file=sys.stderr)
    return 1 if failed else 0
