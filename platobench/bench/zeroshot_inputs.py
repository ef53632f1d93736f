"""What a zero-shot setting extracts: the class dataset's images (vision model) and its class prompts
(language model), both through the features cache.

Protocol (Schnaus et al., "It's a (Blind) Match!", CVPR 2025; the zero-shot settings of Balestriero &
LeCun's JEPA follow-up of the Platonic Representation Hypothesis): the images of C classes and one or
more texts per class name are embedded independently; `platobench.metrics.zeroshot` then matches the
classes using each modality's own geometry only.

Prompt modes (`ZeroshotOptions.prompts`):
  templates  every class name in every template of the set (CLIP protocol, Radford et al. 2021):
             C x T texts, in class-major order (class 0 with templates 0..T-1, then class 1, ...).
  gloss      one text per class, "<name> - <gloss>" with the dataset's class description (WordNet
             glosses for ImageNet-100).

A `PromptSet` carries name/revision/ids like a dataset, so the features cache keys it like one: its ids
contain the full text of each prompt, so any change of a class name or a template changes the key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from platobench.data import ClassDataset, fingerprint, get_dataset, options_of
from platobench.data.subset import first_per_class
from platobench.errors import UserError
from platobench.files.ids import shown
from platobench.metrics.matching import SOLVERS

if TYPE_CHECKING:
    from platobench.bench.settings import Setting


#: Seeds of a zero-shot setting that names none: with S = 39 the range of the seeds' top-1 is a 95% interval.
DEFAULT_SEEDS = 39


class ZeroshotOptions(BaseModel):
    """`Setting.options` of a zero-shot setting (unknown keys are refused).

    templates: template set name (`platobench.data.template_sets()`); None = the dataset's default.
    prompts: "templates" (names x templates) or "gloss" (name - gloss; the dataset must have
        class descriptions). solver / restarts: `platobench.metrics.matching.blind_match`.
    seeds: one evaluation per seed (image subsample and solver restarts); mean and std reported. A list
        of seeds, or a count S for seeds 0..S-1. The default, 39, makes the range of the seeds' top-1 a 95%
        interval: another seed's top-1 falls inside it with probability (S - 1) / (S + 1) = .95.
    fraction: share of each class's images averaged into its class embedding (0.5 in the protocol).
    per_class: keep only the first `per_class` images of each class, in dataset order (None: all).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    templates: str | None = None
    prompts: Literal["templates", "gloss"] = "templates"
    solver: str = "faq"
    restarts: int | None = Field(default=None, ge=0)
    seeds: tuple[int, ...] = tuple(range(DEFAULT_SEEDS))
    fraction: float = Field(default=0.5, gt=0, le=1)
    per_class: int | None = Field(default=None, ge=1)

    @field_validator("seeds", mode="before")
    @classmethod
    def _count(cls, value: Any) -> Any:
        """A count S stands for the seeds 0..S-1."""
        if isinstance(value, int) and not isinstance(value, bool):
            if value < 1:
                raise ValueError("a seed count must be at least 1")
            return tuple(range(value))
        return value

    @classmethod
    def of(cls, setting: Setting) -> ZeroshotOptions:
        """The validated options of `setting`; UserError naming the setting and the bad option."""
        try:
            opts = cls.model_validate(setting.options)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise UserError(f"setting {setting.id!r}: options.{where}: {first['msg']}") from None
        if opts.solver not in SOLVERS:
            raise UserError(
                f"setting {setting.id!r}: options.solver must be one of {list(SOLVERS)}, got {opts.solver!r}"
            )
        if not opts.seeds or any(s < 0 for s in opts.seeds):
            raise UserError(f"setting {setting.id!r}: options.seeds must be a non-empty list of integers >= 0")
        return opts


@dataclass(frozen=True)
class PromptSet:
    """The texts a language model embeds for a zero-shot setting, keyed in the cache like a dataset.

    name: "<class dataset>+prompts"; revision: the class dataset's revision; ids: one unique id per
    text, "<class>/<template>:<text>"; texts [P]; classes [P]: the class index of each text;
    prompt: the cache key's prompt field ("templates:<set>" or "gloss").
    """

    name: str
    revision: str
    texts: list[str]
    classes: list[int]
    class_names: list[str]
    prompt: str
    ids: list[str] = field(init=False)

    def __post_init__(self) -> None:
        if len(self.texts) != len(self.classes) or not self.texts:
            raise ValueError("a prompt set needs one class index per text and at least one text")
        counts = [0] * len(self.class_names)
        ids = []
        for text, c in zip(self.texts, self.classes):
            ids.append(f"{c}/{counts[c]}:{text}")
            counts[c] += 1
        object.__setattr__(self, "ids", ids)

    def __len__(self) -> int:
        return len(self.texts)

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.name, self.revision, self.ids)

    def per_class(self, rows: Any) -> list[Any]:
        """Split per-text rows [P, D] (numpy or torch) into C blocks [T_c, D], class order."""
        index: list[list[int]] = [[] for _ in self.class_names]
        for i, c in enumerate(self.classes):
            index[c].append(i)
        return [rows[idx] for idx in index]


def prompt_set(dataset: ClassDataset, prompts: str, templates: str | None) -> PromptSet:
    """The class prompts of `dataset` in mode `prompts` (module docstring); `templates` names the set
    the dataset was built with (None: its default), recorded in the cache key."""
    names = dataset.class_names
    if prompts == "gloss":
        if dataset.class_descriptions is None:
            raise UserError(f"dataset {dataset.name!r} has no class descriptions; prompts 'gloss' needs them")
        texts = [f"{n} - {g}" for n, g in zip(names, dataset.class_descriptions)]
        classes = list(range(len(names)))
        key = "gloss"
    else:
        texts = [p for c in range(len(names)) for p in dataset.prompts(c)]
        classes = [c for c in range(len(names)) for _ in dataset.templates]
        key = f"templates:{templates or 'default'}"
    return PromptSet(f"{dataset.name}+prompts", dataset.revision, texts, classes, list(names), key)


def zeroshot_inputs(setting: Setting, limit: int | None = None) -> tuple[ClassDataset, PromptSet]:
    """The class dataset and its prompt set. `limit` (run --limit) and the option `per_class` both keep
    the first images of each class in dataset order, so at most min(limit, per_class) per class. UserError
    naming the setting when a class is left without images (every class must be matched)."""
    opts = ZeroshotOptions.of(setting)
    ds_options: dict[str, Any] = {}
    if opts.templates is not None:
        ds_options["templates"] = opts.templates
    if opts.prompts == "gloss":
        if "descriptions" not in options_of(setting.dataset):
            raise UserError(
                f"setting {setting.id!r}: dataset {setting.dataset!r} has no class descriptions for prompts 'gloss'"
            )
        ds_options["descriptions"] = "wordnet"
    dataset = get_dataset(setting.dataset, limit=limit, **ds_options)
    if not isinstance(dataset, ClassDataset):
        raise UserError(f"setting {setting.id!r} is zero-shot but dataset {setting.dataset!r} is not a class dataset")
    if opts.per_class is not None:
        dataset = first_per_class(dataset, opts.per_class)
    empty = sorted(set(range(len(dataset.class_names))) - set(dataset.labels))
    if empty:
        names = ", ".join(shown(dataset.class_names[c], 40) for c in empty[:5])
        raise UserError(f"setting {setting.id!r}: {len(empty)} class(es) of {dataset.name!r} have no images "
                        f"({names}{', ...' if len(empty) > 5 else ''}); every class needs at least one")
    return dataset, prompt_set(dataset, opts.prompts, opts.templates)

