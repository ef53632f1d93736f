"""`platobench settings list|show` and `platobench pairs list|show`: browse what `run --settings` and
`run --pairs` accept (settings.yaml plus any --settings-file)."""

from __future__ import annotations

import argparse
import difflib
import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from platobench.bench.run_command import add_settings_file_option
from platobench.cli_options import add_json_option
from platobench.errors import UserError
from platobench.files.ids import shown
from platobench.table import format_table
from platobench.zoo import add_zoo_option, zoo_from_args

if TYPE_CHECKING:
    from platobench.bench.settings import Catalog, PairSet
    from platobench.zoo import Zoo

#: Longest description `pairs list` prints on one row (`pairs show` prints it whole).
DESCRIPTION_CHARS = 70


def register(subparsers: Any) -> None:
    settings = subparsers.add_parser(
        "settings", help="list the settings (what is measured) and their groups, show one",
        description="The settings and setting groups `run --settings` accepts: settings.yaml plus --settings-file.",
    )
    sub = settings.add_subparsers(dest="settings_command", metavar="ACTION", required=True)
    ls = sub.add_parser("list", help="every setting (id, kind, dataset, metric, preprocess, selection), then the groups",
                        description="List the settings one per row, then the groups with their members.")
    show = sub.add_parser("show", help="every field of one setting and the groups it belongs to (or a group's members)",
                          description="Print one setting's fields and its groups; for a group name, its settings.")
    show.add_argument("name", metavar="ID", help="setting id (e.g. prh-mknn) or group name (e.g. demo)")
    for p, func in ((ls, _settings_list), (show, _settings_show)):
        add_settings_file_option(p)
        add_json_option(p, what="the settings and groups")
        p.set_defaults(func=func)

    pairs = subparsers.add_parser(
        "pairs", help="list the pair sets (which models are compared), show one resolved",
        description="The pair sets `run --pairs` accepts: settings.yaml plus --settings-file. A pair set is its x "
                    "models times its y models, of its two modalities (text x vision unless it says "
                    "`modalities: [vision, vision]` or `[text, text]`), a model paired with itself only under "
                    "`self_pairs: true`; entries "
                    "name zoo models, zoo sets or globs, resolved with the zoo (--zoo FILE).",
    )
    sub = pairs.add_subparsers(dest="pairs_command", metavar="ACTION", required=True)
    ls = sub.add_parser("list", help="every pair set with its modalities, sizes (x, y, pairs) and description",
                        description="List the pair sets with their modalities and the number of x and y models "
                                    "each resolves to.")
    show = sub.add_parser("show", help="the x and y models one pair set resolves to",
                          description="Print the models of pair set NAME, side by side with the entry naming each.")
    show.add_argument("name", metavar="NAME", help="pair set name (e.g. demo, default21)")
    for p, func in ((ls, _pairs_list), (show, _pairs_show)):
        add_settings_file_option(p)
        add_zoo_option(p)
        add_json_option(p, what="the pair sets")
        p.set_defaults(func=func)


def _catalog(args: argparse.Namespace) -> Catalog:
    """The built-in settings file merged with `--settings-file` (pydantic loads here, not at parse time)."""
    from platobench.bench.settings import Catalog

    return Catalog(args.settings_file)


def _suggest(name: str, known: Iterable[str], command: str) -> str:
    """' (did you mean: a, b?)' from the closest of `known` (difflib), else a pointer to `command`."""
    close = difflib.get_close_matches(name.lower(), list(known), n=3, cutoff=0.5)
    return f" (did you mean: {', '.join(close)}?)" if close else f" (see `platobench {command}`)"


def _cell(value: Any) -> str:
    """One field of `settings show`: a mapping as compact JSON, a list comma-separated, nothing as '-'."""
    if value in (None, "", [], {}):
        return "-"
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    return ", ".join(map(str, value)) if isinstance(value, list) else str(value)


def _settings_list(args: argparse.Namespace) -> int:
    catalog = _catalog(args)
    if args.json:
        print(json.dumps({"settings": [s.model_dump(mode="json") for s in catalog.settings.values()],
                          "groups": catalog.groups}, indent=2, ensure_ascii=False))
        return 0
    columns = ("id", "kind", "dataset", "metric", "preprocess", "selection")
    rows = [[str(getattr(s, c)) for c in columns] for s in catalog.settings.values()]
    print("\n".join(format_table(columns, rows)))
    print(f"({len(rows)} settings)\n")
    groups = [[g, str(len(ids)), ", ".join(ids)] for g, ids in catalog.groups.items()]
    print("\n".join(format_table(("group", "n", "settings"), groups, right={1})))
    return 0


def _settings_show(args: argparse.Namespace) -> int:
    catalog = _catalog(args)
    name = args.name
    if name in catalog.groups:
        ids = catalog.groups[name]
        if args.json:
            print(json.dumps({"group": name, "settings": ids}, indent=2))
            return 0
        print(f"group {name}: {len(ids)} settings")
        rows = [[i, catalog.settings[i].kind, catalog.settings[i].dataset, catalog.settings[i].metric] for i in ids]
        print("\n".join(format_table(("id", "kind", "dataset", "metric"), rows, indent="  ")))
        return 0
    if name not in catalog.settings:
        known = [*catalog.settings, *catalog.groups]
        raise UserError(f"ID: unknown setting or group {shown(name)}{_suggest(name, known, 'settings list')}")
    record = {**catalog.settings[name].model_dump(mode="json"),
              "groups": [g for g, ids in catalog.groups.items() if name in ids]}
    if args.json:
        print(json.dumps(record, indent=2, ensure_ascii=False))
        return 0
    width = max(map(len, record))
    for key, value in record.items():
        print(f"{key:{width}}  {_cell(value)}")
    return 0


def _sides(zoo: Zoo, name: str, ps: PairSet) -> dict[str, dict[str, list[str]]]:
    """{"x"|"y": {entry: model names of the side's modality it resolves to}} for pair set `name` (an
    optional '?entry' naming nothing resolves to [])."""
    from platobench.bench.pairs import _members

    return {
        side: {entry: [s.name for s in _members(zoo, [entry], modality, f"pair set {name!r}")] for entry in entries}
        for side, modality, entries in (("x", ps.modalities[0], ps.x), ("y", ps.modalities[1], ps.y))
    }


def _pair_count(xs: list[str], ys: list[str], ps: PairSet) -> int:
    """The number of pairs `run` resolves pair set `ps` to (`pairs.pair_names`)."""
    from platobench.bench.pairs import pair_names

    return len(pair_names(xs, ys, ps))


def _models(entries: dict[str, list[str]]) -> list[str]:
    """The distinct models of one side, in entry order (as `run` resolves them)."""
    return list(dict.fromkeys(m for names in entries.values() for m in names))


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= DESCRIPTION_CHARS else text[: DESCRIPTION_CHARS - 3] + "..."


def _pairs_list(args: argparse.Namespace) -> int:
    catalog, zoo = _catalog(args), zoo_from_args(args)
    out: list[dict[str, Any]] = []
    for name, ps in catalog.pair_sets.items():
        try:
            sides = _sides(zoo, name, ps)
        except UserError as exc:  # a user pair set naming a model this zoo lacks: listed, not fatal
            out.append({"name": name, "modalities": list(ps.modalities), "x": None, "y": None, "pairs": None,
                        "description": ps.description, "error": str(exc)})
            continue
        xs, ys = _models(sides["x"]), _models(sides["y"])
        out.append({"name": name, "modalities": list(ps.modalities), "x": len(xs), "y": len(ys),
                    "pairs": _pair_count(xs, ys, ps), "description": ps.description})
    if args.json:
        print(json.dumps(out, indent=2, ensure_ascii=False))
        return 0
    rows = [[r["name"], " x ".join(r["modalities"]), *("?" if r[k] is None else str(r[k]) for k in ("x", "y", "pairs")),
             _short(f"unresolved: {r['error']}" if "error" in r else r["description"])] for r in out]
    print("\n".join(format_table(("name", "modalities", "x", "y", "pairs", "description"), rows, right={2, 3, 4})))
    return 0


def _zoo_set_note(zoo: Zoo, name: str, models: list[str]) -> str | None:
    """A line on the zoo set of the same name, if any: a different list unless it holds exactly `models`."""
    if name.lower() not in zoo.sets:
        return None
    if set(zoo.sets[name.lower()]) == set(models):
        return f"zoo set {name!r} holds the same models (both sides)"
    return (f"zoo set {name!r} is a different list of models (`platobench zoo show {name}`); "
            f"`run --pairs {name}` means this pair set")


def _pairs_show(args: argparse.Namespace) -> int:
    catalog, zoo = _catalog(args), zoo_from_args(args)
    name = args.name
    if name not in catalog.pair_sets:
        if name.lower() in zoo.sets:
            raise UserError(f"NAME: {shown(name)} is a zoo set, not a pair set (see `platobench zoo show {name}`); "
                            f"pair sets: {', '.join(catalog.pair_sets)}")
        raise UserError(f"NAME: unknown pair set {shown(name)}{_suggest(name, catalog.pair_sets, 'pairs list')}")
    ps = catalog.pair_sets[name]
    sides = _sides(zoo, name, ps)
    xs, ys = _models(sides["x"]), _models(sides["y"])
    note = _zoo_set_note(zoo, name, list(dict.fromkeys(xs + ys)))
    if args.json:
        print(json.dumps({"name": name, "description": ps.description, "modalities": list(ps.modalities), "x": xs,
                          "y": ys, "pairs": _pair_count(xs, ys, ps), "entries": sides, "zoo_set": note},
                         indent=2, ensure_ascii=False))
        return 0
    empty = [entry for entries in sides.values() for entry, names in entries.items() if not names]
    slots = f" (empty optional slot{'s' if len(empty) > 1 else ''}: {', '.join(empty)})" if empty else ""
    mx, my = ps.modalities
    same = ("" if not set(xs) & set(ys) else " (each pair once)" if ps.self_pairs
            else " (each pair once, no model with itself)")
    print(f"pair set {name}: {len(xs)} {mx} (x) x {len(ys)} {my} (y) = {_pair_count(xs, ys, ps)} "
          f"pairs{same}{slots}")
    if ps.description:
        print(" ".join(ps.description.split()))
    for side, entries in sides.items():
        rows = [[m, zoo.get(m).kind, entry] for entry, names in entries.items() for m in names]
        first = {}
        for row in rows:  # a model named by two entries is listed once, with the first
            first.setdefault(row[0], row)
        print(f"\n{side}: {ps.modalities[side == 'y']} ({len(first)})")
        if first:
            print("\n".join(format_table(("model", "kind", "from entry"), list(first.values()), indent="  ")))
        for entry, names in entries.items():
            if not names:
                print(f"  ({entry}: optional, names no model in this zoo)")
    if note:
        print(f"\nnote: {note}")
    return 0
