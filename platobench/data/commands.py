"""`platobench data list|show`: the dataset catalogue and a look at one dataset's samples."""

from __future__ import annotations

import argparse
import json
from typing import Any

from platobench.cli_options import (
    add_datasets_file_option,
    add_json_option,
    add_key_value_option,
    parse_key_values,
)
from platobench.errors import UserError


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "data",
        help="list datasets, show one",
        description="Paired image-caption and class datasets, and text corpora of good views.",
    )
    sub = parser.add_subparsers(dest="data_command", metavar="ACTION", required=True)
    ls = sub.add_parser(
        "list",
        help="every dataset name with its kind and source",
        description="List the datasets `--dataset` accepts.",
    )
    add_json_option(ls, what="the dataset list")
    add_datasets_file_option(ls)
    ls.set_defaults(func=_list)
    show = sub.add_parser(
        "show",
        help="build a dataset and print its size, fingerprint, quality counts and first samples",
        description="Build NAME and print it. For a paired set it also counts distinct captions and "
        "duplicate images (decodes every image; --no-image-check skips that); for a text corpus, the items "
        "read, dropped and kept, views per item, and --samples items drawn at random (seed 0).",
    )
    show.add_argument("name", help="dataset name (see `platobench data list`)")
    show.add_argument("--limit", type=int, default=None, help="keep the first N samples (class datasets: of each class)")
    show.add_argument("--samples", type=int, default=5, help="how many samples to print (default 5)")
    add_key_value_option(show, "--option", metavar="KEY=VALUE", help="dataset option, e.g. seed=1 or templates=cifar")
    show.add_argument(
        "--no-image-check", action="store_true", help="do not decode every image to count duplicates"
    )
    add_json_option(show, what="the summary and samples")
    add_datasets_file_option(show)
    show.set_defaults(func=_show)


def _list(args: argparse.Namespace) -> int:
    from platobench.data import list_datasets  # the catalogue (PIL, numpy): only when listing

    infos = list_datasets()
    if args.json:
        print(json.dumps([i.as_dict() for i in infos], indent=2))
        return 0
    print(f"{'name':24} {'kind':7} {'offline':7} source / revision")  # kinds: paired, class, corpus
    for i in infos:
        print(f"{i.name:24} {i.kind:7} {'yes' if i.offline else 'no':7} {i.source} @ {i.revision}")
        print(f"{'':24} {i.description}")
    return 0


def _show(args: argparse.Namespace) -> int:
    from platobench.data import ClassDataset, TextCorpus, get_dataset, quality
    from platobench.data.base import IdsDataset
    from platobench.data.catalog import licence_of, lookup

    if args.samples < 0:
        raise UserError(f"--samples {args.samples}: expected a count >= 0")
    ds = get_dataset(args.name, limit=args.limit, **parse_key_values(args.option, "--option"))
    if isinstance(ds, TextCorpus):
        return _show_corpus(ds, args)
    info = lookup(args.name).info
    out: dict[str, Any] = {
        "name": ds.name,
        "revision": ds.revision,
        "n": len(ds),
        "fingerprint": ds.fingerprint,
        "source": info.source,
        "licence": licence_of(args.name),
    }
    if isinstance(ds, IdsDataset):
        out.update(kind="ids", samples=[{"id": i} for i in ds.ids[: args.samples]])
        if args.json:
            print(json.dumps(out, indent=2, ensure_ascii=False))
            return 0
        for key in ("name", "kind", "revision", "n", "fingerprint", "source", "licence"):
            print(f"{key:17} {out[key]}")
        print(f"{'ids':17} {', '.join(ds.ids[: max(args.samples, 0)])}{' ...' if len(ds) > args.samples else ''}")
        print("(sample ids only: measured through `loader: features` zoo entries)")
        return 0
    shown = []
    for i in range(min(args.samples, len(ds))):
        if isinstance(ds, ClassDataset):
            shown.append({"id": ds.ids[i], "label": ds.labels[i], "class": ds.class_names[ds.labels[i]]})
        else:
            shown.append({"id": ds.ids[i], "captions": ds.caption_views(i)})
    if isinstance(ds, ClassDataset):
        out.update(
            kind="class", classes=len(ds.class_names), class_names=ds.class_names, templates=ds.templates
        )
    else:
        report = quality.check(ds, images=not args.no_image_check)
        out.update(
            kind="paired",
            max_captions=max(len(ds.caption_views(i)) for i in range(len(ds))),
            distinct_captions=report.distinct_captions,
            duplicate_images=report.extra_images(),
        )
    out["samples"] = shown
    if args.json:
        print(json.dumps(out, indent=2, ensure_ascii=False))
        return 0
    keys = ["name", "kind", "revision", "n", "fingerprint", "source", "licence"]
    if not isinstance(ds, ClassDataset):
        keys[4:4] = ["distinct_captions", "duplicate_images"]
    for key in keys:
        value = "not checked" if out.get(key, "") is None else out[key]
        print(f"{key:17} {value}")
    if isinstance(ds, ClassDataset):
        print(
            f"{'classes':17} {len(ds.class_names)}: {', '.join(ds.class_names[:12])}"
            + (" ..." if len(ds.class_names) > 12 else "")
        )
        print(f"{'templates':17} {len(ds.templates)}, e.g. {ds.templates[0]!r}")
    for s in shown:
        print(f"  {s['id']}: " + (s["class"] if "class" in s else " | ".join(c[:80] for c in s["captions"])))
    return 0


def _show_corpus(ds: Any, args: argparse.Namespace) -> int:
    """`data show` of a `TextCorpus`: summary, dedup counts, views per item, `--samples` random items."""
    import random

    from platobench.data.catalog import licence_of, lookup

    counts = [len(v) for v in ds.views]
    picked = sorted(random.Random(0).sample(range(len(ds)), min(args.samples, len(ds))))
    out: dict[str, Any] = {
        "name": ds.name,
        "kind": "corpus",
        "revision": ds.revision,
        "n": len(ds),
        "fingerprint": ds.fingerprint,
        "source": lookup(args.name).info.source,
        "licence": licence_of(args.name),
        "items_read": ds.stats.read,
        "dropped_too_few_views": ds.stats.too_few_views,
        "duplicates_removed": ds.stats.duplicates,
        "shared_views_removed": ds.stats.shared_views_removed,
        "views_mean": round(sum(counts) / len(counts), 2),
        "views_max": max(counts),
        "samples": [{"id": ds.ids[i], "views": ds.caption_views(i)} for i in picked],
    }
    if args.json:
        print(json.dumps(out, indent=2, ensure_ascii=False))
        return 0
    for key in ("name", "kind", "revision", "n", "fingerprint", "source", "licence"):
        print(f"{key:17} {out[key]}")
    print(f"{'items read':17} {ds.stats.read} (dropped: {ds.stats.too_few_views} with fewer than 2 distinct "
          f"views, {ds.stats.duplicates} left with fewer than 2 once views of earlier items are removed; "
          f"{ds.stats.shared_views_removed} repeated views removed from kept items)")
    print(f"{'views per item':17} mean {out['views_mean']}, max {out['views_max']}")
    for s in out["samples"]:
        print(f"  {s['id']}:")
        for view in s["views"]:
            print(f"    - {view[:80]}")
    return 0
