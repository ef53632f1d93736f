"""Settings (what to measure) and pair sets (which models), loaded from YAML data, not code.

The built-in file is `platobench/bench/settings.yaml`; users extend it with `--settings-file FILE`
(entries with the same id replace built-in ones).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from platobench.errors import UserError

BUILTIN = Path(__file__).with_name("settings.yaml")


class Setting(BaseModel):
    """One measurement protocol: a dataset, a metric with parameters, preprocessing and layer selection."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    kind: Literal["paired", "zeroshot"] = "paired"
    dataset: str
    caption_index: int = 0
    metric: str
    params: dict[str, Any] = Field(default_factory=dict)
    preprocess: Literal["none", "l2", "prh", "prh_exact"] = "none"
    selection: str = "best"  # best | last | fixed:i,j
    n_perm: int = Field(default=100, ge=0, description="permutation-null draws (0: no null)")
    n_ci: int = Field(default=50, ge=0, description="subsamples for the confidence interval (0: none)")
    ci_fraction: float = Field(default=0.5, gt=0, lt=1)
    ci_level: float = Field(default=0.95, gt=0, lt=1)
    seed: int = 0
    options: dict[str, Any] = Field(default_factory=dict, description="kind-specific options (zero-shot)")
    description: str = ""


class PairSet(BaseModel):
    """Language models x vision models; entries are zoo names, zoo set names or globs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    language: list[str]
    vision: list[str]
    description: str = ""


class SettingsFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    settings: dict[str, Setting] = Field(default_factory=dict)
    groups: dict[str, list[str]] = Field(default_factory=dict)
    pair_sets: dict[str, PairSet] = Field(default_factory=dict)


def _read(path: Path) -> SettingsFile:
    try:
        raw = yaml.safe_load(Path(path).read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise UserError(f"cannot read settings file {path}: {exc}") from exc
    if isinstance(raw.get("settings"), dict):
        raw["settings"] = {k: {"id": k, **(v or {})} for k, v in raw["settings"].items()}
    try:
        return SettingsFile.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise UserError(f"{path}: {where}: {first['msg']}") from None


class Catalog:
    """Settings, setting groups and pair sets from the built-in file plus user files."""

    def __init__(self, files: list[Path] | tuple[Path, ...] = ()) -> None:
        merged = _read(BUILTIN)
        for f in files:
            extra = _read(Path(f))
            merged.settings.update(extra.settings)
            merged.groups.update(extra.groups)
            merged.pair_sets.update(extra.pair_sets)
        self.settings, self.groups, self.pair_sets = merged.settings, merged.groups, merged.pair_sets
        for group, ids in self.groups.items():
            missing = [i for i in ids if i not in self.settings]
            if missing:
                raise UserError(f"setting group {group!r} names unknown setting(s) {missing}")

    def resolve_settings(self, spec: str) -> list[Setting]:
        """'a,b' of setting ids or group names -> settings, in order, without repeats."""
        out: dict[str, Setting] = {}
        for token in [t.strip() for t in spec.split(",") if t.strip()]:
            if token in self.groups:
                ids = self.groups[token]
            elif token in self.settings:
                ids = [token]
            else:
                raise UserError(
                    f"--settings: unknown setting or group {token!r}; settings: {sorted(self.settings)}, "
                    f"groups: {sorted(self.groups)}"
                )
            out.update({i: self.settings[i] for i in ids})
        if not out:
            raise UserError("--settings is empty; name at least one setting or group")
        return list(out.values())
