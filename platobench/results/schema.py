"""The result record schema: one JSON file per model pair x setting.

Records carry `schema_version` (`SCHEMA_VERSION` is the one written); loading them
(platobench/results/io.py) upgrades older versions. Schema 3 states what a record's numbers depend on in
typed fields: `provenance` (the commit, the two feature entries' digests, the setting as run and the
`--limit`), `reproducibility` (how far rounding-sized noise moves the score and the check tolerance that
follows) and the kind's own `details` (a paired record's excluded layers, a zero-shot record's per-seed
matching, a stitch record's table); schema 2 kept them all in one untyped `extra`. Schema 2 named the
pair's two sides `x` and `y`, each with its modality and the input it read (the image, caption `i` or the
class prompts), so a pair may be text x vision, vision x vision or text x text; schema 1 had `language`
(text) and `vision` sides.
Validation: ids and model names follow the naming rule, numbers are JSON numbers (not strings), the
layer grid is rectangular and the chosen layers lie inside it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    model_serializer,
    model_validator,
)

from platobench.errors import UserError
from platobench.files.ids import ID_RULE, check_id, check_model_name, shown
from platobench.version import __version__

SCHEMA_VERSION = 3
Modality = Literal["text", "vision"]
#: What a side reads of each sample: its image, its caption i ("caption:0" is the first) or, in zero-shot
#: records, the class prompts.
INPUT_RULE = "'image', 'caption:<i>' (i >= 0) or 'prompts'"
JSON_TYPES = {dict: "object", list: "array", str: "string", int: "number", float: "number", bool: "boolean"}


def _not_text(value: Any) -> Any:
    """Refuse strings and booleans where a number belongs (pydantic would otherwise parse "0.9")."""
    if isinstance(value, (str, bytes, bool)):
        raise ValueError(f"must be a number, not a {JSON_TYPES.get(type(value), type(value).__name__)}")
    return value


def _dataset_name(value: str) -> str:
    """An id, or a subset of one named "<id>:<tag>" (tags are ids too, e.g. "wit-1024:heldout0.2")."""
    try:
        for part in value.split(":"):
            check_id(part, "dataset name part")
    except UserError:
        raise UserError(f"dataset name {shown(value)} is not an id or 'id:subset-tag' ({ID_RULE})") from None
    return value


Number = Annotated[float, BeforeValidator(_not_text)]
Count = Annotated[int, BeforeValidator(_not_text)]
Id = Annotated[str, AfterValidator(lambda v: check_id(v, "id"))]
ModelName = Annotated[str, AfterValidator(check_model_name)]
DatasetName = Annotated[str, AfterValidator(_dataset_name)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ModelRef(_Strict):
    """A model as a record names it; `loader` restates the zoo entry's loader (None in records written
    before it was stated), and `trained_on` and `fitted_on_eval` its disclosure (None: not stated), which
    the board marks (platobench/leaderboard/flags.py)."""

    name: ModelName
    revision: str | None = None
    params_m: Number | None = Field(default=None, gt=0, allow_inf_nan=False)  # the plots put it on a log axis
    kind: str | None = None
    loader: str | None = Field(default=None, max_length=100)
    trained_on: list[Annotated[str, Field(min_length=1, max_length=200)]] | None = Field(default=None, max_length=200)
    fitted_on_eval: bool | None = None

    @model_serializer(mode="wrap")
    def _omit_unstated(self, handler: Any) -> dict[str, Any]:
        """A model without disclosures (or a record written before they existed) is written without them."""
        return _omit_none(handler(self), "loader", "trained_on", "fitted_on_eval")


def check_input(value: str) -> str:
    """`value` if it follows INPUT_RULE, else ValueError."""
    head, _, index = value.partition(":")
    ok = value in ("image", "prompts") or (head == "caption" and index.isascii() and index.isdigit()
                                          and str(int(index)) == index)
    if not ok:
        raise ValueError(f"input {shown(value)} must be {INPUT_RULE}")
    return value


def input_modality(value: str) -> Modality:
    """The modality that reads input `value`: images are seen by vision models, captions and prompts by
    text models."""
    return "vision" if value == "image" else "text"


class SideRef(ModelRef):
    """One side of a pair: the model, its modality and what it read of each sample."""

    modality: Modality
    input: Annotated[str, AfterValidator(check_input)]

    @model_validator(mode="after")
    def _reads_its_modality(self) -> SideRef:
        if input_modality(self.input) != self.modality:
            raise ValueError(f"a {self.modality} model cannot read input {self.input!r}")
        return self


class DatasetRef(_Strict):
    name: DatasetName
    revision: str
    n: Count = Field(ge=0)
    fingerprint: str


class MetricRef(_Strict):
    id: str
    params: dict[str, Any]
    preprocess: str
    selection: str  # "best" (max over the layer grid, PRH), "last", or "fixed:i,j"
    higher_is_better: bool


def _omit_none(out: dict[str, Any], *names: str) -> dict[str, Any]:
    """`out` without the keys `names` whose value is None: a record written before a field existed is
    written back byte for byte."""
    for name in names:
        if out.get(name) is None:
            out.pop(name, None)
    return out


Draws = list[Number]


class NullRef(_Strict):
    mean: Number
    std: Number
    p_value: Number
    n_perm: Count
    seed: Count
    method: str = "permute pairing; layer selection inside each draw"
    # The B null scores in draw order (paired records since paired verdicts): two records of one setting on
    # one sample set share the permutations, so their excesses over the null pair draw by draw.
    draws: Draws | None = None

    @model_serializer(mode="wrap")
    def _omit_unstated(self, handler: Any) -> dict[str, Any]:
        return _omit_none(handler(self), "draws")


#: The range a record's rate exponent may take (`IntervalRef.rate`; platobench/metrics/resampling.py reads
#: its estimates into it): Var ~ N^-a, from 1 / N far from chance to 1 / N^2 at chance.
RATE_BOUNDS = (1.0, 2.0)
#: The interval schemes that read such an exponent and draw 2B subsets, B of each of two sizes: "rate", and
#: "arcsine_rate" (the same on the arcsin(sqrt(score)) scale; platobench/metrics/resampling.py).
RATE_SCHEMES = ("rate", "arcsine_rate")


class IntervalRef(_Strict):
    lo: Number
    hi: Number
    level: Number
    method: str
    # What the interval is for (platobench.metrics.registry.ESTIMANDS): "population" (a population value
    # independent of N) or "expected_at_n" (the expected score of N samples); absent in records written
    # before it was stated, and in zero-shot and stitch records, whose intervals say what they are in `method`.
    estimand: Literal["population", "expected_at_n"] | None = None
    # How the subsets were drawn (platobench/metrics/resampling.py: "jackknife", "subsample", "rate" or
    # "arcsine_rate"), the
    # samples in each, and the selected score on each subset in subset order: paired records state them
    # (since paired verdicts), so that two records of one setting on one sample set, scored on the same
    # subsets, can be compared by their subset-wise differences. `rate`: the rate schemes' exponent a
    # (Var ~ N^-a, in RATE_BOUNDS above), stated with them and only with them; their draws are
    # 2B scores, B on subsets of `subset_size` samples, then B on subsets of half as many.
    scheme: Literal["jackknife", "subsample", "rate", "arcsine_rate"] | None = None
    subset_size: Count | None = Field(default=None, ge=1)
    draws: Draws | None = None
    rate: Number | None = None

    @model_serializer(mode="wrap")
    def _omit_unstated(self, handler: Any) -> dict[str, Any]:
        """An older record, which never stated these, is written back byte for byte."""
        return _omit_none(handler(self), "estimand", "scheme", "subset_size", "draws", "rate")

    @model_validator(mode="after")
    def _draws_stated_together(self) -> IntervalRef:
        stated = [self.scheme is not None, self.subset_size is not None, self.draws is not None]
        if any(stated) and not all(stated):
            raise ValueError("an interval states its scheme, subset_size and draws together or none of them")
        if self.draws is not None and len(self.draws) < 2:
            raise ValueError(f"an interval's draws need at least 2 subset scores, got {len(self.draws)}")
        if (self.rate is not None) != (self.scheme in RATE_SCHEMES):
            raise ValueError(f"an interval states a rate exponent with a rate scheme {RATE_SCHEMES} and only with "
                             f"one (scheme {self.scheme!r}, rate {self.rate!r})")
        if self.rate is not None and not RATE_BOUNDS[0] <= self.rate <= RATE_BOUNDS[1]:
            raise ValueError(f"the rate exponent {self.rate} is outside {list(RATE_BOUNDS)}")
        if self.scheme in RATE_SCHEMES and (len(self.draws) % 2 or len(self.draws) < 4):
            raise ValueError(f"the {self.scheme} scheme's draws are B >= 2 scores on subsets of each of two sizes, "
                             f"got {len(self.draws)}")
        return self


class Provenance(_Strict):
    """What the record's numbers were computed from. `git_sha`: the platobench commit (None outside a git
    checkout); `inputs`: the feature-entry digest of each side ({"x": ..., "y": ...}: the cache keys of the
    two models' features, which hash weights, dataset revision, sample ids and extractor version); the
    setting as run (`setting_config`: its full dump; None for a record no setting wrote, e.g. stitch);
    `limit`: the `--limit` of a test run (None: the whole dataset)."""

    git_sha: str | None = None
    inputs: dict[Literal["x", "y"], str] | None = None
    setting_config: dict[str, Any] | None = None
    limit: Count | None = Field(default=None, ge=1)


class Rounding(_Strict):
    """How far relative noise `noise` on the features (the size of CPUs' float rounding) moved the score:
    the largest change `max_change` over `draws` draws (`bench.scoring.rounding_sensitivity`)."""

    noise: Number
    draws: Count
    max_change: Number


class Reproducibility(_Strict):
    """Whether the record reproduces on another CPU: its rounding sensitivity (neighbour metrics) and, when
    rounding-sized noise moves it by more than half the check tolerance, the wider tolerance `check` uses
    (`check_tolerance`, recomputed by `check` itself, never read from here) and why."""

    rounding: Rounding | None = None
    check_tolerance: Number | None = None
    check_tolerance_why: str | None = None


class ResultRecord(_Strict):
    """One measured score of a pair of models (`x`, `y`) under one setting."""

    schema_version: Count = SCHEMA_VERSION
    platobench_version: str = __version__
    setting: Id
    kind: Id = "paired"  # the setting kind that wrote it (bench.protocols.PROTOCOLS: paired, zeroshot, a plugin's) or "stitch"
    metric: MetricRef
    x: SideRef
    y: SideRef
    dataset: DatasetRef
    score: Number
    layers: tuple[Count, Count] | None = None  # chosen (x layer, y layer) indices into the grid
    last_layer_score: Number | None = None
    chance: Number | None = None
    null: NullRef | None = None
    calibrated: Number | None = None
    ci: IntervalRef | None = None
    grid: list[list[Number | None]] | None = Field(
        default=None, description="[L_x][L_y] scores; null for layers excluded as constant"
    )
    provenance: Provenance = Field(default_factory=Provenance)
    reproducibility: Reproducibility | None = None
    details: dict[str, Any] = Field(default_factory=dict, description="the kind's own details")
    runtime_s: Number
    created: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))

    @model_validator(mode="after")
    def _layers_in_grid(self) -> ResultRecord:
        """The grid is rectangular; the chosen layers are non-negative and, with a grid, inside it."""
        if self.grid is not None and len({len(row) for row in self.grid}) > 1:
            raise ValueError("grid rows differ in length; the grid must be rectangular")
        if self.layers is not None:
            i, j = self.layers
            if i < 0 or j < 0:
                raise ValueError(f"layers {list(self.layers)} must be non-negative")
            if self.grid is not None and not (i < len(self.grid) and j < len(self.grid[0])):
                shape = (len(self.grid), len(self.grid[0]) if self.grid else 0)
                raise ValueError(f"layers {list(self.layers)} lie outside the {shape[0]}x{shape[1]} grid")
        return self

    @property
    def pair_id(self) -> str:
        return f"{self.x.name}__{self.y.name}"

    @property
    def modalities(self) -> tuple[Modality, Modality]:
        """(x modality, y modality), e.g. ("text", "vision")."""
        return self.x.modality, self.y.modality

    @property
    def sides(self) -> tuple[SideRef, SideRef]:
        return self.x, self.y
