"""`platobench extract`: run zoo models over a dataset once and cache their per-layer features."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from platobench.cli_options import add_datasets_file_option, add_device_option, add_json_option
from platobench.dtypes import DTYPE_NAMES
from platobench.encoders.guard import add_timeout_option
from platobench.errors import UserError
from platobench.zoo import add_zoo_option, zoo_from_args


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "extract", help="extract and cache per-layer features",
        description=(
            "Run each model over a dataset (text models on its captions, vision models on its images) and store "
            "pooled per-layer features in the cache ($PLATOBENCH_HOME/features). Cached entries are reused; an "
            "interrupted run resumes from its finished chunks. Several GPUs: `accelerate launch -m platobench extract "
            "... --device cuda` splits the samples over the processes (one GPU each) and writes one merged entry; "
            "a model larger than one GPU is instead sharded over all visible GPUs with device_map (plain "
            "`platobench extract --device cuda`)."
        ),
    )
    p.add_argument("--model", required=True, help="model name(s), set names or globs, comma-separated (see `zoo list`)")
    p.add_argument("--dataset", required=True, help="dataset name (see `data list`), e.g. openclipart-1024")
    add_datasets_file_option(p)
    p.add_argument("--limit", type=int, default=None,
                   help="only the first N samples (class datasets: the first N images of each class); sliced "
                        "from a cached extraction of more samples when one exists")
    p.add_argument("--caption-index", type=int, default=0, help="which caption of each sample text models read")
    p.add_argument("--batch-size", type=int, default=32, help="samples per forward pass (halved on out-of-memory)")
    p.add_argument("--chunk-size", type=int, default=256, help="samples per cached chunk (unit of resumption)")
    p.add_argument("--workers", type=int, default=2, help="DataLoader workers decoding images (0: in the main process)")
    add_device_option(p)
    add_timeout_option(p)
    p.add_argument("--dtype", default=None, help=f"override the zoo's dtype policy: auto, {', '.join(DTYPE_NAMES)}")
    p.add_argument("--export", type=Path, default=None, metavar="FILE.safetensors",
                   help="also write the features (one model) to FILE as embeddings a `loader: features` zoo entry "
                        "reads, and print that entry")
    add_json_option(p, what="one object per model (path, n, layers, widths, cached, seconds)")
    add_zoo_option(p, loads_models=True)
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from platobench.data import get_dataset
    from platobench.features.extract import check_extract_options, extract, note_limit
    from platobench.features.store import FeatureStore

    if args.limit is not None and args.limit < 2:
        raise UserError(f"--limit must be >= 2, got {args.limit}")
    check_extract_options(batch_size=args.batch_size, chunk_size=args.chunk_size, num_workers=args.workers)
    zoo = zoo_from_args(args)
    specs = [s for token in args.model.split(",") if token.strip() for s in zoo.resolve(token.strip())]
    if not specs:
        raise UserError(f"--model {args.model!r} names no model")
    if args.export is not None and (len(specs) != 1 or args.export.suffix != ".safetensors"):
        raise UserError(f"--export {args.export}: one model and a .safetensors file (--model names {len(specs)})")
    dataset = get_dataset(args.dataset, limit=args.limit)
    if not hasattr(dataset, "image"):
        raise UserError(f"--dataset {args.dataset!r} is a text corpus; extract needs a paired or class dataset")
    note_limit(args.limit, dataset)
    store = FeatureStore()
    for spec in specs:
        entry, report = extract(
            spec, dataset, store=store, prompt=f"caption:{args.caption_index}", device=args.device, dtype=args.dtype,
            batch_size=args.batch_size, chunk_size=args.chunk_size, num_workers=args.workers, progress=not args.json,
            encoder_timeout=args.encoder_timeout,
        )
        if args.json:
            print(json.dumps(report.as_dict()))
        else:
            state = (f"sliced from cached entry {report.sliced_from[:12]}" if report.sliced_from
                     else "cached" if report.cached else f"extracted in {report.seconds:.1f} s")
            print(f"{spec.name} on {dataset.name}: n={report.n}, {len(report.layers)} layers, {state} -> {report.path}")
        if args.export is not None:
            _export(spec, entry, args.export, quiet=args.json)
    return 0


def _export(spec: Any, entry: Any, path: Path, *, quiet: bool) -> None:
    """Write `entry`'s layers to `path` (`platobench.encoders.precomputed` format; its folder created, the
    file written atomically with the umask's mode, docs/safety.md) and print a zoo entry for it on stderr
    (stdout stays the report)."""
    import sys

    import yaml
    from safetensors import SafetensorError

    from platobench.encoders.precomputed import write_safetensors
    from platobench.files.atomic import WriteError, atomic_write_with

    prompt = entry.key["prompt"]
    layers = [entry.layer(i) for i in range(len(entry.layer_ids))]
    metadata = {"model": spec.name, "dataset": entry.key["dataset"]}
    try:
        atomic_write_with(path, lambda tmp: write_safetensors(tmp, entry.ids, entry.layer_ids, layers, input=prompt,
                                                              metadata=metadata))
    except SafetensorError as exc:  # its I/O errors (a full disk) are not OSErrors
        raise WriteError(f"cannot write {path}: {exc}") from exc
    zoo_entry = {
        "name": f"{spec.family}/{spec.name.split('/', 1)[1]}.features",
        "modality": spec.modality, "kind": spec.kind, "loader": "features", "source": f"./{path.name}",
        "pooling": spec.pooling, "num_layers": spec.num_layers, "layers": spec.layers if spec.layers == "all" else
        list(spec.layers), "notes": f"features of {spec.name} on {entry.key['dataset']} ({prompt})",
    }
    if not quiet:
        print(f"wrote {path}; a zoo entry for it (a zoo file beside it):", file=sys.stderr)
        print(yaml.safe_dump({"version": 1, "models": [zoo_entry]}, sort_keys=False), file=sys.stderr, end="")
