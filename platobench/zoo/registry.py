"""`Zoo`: the merged model registry (built-in file + user files), with lookup by name, set or glob.

Lookup follows timm's registry (`timm.list_models('*dino*')`): names are globbable; an unknown name is an
error that suggests the closest names (difflib), never a silent miss.
"""

from __future__ import annotations

import difflib
import fnmatch
from collections.abc import Iterator, Sequence
from pathlib import Path

from platobench.errors import UserError
from platobench.files.ids import shown
from platobench.zoo.loading import BUILTIN_ZOO, MAX_PROBLEMS, ZooError, capped, read_zoo_file
from platobench.zoo.spec import MODALITY_OF_KIND, ModelSpec

GLOB_CHARS = frozenset("*?[")


class Zoo:
    """An immutable view of validated model specs and named sets.

    specs: name -> ModelSpec, in file order (built-in first). sets: set name -> member names.
    origins: name -> the file that defined the entry (a user file overrides the built-in one).
    """

    def __init__(self, specs: dict[str, ModelSpec], sets: dict[str, list[str]], origins: dict[str, Path]):
        self._specs = dict(specs)
        self._sets = {name: list(members) for name, members in sets.items()}
        self._origins = dict(origins)

    def __len__(self) -> int:
        return len(self._specs)

    def __iter__(self) -> Iterator[ModelSpec]:
        return iter(self._specs.values())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._specs

    @property
    def names(self) -> list[str]:
        return list(self._specs)

    @property
    def sets(self) -> dict[str, list[str]]:
        """Set name -> model names (a copy)."""
        return {name: list(members) for name, members in self._sets.items()}

    def origin(self, name: str) -> Path:
        """The zoo file that defined `name`."""
        return self._origins[self.get(name).name]

    def sets_of(self, name: str) -> list[str]:
        """Names of the sets that contain model `name`."""
        spec = self.get(name)
        return [set_name for set_name, members in self._sets.items() if spec.name in members]

    def get(self, name: str) -> ModelSpec:
        """The spec called `name` (case-insensitive). Unknown names raise UserError with the closest names, or
        the set's members when `name` is a set."""
        spec = self._specs.get(name.lower())
        if spec is None:
            members = self._sets.get(name.lower())
            if members is not None:
                few = ", ".join(members[:3]) + (", ..." if len(members) > 3 else "")
                raise UserError(f"unknown model {shown(name)}: {shown(name)} is a set of {len(members)} models "
                                f"({few}), not one model; name one of them")
            raise UserError(f"unknown model {shown(name)}{self._suggestion(name)}")
        return spec

    def list(self, pattern: str = "*", modality: str | None = None, kind: str | None = None) -> list[ModelSpec]:
        """Specs whose name matches the glob `pattern` (case-insensitive), optionally of one modality/kind."""
        if modality is not None and modality not in ("text", "vision"):
            raise UserError(f"modality must be 'text' or 'vision', got {modality!r}")
        if kind is not None and kind not in MODALITY_OF_KIND:
            raise UserError(f"kind must be one of {', '.join(MODALITY_OF_KIND)}, got {kind!r}")
        pattern = pattern.lower()
        return [
            spec
            for spec in self._specs.values()
            if fnmatch.fnmatchcase(spec.name, pattern)
            and (modality is None or spec.modality == modality)
            and (kind is None or spec.kind == kind)
        ]

    def resolve(self, query: str) -> list[ModelSpec]:
        """Specs named by `query`: a model name, a set name, a glob, or a comma-separated mix of them.
        The result keeps the order given and holds each model once. Raises UserError for a part that
        names nothing."""
        result: dict[str, ModelSpec] = {}
        parts = [part.strip() for part in query.split(",") if part.strip()]
        if not parts:
            raise UserError("expected a model name, set name or glob, got an empty string")
        for part in parts:
            key = part.lower()
            if key in self._specs:
                matched = [self._specs[key]]
            elif key in self._sets:
                matched = [self._specs[member] for member in self._sets[key]]
            elif GLOB_CHARS & set(key):
                matched = self.list(key)
                if not matched:
                    raise UserError(f"no model matches the glob {shown(part)} (see `platobench zoo list`)")
            else:
                raise UserError(f"{shown(part)} is neither a model nor a set{self._suggestion(part)}")
            result.update((spec.name, spec) for spec in matched)
        return list(result.values())

    def _suggestion(self, name: str) -> str:
        """' (did you mean: a, b?)': names that start with or contain `name` first, then the closest
        (difflib) among names, set names, the part after '/', and sources."""
        key = name.lower()
        candidates: dict[str, str] = {n: n for n in self._specs}
        candidates.update({s: s for s in self._sets})
        for spec in self._specs.values():
            candidates.setdefault(spec.name.split("/", 1)[1], spec.name)
            candidates.setdefault(spec.source.lower(), spec.name)
        prefixed = [n for n in candidates.values() if n.startswith(key)]
        contained = [n for n in candidates.values() if key in n]
        close = [candidates[c] for c in difflib.get_close_matches(key, list(candidates), n=6, cutoff=0.6)]
        picks = [n for n in dict.fromkeys(prefixed + contained + close) if n != key][:3]  # never the name refused
        if not picks:
            return " (see `platobench zoo list`)"
        return f" (did you mean: {', '.join(picks)}?)"


def load_zoo(extra_files: Sequence[str | Path] = (), *, for_extraction: bool = False) -> Zoo:
    """The built-in zoo (platobench/zoo/model_zoo.yaml) merged with `extra_files`, in order: an entry or set
    in a later file replaces one of the same name. Every problem of every file is reported together as one
    ZooError (a UserError) naming file, line, entry and field; set members must exist in the merged zoo.
    `for_extraction`: also refuse entries features cannot be extracted with (what `zoo validate` checks)."""
    problems: list[str] = []
    specs: dict[str, ModelSpec] = {}
    sets: dict[str, list[str]] = {}
    origins: dict[str, Path] = {}
    set_origins: dict[str, Path] = {}
    for path in (BUILTIN_ZOO, *map(Path, extra_files)):
        try:
            zoo_file = read_zoo_file(path, for_extraction=for_extraction)
        except ZooError as exc:
            problems.extend(exc.problems)
            continue
        for spec in zoo_file.models:
            specs[spec.name] = spec
            origins[spec.name] = zoo_file.path
        for set_name, members in zoo_file.sets.items():
            sets[set_name] = members
            set_origins[set_name] = zoo_file.path
    for set_name, members in sets.items():
        for member in members:
            if member not in specs:
                close = [] if len(problems) >= MAX_PROBLEMS else difflib.get_close_matches(member, list(specs), n=3)
                hint = f" (did you mean: {', '.join(close)}?)" if close else ""
                problems.append(f"{set_origins[set_name]}: sets[{set_name!r}]: unknown model {shown(member)}{hint}")
    if problems:
        raise ZooError(capped(problems))
    return Zoo(specs, sets, origins)
