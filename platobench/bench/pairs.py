"""Resolve a `--pairs` argument into (language model, vision model) pairs of zoo specs."""

from __future__ import annotations

from platobench.bench.settings import Catalog
from platobench.errors import UserError
from platobench.files.ids import shown
from platobench.zoo import ModelSpec, Zoo


def _members(zoo: Zoo, queries: list[str], modality: str, where: str) -> list[ModelSpec]:
    """Zoo specs of `modality` named by `queries`; a query starting with '?' is optional (a slot that may
    be empty, such as the text-JEPA slot before `platobench jepa train` has added one)."""
    out: dict[str, ModelSpec] = {}
    for q in queries:
        optional, q = q.startswith("?"), q.lstrip("?")
        try:
            specs = [s for s in zoo.resolve(q) if s.modality == modality]
        except UserError:
            if optional:
                continue
            raise
        if not specs and not optional:
            raise UserError(f"{where}: {shown(q)} names no {modality} model in the zoo")
        out.update({s.name: s for s in specs})
    return list(out.values())


def _pair_set(name: str, catalog: Catalog, zoo: Zoo) -> list[tuple[ModelSpec, ModelSpec]]:
    """Every (language, vision) pair of pair set `name`, language-major."""
    ps = catalog.pair_sets[name]
    lang = _members(zoo, ps.language, "text", f"pair set {name!r}")
    vis = _members(zoo, ps.vision, "vision", f"pair set {name!r}")
    return [(a, b) for a in lang for b in vis]


def _pair(token: str, catalog: Catalog, zoo: Zoo) -> tuple[ModelSpec, ModelSpec]:
    """The pair of 'LANGUAGE_MODEL:VISION_MODEL' (spaces around either name ignored)."""
    if token.count(":") != 1:
        raise UserError(
            f"--pairs: {shown(token)} is neither a pair set name ({', '.join(sorted(catalog.pair_sets))}) "
            "nor 'LANGUAGE_MODEL:VISION_MODEL'"
        )
    a_name, b_name = (part.strip() for part in token.split(":"))
    a, b = zoo.get(a_name), zoo.get(b_name)
    if a.modality != "text" or b.modality != "vision":
        raise UserError(f"--pairs: in {shown(token)} the first model must be a text model and the second a vision model")
    return a, b


def resolve_pairs(spec: str, catalog: Catalog, zoo: Zoo) -> list[tuple[ModelSpec, ModelSpec]]:
    """`spec` is a comma-separated list whose items are pair-set names from the settings file (e.g. all,
    default21, demo) or explicit pairs `language:vision` of zoo names; the result is their union, in
    order of first appearance (a pair set language-major), without repeats."""
    tokens = [t.strip() for t in spec.split(",") if t.strip()]
    if not tokens:
        raise UserError("--pairs is empty; name a pair set (`platobench pairs list`) or 'LANGUAGE_MODEL:VISION_MODEL'")
    pairs: dict[tuple[str, str], tuple[ModelSpec, ModelSpec]] = {}
    for token in tokens:
        found = _pair_set(token, catalog, zoo) if token in catalog.pair_sets else [_pair(token, catalog, zoo)]
        for a, b in found:
            pairs.setdefault((a.name, b.name), (a, b))
    return list(pairs.values())
