"""The batched feature extractor: run one model over one dataset once, per layer, into the cache.

Text: captions are sorted by token length inside each chunk and batched, so a batch is padded only to its
own longest caption (the PRH reference pads every batch to the whole dataset's longest caption); outputs
are scattered back to the original order. Images: a DataLoader with workers applies the model's own
transform and batches the pixels. A chunk (a contiguous range of samples) is the unit of caching: an
interrupted run resumes from its finished chunks. On CUDA out-of-memory the batch is halved and retried,
down to 1. Non-finite activations stop the run with the model and layer named, or, when the spec's dtype
is "auto" and the model runs in half precision, fall back to float32 once.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import DataLoader, Dataset
from tqdm.auto import tqdm

from platobench.encoders import layer_ids_of, load_encoder, packaged, precomputed, python_source
from platobench.encoders.base import EncoderOutputError, owned
from platobench.encoders.guard import encoder_call, limit_for
from platobench.encoders.runtime import resolve_device, resolve_dtype
from platobench.errors import UserError
from platobench.features.slices import reuse_superset
from platobench.features.store import FeatureEntry, FeatureKey, FeatureStore
from platobench.files.ids import shown

# Part of every cache key: bump when extraction or a loader's preprocessing changes what is stored.
# 2: EfficientNet-Lite inputs are (x - 127) / 128, as the weights were trained (was ImageNet mean/std).
EXTRACTOR_VERSION = "2"


class NonFiniteActivations(RuntimeError):
    """A layer produced NaN/inf (e.g. fp16 overflow in an LLM)."""


class ExtractOptionError(UserError):
    """An extraction option (batch size, chunk size, workers) is out of range."""


def check_extract_options(*, batch_size: int, chunk_size: int, num_workers: int) -> None:
    """ExtractOptionError unless batch and chunk sizes are >= 1 and workers >= 0 (0: decode images in the
    main process)."""
    if batch_size < 1:
        raise ExtractOptionError(f"--batch-size must be >= 1, got {batch_size}")
    if chunk_size < 1:
        raise ExtractOptionError(f"--chunk-size must be >= 1, got {chunk_size}")
    if num_workers < 0:
        raise ExtractOptionError(f"--workers must be >= 0, got {num_workers} (0 decodes images in the main process)")


def note_limit(limit: int | None, dataset: Any, option: str = "--limit") -> None:
    """Say on stderr (one line) when `option` asked for more samples than `dataset` holds."""
    if limit is not None and limit > len(dataset):
        print(f"{option} {limit} is more than the {len(dataset)} samples of {dataset.name}: using all {len(dataset)}",
              file=sys.stderr, flush=True)


@dataclass(frozen=True)
class ExtractReport:
    """What `platobench extract --json` prints for one model."""

    model: str
    dataset: str
    path: str
    n: int
    layers: list[int]
    widths: list[int]
    cached: bool
    seconds: float
    sliced_from: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _is_oom(exc: BaseException) -> bool:
    return isinstance(exc, torch.OutOfMemoryError) or "out of memory" in str(exc).lower()


def check_layer_count(model: str, layer_ids: Sequence[int], outputs: Sequence[torch.Tensor]) -> None:
    """EncoderOutputError unless `encode` returned one tensor with data (not on the meta device) per
    declared layer."""
    if not isinstance(outputs, (list, tuple)) or not all(isinstance(o, torch.Tensor) for o in outputs):
        raise EncoderOutputError(f"model {model}: encode returned {type(outputs).__name__}, expected a list of "
                                 f"{len(layer_ids)} tensors (one [batch, width] tensor per layer)")
    if len(outputs) != len(layer_ids):
        raise EncoderOutputError(f"model {model}: encode returned {len(outputs)} tensors for {len(layer_ids)} "
                                 "layers; it must return one [batch, width] tensor per layer")
    meta = next((layer for layer, o in zip(layer_ids, outputs) if o.is_meta), None)
    if meta is not None:
        raise EncoderOutputError(f"model {model}: layer {meta} is a tensor on the meta device (a shape without "
                                 "data: were the weights never loaded?); encode must return computed features")


def check_nonzero_widths(model: str, layer_ids: Sequence[int], widths: Sequence[int]) -> None:
    """EncoderOutputError naming the first layer an encoder declares of width 0 (no feature)."""
    empty = next((layer for layer, width in zip(layer_ids, widths) if width < 1), None)
    if empty is not None:
        raise EncoderOutputError(f"model {model}: layer {empty} has width 0; every layer needs at least one feature")


def check_widths(model: str, layer_ids: Sequence[int], widths: Sequence[int], outputs: Sequence[torch.Tensor],
                 rows: int) -> None:
    """EncoderOutputError unless output l has shape [rows, widths[l]]."""
    for layer, width, out in zip(layer_ids, widths, outputs):
        if tuple(out.shape) != (rows, width):
            raise EncoderOutputError(
                f"model {model}: layer {layer} has shape {tuple(out.shape)}, expected ({rows}, {width})"
            )


def check_finite(model: str, layer_ids: Sequence[int], outputs: Sequence[torch.Tensor]) -> None:
    """Raise NonFiniteActivations naming the first layer with NaN/inf."""
    for layer, out in zip(layer_ids, outputs):
        if not torch.isfinite(out).all():
            raise NonFiniteActivations(
                f"model {model}: layer {layer} produced NaN/inf activations "
                f"(half-precision overflow? set dtype: float32 in the zoo entry)"
            )


def run_with_oom_backoff(
    fn: Callable[[list[int]], list[torch.Tensor]], indices: list[int], batch_size: int
) -> list[list[torch.Tensor]]:
    """Call fn on consecutive slices of `indices`; on out-of-memory halve the slice and retry (>= 1).

    Returns per batch the list of per-layer outputs [b, D_l]."""
    outs: list[list[torch.Tensor]] = []
    start, bs = 0, max(1, batch_size)
    while start < len(indices):
        batch = indices[start : start + bs]
        try:
            outs.append(fn(batch))
        except (RuntimeError, torch.OutOfMemoryError) as exc:
            if not _is_oom(exc):
                raise
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            if bs == 1:
                raise UserError("out of memory with batch size 1; use a smaller model, more GPUs or quantization") from exc
            bs = max(1, bs // 2)
            continue
        start += len(batch)
    return outs


def copies(encoder: Any) -> bool:
    """Whether extraction copies each batch `encoder` returns before its next call (`base.owned`): for a
    `loader: python` encoder, whose code may return views of one buffer it overwrites on every call (every
    batch kept would become the last one); not for the built-in loaders, whose outputs are made for the
    call (pooled, converted by `base.to_output`), where a copy would only cost time (~5 ms a batch for an
    LLM's 33 float32 layers of [32, 4096])."""
    return getattr(encoder.spec, "loader", None) == "python"


def length_buckets(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Positions sorted by decreasing length, cut into batches of `batch_size` (ties keep input order)."""
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def encode_texts(encoder: Any, texts: Sequence[str], batch_size: int, encoder_timeout: float | None = None
                 ) -> list[torch.Tensor]:
    """Per layer [len(texts), D_l] float32, in the order of `texts` (length-bucketed batches). Every call
    into the encoder runs under `encoder_call`, with the limit `limit_for` gives `encoder_timeout`; a
    user's encoder's batches are copied before the next call (`copies`)."""
    name, limit = encoder.spec.name, limit_for(getattr(encoder.spec, "loader", None), encoder_timeout)
    copy = copies(encoder)
    with encoder_call(name, f"token_lengths of {len(texts)} texts", limit):
        lengths = encoder.token_lengths(list(texts))
    order = [i for bucket in length_buckets(lengths, len(texts)) for i in bucket]
    calls = 0

    def run(batch: list[int]) -> list[torch.Tensor]:
        nonlocal calls
        calls += 1
        with encoder_call(name, f"encode of batch {calls} ({len(batch)} texts)", limit):
            outs = encoder.encode(encoder.tokenize([texts[i] for i in batch]))
        check_layer_count(encoder.spec.name, encoder.layer_ids, outs)
        check_finite(encoder.spec.name, encoder.layer_ids, outs)
        return owned(outs) if copy else outs

    per_batch = run_with_oom_backoff(run, order, batch_size)
    stacked = [torch.cat([b[l] for b in per_batch]) for l in range(len(encoder.layer_ids))]
    inverse = torch.empty(len(order), dtype=torch.long)
    inverse[torch.tensor(order)] = torch.arange(len(order))
    return [s[inverse] for s in stacked]


class _ImageView(Dataset):
    """Dataset positions -> transformed pixels [3, H, W] (runs in DataLoader workers)."""

    def __init__(self, dataset: Any, positions: Sequence[int], transform: Callable) -> None:
        self.dataset, self.positions, self.transform = dataset, list(positions), transform

    def __len__(self) -> int:
        return len(self.positions)

    def __getitem__(self, j: int) -> torch.Tensor:
        return self.transform(self.dataset.image(self.positions[j]).convert("RGB"))


def encode_images(
    encoder: Any, dataset: Any, positions: Sequence[int], batch_size: int, num_workers: int,
    encoder_timeout: float | None = None,
) -> list[torch.Tensor]:
    """Per layer [len(positions), D_l] float32 for the images at `positions` of `dataset`. Reading a batch
    (the encoder's transform) and every encode call run under `encoder_call`, with the limit `limit_for`
    gives `encoder_timeout`; a user's encoder's batches are copied before the next call (`copies`)."""
    name, limit = encoder.spec.name, limit_for(getattr(encoder.spec, "loader", None), encoder_timeout)
    copy = copies(encoder)
    loader = DataLoader(
        _ImageView(dataset, positions, encoder.transform), batch_size=batch_size, shuffle=False,
        num_workers=num_workers, persistent_workers=False,
        collate_fn=getattr(encoder, "collate", None),  # simple-protocol encoders batch PIL images as a list
    )
    per_batch: list[list[torch.Tensor]] = []
    with encoder_call(name, "starting the image loader", limit):  # workers fork here: their output too goes to stderr
        batches = iter(loader)
    calls = 0
    for number in range(1, len(loader) + 1):
        with encoder_call(name, f"the transform of image batch {number}", limit):
            pixels = next(batches)

        def run(rows: list[int], pixels: torch.Tensor = pixels) -> list[torch.Tensor]:
            nonlocal calls
            calls += 1
            with encoder_call(name, f"encode of batch {calls} ({len(rows)} images)", limit):
                outs = encoder.encode(pixels[rows])
            check_layer_count(encoder.spec.name, encoder.layer_ids, outs)
            check_finite(encoder.spec.name, encoder.layer_ids, outs)
            return owned(outs) if copy else outs

        per_batch.extend(run_with_oom_backoff(run, list(range(len(pixels))), len(pixels)))
    return [torch.cat([b[l] for b in per_batch]) for l in range(len(encoder.layer_ids))]


def model_revision(spec: Any) -> str:
    """What identifies the weights in the cache key: the pinned revision for hub sources; the asset's
    pinned sha256 for packaged ones; for a local folder, a hash of its config and of the names, sizes and
    modification times of its weight files (retraining into the same folder changes the key); for a
    baseline, "baseline:<source>@v<N>" (N bumped whenever that baseline's features change); for a
    "module:name" encoder, "python:<source>@sha256:<16 hex>", the sha256 of its code found without importing
    it (platobench.encoders.python_source): the module's .py file, the __init__.py of each package along its
    dotted name, and every module it imports, transitively (relative imports included), whose file lies
    outside the standard library, site-packages and platobench — each as its dotted name, size and bytes;
    for a `loader: features` file, "features:sha256:<16 hex>" of its bytes (`encoders.precomputed.revision`)."""
    if spec.source_type == "baseline":
        from platobench.encoders.baselines import revision

        return revision(spec.source)
    if spec.source_type == "packaged":
        return "sha256:" + packaged.get_asset(spec.packaged_asset).sha256
    if spec.loader == "features":
        return precomputed.revision(spec)
    if spec.source_type == "local":
        path = Path(spec.source).expanduser()
        if not path.exists():
            raise UserError(f"model {spec.name}: local source {path} does not exist")
        files = sorted(p for p in ([path] if path.is_file() else path.rglob("*")) if p.is_file())
        h = hashlib.sha256()
        for p in files:
            st = p.stat()
            h.update(f"{p.relative_to(path.parent)}|{st.st_size}|{st.st_mtime_ns}\n".encode())
            if p.name == "config.json":
                h.update(p.read_bytes())
        return "local:" + h.hexdigest()[:16]
    if spec.source_type == "python":
        return f"python:{spec.source}@sha256:{python_source.source_sha256(spec)[:16]}"
    return spec.revision or "unpinned"


# How each zoo field enters the cache key. KEYED_FIELDS: as its own key field or through one (name ->
# model, revision/source -> model_revision, dtype -> the resolved compute dtype, pooling, layers and
# num_layers -> the layer ids, modality -> the prompt). OPTION_FIELDS: in `FeatureKey.options` whenever
# they differ from `option_reference` (below). FEATURE_NEUTRAL: they do not change a stored feature.
KEYED_FIELDS = frozenset({"name", "revision", "source", "dtype", "pooling", "layers", "num_layers", "modality"})
OPTION_FIELDS = ("loader", "kind", "source", "image_size", "quantization", "max_tokens")
FEATURE_NEUTRAL = frozenset({
    "width",  # declared, checked against the loaded model; the model decides the width
    "params_m", "license", "notes", "trained_on", "fitted_on_eval",  # descriptions and disclosures
    "trust_remote_code",  # a permission: the same code runs, or nothing does
})


def option_reference(spec: Any) -> dict[str, Any]:
    """What each option field is worth when it is not in the key: the schema default (image_size None,
    quantization "none", max_tokens None); for loader, kind and source, which have no default, the
    built-in zoo entry of the same name (what the name has always meant), else nothing: an entry of
    another name always has them in its key (a hub revision alone does not say which repository).
    Changing a built-in entry's loader, kind or source in model_zoo.yaml therefore needs a bump of
    EXTRACTOR_VERSION, as any change of what a name extracts does."""
    reference: dict[str, Any] = {"image_size": None, "quantization": "none", "max_tokens": None}
    base = _builtin_specs().get(spec.name)
    if base is not None:
        reference.update(loader=base.loader, kind=base.kind, source=base.source)
    return reference


@functools.lru_cache(maxsize=1)
def _builtin_specs() -> dict[str, Any]:
    """The built-in zoo's entries by name (read once)."""
    from platobench.zoo import load_zoo

    return {spec.name: spec for spec in load_zoo().list("*")}


def spec_options(spec: Any) -> dict[str, Any]:
    """The `FeatureKey.options` of `spec`: every OPTION_FIELDS value that differs from its reference."""
    reference = option_reference(spec)
    return {f: getattr(spec, f) for f in OPTION_FIELDS if f not in reference or getattr(spec, f) != reference[f]}


def feature_key(
    spec: Any, dataset: Any, *, prompt: str, device: torch.device, dtype: str | None = None
) -> FeatureKey:
    """The cache key of `spec` on `dataset` (model, revision, dtype, pooling, layer set, dataset,
    dataset revision, sample-id hash, prompt/template, extractor version, and the entry's other
    feature-changing fields: `spec_options`) — computable without loading. A `loader: features` entry is
    float32 whatever the device or `dtype` asks (its values are read, not computed)."""
    compute = torch.float32 if spec.loader == "features" else resolve_dtype(dtype or spec.dtype, device)
    return FeatureKey.for_dataset(
        dataset, model=spec.name, model_revision=model_revision(spec), dtype=str(compute).removeprefix("torch."),
        pooling=spec.pooling, layers=tuple(layer_ids_of(spec)), prompt=prompt,
        extractor_version=EXTRACTOR_VERSION, options=spec_options(spec),
    )


def _texts_for(dataset: Any, prompt: str, texts: Sequence[str] | None) -> list[str]:
    if texts is not None:
        if len(texts) != len(dataset):
            raise UserError(f"{len(texts)} texts given for {len(dataset)} samples of {dataset.name}")
        return list(texts)
    kind, _, index = prompt.partition(":")
    if kind != "caption" or not index.isdigit():
        raise UserError(f"prompt {prompt!r}: expected 'caption:<index>' or explicit texts")
    return dataset.captions(int(index))


def extract(
    spec: Any,
    dataset: Any,
    *,
    store: FeatureStore,
    prompt: str = "caption:0",
    texts: Sequence[str] | None = None,
    device: str = "cpu",
    dtype: str | None = None,
    batch_size: int = 32,
    chunk_size: int = 256,
    num_workers: int = 2,
    progress: bool = True,
    home: Path | None = None,
    encoder_timeout: float | None = None,
) -> tuple[FeatureEntry, ExtractReport]:
    """Features of every sample of `dataset` under `spec`, from the cache or computed now (and cached).

    Text models read `texts` (one per sample; e.g. class prompts) or the dataset's captions selected by
    `prompt` ("caption:<index>"); vision models read the images. A warm cache loads no model at all, and
    neither does a limited dataset whose samples are the first ones of a cached entry of the same model
    and dataset: those rows are copied into an entry of their own (`slices`; the report's `sliced_from`
    names the source). Loading the encoder and each batch run under `platobench.encoders.guard.encoder_call`
    (`encoder_timeout`: seconds per call, 0 none, None the default of `limit_for`). Returns the entry (lazy
    per-layer [N, D_l] tensors) and the report `--json` prints."""
    check_extract_options(batch_size=batch_size, chunk_size=chunk_size, num_workers=num_workers)
    t0 = time.perf_counter()
    state = parallel_state(device)
    dev = state.device if state is not None and str(device).startswith("cuda") else resolve_device(device)
    if spec.modality == "vision":
        prompt = "image"
    key = feature_key(spec, dataset, prompt=prompt, device=dev, dtype=dtype)
    entry = _verified(store, key)
    if entry is None:
        entry = reuse_superset(store, key, dataset.ids, say=state is None or state.is_main_process)
    cached = entry is not None
    if entry is None:
        encoder = load_encoder(spec, device=dev, dtype=dtype, home=home, encoder_timeout=encoder_timeout)
        if list(encoder.layer_ids) != list(key.layers):
            raise UserError(
                f"model {spec.name}: loaded model has layers {shown(list(encoder.layer_ids))} "
                f"but the zoo entry says num_layers={spec.num_layers}; fix the entry"
            )
        if len(encoder.widths) != len(encoder.layer_ids):
            raise EncoderOutputError(
                f"model {spec.name}: {len(encoder.widths)} widths declared for {len(encoder.layer_ids)} layers"
            )
        check_nonzero_widths(spec.name, encoder.layer_ids, encoder.widths)
        rows = _file_rows(encoder, dataset, prompt, texts) if isinstance(encoder, precomputed.EmbeddingFile) else None
        all_texts = _texts_for(dataset, prompt, texts) if spec.modality == "text" and rows is None else None

        def encode_chunk(start: int, stop: int) -> list[torch.Tensor]:
            if rows is not None:  # loader: features, read by sample id
                outs = encoder.rows(rows[start:stop])
            elif all_texts is not None:
                outs = encode_texts(encoder, all_texts[start:stop], batch_size, encoder_timeout)
            else:
                outs = encode_images(encoder, dataset, range(start, stop), batch_size, num_workers, encoder_timeout)
            check_widths(spec.name, encoder.layer_ids, encoder.widths, outs, stop - start)
            return outs

        if state is None:
            entry = _write_entry(store, key, dataset, encoder, encode_chunk, chunk_size, progress)
        else:
            entry = _write_entry_parallel(state, store, key, dataset, encoder, encode_chunk, chunk_size, progress)
        del encoder
    report = ExtractReport(
        model=spec.name, dataset=dataset.name, path=str(entry.path), n=len(entry.ids),
        layers=list(entry.layer_ids), widths=list(entry.widths), cached=cached,
        seconds=round(time.perf_counter() - t0, 3), sliced_from=entry.manifest.get("sliced_from"),
    )
    return entry, report


def _file_rows(table: precomputed.EmbeddingFile, dataset: Any, prompt: str, texts: Sequence[str] | None
               ) -> list[int]:
    """The embeddings file's row of each of `dataset`'s samples (its ids matched, in the dataset's order).
    UserError for explicit `texts` (class prompts): a file holds one row per dataset sample, not per prompt."""
    if texts is not None:
        raise UserError(f"model {table.spec.name} (loader: features) holds one embedding per sample of a dataset; it "
                        f"cannot encode the {len(texts)} texts (class prompts) a zero-shot setting needs")
    return table.positions(dataset.name, list(dataset.ids), prompt)


def _verified(store: FeatureStore, key: FeatureKey) -> FeatureEntry | None:
    """The complete entry of `key` when every layer file matches its manifest's sha256, else None (with
    one line on stderr when an entry exists but fails, so it is recomputed rather than reused). Costs
    one read and hash of the entry's files."""
    entry = store.get(key)
    problems = entry.verify() if entry is not None else []
    if problems:
        print(f"cache entry {key.digest()[:12]} ({key.model} on {key.dataset}) is damaged ({'; '.join(problems)}); "
              "recomputing it", file=sys.stderr, flush=True)
        return None
    return entry


def parallel_state(device: str | torch.device) -> Any:
    """accelerate's process state when a launcher started several processes (WORLD_SIZE > 1: `accelerate
    launch --multi_gpu`, `torchrun`), else None. When `device` is the CPU the processes talk over gloo
    (accelerate's default, seeing no GPU, would leave each process alone, each its own main process). The
    process group is destroyed at exit: left to interpreter shutdown, gloo's teardown sometimes aborts."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return None
    from accelerate import PartialState

    state = PartialState(cpu=resolve_device(device).type == "cpu")
    atexit.unregister(_destroy_process_group)  # registered once however often this is called
    atexit.register(_destroy_process_group)
    return state


def _destroy_process_group() -> None:
    if torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()


def _bar(n: int, done: int, name: str, dataset: str, progress: bool) -> Any:
    return tqdm(total=n, initial=done, unit="sample", disable=not progress, desc=f"extract {name} on {dataset}",
                dynamic_ncols=True)


def _write_entry(store: FeatureStore, key: FeatureKey, dataset: Any, encoder: Any,
                 encode_chunk: Callable[[int, int], list[torch.Tensor]], chunk_size: int,
                 progress: bool) -> FeatureEntry:
    """One process: encode every pending chunk, write it (resumable), then join the chunks."""
    n = len(dataset)
    with store.writer(key, dataset.ids, encoder.layer_ids, encoder.widths) as writer:
        pending = writer.pending(chunk_size)
        # closed on an error too: the error's line then starts a line of its own
        with _bar(n, n - sum(b - a for a, b in pending), encoder.spec.name, dataset.name, progress) as bar:
            for start, stop in pending:
                writer.write_chunk(start, encode_chunk(start, stop))
                bar.update(stop - start)
        return writer.finalize()


def _write_entry_parallel(state: Any, store: FeatureStore, key: FeatureKey, dataset: Any, encoder: Any,
                          encode_chunk: Callable[[int, int], list[torch.Tensor]], chunk_size: int,
                          progress: bool) -> FeatureEntry:
    """Data parallel (`accelerate launch -m platobench extract ...`): the main process holds the entry's
    lock and writes; in each round every process encodes one pending chunk, the chunks are gathered to
    the main process and written, so an interrupted run still resumes chunk by chunk and the result is one
    merged entry, identical to a single-process extraction."""
    from accelerate.utils import broadcast_object_list, gather_object

    n = len(dataset)
    writer = store.writer(key, dataset.ids, encoder.layer_ids, encoder.widths) if state.is_main_process else None
    try:
        box = [writer.pending(chunk_size) if writer is not None else None]
        pending = broadcast_object_list(box)[0]
        bar = _bar(n, n - sum(b - a for a, b in pending), encoder.spec.name, dataset.name,
                   progress and state.is_main_process)
        world = state.num_processes
        for r in range(0, len(pending), world):
            mine = pending[r + state.process_index] if r + state.process_index < len(pending) else None
            out = [] if mine is None else [(mine[0], encode_chunk(*mine))]
            for start, outs in gather_object(out):
                if writer is not None:
                    writer.write_chunk(start, outs)
                bar.update(outs[0].shape[0])
        bar.close()
        if writer is not None:
            writer.finalize()
    finally:
        if writer is not None:
            writer.close()
    state.wait_for_everyone()
    entry = store.get(key)
    if entry is None:
        raise RuntimeError(f"data-parallel extraction of {encoder.spec.name} did not produce a complete entry")
    return entry
