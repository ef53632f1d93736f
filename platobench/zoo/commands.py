"""`platobench zoo list|show|sets|validate`: browse and check the model zoo."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from platobench.cli_options import add_json_option
from platobench.zoo.kinds import MODALITY_OF_KIND
from platobench.zoo.options import add_zoo_option, zoo_from_args

if TYPE_CHECKING:
    from platobench.zoo.registry import Zoo
    from platobench.zoo.spec import ModelSpec


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "zoo",
        help="list, show and validate models of the model zoo",
        description=(
            "The model zoo: every model platobench can load, from the built-in model_zoo.yaml plus your own "
            "files (--zoo FILE, merged over it). Models are named 'family/arch.tag'; sets group them."
        ),
    )
    sub = parser.add_subparsers(dest="zoo_command", metavar="ACTION", required=True)

    ls = sub.add_parser("list", help="list models (filter by glob, modality, kind, set)",
                        description="List zoo models, one line each: name, modality, kind, size, layers, source.")
    ls.add_argument("--filter", default="*", metavar="GLOB", help="name glob, e.g. 'qwen2.5/*' or '*dino*'")
    ls.add_argument("--modality", choices=("text", "vision"), help="only text or only vision models")
    ls.add_argument("--kind", choices=tuple(MODALITY_OF_KIND), help="only models of this kind")
    ls.add_argument("--set", dest="model_set", metavar="SET", help="only members of this set (see `zoo sets`)")
    add_json_option(ls, what="the full specs")
    add_zoo_option(ls)
    ls.set_defaults(func=_list)

    show = sub.add_parser("show", help="print every field of one model, or the members of a set",
                          description="Print one model's spec, the file that defines it and its sets.")
    show.add_argument("name", help="model name (e.g. qwen2.5/qwen2.5-7b) or set name (e.g. prh-val)")
    add_json_option(show, what="the spec (or the set)")
    add_zoo_option(show)
    show.set_defaults(func=_show)

    sets = sub.add_parser("sets", help="list named sets with their sizes",
                          description="List the named sets (prh-val, prh-test, demo, ...) and their members.")
    add_json_option(sets, what="the sets (name -> member names)")
    add_zoo_option(sets)
    sets.set_defaults(func=_sets)

    validate = sub.add_parser(
        "validate",
        help="check zoo files (schema, unknown keys, duplicates, set members)",
        description=(
            "Validate the built-in zoo merged with FILE(s) and any --zoo files, including what feature "
            "extraction needs of each entry (num_layers). Exits 0 when valid; otherwise "
            "prints every problem with file, line, entry and field, and exits 2."
        ),
    )
    validate.add_argument("files", nargs="*", metavar="FILE", help="zoo YAML files to check")
    add_json_option(validate, what="{ok, models, sets, files, problems}")
    add_zoo_option(validate)
    validate.set_defaults(func=_validate)


def _format_params(params_m: float | None) -> str:
    if params_m is None:
        return "-"
    return f"{params_m / 1000:.1f}B" if params_m >= 1000 else f"{params_m:.0f}M" if params_m >= 10 else f"{params_m:.1f}M"


def _format_layers(spec: ModelSpec) -> str:
    if spec.layers != "all":
        return ",".join(map(str, spec.layers))
    return f"all({spec.num_layers + 1})" if spec.num_layers else "all"


def _format_source(spec: ModelSpec) -> str:
    if spec.revision is None:
        return spec.source
    revision = spec.revision[:10] if len(spec.revision) == 40 else spec.revision
    return f"{spec.source}@{revision}"


def _spec_json(spec: ModelSpec) -> dict[str, Any]:
    return spec.model_dump(mode="json")


def _list(args: argparse.Namespace) -> int:
    zoo = zoo_from_args(args)
    specs = zoo.list(args.filter, modality=args.modality, kind=args.kind)
    if args.model_set:
        members = {spec.name for spec in zoo.resolve(args.model_set)}
        specs = [spec for spec in specs if spec.name in members]
    if args.json:
        print(json.dumps([_spec_json(spec) for spec in specs], indent=2))
        return 0
    width = max((len(spec.name) for spec in specs), default=4)
    print(f"{'name':{width}}  {'modality':8}  {'kind':12}  {'params':>6}  {'layers':8}  source")
    for spec in specs:
        print(
            f"{spec.name:{width}}  {spec.modality:8}  {spec.kind:12}  {_format_params(spec.params_m):>6}  "
            f"{_format_layers(spec):8}  {_format_source(spec)}"
        )
    print(f"({len(specs)} of {len(zoo)} models)")
    return 0


def _show(args: argparse.Namespace) -> int:
    zoo = zoo_from_args(args)
    if args.name not in zoo and args.name.lower() in zoo.sets:
        return _show_set(zoo, args.name.lower(), as_json=args.json)
    spec = zoo.get(args.name)
    record = {**_spec_json(spec), "source_type": spec.source_type, "truncation": spec.truncation,
              "defined_in": str(zoo.origin(spec.name)),
              "sets": zoo.sets_of(spec.name)}
    if args.json:
        print(json.dumps(record, indent=2))
        return 0
    for key, value in record.items():
        shown = ", ".join(map(str, value)) if isinstance(value, list) else value
        print(f"{key:18} {shown if shown not in (None, '') else '-'}")
    return 0


def _show_set(zoo: Zoo, set_name: str, *, as_json: bool) -> int:
    specs = zoo.resolve(set_name)
    if as_json:
        print(json.dumps({"set": set_name, "members": [spec.name for spec in specs]}, indent=2))
        return 0
    print(f"set {set_name}: {len(specs)} models")
    for spec in specs:
        print(f"  {spec.name:40} {spec.modality:6} {spec.kind:12} {_format_params(spec.params_m):>6}")
    return 0


def _sets(args: argparse.Namespace) -> int:
    zoo = zoo_from_args(args)
    if args.json:
        print(json.dumps(zoo.sets, indent=2))
        return 0
    for set_name, members in zoo.sets.items():
        print(f"{set_name:20} {len(members):3}  {', '.join(members[:3])}{' ...' if len(members) > 3 else ''}")
    return 0


def _validate(args: argparse.Namespace) -> int:
    from platobench.zoo.loading import BUILTIN_ZOO, ZooError
    from platobench.zoo.registry import load_zoo

    files = [*args.files, *args.zoo]
    checked = [str(BUILTIN_ZOO), *files]
    try:
        zoo = load_zoo(files, for_extraction=True)
    except ZooError as exc:
        if not args.json:
            raise
        print(json.dumps({"ok": False, "files": checked, "problems": exc.problems}, indent=2))
        return 2
    if args.json:
        print(json.dumps({"ok": True, "files": checked, "models": len(zoo), "sets": len(zoo.sets),
                          "problems": []}, indent=2))
    else:
        print(f"ok: {len(zoo)} models, {len(zoo.sets)} sets ({', '.join(checked)})")
    return 0
