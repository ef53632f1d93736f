"""Settings (what to measure) and pair sets (which models), loaded from YAML data, not code.

The built-in file is `platobench/bench/settings.yaml`; users extend it with `--settings-file FILE`
(entries with the same id replace built-in ones).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)

from platobench.bench.protocols import PROTOCOLS, protocol_for
from platobench.bench.setting_rules import check_preprocess
from platobench.errors import UserError
from platobench.files.ids import check_id, shown
from platobench.files.yaml_safe import read_yaml
from platobench.registry import did_you_mean

Modality = Literal["text", "vision"]

BUILTIN = Path(__file__).with_name("settings.yaml")
SECTIONS = {"settings": "setting id", "groups": "setting group name", "pair_sets": "pair set name"}
#: Versions of the settings file format, as zoo files have (`platobench.zoo.loading`); omitted means 1.
SUPPORTED_VERSIONS = (1,)

#: Seeds are signed 64-bit integers >= 0: torch.Generator.manual_seed overflows from 2**64, and records keep them exactly.
MAX_SEED = 2**63

#: A string that follows the id rule (`files.ids.check_id`): it becomes part of paths.
Id = Annotated[str, AfterValidator(lambda v: check_id(v, "id"))]


class Setting(BaseModel):
    """One measurement protocol: a dataset, a metric with parameters, preprocessing and layer selection.

    kind "paired": `metric` is a registered metric whose `validate` accepts `params`; no `options`. What
    each side of a pair reads is `inputs` ([x input, y input] of "image" / "caption:<i>"); without it a
    text model reads caption `caption_index` and a vision model the image, whatever the pair's modalities.
    kind "zeroshot": `metric` is "zeroshot_matching", its choices are `options`
    (`zeroshot_inputs.ZeroshotOptions`), and the paired-only fields (`setting_rules.PAIRED_ONLY`) stay
    at their defaults. Each kind's rules are its protocol's (`platobench.bench.protocols`), checked on
    construction (`setting_rules`); a violation is a ValidationError whose
    message says what to use instead.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: Id
    kind: str = "paired"  # a registered setting kind (`protocols.PROTOCOLS`)
    dataset: Id
    caption_index: int = Field(default=0, ge=0, description="which caption of each sample (0: the first)")
    inputs: tuple[str, str] | None = Field(
        default=None, description="what the x and y models read: 'image' or 'caption:<i>' each (paired only); "
        "two captions of one sample are two good views")
    metric: str
    params: dict[str, Any] = Field(default_factory=dict)
    preprocess: str = "none"  # a mode of platobench.metrics.preprocess
    selection: str = "best"  # grammar: platobench.metrics.selection (best | heldout | last | fixed:i,j | i,j)
    n_perm: int = Field(default=100, ge=0, description="permutation-null draws (0: no null)")
    n_ci: int = Field(default=50, ge=0, description="subsamples for the confidence interval (0: none)")
    ci_fraction: float = Field(default=0.5, gt=0, lt=1)
    ci_level: float = Field(default=0.95, gt=0, lt=1)
    seed: int = Field(default=0, ge=0, lt=MAX_SEED, description="torch.Generator seed of the null shuffles and CI subsets")
    options: dict[str, Any] = Field(default_factory=dict, description="kind-specific options (zero-shot)")
    description: str = ""

    @field_validator("kind")
    @classmethod
    def _kind(cls, value: str) -> str:
        if value not in PROTOCOLS:
            raise ValueError(f"unknown setting kind {value!r}{did_you_mean(value, PROTOCOLS.names())} "
                             f"(known: {', '.join(PROTOCOLS.names())})")
        return value

    @field_validator("preprocess")
    @classmethod
    def _preprocess(cls, value: str) -> str:
        return check_preprocess(value)

    @field_validator("inputs")
    @classmethod
    def _inputs(cls, value: tuple[str, str] | None) -> tuple[str, str] | None:
        from platobench.results.schema import check_input

        if value is not None:
            for v in value:
                if v == "prompts":
                    raise ValueError("'prompts' is what zero-shot settings read; a paired input is 'image' or 'caption:<i>'")
                check_input(v)
        return value

    @model_serializer(mode="wrap")
    def _omit_unset_inputs(self, handler: Any) -> dict[str, Any]:
        """A setting without `inputs` dumps as it did before the field existed (records store the dump)."""
        out = handler(self)
        if out.get("inputs") is None:
            out.pop("inputs", None)
        return out

    def input_for(self, side: int, modality: str) -> str:
        """What side `side` (0: x, 1: y) reads when its model has `modality`: `inputs[side]`, else the
        modality's default (the image, or caption `caption_index`)."""
        if self.inputs is not None:
            return self.inputs[side]
        return "image" if modality == "vision" else f"caption:{self.caption_index}"

    @field_validator("selection")
    @classmethod
    def _selection(cls, value: str) -> str:
        from platobench.metrics.selection import parse_selection  # imports torch: not at CLI start-up

        parse_selection(value)
        return value  # kept as written: records store the setting verbatim

    @model_validator(mode="after")
    def _kind_rules(self) -> Setting:
        protocol_for(self.kind).check(self)
        return self


class PairSet(BaseModel):
    """The `x` models x the `y` models, of `modalities` (text x vision unless it says otherwise; each side
    keeps only the models of its modality); entries are zoo names, zoo set names or globs, and a model is
    paired with itself only with `self_pairs: true` (for settings whose two sides read two views, where the
    self-pair measures how alike one model sees them). In a set of one modality a pair is taken once: (b, a)
    is left out when (a, b) is in. `language:` / `vision:` is the older spelling of a
    text x vision set."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    x: list[str]
    y: list[str]
    modalities: tuple[Modality, Modality] = ("text", "vision")
    self_pairs: bool = False
    description: str = ""

    @model_validator(mode="before")
    @classmethod
    def _older_spelling(cls, data: Any) -> Any:
        if isinstance(data, dict) and ("language" in data or "vision" in data):
            if "x" in data or "y" in data or "modalities" in data:
                raise ValueError("use either x / y (with modalities) or language / vision, not both")
            data = {{"language": "x", "vision": "y"}.get(k, k): v for k, v in data.items()}
        return data


class SettingsFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    settings: dict[str, Setting] = Field(default_factory=dict)
    groups: dict[str, list[str]] = Field(default_factory=dict)
    pair_sets: dict[str, PairSet] = Field(default_factory=dict)


def _checked_raw(raw: Any, path: Path) -> dict[str, Any]:
    """The parsed YAML of settings file `path` with every section a mapping whose keys are ids, and each
    setting entry a mapping carrying its key as `id`; UserError naming the file otherwise."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise UserError(f"settings file {path}: the top level must be a mapping (version, settings, groups, pair_sets), "
                        f"not a {type(raw).__name__}")
    version = raw.get("version", 1)
    if version not in SUPPORTED_VERSIONS:
        raise UserError(f"settings file {path}: unsupported 'version' {shown(version)} (supported: {SUPPORTED_VERSIONS})")
    out = {k: v for k, v in raw.items() if not (k in SECTIONS and v is None) and k != "version"}  # `groups:` left empty
    for section, what in SECTIONS.items():
        entries = raw.get(section)
        if entries is None:
            continue
        if not isinstance(entries, dict):
            raise UserError(f"settings file {path}: '{section}' must be a mapping, not a {type(entries).__name__}")
        for key in entries:
            try:
                check_id(key, what)
            except UserError as exc:
                raise UserError(f"settings file {path}: {exc}") from None
    settings: dict[str, Any] = {}
    for key, entry in (raw.get("settings") or {}).items():
        entry = {} if entry is None else entry
        if not isinstance(entry, dict):
            raise UserError(f"settings file {path}: setting {key!r} must be a mapping, not a {type(entry).__name__}")
        if entry.get("id", key) != key:
            raise UserError(f"settings file {path}: setting {key!r} has a different id {shown(entry['id'])}")
        settings[key] = {**entry, "id": key}
    if "settings" in out:
        out["settings"] = settings
    return out


def _read(path: Path) -> SettingsFile:
    raw = _checked_raw(read_yaml(path, "settings file"), path)
    try:
        return SettingsFile.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_context=False, include_input=False)[0]
        loc = [str(p) for p in first["loc"]]
        where = ".".join(loc)
        if len(loc) >= 2 and loc[0] == "settings":  # the setting, then the field (none: a whole-setting rule)
            where = ": ".join([f"setting {loc[1]!r}", *([".".join(loc[2:])] if loc[2:] else [])])
        where = where if len(where) <= 120 else where[:117] + "..."
        msg = first["msg"].removeprefix("Value error, ")
        raise UserError(f"settings file {path}: {where}: {msg[:300]}") from None


class Catalog:
    """Settings, setting groups and pair sets from the built-in file plus user files."""

    def __init__(self, files: list[Path] | tuple[Path, ...] = ()) -> None:
        merged = _read(BUILTIN)
        origin = dict.fromkeys(merged.groups, BUILTIN)
        for f in files:
            extra = _read(Path(f))
            merged.settings.update(extra.settings)
            merged.groups.update(extra.groups)
            merged.pair_sets.update(extra.pair_sets)
            origin.update(dict.fromkeys(extra.groups, Path(f)))
        self.settings, self.groups, self.pair_sets = merged.settings, merged.groups, merged.pair_sets
        for group, ids in self.groups.items():
            missing = [i for i in ids if i not in self.settings]
            if missing:
                raise UserError(
                    f"settings file {origin[group]}: setting group {group!r} names unknown setting(s) {shown(missing)}"
                )

    def resolve_settings(self, spec: str) -> list[Setting]:
        """'a,b' of setting ids or group names -> settings, in order, without repeats."""
        out: dict[str, Setting] = {}
        for token in [t.strip() for t in spec.split(",") if t.strip()]:
            if token in self.groups:
                ids = self.groups[token]
            elif token in self.settings:
                ids = [token]
            else:
                hint = did_you_mean(token, [*self.settings, *self.groups])
                raise UserError(
                    f"--settings: unknown setting or group {shown(token)}{hint}; settings: {sorted(self.settings)}, "
                    f"groups: {sorted(self.groups)} (see `platobench settings list`)"
                )
            out.update({i: self.settings[i] for i in ids})
        if not out:
            raise UserError("--settings is empty; name at least one setting or group")
        return list(out.values())
