"""`platobench submit FILE.yaml`: put a new encoder on the leaderboard.

1. validate: FILE is a zoo file (the format of `model_zoo.yaml`, or a bare list of entries as written by
   `platobench jepa train`); each entry is a full `ModelSpec` (hub id, local folder, or `loader: python`
   with `source: module:name` — FILE's folder is importable, and naming the entry in FILE is its
   `--trust-code` opt-in), with a new name and num_layers. The simplest
   Python encoder is a class with `encode(texts)` (text) or `encode(images)` (vision, PIL images)
   returning a numpy array or torch tensor [N, L, D] with L = num_layers + 1 ([N, D]: one layer);
   platobench batches, converts and checks it (platobench.encoders.python_loader; examples/ holds one of
   each modality). A function (spec, device=, dtype=, home=) returning a TextEncoder / VisionEncoder
   still works;
   Entries that do not disclose `trained_on` and `fitted_on_eval` are asked for them (`disclosure_requests`);
2. mock pass on a few paired samples (the first paired setting's dataset, else openclipart-1024): the
   encoder loads, returns one [B, D_l] float32 tensor per zoo layer with the widths it declares, no
   NaN/inf, not every layer the same vector for every sample, the same values when the same batch is
   encoded twice (determinism: no dropout left on, no sampling), and the same features of each sample when
   the samples are encoded in halves instead of one batch (no normalisation over the batch: the batch size
   is not in the feature-cache key) — any of these fails the submission. Per
   layer it warns, with counts, of rows that are exactly zero, duplicate rows and a near-constant layer
   (platobench/bench/feature_health.py), which score but badly;
3. run the chosen settings (default: the offline `demo` group) against the references of a pair set — the
   vision models for a text encoder, the language models for a vision encoder — through the same runner
   as `platobench run`, writing one record per pair x setting;
4. rank each record among its peers in the results folder — other models against the same reference
   under the same setting on the same samples (platobench/bench/submit_ranks.py) — and print their board,
   every verdict the leaderboard's (each pair against its own matched controls in the folder); a record
   without peers is not ranked, and submit says how to get them.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from platobench.bench.pairs import resolve_pairs
from platobench.bench.run_command import add_catalog_options
from platobench.bench.setting_rules import check_limit
from platobench.bench.settings import Catalog
from platobench.bench.submit_ranks import board_records, no_peers_hint, rank_line, reference, standings
from platobench.cli_options import add_device_option, add_json_option
from platobench.data import DEFAULT_PAIRED, get_dataset
from platobench.encoders.guard import add_timeout_option
from platobench.errors import UserError
from platobench.leaderboard.consistency import consistent_records
from platobench.leaderboard.flags import COPY_CKA
from platobench.results import ResultRecord, load_record, load_records, record_path
from platobench.zoo import load_zoo, python_code, read_zoo_file

if TYPE_CHECKING:  # torch (encoders, features, runner) loads in the mock pass and the run, not for `--help`
    import torch

    from platobench.bench.feature_health import LayerFlag
    from platobench.bench.runner import RunSummary
    from platobench.bench.settings import Setting
    from platobench.zoo import ModelSpec, Zoo

DETERMINISM_RTOL, DETERMINISM_ATOL = 1e-5, 1e-6
#: The largest difference allowed between a layer's features of the mock samples encoded in one batch and
#: in halves, as a share of the layer's spread over the samples (`batch_difference`): above the rounding of
#: other batch shapes and padding (measured on 16 tuxpaint samples on the CPU: at most 1e-6 for the demo
#: models in float32, 1.7e-2 in bfloat16, SmolLM2-135M's last layer), below what normalising over the batch
#: changes (tens of percent; a test encoder whose last token met its padding: 9-12%).
BATCH_RTOL = 0.05
MOCK_SAMPLES = 16  # enough distinct inputs for zero and duplicate rows to show


def read_submission(path: Path, extra_zoo: list[str] | tuple[str, ...] = ()) -> tuple[Zoo, list[ModelSpec]]:
    """Validate a submission file; returns the zoo with the submission merged in and the submitted specs.
    UserError when the file is invalid, empty, reuses a name of the zoo, or an entry lacks num_layers."""
    path = Path(path)
    submitted = read_zoo_file(path).models  # ZooError (a UserError) names file, line, entry and field
    if not submitted:
        raise UserError(f"{path}: the submission holds no model entry (expected 'models:' with at least one)")
    base = load_zoo(extra_zoo)
    problems = []
    for spec in submitted:
        if spec.name in base:
            problems.append(f"{path}: {spec.name!r} is already a model of the zoo ({base.origin(spec.name)}); "
                            "give the submission a new name")
        if spec.num_layers is None:
            problems.append(f"{path}: {spec.name!r} needs 'num_layers' (the number of blocks; it keys the feature cache)")
    if problems:
        raise UserError("\n  ".join(problems))
    if any(s.loader == "python" for s in submitted) and str(path.resolve().parent) not in sys.path:
        sys.path.insert(0, str(path.resolve().parent))  # "module:name" next to the submission file
    return load_zoo([*extra_zoo, path]), submitted


@dataclass
class MockReport:
    model: str
    samples: int
    layers: list[int]
    widths: list[int]
    max_repeat_diff: float
    max_batch_diff: float  # the largest `batch_difference` of a layer, one batch against halves
    seconds: float
    flags: list[LayerFlag] = field(default_factory=list)  # warnings: zero / duplicate rows, near-constant layers

    @property
    def warnings(self) -> list[str]:
        return [f"mock pass of {self.model}: {flag.message()}" for flag in self.flags]

    def as_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "flags": [flag.as_dict() for flag in self.flags], "warnings": self.warnings}


def _encode(encoder: Any, dataset: Any, n: int, caption_index: int, encoder_timeout: float | None,
            batch_size: int) -> list[torch.Tensor]:
    """The features of the first `n` samples of `dataset`, encoded in batches of `batch_size` as extraction
    encodes them (each batch copied before the next call)."""
    from platobench.encoders.precomputed import EmbeddingFile
    from platobench.features.extract import encode_images, encode_texts

    if isinstance(encoder, EmbeddingFile):  # loader: features: the file's rows of these samples
        prompt = f"caption:{caption_index}" if encoder.spec.modality == "text" else "image"
        return encoder.rows(encoder.positions(dataset.name, list(dataset.ids[:n]), prompt, sample=True))
    if encoder.spec.modality == "text":
        return encode_texts(encoder, dataset.captions(caption_index)[:n], batch_size=batch_size,
                            encoder_timeout=encoder_timeout)
    return encode_images(encoder, dataset, range(n), batch_size=batch_size, num_workers=0,
                         encoder_timeout=encoder_timeout)


def batch_difference(whole: torch.Tensor, parts: torch.Tensor) -> float:
    """How far `parts` (a layer's [N, D] features of N samples encoded in several batches) is from `whole`
    (the same samples in one batch): the Frobenius norm of the difference over that of `whole`'s deviation
    from its mean row, the spread the metrics compare (0: equal; inf for a difference on a constant layer)."""
    spread = float((whole - whole.mean(dim=0)).norm())
    diff = float((whole - parts).norm())
    return diff / spread if spread > 0 else (0.0 if diff == 0 else float("inf"))


def halves(n: int) -> int:
    """The batch size of the mock pass's second batching: half of its `n` samples (rounded up)."""
    return (n + 1) // 2


def check_outputs(spec: ModelSpec, encoder: Any, first: list[torch.Tensor], second: list[torch.Tensor],
                  n: int, batched: list[torch.Tensor]) -> tuple[float, float, list[LayerFlag]]:
    """Problems of a mock pass as one UserError (layers, widths, shapes, dtype, NaN, every layer collapsed,
    determinism, batch dependence); `first` and `second` encode the `n` samples in one batch, `batched` in
    batches of `halves(n)`. When there is no problem, returns the largest absolute difference between the
    two passes, the largest `batch_difference` and the layers flagged for zero rows, duplicate rows or
    near-constant features (warnings, feature_health)."""
    import torch

    from platobench.bench.feature_health import layer_flags

    problems = []
    want = spec.layer_ids(spec.num_layers)
    if list(encoder.layer_ids) != want:
        problems.append(f"layer_ids {list(encoder.layer_ids)} differ from the zoo entry's {want} (num_layers={spec.num_layers})")
    if len(encoder.widths) != len(encoder.layer_ids):
        problems.append(f"{len(encoder.widths)} widths for {len(encoder.layer_ids)} layers")
    if len(first) != len(encoder.layer_ids):
        problems.append(f"encode returned {len(first)} tensors for {len(encoder.layer_ids)} layers")
    if spec.width is not None and encoder.widths and encoder.widths[-1] != spec.width:
        problems.append(f"last layer width {encoder.widths[-1]} differs from the zoo entry's width {spec.width}")
    worst = 0.0
    checked: dict[int, torch.Tensor] = {}  # layer id -> features of the first pass that passed the checks
    for i, (layer, a, b) in enumerate(zip(encoder.layer_ids, first, second)):
        width = encoder.widths[i] if i < len(encoder.widths) else None
        if tuple(a.shape) != (n, width) or tuple(b.shape) != tuple(a.shape):
            problems.append(f"layer {layer}: shape {tuple(a.shape)} (second pass {tuple(b.shape)}), expected ({n}, {width})")
            continue
        if a.dtype != torch.float32:
            problems.append(f"layer {layer}: dtype {a.dtype}, expected torch.float32")
            continue
        if not torch.isfinite(a).all():
            problems.append(f"layer {layer}: NaN or inf in the features")
            continue
        checked[layer] = a
        diff = float((a - b).abs().max())
        worst = max(worst, diff)
        if not torch.allclose(a, b, rtol=DETERMINISM_RTOL, atol=DETERMINISM_ATOL):
            problems.append(f"layer {layer}: not deterministic — encoding the same batch twice differs by up to {diff:.3g} "
                            "(dropout left on? sampling?)")
    flags = layer_flags(list(checked), list(checked.values()))
    if checked and sum(f.near_constant for f in flags) == len(checked):
        problems.append(f"every layer gives the same vector for every sample, up to float rounding (collapsed "
                        f"features: {'; '.join(f.message() for f in flags)}); nothing would be left to score")
    constant = {f.layer for f in flags if f.near_constant}  # its spread is rounding: no scale to compare with
    varying = {layer: a for layer, a in checked.items() if layer not in constant}
    by_layer = dict(zip(encoder.layer_ids, batched))
    batch_worst, batch_problems = _batch_dependence(varying, by_layer, n)
    problems += batch_problems
    if problems:
        raise UserError(f"mock pass of {spec.name} failed:\n  " + "\n  ".join(problems))
    return worst, batch_worst, flags


def _batch_dependence(whole: dict[int, torch.Tensor], batched: dict[int, torch.Tensor], n: int
                      ) -> tuple[float, list[str]]:
    """The largest `batch_difference` between each layer of `whole` (layer id -> features of the n samples
    in one batch) and the same layer of `batched` (in halves), and a problem per layer past BATCH_RTOL."""
    worst, problems = 0.0, []
    for layer, a in whole.items():
        b = batched[layer]
        if tuple(b.shape) != tuple(a.shape):
            problems.append(f"layer {layer}: encoded in batches of {halves(n)}, shape {tuple(b.shape)}, expected "
                            f"{tuple(a.shape)}")
            continue
        share = batch_difference(a, b)
        worst = max(worst, share)
        if share > BATCH_RTOL:
            problems.append(f"layer {layer}: the features of a sample depend on its batch: encoded in batches of "
                            f"{halves(n)} instead of one of {n}, they differ by {share:.0%} of the layer's spread over "
                            f"the samples (more than {BATCH_RTOL:.0%}): normalising over the batch, BatchNorm in train "
                            "mode, padding that reaches the features? The batch size is not part of the cache key")
    return worst, problems


@contextmanager
def mock_step(name: str, what: str) -> Iterator[None]:
    """A problem of the block (`what` the mock pass of model `name` does) as one UserError "mock pass of
    NAME failed: ..." naming it: the encoder's output errors, exit and time limit (platobench.encoders.guard)
    with their own message, any other exception but a UserError as "WHAT raised TYPE: TEXT (at FILE:LINE)"."""
    from platobench.encoders.base import EncoderOutputError
    from platobench.encoders.guard import EncoderCallError, raised
    from platobench.features.extract import NonFiniteActivations

    try:
        yield
    except (NonFiniteActivations, EncoderOutputError, EncoderCallError) as exc:
        raise UserError(f"mock pass of {name} failed: {exc}") from None
    except UserError:
        raise
    except Exception as exc:  # the encoder's own failure: named, not a traceback
        raise UserError(f"mock pass of {name} failed: {what} raised {raised(exc)}") from exc


def mock_pass(spec: ModelSpec, dataset: str = DEFAULT_PAIRED, *, caption_index: int = 0, samples: int = MOCK_SAMPLES,
              device: str = "cpu", encoder_timeout: float | None = None) -> MockReport:
    """Load the encoder and encode the first `samples` samples of paired `dataset` (captions or images)
    twice in one batch and once in halves (`encoder_timeout`: seconds per call into the encoder, see
    platobench.encoders.guard); UserError listing every problem found (see `check_outputs`), or naming
    what failed (`mock_step`)."""
    import torch

    from platobench.encoders import load_encoder
    from platobench.features.extract import check_nonzero_widths, note_limit

    t0 = time.perf_counter()
    data = get_dataset(dataset, limit=samples)
    if len(data) < samples:
        note_limit(samples, data, "--mock-samples")
        samples = len(data)
    with mock_step(spec.name, "loading the encoder"):  # a simple-protocol encoder is probed (and checked) here
        encoder = load_encoder(spec, device=device, encoder_timeout=encoder_timeout)
        check_nonzero_widths(spec.name, encoder.layer_ids, encoder.widths)
    with mock_step(spec.name, "encode"), torch.no_grad():
        first = _encode(encoder, data, samples, caption_index, encoder_timeout, samples)
        second = _encode(encoder, data, samples, caption_index, encoder_timeout, samples)
        batched = _encode(encoder, data, samples, caption_index, encoder_timeout, halves(samples))
    worst, batch_worst, flags = check_outputs(spec, encoder, first, second, samples, batched)
    return MockReport(spec.name, samples, list(encoder.layer_ids), list(encoder.widths), worst, batch_worst,
                      round(time.perf_counter() - t0, 3), flags)


def references(spec: ModelSpec, pairs: str, catalog: Catalog, zoo: Zoo) -> list[tuple[ModelSpec, int]]:
    """What a submission is scored against: (model, the side the submission takes: 0 x, 1 y) for each
    model paired, in pair set (or explicit pair list) `pairs`, with a model of the submission's modality
    (the side of that modality; the x side when both are), in order."""
    found: dict[str, tuple[ModelSpec, int]] = {}
    for a, b in resolve_pairs(pairs, catalog, zoo):
        if a.modality == spec.modality:
            found.setdefault(b.name, (b, 0))
        elif b.modality == spec.modality:
            found.setdefault(a.name, (a, 1))
    found.pop(spec.name, None)
    if not found:
        raise UserError(f"--pairs {pairs!r} pairs no {spec.modality} model with anything to compare {spec.name} with")
    return list(found.values())


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "submit", help="validate a new encoder's zoo entry, test it, score it and show where it ranks",
        description=(
            "Submit an encoder described in a zoo file (hub id, local folder, or loader: python with source "
            "'module:name', a class or object whose encode(texts) or encode(images) returns an array "
            "[N, num_layers + 1, D]; FILE's folder is importable and its entries trusted; see examples/). Validates the entry, runs a mock pass on a "
            "few samples (layer shapes and widths, no NaN, deterministic, not every layer collapsed: these fail; "
            "exactly-zero rows, duplicate rows and near-constant layers are warned of, with counts), scores it "
            "under the chosen settings against the references of a pair set (the vision models for a text "
            "encoder, the language models for a vision encoder), writes the records under OUT and ranks each "
            "among its peers in OUT: other models against the same reference, setting and samples (a --limit "
            "run meets only records of the same limit), printing their board. With no peers in OUT nothing is "
            "ranked: use --out results/offline (full runs) or score the peers into OUT first. "
            "Example: platobench submit my_encoder.yaml --settings demo --pairs demo --out results/offline"
        ),
    )
    p.add_argument("file", type=Path, metavar="FILE.yaml", help="zoo file with the submitted model entry (or entries)")
    p.add_argument("--settings", default="demo",
                   help="setting ids or groups, comma-separated (default %(default)s: the offline demo group)")
    p.add_argument("--pairs", default="demo", help="pair sets and/or 'X:Y' pairs, comma-separated (their union): the submission "
                                          "is scored against the models paired with one of its modality (default demo)")
    p.add_argument("--out", type=Path, default=Path("results"),
                   help="results folder the records are written to and whose peers they rank among (default ./results)")
    p.add_argument("--limit", type=int, default=None,
                   help="a quick test, not comparable with full records: the first N samples of each paired "
                        "dataset, the first N images of each class of a class dataset")
    p.add_argument("--mock-samples", type=int, default=MOCK_SAMPLES,
                   help=f"samples of the mock pass (default {MOCK_SAMPLES}; the zero / duplicate row counts are over these)")
    p.add_argument("--mock-only", action="store_true", help="stop after validation and the mock pass")
    add_device_option(p)
    add_timeout_option(p)
    p.add_argument("--batch-size", type=int, default=32, help="extraction batch size")
    add_json_option(p, what="the mock pass, run summary and ranks")
    add_catalog_options(p)
    p.set_defaults(func=_submit)


def _submit(args: argparse.Namespace) -> int:
    if args.mock_samples < 2:
        raise UserError(f"--mock-samples must be at least 2, got {args.mock_samples}")
    catalog = Catalog(args.settings_file)
    settings = catalog.resolve_settings(args.settings)
    check_limit(settings, args.limit)
    zoo, submitted = read_submission(args.file, args.zoo)
    with trusting(submitted):
        return _mock_and_score(args, catalog, settings, zoo, submitted)


def trusting(submitted: list[ModelSpec]) -> AbstractContextManager[tuple[str, ...]]:
    """Naming python encoders in the submitted file is their `--trust-code` opt-in: trust them (and the
    patterns in force) inside the block."""
    names = [spec.name for spec in submitted if spec.loader == "python"]
    return python_code.allowed([*python_code.allowed_patterns(), *names])


def disclosure_requests(spec: ModelSpec) -> list[str]:
    """What the referee will ask of a submitted entry that it does not state: its training data
    (`trained_on`) and whether it was fitted on the evaluation data (`fitted_on_eval`); each board marks a
    model that was (platobench/leaderboard/flags.py)."""
    asks = []
    if spec.trained_on is None:
        asks.append(f"{spec.name}: state 'trained_on' in its zoo entry: the datasets its weights were trained or "
                    "fine-tuned on, as its model card names them ([] for none); boards whose dataset it names are marked")
    if spec.fitted_on_eval is None:
        asks.append(f"{spec.name}: state 'fitted_on_eval' (true / false) in its zoo entry: whether anything of it (a "
                    "vocabulary, a projection, a probe) was fitted on the evaluation data; every board marks true")
    return asks


def _mock_and_score(args: argparse.Namespace, catalog: Catalog, settings: list[Setting], zoo: Zoo,
                    submitted: list[ModelSpec]) -> int:
    from platobench.bench.runner import Job, RunOptions, execute
    from platobench.features.store import FeatureStore

    say = (lambda *a: print(*a, file=sys.stderr)) if args.json else print
    disclosures = [ask for spec in submitted for ask in disclosure_requests(spec)]
    for ask in disclosures:
        say(f"disclose: {ask}")
    mocks = []
    paired = next((s for s in settings if s.kind == "paired"), None)  # the mock pass reads paired samples
    for spec in submitted:
        mocks.append(mock_pass(spec, paired.dataset if paired else DEFAULT_PAIRED,
                               caption_index=paired.caption_index if paired else 0, samples=args.mock_samples,
                               device=args.device, encoder_timeout=args.encoder_timeout))
        say(f"mock pass of {spec.name}: ok ({len(mocks[-1].layers)} layers, widths {sorted(set(mocks[-1].widths))}, "
            f"repeat diff {mocks[-1].max_repeat_diff:.1e}, batch diff {mocks[-1].max_batch_diff:.1e})")
        for warning in mocks[-1].warnings:
            say(f"warning: {warning}")
    report: dict[str, Any] = {"mock": [m.as_dict() for m in mocks], "disclose": disclosures,
                              "warnings": [w for m in mocks for w in m.warnings]}
    if args.mock_only:
        if args.json:
            print(json.dumps(report, indent=1))
        return 0
    jobs = [Job(s, spec, ref) if side == 0 else Job(s, ref, spec)
            for spec in submitted for ref, side in references(spec, args.pairs, catalog, zoo) for s in settings]
    say(f"scoring {len(jobs)} pair x setting records -> {args.out}")
    opts = RunOptions(out=args.out, limit=args.limit, device=args.device, batch_size=args.batch_size,
                      progress=not args.json, encoder_timeout=args.encoder_timeout)
    summary: RunSummary = execute(jobs, opts, FeatureStore())
    records, contradictions = consistent_records(load_records(args.out))
    for problem in contradictions:
        say(problem)
    produced = {record_path(args.out, j.setting.id, j.x.name, j.y.name, args.limit) for j in jobs}
    mine = [load_record(p) for p in sorted(produced) if p.is_file()]
    by_spec = {spec.name: [r for r in mine if spec.name in (r.x.name, r.y.name)] for spec in submitted}
    report.update(run=summary.as_dict(), ranks={
        name: standings(name, records, rs) for name, rs in by_spec.items()
    }, copies={name: copied_models(name, rs) for name, rs in by_spec.items()})
    copies = [f"{name} copies {model}: its features are that model's up to rotation and scale (linear CKA "
              f"{value:.4f} >= {COPY_CKA}; every board flags such a row and withholds its rank)"
              for name, found in report["copies"].items() for model, value in found]
    report["warnings"] += copies
    for line in copies:
        say(f"warning: {line}")
    lonely = any(not row["peers"] for rows in report["ranks"].values() for row in rows)
    hint = no_peers_hint(args.out, peers_command(args), args.limit) if lonely else None
    if hint:
        report["warnings"].append(hint)
    if args.json:
        if hint:
            say(f"warning: {hint}")
        print(json.dumps(report, indent=1))
    else:
        from platobench.bench.terminal_board import print_board

        for name, rs in by_spec.items():
            for r in rs:
                board = board_records(name, records, r)
                if len(board) > 1:  # a record alone has no board to show: its line below says so
                    print(f"-- {name} vs {reference(r, name)}: {len(board) - 1} peers on the same samples")
                    print_board(board, pool=records)
        for name, rows in report["ranks"].items():
            for row in rows:
                print(rank_line(name, row, args.out))
        if hint:
            print(f"warning: {hint}")
        for label, why in summary.failed.items():
            print(f"FAILED {label}: {why}")
    return 1 if summary.failed else 0


def copied_models(name: str, records: list[ResultRecord]) -> list[tuple[str, float]]:
    """The cached models whose features submitted model `name`'s features copy (`copies.cached_copies`), over
    the feature entries its `records` were scored from, largest linear CKA first, each model once."""
    from platobench.bench.copies import cached_copies
    from platobench.features.store import FeatureStore

    store, best = FeatureStore(), {}
    for digest in {(r.provenance.inputs or {}).get("x" if r.x.name == name else "y") for r in records} - {None}:
        entry = store.by_digest(digest)
        for model, value in cached_copies(entry, store) if entry is not None else ():
            best[model] = max(value, best.get(model, 0.0))
    return sorted(best.items(), key=lambda t: -t[1])


def peers_command(args: argparse.Namespace) -> str:
    """The `platobench run` that scores the submission's peers into its results folder: the same pairs,
    settings (and settings files, zoo files) and limit."""
    words = ["platobench", "run", "--pairs", args.pairs, "--settings", args.settings]
    for path in args.settings_file:
        words += ["--settings-file", str(path)]
    for path in args.zoo:
        words += ["--zoo", str(path)]
    if args.limit is not None:
        words += ["--limit", str(args.limit)]
    return shlex.join([*words, "--out", str(args.out)])
