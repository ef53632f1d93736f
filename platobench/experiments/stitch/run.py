"""`platobench stitch` end to end: features, the text-only captioner, maps, captions, scores, records.

For each text encoder: its caption embeddings come from the features cache (captions 0..views-1 of every
sample, one entry each); the normaliser and the captioner are fitted on the decoder's training text only
(`platobench.experiments.stitch.split`); the text->text upper bound is scored once. For each vision model (or the
planted synthetic features of `--quick`): the maps, captions and scores of `platobench.experiments.stitch.evaluate`,
written as one record per (text encoder, vision model) under OUT/<setting>/ (kind "stitch"; the headline
score is the paired map fitted on every train pair, the other variants are in `details.stitch.rows`). Each
row keeps the caption of every held-out image and `details.stitch.scoring` the references, seeds and
settings, so that `platobench check` re-scores the stored captions (`platobench.experiments.stitch.verify`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from platobench.api import (
    DatasetRef,
    FeatureEntry,
    FeatureStore,
    IntervalRef,
    MetricRef,
    ModelRef,
    ModelSpec,
    PairedDataset,
    Provenance,
    ResultRecord,
    SideRef,
    extract,
    model_ref,
    resolve_device,
    write_record,
)
from platobench.experiments.stitch.decoder import (
    PrefixCaptioner,
    load_captioner,
    tiny_captioner,
    train_captioner,
)
from platobench.experiments.stitch.evaluate import (
    EvalOptions,
    PairResult,
    evaluate_pair,
    sample_rows,
    text_bound_row,
)
from platobench.experiments.stitch.maps import Normaliser
from platobench.experiments.stitch.planted import planted_features, planted_ref
from platobench.experiments.stitch.split import StitchSplit

TINY = "tiny"
Log = Callable[[str], None]


@dataclass(frozen=True)
class DecoderOptions:
    """name: a zoo causal LM (prefix captioner over its frozen weights, or all weights with tune_lm) or
    "tiny" (a small Llama trained from scratch on the train captions); None fields take the decoder
    module's defaults for that kind."""

    name: str = TINY
    prefix_len: int = 4
    tune_lm: bool = False
    epochs: float | None = None
    batch_size: int = 32
    lr: float | None = None
    noise: float | None = None
    max_new_tokens: int = 24
    max_seconds: float | None = None


@dataclass(frozen=True)
class StitchConfig:
    """setting: record setting id; text / vision: zoo specs (vision empty with `planted`); planted: noise of
    the planted rotation (None: real vision models); layers: (text, vision) layer positions (-1: last);
    zoo: the `platobench.zoo.Zoo` the decoder's language model is looked up in (None: the built-in zoo);
    progress: a progress bar while the decoder trains; dataset / limit: the `get_dataset` name and limit the
    split was drawn from (recorded so that `platobench check` rebuilds the same split)."""

    setting: str
    text: list[ModelSpec]
    vision: list[ModelSpec]
    decoder: DecoderOptions
    evaluation: EvalOptions
    out: Path
    planted: float | None = None
    layers: tuple[int, int] = (-1, -1)
    device: str = "cpu"
    batch_size: int = 64
    workers: int = 2
    zoo: Any = None
    progress: bool = True
    dataset: str | None = None
    limit: int | None = None


@dataclass
class StitchResult:
    records: list[ResultRecord] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    wall_s: float = 0.0


class _Features:
    """Cached extraction of one dataset's features (`extract`), quiet, through one store."""

    def __init__(self, config: StitchConfig, store: FeatureStore, home: Path | None) -> None:
        self.config, self.store, self.home = config, store, home

    def __call__(self, spec: ModelSpec, dataset: PairedDataset, prompt: str = "caption:0") -> FeatureEntry:
        entry, _ = extract(spec, dataset, store=self.store, prompt=prompt, device=self.config.device,
                           batch_size=self.config.batch_size, num_workers=self.config.workers, progress=False,
                           home=self.home)
        return entry


def build_captioner(config: StitchConfig, captions: list[str], d_text: int, home: Path | None) -> PrefixCaptioner:
    """The untrained captioner of `config.decoder` on `config.device`."""
    opts, seed = config.decoder, config.evaluation.seed
    if opts.name == TINY:
        captioner = tiny_captioner(captions, d_text, prefix_len=opts.prefix_len, seed=seed)
    else:
        captioner = load_captioner(opts.name, d_text, prefix_len=opts.prefix_len, tune_lm=opts.tune_lm, seed=seed,
                                   home=home, zoo=config.zoo)
    return captioner.to(resolve_device(config.device))


def _train_kwargs(opts: DecoderOptions) -> dict[str, Any]:
    given = {"epochs": opts.epochs, "lr": opts.lr, "noise": opts.noise, "max_seconds": opts.max_seconds}
    return {"batch_size": opts.batch_size, **{k: v for k, v in given.items() if v is not None}}


def _sample_captions(result: PairResult, text_captions: list[str]) -> dict[str, list[str]]:
    """Captions per variant for the record's samples: "paired" is the map fitted on the most pairs; the other
    paired maps of the K sweep keep their "paired K=<k>" label."""
    head = f"paired K={result.headline()['k']}"
    out = {("paired" if label == head else label): texts for label, texts in result.captions.items()}
    return {**out, "text-bound": text_captions}


def scoring_block(config: StitchConfig, split: StitchSplit) -> dict[str, Any]:
    """`details.stitch.scoring`: what re-scoring the stored captions needs: the split's source (dataset name,
    limit, views), every reference of each held-out sample id (in held-out order) and the bootstrap's
    settings and seeds."""
    ev = config.evaluation
    ids = split.test_set.ids
    return {"dataset": config.dataset or split.dataset.name, "limit": config.limit, "views": split.views,
            "references": dict(zip(ids, split.references())), "n_boot": ev.n_boot, "level": ev.level,
            "bootstrap_seed": ev.seed, "map_seed": ev.seed}


def _with_captions(rows: list[dict[str, Any]], captions: list[list[str]], ids: list[str]) -> list[dict[str, Any]]:
    """Each row with the caption of every held-out image, keyed by sample id in held-out order."""
    if len(rows) != len(captions):
        raise ValueError(f"{len(rows)} scored rows but {len(captions)} caption lists")
    return [{**row, "captions": dict(zip(ids, texts, strict=True))} for row, texts in zip(rows, captions)]


def _record(config: StitchConfig, split: StitchSplit, text: tuple[ModelRef, int], vision: tuple[ModelRef, int],
            result: PairResult, decoder: dict[str, Any], text_bound: tuple[dict[str, Any], list[str]],
            runtime: float, inputs: dict[str, str]) -> ResultRecord:
    head = result.headline()
    test = split.test_set
    (lang, li), (vis, vi), (text_row, text_captions) = text, vision, text_bound
    selection = "last" if config.layers == (-1, -1) else f"fixed:{li},{vi}"
    ev = config.evaluation
    return ResultRecord(
        setting=config.setting, kind="stitch",
        metric=MetricRef(id="cider_d", params={"map": "paired", "k": head["k"], "decoder": decoder["name"]},
                         preprocess="none", selection=selection, higher_is_better=True),
        x=SideRef(**lang.model_dump(), modality="text", input="caption:0"),
        y=SideRef(**vis.model_dump(), modality="vision", input="image"),
        dataset=DatasetRef(name=test.name, revision=test.revision, n=len(test), fingerprint=test.fingerprint),
        score=head["cider_d"], layers=(li, vi),
        ci=IntervalRef(lo=head["cider_d_ci"][0], hi=head["cider_d_ci"][1], level=ev.level,
                       method=f"percentile bootstrap over images ({ev.n_boot} draws; CIDEr-D IDF of the full set)"),
        runtime_s=round(runtime, 3),
        provenance=Provenance(inputs=inputs, limit=config.limit),  # a limited run: its own record file
        details={
            "stitch": {
                "decoder": decoder, "map_entries": head["map_entries"], "map_free": result.maps[f"paired K={head['k']}"]["n_free"],
                "rows": _with_captions([*result.rows, text_row], [*result.captions.values(), text_captions], test.ids),
                "samples": sample_rows(test.ids, split.references(), _sample_captions(result, text_captions), ev.seed),
                "split": split.as_dict(),
                "scoring": scoring_block(config, split),
            },
            "maps": result.maps,
        },
    )


def run_stitch(config: StitchConfig, split: StitchSplit, *, store: FeatureStore, home: Path | None,
               log: Log) -> StitchResult:
    """Every text encoder x vision model of `config` on `split`; records are written as they finish."""
    t0 = time.perf_counter()
    features = _Features(config, store, home)
    result = StitchResult()
    ds = split.dataset
    references = split.references()
    ev = config.evaluation
    for text_spec in config.text:
        t_text = time.perf_counter()
        entries = [features(text_spec, ds, f"caption:{j}") for j in range(split.views)]
        li = entries[0].position(config.layers[0], f"text model {text_spec.name}")
        first = entries[0].layers[li]
        per_view = [first] + [e.layers[li] for e in entries[1:]]
        bank_raw = torch.stack([per_view[j][i] for i, j in split.decoder_items])
        norm = Normaliser.fit(bank_raw)
        bank = norm(bank_raw)
        captions = split.decoder_captions()
        log(f"{text_spec.name}: training the {config.decoder.name} captioner on {len(captions):,} train captions")
        captioner = build_captioner(config, captions, bank.shape[1], home)
        history = train_captioner(captioner, bank, captions, seed=ev.seed, progress=config.progress,
                                  **_train_kwargs(config.decoder))
        decoder = {**captioner.describe(), "training": history}

        def generate(z: torch.Tensor, c: PrefixCaptioner = captioner) -> list[str]:
            return c.generate(z, max_new_tokens=config.decoder.max_new_tokens)

        z_text = norm(first)
        text_bound = text_bound_row(generate, z_text[split.test], references, ev)
        text_row = text_bound[0]
        log(f"{text_spec.name}: text->text upper bound CIDEr-D {text_row['cider_d']:.3f}")
        lang = model_ref(text_spec, entries[0].key["model_revision"])
        pairs: list[tuple[ModelRef, int, torch.Tensor, dict[str, str]]] = []
        if config.planted is not None:
            x = planted_features(first, seed=ev.seed, noise=config.planted)
            pairs.append((planted_ref(ev.seed, config.planted, text_spec.name), li, x, {"x": entries[0].digest}))
        for vision_spec in config.vision:
            v_entry = features(vision_spec, ds)
            vi = v_entry.position(config.layers[1], f"vision model {vision_spec.name}")
            x = v_entry.layers[vi]
            pairs.append((model_ref(vision_spec, v_entry.key["model_revision"]), vi, x,
                          {"x": entries[0].digest, "y": v_entry.digest}))
        text_s = time.perf_counter() - t_text
        for vis, vi, x, inputs in pairs:
            t_pair = time.perf_counter()
            got = evaluate_pair(generate, x[split.train], z_text[split.train], x[split.test], references,
                                (bank, captions), ev)
            record = _record(config, split, (lang, li), (vis, vi), got, decoder, text_bound,
                             text_s / max(len(pairs), 1) + time.perf_counter() - t_pair, inputs)
            result.records.append(record)
            result.paths.append(str(write_record(config.out, record)))
            head = got.headline()
            log(f"{text_spec.name} x {vis.name}: CIDEr-D {head['cider_d']:.3f} with {head['k']} pairs "
                f"(random map {next(r['cider_d'] for r in got.rows if r['variant'] == 'random'):.3f})")
    result.wall_s = time.perf_counter() - t0
    return result
