"""Write a finished run (or a snapshot of one), JEPA or NTP: checkpoint folder, its metadata, and the zoo
entry; return the run's summary."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pydantic

from platobench.api import UserError, __version__, ids_hash
from platobench.experiments.jepa.checkpoint import (
    ZOO_ENTRY_FILE,
    model_name,
    save_checkpoint,
    write_zoo_entry,
    zoo_spec,
)
from platobench.experiments.jepa.config import CaptionCorpus, TrainConfig, TrainResult
from platobench.experiments.jepa.model import SIZES, size_summary
from platobench.experiments.jepa.ntp import SEPARATOR, document_tokens


def export_run(
    result: TrainResult,
    corpus: CaptionCorpus,
    config: TrainConfig,
    *,
    name: str | None,
    out_dir: Path | None,
    home: Path,
) -> dict[str, Any]:
    """Save `result` (a finished run or an `on_checkpoint` snapshot) as a transformers folder (default
    `home/jepa/<name after '/'>`) with `platobench_jepa.json`, write `zoo_entry.yaml` beside it, and return
    the summary `--json` prints: initial_loss, final_loss, effective_rank, checkpoint, zoo_entry, name,
    objective, examples_seen, and the run's settings. The default name is `model_name(...)` with
    "-n<examples_seen>", so runs of different lengths (and a learning curve's snapshots) get distinct names
    and folders.
    jepa saves the encoder (kind text_jepa, loader hf_text); ntp saves the causal LM with its head (kind
    causal_lm, loader hf_causal)."""
    ntp = config.objective == "ntp"
    name = name or model_name(
        config.size,
        config.views.label,
        corpus.name,
        config.seed,
        objective=config.objective,
        examples=result.examples_seen,
    )
    out_dir = (out_dir or home / "jepa" / name.split("/", 1)[-1]).expanduser().resolve()
    saved = result.model.lm if ntp else result.model.encoder
    encoder = result.model.lm.bert if ntp else result.model.encoder
    params = sum(p.numel() for p in encoder.parameters())
    progress = f"{config.steps} steps, {result.examples_seen} examples seen, seed {config.seed}"
    notes = (
        f"Causal BERT trained from scratch by platobench by next-token prediction on {corpus.name} "
        f"({progress}); documents are a sample's captions; masked-mean features."
        if ntp
        else f"Text JEPA trained from scratch by platobench on {corpus.name} ({config.views.label} views, "
        f"{progress}); VICReg objective, masked-mean features."
    )
    try:
        spec = zoo_spec(
            name,
            out_dir,
            num_layers=encoder.config.num_hidden_layers,
            width=encoder.config.hidden_size,
            params=params,
            notes=notes,
            objective=config.objective,
        )
    except pydantic.ValidationError as exc:
        raise UserError(f"--name {name!r}: not a valid zoo entry: {exc.errors()[0]['msg']}") from exc

    max_tokens = config.max_tokens or SIZES[config.size].max_tokens
    # loaders then truncate exactly as training did (an ntp document holds two views' tokens)
    result.tokenizer.model_max_length = document_tokens(max_tokens) if ntp else max_tokens
    unused = {"views", "weights", "predictor"} if ntp else {"views"}
    settings = {k: v for k, v in dataclasses.asdict(config).items() if k not in unused}
    settings["lr"] = config.lr or SIZES[config.size].lr
    settings["max_tokens"] = max_tokens
    if ntp:
        details = {
            "objective": "ntp",
            "features": "masked mean of the last hidden layer of the causal base model (LM head not used)",
            "documents": f"a sample's distinct captions joined by {SEPARATOR!r} in a seeded random order, "
            f"at most {document_tokens(max_tokens)} tokens",
        }
    else:
        details = {
            "objective": "vicreg",
            "features": "masked mean of the last hidden layer (projector and predictor are not saved)",
            "views": config.views.label,
        }
    metadata = {
        "name": name,
        "pooling": "avg",
        **details,
        "geometry": size_summary(config.size),
        "training": settings,
        "examples_seen": result.examples_seen,
        "data": {
            "name": corpus.name,
            "revision": corpus.revision,
            "fingerprint": corpus.fingerprint,
            "train_samples": result.train_samples,
            "heldout_samples": result.heldout_samples,
            "heldout_ids_hash": ids_hash(result.heldout_ids),
        },
        "initial_loss": result.initial_loss,
        "final_loss": result.final_loss,
        "initial_effective_rank": result.initial_effective_rank,
        "effective_rank": result.effective_rank,
        "samples_per_s": result.samples_per_s,
        "history": result.history,
        "platobench_version": __version__,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    save_checkpoint(saved, result.tokenizer, out_dir, metadata)
    zoo_entry = write_zoo_entry(spec, out_dir / ZOO_ENTRY_FILE)
    return {
        "name": name,
        "objective": config.objective,
        "initial_loss": result.initial_loss,
        "final_loss": result.final_loss,
        "initial_effective_rank": result.initial_effective_rank,
        "effective_rank": result.effective_rank,
        "checkpoint": str(out_dir),
        "zoo_entry": str(zoo_entry),
        "views": None if ntp else config.views.label,
        "size": config.size,
        "steps": config.steps,
        "examples_seen": result.examples_seen,
        "seed": config.seed,
        "train_samples": result.train_samples,
        "heldout_samples": result.heldout_samples,
        "samples_per_s": result.samples_per_s,
        "params_m": round(params / 1e6, 2),
    }
