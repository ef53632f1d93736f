"""Stitching results in the leaderboard: the shape of a stitch record's `details["stitch"]` and the
"stitching" table that README.md and index.html both print under a board of stitch records.

A stitch record (kind "stitch") scores a frozen vision encoder captioned through one semi-orthogonal
linear map into a frozen text encoder's space, decoded by a caption decoder trained on text only
(Balestriero & LeCun 2026). Its `score` is the CIDEr-D of the map fitted on all train pairs; its
`details["stitch"]` holds every variant (paired maps over a sweep of K pairs, the unpaired, shuffled-pairs
and random maps, retrieval through the map and the text->text upper bound) with CIDEr-D and BLEU-4 and
their bootstrap CIs over images, a few sample captions, the decoder and the train/test split; a record
written since `platobench check` re-scores stitch records also keeps every row's caption of each held-out
image and, in `scoring`, the references and bootstrap settings those scores came from.

The builders return plain text (header and rows of strings, no markup): each renderer escapes every
cell itself (`md_text` for Markdown, the HTML escaper for the page).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from platobench.errors import UserError
from platobench.leaderboard.boards import Board, fmt
from platobench.leaderboard.notes import MISSING
from platobench.results.schema import Count, Number, ResultRecord

Variant = Literal["paired", "unpaired", "shuffled", "random", "retrieval", "text-bound"]
VARIANT_ORDER: tuple[str, ...] = ("paired", "unpaired", "shuffled", "random", "retrieval", "text-bound")
SAMPLE_CAPTIONS = ("paired", "unpaired", "retrieval")  # the variants whose captions the sample table shows
SAMPLES_SHOWN = 5
STITCH_HEADER = ["language", "vision", "map", "map parameters", "CIDEr-D", "CIDEr-D CI", "BLEU-4", "BLEU-4 CI"]
SAMPLE_HEADER = ["id", "references", "paired map", "unpaired map", "retrieval through the map"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StitchDecoder(BaseModel):
    """The text-only caption decoder. Further decoder settings (beyond the named ones) are kept as given."""

    model_config = ConfigDict(extra="allow")
    name: str
    revision: str | None = None
    params_m: Number | None = None
    trained_params: Count | None = None
    prefix_len: Count | None = None
    tune_lm: bool | None = None


class StitchRow(_Strict):
    """One scored variant: k = image-caption pairs the map saw (0 for none); map_entries = entries of the
    map matrix (0 for the text->text bound, which uses no map); CIs are (lo, hi) bootstrap intervals;
    captions: the generated caption of every held-out image, keyed by sample id in held-out order (None in
    records written before they were kept)."""

    variant: Variant
    k: Count = Field(ge=0)
    map_entries: Count = Field(ge=0)
    cider_d: Number
    cider_d_ci: tuple[Number, Number]
    bleu4: Number
    bleu4_ci: tuple[Number, Number]
    captions: dict[str, str] | None = None

    @model_validator(mode="after")
    def _ordered_cis(self) -> StitchRow:
        for name in ("cider_d_ci", "bleu4_ci"):
            lo, hi = getattr(self, name)
            if lo > hi:
                raise ValueError(f"{name} [{lo}, {hi}] has its lower end above its upper end")
        return self


class StitchSample(_Strict):
    """One test image: its reference captions and the caption of each variant, keyed by variant name
    ("paired" is the map fitted on all train pairs)."""

    id: str
    references: list[str]
    captions: dict[str, str]


class StitchSplit(_Strict):
    train: Count = Field(ge=0)
    test: Count = Field(ge=0)
    heldout_fraction: Number
    decoder_train_captions: Count = Field(ge=0)
    dropped_duplicates: Count = Field(ge=0)


class StitchScoring(_Strict):
    """How the rows were scored: the split's source (`get_dataset(dataset, limit=limit)`, split by
    `split.heldout_fraction` with `views` captions per sample), every reference of each held-out sample id
    in held-out order, and the bootstrap (n_boot draws at `level`, seeded by bootstrap_seed; map_seed seeded
    the maps and the shown samples)."""

    dataset: str
    limit: Count | None = Field(default=None, ge=1)
    views: Count = Field(ge=1)
    references: dict[str, list[str]]
    n_boot: Count = Field(ge=1)
    level: Number = Field(gt=0, lt=1)
    bootstrap_seed: Count
    map_seed: Count


class StitchExtra(_Strict):
    """`details["stitch"]` of a stitch record; map_free = free parameters of the semi-orthogonal map; scoring:
    None in records written before the captions were kept (`platobench check` cannot re-score them)."""

    decoder: StitchDecoder
    map_entries: Count = Field(ge=0)
    map_free: Count = Field(ge=0)
    rows: list[StitchRow] = Field(min_length=1)
    samples: list[StitchSample]
    split: StitchSplit
    scoring: StitchScoring | None = None


def stitch_extra(record: ResultRecord) -> StitchExtra | None:
    """The validated `details["stitch"]` of a stitch record; None for a record of another kind. UserError
    naming the record's setting and pair when it is missing or malformed."""
    if record.kind != "stitch":
        return None
    where = f"stitch record of setting {record.setting}, pair {record.x.name} x {record.y.name}"
    if "stitch" not in record.details:
        raise UserError(f"{where}: details.stitch is missing")
    try:
        return StitchExtra.model_validate(record.details["stitch"])
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_context=False, include_input=False)
        loc = ".".join(str(p) for p in ("details", "stitch", *errors[0]["loc"]))[:160]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise UserError(f"{where}: {loc}: {errors[0]['msg'][:300]}{more}") from None


def map_label(row: StitchRow) -> str:
    """The table's name of a variant: "paired K=8", "unpaired (0 pairs)", "random orthonormal map", ..."""
    return {
        "paired": f"paired K={row.k:,}", "unpaired": "unpaired (0 pairs)", "shuffled": f"shuffled pairs K={row.k:,}",
        "random": "random orthonormal map", "retrieval": "retrieval through the map",
        "text-bound": "text→text upper bound",
    }[row.variant]


def _ci(ci: tuple[float, float]) -> str:
    lo, hi = ci
    return f"[{fmt(lo)}, {fmt(hi)}]"


def row_cells(record: ResultRecord, row: StitchRow) -> list[str]:
    """One table row (STITCH_HEADER), plain text."""
    entries = f"{row.map_entries:,}" if row.map_entries else "none"
    return [record.x.name, record.y.name, map_label(row), entries, fmt(row.cider_d), _ci(row.cider_d_ci),
            fmt(row.bleu4), _ci(row.bleu4_ci)]


def setup_line(record: ResultRecord, extra: StitchExtra) -> str:
    """One sentence on a pair's decoder, map and split, plain text."""
    d, s = extra.decoder, extra.split
    size = f", {d.params_m:g}M parameters" if d.params_m is not None else ""
    trained = f", {d.trained_params:,} trained" if d.trained_params is not None else ""
    return (f"{record.x.name} x {record.y.name}: decoder {d.name}{size}{trained}; map "
            f"{extra.map_entries:,} entries ({extra.map_free:,} free parameters of a semi-orthogonal map); "
            f"{s.train:,} train and {s.test:,} test images (held-out fraction {s.heldout_fraction:g}), decoder "
            f"trained on {s.decoder_train_captions:,} captions, {s.dropped_duplicates:,} duplicates dropped.")


@dataclass
class StitchSection:
    """The stitching part of one board: table rows, one setup line per pair, the sample captions of the
    board's first pair and one note per record whose details.stitch could not be read."""

    rows: list[list[str]] = field(default_factory=list)
    setups: list[str] = field(default_factory=list)
    samples_of: str = ""
    samples: list[list[str]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    sentence: str = ""


def beats_controls(extra: StitchExtra) -> bool:
    """Whether the paired map fitted on the most pairs beats both map controls (random orthonormal map, shuffled
    pairs) beyond their bootstrap CIs: its CIDEr-D CI lies entirely above theirs."""
    paired = [r for r in extra.rows if r.variant == "paired"]
    controls = [r for r in extra.rows if r.variant in ("random", "shuffled")]
    if not paired or not controls:
        return False
    best = max(paired, key=lambda r: r.k)
    return all(best.cider_d_ci[0] > c.cider_d_ci[1] for c in controls)


def controls_sentence(verdicts: list[bool]) -> str:
    """The board's sentence for stitch records: the controls are the map variants, not baseline models."""
    return (f"{sum(verdicts)} of {len(verdicts)} pairs: the paired map's CIDEr-D beats both map controls (random "
            "orthonormal map, shuffled pairs) beyond their bootstrap CIs.")


def _order(row: StitchRow) -> tuple[int, int]:
    return VARIANT_ORDER.index(row.variant), row.k


def stitch_section(board: Board) -> StitchSection | None:
    """The stitching table of a board (None unless it holds stitch records): its records in board order,
    each pair's variants in VARIANT_ORDER (paired rows by K), and up to SAMPLES_SHOWN sample captions of
    the first pair that has samples. A malformed details.stitch becomes a problem line, not an error."""
    records = [row.record for row in board.rows if row.record.kind == "stitch"]
    if not records:
        return None
    section = StitchSection()
    verdicts: list[bool] = []
    for record in records:
        try:
            extra = stitch_extra(record)
        except UserError as exc:
            section.problems.append(str(exc))
            continue
        assert extra is not None  # kind "stitch"
        section.rows += [row_cells(record, row) for row in sorted(extra.rows, key=_order)]
        section.setups.append(setup_line(record, extra))
        verdicts.append(beats_controls(extra))
        if extra.samples and not section.samples:
            section.samples_of = f"{record.x.name} x {record.y.name}"
            section.samples = [
                [s.id, " / ".join(s.references), *(s.captions.get(v, MISSING) for v in SAMPLE_CAPTIONS)]
                for s in extra.samples[:SAMPLES_SHOWN]
            ]
    section.sentence = controls_sentence(verdicts)
    return section
