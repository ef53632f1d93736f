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


def resolve_pairs(spec: str, catalog: Catalog, zoo: Zoo) -> list[tuple[ModelSpec, ModelSpec]]:
    """`spec` is a pair-set name from the settings file (e.g. all, default21, demo) or an explicit
    comma-separated list `language:vision,...` of zoo names. Order: language-major, no repeats."""
    spec = spec.strip()
    if spec in catalog.pair_sets:
        ps = catalog.pair_sets[spec]
        lang = _members(zoo, ps.language, "text", f"pair set {spec!r}")
        vis = _members(zoo, ps.vision, "vision", f"pair set {spec!r}")
        return [(a, b) for a in lang for b in vis]
    pairs: dict[tuple[str, str], tuple[ModelSpec, ModelSpec]] = {}
    for token in [t.strip() for t in spec.split(",") if t.strip()]:
        if token.count(":") != 1:
            raise UserError(
                f"--pairs: {shown(token)} is neither a pair set ({', '.join(sorted(catalog.pair_sets))}) "
                "nor 'LANGUAGE_MODEL:VISION_MODEL'"
            )
        a_name, b_name = token.split(":")
        a, b = zoo.get(a_name), zoo.get(b_name)
        if a.modality != "text" or b.modality != "vision":
            raise UserError(f"--pairs: in {shown(token)} the first model must be a text model and the second a vision model")
        pairs[(a.name, b.name)] = (a, b)
    if not pairs:
        raise UserError("--pairs is empty")
    return list(pairs.values())
