"""`platobench check` of a stitch record: re-score the captions it stored.

The captions come from a trained decoder, which only a rerun of `platobench stitch` retrains; everything
from the captions on is verified here. The held-out split is rebuilt from `details.stitch.scoring` (the
dataset's name and limit, `split.heldout_fraction`, the views) with the run's rule
(`platobench.experiments.stitch.split.split_dataset`); the record's dataset name, revision, n and fingerprint, its
split counts, its held-out ids and references and the sample captions the leaderboard shows must equal
what that split gives and what the rows stored ("invalid", the field named). Every row's captions are then
re-scored with `platobench.experiments.stitch.scores.caption_scores` against the dataset's references, with the
record's bootstrap settings and seed: CIDEr-D, BLEU-4 and their CI bounds of every row, and the record's
score and CI (the paired map fitted on the most pairs), are compared within the tolerance ("moved"). A
record without stored captions (written before they were kept) is "skipped" with the way to rerun it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from platobench.api import (
    Diff,
    IntervalRef,
    Mismatch,
    Outcome,
    PairedDataset,
    ResultRecord,
    StitchExtra,
    StitchRow,
    UserError,
    get_dataset,
    map_label,
    stitch_extra,
)
from platobench.experiments.stitch.scores import CaptionScores, caption_scores
from platobench.experiments.stitch.split import StitchSplit, split_dataset

NO_CAPTIONS = ("a stitch record without its held-out captions (details.stitch.scoring; written before they were "
               "kept): rerun `platobench stitch` with its options (details.stitch) to write one that check re-scores")
RESCORED = ("re-scored the captions the record stored on the rebuilt held-out split; the captions themselves "
            "come from the trained decoder, which only a rerun of `platobench stitch` retrains")
SHOWN_REFERENCES = 3  # differing references listed one by one; the rest are counted
MAX_BOOT_CELLS = 20_000_000  # n_boot x held-out images the bootstrap may draw (about 160 MB a matrix)


def verify_stitch(record: ResultRecord) -> tuple[Outcome, ResultRecord | None]:
    """(outcome with its diffs and mismatches — the status is decided by check's `run_check` when a
    recomputed record is returned —, the record with its rows and score re-scored, or None when the stored
    captions could not be re-scored)."""
    out = Outcome(record.setting, record.x.name, record.y.name, status="skipped")
    try:
        extra = stitch_extra(record)
    except UserError as exc:
        return _invalid(out, Mismatch("details.stitch", "malformed", str(exc))), None
    assert extra is not None  # kind "stitch"
    if extra.scoring is None:
        out.reason = NO_CAPTIONS
        return out, None
    if extra.scoring.n_boot * len(extra.scoring.references) > MAX_BOOT_CELLS:
        out.reason = (f"{extra.scoring.n_boot:,} bootstrap draws over {len(extra.scoring.references):,} images "
                      f"exceed the {MAX_BOOT_CELLS:,} draws x images check re-scores")
        return out, None
    try:
        dataset = get_dataset(extra.scoring.dataset, limit=extra.scoring.limit)
    except UserError as exc:
        out.reason = f"the held-out split could not be rebuilt: {exc}"
        return out, None
    if not isinstance(dataset, PairedDataset):
        return _invalid(out, Mismatch("details.stitch.scoring.dataset", extra.scoring.dataset, "a paired dataset")), None
    try:
        split = split_dataset(dataset, extra.split.heldout_fraction, views=extra.scoring.views)
    except UserError as exc:
        return _invalid(out, Mismatch("details.stitch.split", extra.split.model_dump(), str(exc))), None
    out.mismatches = stated_mismatches(record, extra, split)
    ids = split.test_set.ids
    if list(extra.scoring.references) != ids or any(list(r.captions or ()) != ids for r in extra.rows):
        out.status = "invalid"  # the captions do not line up with the held-out images: nothing to re-score
        return out, None
    try:
        scored = [rescore(row, split.references(), extra) for row in extra.rows]
    except UserError as exc:
        return _invalid(out, Mismatch("details.stitch.rows", "stored captions", f"none: {exc}"[:300])), None
    out.diffs = [d for row, s in zip(extra.rows, scored) for d in row_diffs(row, s)]
    head = max(range(len(extra.rows)), key=lambda i: (extra.rows[i].variant == "paired", extra.rows[i].k))
    new = recomputed(record, extra, scored, head)
    out.diffs = headline_diffs(record, new) + out.diffs
    out.notes.append(RESCORED)
    return out, new


def _invalid(out: Outcome, mismatch: Mismatch) -> Outcome:
    out.mismatches.append(mismatch)
    out.status = "invalid"
    return out


def _first_difference(stated: list[str], expected: list[str]) -> str:
    """Where two id lists part: "n=110 vs n=24; first difference at position 3: 'a' vs 'b'"."""
    at = next((i for i, (a, b) in enumerate(zip(stated, expected)) if a != b), min(len(stated), len(expected)))
    a = repr(stated[at]) if at < len(stated) else "end"
    b = repr(expected[at]) if at < len(expected) else "end"
    return f"n={len(stated)} vs n={len(expected)}; first difference at position {at}: {a} vs {b}"


def stated_mismatches(record: ResultRecord, extra: StitchExtra, split: StitchSplit) -> list[Mismatch]:
    """The record's stated fields that differ from the rebuilt split and the stored rows: dataset, split
    counts, held-out ids and references, CI level, headline K, row captions and the shown samples."""
    assert extra.scoring is not None
    test, stated = split.test_set, record.dataset
    out = [Mismatch(f"dataset.{name}", a, b) for name, a, b in (
        ("name", stated.name, test.name), ("revision", stated.revision, test.revision), ("n", stated.n, len(test)),
        ("fingerprint", stated.fingerprint, test.fingerprint)) if a != b]
    out += [Mismatch(f"details.stitch.split.{k}", getattr(extra.split, k), v) for k, v in split.as_dict().items()
            if getattr(extra.split, k) != v]
    ids, references = test.ids, dict(zip(test.ids, split.references()))
    stored = extra.scoring.references
    if list(stored) != ids:
        out.append(Mismatch("details.stitch.scoring.references (held-out ids)", _first_difference(list(stored), ids),
                            "the held-out ids of the rebuilt split, in order"))
    else:
        wrong = [i for i in ids if stored[i] != references[i]]
        out += [Mismatch(f"details.stitch.scoring.references[{i}]", stored[i], references[i])
                for i in wrong[:SHOWN_REFERENCES]]
        if len(wrong) > SHOWN_REFERENCES:
            out.append(Mismatch("details.stitch.scoring.references", f"{len(wrong) - SHOWN_REFERENCES} more differ",
                                "the dataset's captions of those ids"))
    if record.ci is not None and record.ci.level != extra.scoring.level:
        out.append(Mismatch("ci.level", record.ci.level, extra.scoring.level))
    paired = [r for r in extra.rows if r.variant == "paired"]
    if not paired:
        out.append(Mismatch("details.stitch.rows", "no paired row", "a row of the paired map (the record's score)"))
    elif record.metric.params.get("k") != max(r.k for r in paired):
        out.append(Mismatch("metric.params.k", record.metric.params.get("k"), max(r.k for r in paired)))
    for row in extra.rows:
        if row.captions is None:
            out.append(Mismatch(f"rows[{map_label(row)}].captions", None, "the caption of every held-out image"))
        elif list(row.captions) != ids:
            out.append(Mismatch(f"rows[{map_label(row)}].captions (sample ids)",
                                _first_difference(list(row.captions), ids), "the held-out ids, in order"))
    return out + sample_mismatches(extra, references)


def _sample_rows(extra: StitchExtra) -> Iterator[tuple[str, StitchRow]]:
    """(label a sample's captions use, row): "paired" for the paired map fitted on the most pairs, "paired
    K=<k>" for the other paired maps, the variant's name for the rest."""
    paired = [r for r in extra.rows if r.variant == "paired"]
    top = max((r.k for r in paired), default=None)
    for row in extra.rows:
        if row.variant == "paired":
            yield ("paired" if row.k == top else f"paired K={row.k}"), row
        else:
            yield row.variant, row


def sample_mismatches(extra: StitchExtra, references: dict[str, list[str]]) -> list[Mismatch]:
    """The shown samples must be held-out images with the dataset's references and the captions their rows
    stored."""
    rows = dict(_sample_rows(extra))
    out = []
    for s in extra.samples:
        where = f"details.stitch.samples[{s.id}]"
        if s.id not in references:
            out.append(Mismatch(f"{where}.id", s.id, "a held-out sample id"))
            continue
        if s.references != references[s.id]:
            out.append(Mismatch(f"{where}.references", s.references, references[s.id]))
        for label, caption in s.captions.items():
            row = rows.get(label)
            expected = None if row is None or row.captions is None else row.captions.get(s.id)
            if caption != expected:
                out.append(Mismatch(f"{where}.captions.{label}", caption,
                                    expected if expected is not None else f"no row {label!r} with captions"))
    return out


def rescore(row: StitchRow, references: list[list[str]], extra: StitchExtra) -> CaptionScores:
    """CIDEr-D and BLEU-4 with their bootstrap CIs of a row's stored captions (held-out order)."""
    assert extra.scoring is not None and row.captions is not None
    s = extra.scoring
    return caption_scores(list(row.captions.values()), references, n_boot=s.n_boot, seed=s.bootstrap_seed,
                          level=s.level)


def row_diffs(row: StitchRow, s: CaptionScores) -> list[Diff]:
    """Stored against re-scored values of one row, named "rows[<map>].<value>"."""
    name = f"rows[{map_label(row)}]"
    pairs = [("cider_d", row.cider_d, s.cider_d), ("cider_d_ci.lo", row.cider_d_ci[0], s.cider_d_ci[0]),
             ("cider_d_ci.hi", row.cider_d_ci[1], s.cider_d_ci[1]), ("bleu4", row.bleu4, s.bleu4),
             ("bleu4_ci.lo", row.bleu4_ci[0], s.bleu4_ci[0]), ("bleu4_ci.hi", row.bleu4_ci[1], s.bleu4_ci[1])]
    return [Diff(f"{name}.{field}", a, b, abs(a - b)) for field, a, b in pairs]


def _scored_row(row: StitchRow, s: CaptionScores) -> dict[str, Any]:
    return {**row.model_dump(mode="json"), "cider_d": s.cider_d, "cider_d_ci": list(s.cider_d_ci),
            "bleu4": s.bleu4, "bleu4_ci": list(s.bleu4_ci)}


def recomputed(record: ResultRecord, extra: StitchExtra, scored: list[CaptionScores], head: int) -> ResultRecord:
    """The record with every row re-scored and its score and CI those of row `head` (the headline map)."""
    assert extra.scoring is not None
    s = scored[head]
    method = record.ci.method if record.ci is not None else "percentile bootstrap over images"
    rows = [_scored_row(row, x) for row, x in zip(extra.rows, scored)]
    return record.model_copy(update={
        "score": s.cider_d,
        "ci": IntervalRef(lo=s.cider_d_ci[0], hi=s.cider_d_ci[1], level=extra.scoring.level, method=method),
        "details": {**record.details, "stitch": {**record.details["stitch"], "rows": rows}},
    })


def headline_diffs(record: ResultRecord, new: ResultRecord) -> list[Diff]:
    """The record's score and CI bounds against the re-scored headline row's."""
    assert new.ci is not None
    lo, hi = (None, None) if record.ci is None else (record.ci.lo, record.ci.hi)
    return [_diff("score", record.score, new.score), _diff("ci.lo", lo, new.ci.lo), _diff("ci.hi", hi, new.ci.hi)]


def _diff(name: str, a: float | None, b: float) -> Diff:
    return Diff(name, a, b, None if a is None else abs(a - b))
