"""Resolve a `--pairs` argument into (x model, y model) pairs of zoo specs, of any two modalities."""

from __future__ import annotations

from platobench.bench.settings import Catalog, PairSet
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
    """Every (x, y) pair of pair set `name`, x-major, a model paired with itself only under `self_pairs`;
    in a set of one modality, (b, a) is left out when (a, b) is already in (the same two models, the same
    inputs unless a setting gives the sides different ones)."""
    ps = catalog.pair_sets[name]
    xs = {s.name: s for s in _members(zoo, ps.x, ps.modalities[0], f"pair set {name!r} (x)")}
    ys = {s.name: s for s in _members(zoo, ps.y, ps.modalities[1], f"pair set {name!r} (y)")}
    return [(xs[a], ys[b]) for a, b in pair_names(list(xs), list(ys), ps)]


def pair_names(xs: list[str], ys: list[str], ps: PairSet) -> list[tuple[str, str]]:
    """The (x, y) name pairs of pair set `ps` whose sides resolve to `xs` and `ys` (`_pair_set`'s rules)."""
    out: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()
    one_modality = ps.modalities[0] == ps.modalities[1]
    for a in xs:
        for b in ys:
            if (a == b and not ps.self_pairs) or (one_modality and (b, a) in seen):
                continue
            seen.add((a, b))
            out.append((a, b))
    return out


def _pair(token: str, catalog: Catalog, zoo: Zoo) -> tuple[ModelSpec, ModelSpec]:
    """The pair of 'X_MODEL:Y_MODEL' (spaces around either name ignored), of any modalities."""
    if token.count(":") != 1:
        raise UserError(
            f"--pairs: {shown(token)} is neither a pair set name ({', '.join(sorted(catalog.pair_sets))}) "
            "nor 'X_MODEL:Y_MODEL'"
        )
    a_name, b_name = (part.strip() for part in token.split(":"))
    return zoo.get(a_name), zoo.get(b_name)


def resolve_pairs(spec: str, catalog: Catalog, zoo: Zoo) -> list[tuple[ModelSpec, ModelSpec]]:
    """`spec` is a comma-separated list whose items are pair-set names from the settings file (e.g. all,
    default21, demo, demo-vision-vision) or explicit pairs `x:y` of zoo names (text:vision, vision:vision,
    text:text, ...); the result is their union, in order of first appearance (a pair set x-major), without
    repeats. Whether each pair's sides can read a setting's inputs is checked when jobs are planned."""
    tokens = [t.strip() for t in spec.split(",") if t.strip()]
    if not tokens:
        raise UserError("--pairs is empty; name a pair set (`platobench pairs list`) or 'X_MODEL:Y_MODEL'")
    pairs: dict[tuple[str, str], tuple[ModelSpec, ModelSpec]] = {}
    for token in tokens:
        found = _pair_set(token, catalog, zoo) if token in catalog.pair_sets else [_pair(token, catalog, zoo)]
        for a, b in found:
            pairs.setdefault((a.name, b.name), (a, b))
    return list(pairs.values())
