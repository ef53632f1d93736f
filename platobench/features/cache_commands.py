"""`platobench cache list|verify|rm`: inspect, check and delete entries of the features cache."""

from __future__ import annotations

import argparse
import fnmatch
import json
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from platobench.cli_options import add_json_option
from platobench.errors import UserError
from platobench.table import format_table

if TYPE_CHECKING:
    from platobench.features.store import EntryStatus, FeatureStore


def _store(root: Path | None) -> FeatureStore:
    """The features cache at `root` (default $PLATOBENCH_HOME/features); torch loads here, not at parse time."""
    from platobench.features.store import FeatureStore

    return FeatureStore(root)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "cache",
        help="list, verify or remove cached features",
        description="The features cache ($PLATOBENCH_HOME/features): one entry per model x dataset x config.",
    )
    sub = parser.add_subparsers(dest="cache_command", metavar="ACTION", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        where = p.add_mutually_exclusive_group()
        where.add_argument("--home", type=Path, default=None, metavar="DIR",
                           help="platobench home whose features/ is the cache (default: $PLATOBENCH_HOME or "
                                "~/.cache/platobench)")
        # former spelling: the cache folder itself (not its parent), kept working but not advertised
        where.add_argument("--root", dest="cache_root", type=Path, default=None, help=argparse.SUPPRESS)
        p.add_argument("--model", default="*", help="only entries whose model matches this glob")
        p.add_argument("--dataset", default="*", help="only entries whose dataset matches this glob")
        add_json_option(p, what="the entries")

    ls = sub.add_parser("list", help="list entries", description="List complete and partial entries.")
    hidden_ls = sub.add_parser("ls", description="List complete and partial entries.")  # former name; no help: unlisted
    for p in (ls, hidden_ls):
        common(p)
        p.set_defaults(func=_list)
    verify = sub.add_parser(
        "verify",
        help="re-read every file and check sizes and sha256",
        description="Check entries against their manifests; exit 1 when a bad entry remains.",
    )
    verify.add_argument("digests", nargs="*", help="digest prefixes (default: every selected entry)")
    verify.add_argument(
        "--remove", action="store_true", help="delete bad entries (they are recomputed on next use)"
    )
    common(verify)
    verify.set_defaults(func=_verify)
    rm = sub.add_parser("rm", help="delete entries", description="Delete the entries named or selected.")
    rm.add_argument("digests", nargs="*", help="digest prefixes to delete")
    rm.add_argument("--all", action="store_true", help="delete every entry matching --model/--dataset")
    rm.add_argument("--partial", action="store_true", help="delete only unfinished (partial) entries")
    common(rm)
    rm.set_defaults(func=_rm)


def _cache_root(args: argparse.Namespace) -> Path | None:
    """The cache folder `--home DIR` (DIR/features) or the former `--root DIR` (DIR itself) names; None: default."""
    if args.cache_root is not None:
        return args.cache_root
    return None if args.home is None else args.home / "features"


def _select(
    store: FeatureStore, args: argparse.Namespace, digests: list[str] | None = None
) -> list[EntryStatus]:
    entries = store.entries()
    if digests:
        wanted = {store.resolve(d) for d in digests}
        return [e for e in entries if e.digest in wanted]
    return [
        e
        for e in entries
        if fnmatch.fnmatchcase(e.key.get("model", ""), args.model)
        and fnmatch.fnmatchcase(e.key.get("dataset", ""), args.dataset)
    ]


def _list(args: argparse.Namespace) -> int:
    store = _store(_cache_root(args))
    entries = _select(store, args)
    if args.json:
        print(json.dumps([e.as_dict() for e in entries], indent=2))
        return 0
    if not entries:
        print(f"no cache entries under {store.root}")
        return 0
    rows = [
        [e.digest[:12], f"{e.rows_done}/{e.n}" if e.state == "partial" else e.state, str(e.key.get("model", "?")),
         str(e.key.get("dataset", "?")), str(e.n), str(e.layers), str(e.dtype), f"{e.bytes / 1e6:.2f}"]
        for e in entries
    ]
    header = ("digest", "state", "model", "dataset", "n", "layers", "dtype", "MB")
    print("\n".join(format_table(header, rows, right={4, 5, 7})))
    return 0


def _verify(args: argparse.Namespace) -> int:
    store = _store(_cache_root(args))
    report = []
    for e in _select(store, args, args.digests):
        if e.state == "partial":
            state, problems = (
                "partial",
                [f"{e.rows_done}/{e.n} rows written (rerun the extraction to resume)"],
            )
        else:
            problems = store.verify(e.digest)
            state = "ok" if not problems else "removed" if args.remove else "bad"
            if state == "removed":
                store.remove(e.digest)
        report.append({"digest": e.digest, "state": state, "problems": problems})
    counts = {s: sum(r["state"] == s for r in report) for s in ("ok", "partial", "bad", "removed")}
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for r in report:
            print(f"{r['digest'][:12]}  {r['state']:7}  {'; '.join(r['problems'])}")
        print(f"{len(report)} checked, " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    from platobench.encoders.packaged import stale_staging
    from platobench.files.staging import size_of as staging_size

    for line in stale_staging(store.root.parent):  # folders of killed `prepare` runs beside the cache
        print(line, file=sys.stderr if args.json else sys.stdout)
    for path in store.stale_staging():
        size = staging_size(path) / 1e6
        if args.remove and path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        elif args.remove:
            path.unlink(missing_ok=True)
        if args.remove:
            what = "removed"
        else:
            what = "`platobench cache verify --remove` deletes it"
        print(f"stale staging {path} ({size:.1f} MB), left by a killed process; {what}",
              file=sys.stderr if args.json else sys.stdout)
    return 1 if counts["bad"] else 0


def _rm(args: argparse.Namespace) -> int:
    if not args.digests and not args.all and not args.partial:
        raise UserError("cache rm: name digests, or pass --all (with --model/--dataset globs) or --partial")
    store = _store(_cache_root(args))
    chosen = _select(store, args, args.digests)
    if args.partial:
        chosen = [e for e in chosen if e.state == "partial"]
    for e in chosen:
        store.remove(e.digest)
    if args.json:
        print(json.dumps({"removed": [e.digest for e in chosen]}))
    else:
        print(f"removed {len(chosen)} entr{'y' if len(chosen) == 1 else 'ies'}")
    return 0
