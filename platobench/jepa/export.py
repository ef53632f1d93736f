"""Write a finished run: checkpoint folder, its metadata, and the zoo entry; return the run's summary."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pydantic

from platobench import __version__
from platobench.data.base import ids_hash
from platobench.errors import UserError
from platobench.jepa.checkpoint import ZOO_ENTRY_FILE, model_name, save_checkpoint, write_zoo_entry, zoo_spec
from platobench.jepa.model import SIZES, size_summary
from platobench.jepa.train import CaptionCorpus, TrainConfig, TrainResult


def export_run(
    result: TrainResult,
    corpus: CaptionCorpus,
    config: TrainConfig,
    *,
    name: str | None,
    out_dir: Path | None,
    home: Path,
) -> dict[str, Any]:
    """Save `result` as a transformers folder (default `home/jepa/<name after '/'>`) with
    `platobench_jepa.json`, write `zoo_entry.yaml` beside it, and return the summary `--json` prints:
    initial_loss, final_loss, effective_rank, checkpoint, zoo_entry, name, and the run's settings."""
    name = name or model_name(config.size, config.views.label, corpus.name, config.seed)
    out_dir = (out_dir or home / "jepa" / name.split("/", 1)[-1]).expanduser().resolve()
    encoder = result.model.encoder
    params = sum(p.numel() for p in encoder.parameters())
    notes = (
        f"Text JEPA trained from scratch by platobench on {corpus.name} ({config.views.label} views, "
        f"{config.steps} steps, seed {config.seed}); VICReg objective, masked-mean features."
    )
    try:
        spec = zoo_spec(
            name,
            out_dir,
            num_layers=encoder.config.num_hidden_layers,
            width=encoder.config.hidden_size,
            params=params,
            notes=notes,
        )
    except pydantic.ValidationError as exc:
        raise UserError(f"--name {name!r}: not a valid zoo entry: {exc.errors()[0]['msg']}") from exc

    max_tokens = config.max_tokens or SIZES[config.size].max_tokens
    result.tokenizer.model_max_length = max_tokens  # loaders then truncate exactly as training did
    settings = {k: v for k, v in dataclasses.asdict(config).items() if k != "views"}
    settings["lr"] = config.lr or SIZES[config.size].lr
    settings["max_tokens"] = max_tokens
    metadata = {
        "name": name,
        "pooling": "avg",
        "features": "masked mean of the last hidden layer (projector and predictor are not saved)",
        "objective": "vicreg",
        "views": config.views.label,
        "geometry": size_summary(config.size),
        "training": settings,
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
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    save_checkpoint(encoder, result.tokenizer, out_dir, metadata)
    zoo_entry = write_zoo_entry(spec, out_dir / ZOO_ENTRY_FILE)
    return {
        "name": name,
        "initial_loss": result.initial_loss,
        "final_loss": result.final_loss,
        "initial_effective_rank": result.initial_effective_rank,
        "effective_rank": result.effective_rank,
        "checkpoint": str(out_dir),
        "zoo_entry": str(zoo_entry),
        "views": config.views.label,
        "size": config.size,
        "steps": config.steps,
        "seed": config.seed,
        "train_samples": result.train_samples,
        "heldout_samples": result.heldout_samples,
        "samples_per_s": result.samples_per_s,
        "params_m": round(params / 1e6, 2),
    }
