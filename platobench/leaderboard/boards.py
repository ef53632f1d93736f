"""The board model of the leaderboard: records grouped into boards and ranked, plus the cell formatting
every renderer (Markdown, HTML, plots) shares. Renderers depend on this module, never the reverse.

A *board* is every record of one setting measured on one sample set (same dataset fingerprint) with pairs of
one modality pair (text x vision, vision x vision, text x text): scores are only ranked against scores of the
same protocol on the same samples and inputs. Ranks are the ones the data can
support (platobench/leaderboard/ranks.py): a record that its tie group's leader is not separated from (by
their paired difference on the same subsets, platobench/leaderboard/paired.py; by overlapping CIs for records
without subset scores) shares the leader's rank, shown as "1=" (competition ranking: "1=, 1=, 3"); a record whose score is not finite is
shown as missing and gets no rank. Aggregates never skip missing values: an x model that lacks a
y reference of its board has no mean (it shows as "missing (k/n)"), and a pair that lacks a setting
shows as missing in the overview, never as a better mean.

Ranks respect the null: a record that does not exceed its own null (its calibrated interval above 0 and its
permutation p-value at most .05, `baselines.exceeds_null`) is never ranked above one that does. The rows are
ranked in two tiers, those that exceed their null first, each tier by raw score (the metric's direction,
what PRH reports) with the tie rule above inside the tier; the second tier's ranks continue after the
first's. A record without a null (or without an interval) cannot show that it exceeds one: it ranks in the
second tier. A record with an integrity flag (a copy of the other side, a score at the metric's maximum:
platobench/leaderboard/flags.py) is not ranked: it follows the ranked rows, its rank shown as "withheld".

Baselines (zoo family `baseline/`, negative controls) stay in the ranked tables; every row carries its
verdict against its own matched baselines (platobench/leaderboard/verdicts.py) and each board has one
sentence saying how many real pairs beat them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from platobench.errors import UserError
from platobench.leaderboard.baselines import exceeds_null, is_baseline
from platobench.leaderboard.flags import withheld
from platobench.leaderboard.notes import MISSING, NOT_APPLICABLE, UNKNOWN, WITHHELD, rank_labels, top5_of
from platobench.leaderboard.order import DEFAULT_MODALITIES, modality_label, record_key
from platobench.leaderboard.paired import record_ranks
from platobench.leaderboard.verdicts import Verdict, board_sentence, verdicts
from platobench.results import ResultRecord

OVERVIEW_ANCHOR = "overview"  # anchors of the sections after the boards, in README.md and index.html
PAPERS_ANCHOR = "reported-by-papers"


def family(name: str) -> str:
    """The zoo family of a model name: the part before '/' ("qwen2.5/qwen2.5-7b" -> "qwen2.5")."""
    return name.split("/", 1)[0]


def finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


@dataclass(frozen=True)
class Ranked:
    """One record of a board with its rank (None when the score is missing or not finite); `label` is the
    rank as the tables show it ("2=" for a rank shared with another record, "missing" for None)."""

    rank: int | None
    record: ResultRecord
    label: str = MISSING


@dataclass
class Board:
    """Records of one setting on one sample set with one modality pair, best first; `pool`: the records their
    verdicts read their matched controls from (None: the board's own records, which hold every control of a
    board built from a whole results folder)."""

    setting: str
    rows: list[Ranked]
    pool: list[ResultRecord] | None = None

    @property
    def modalities(self) -> tuple[str, str]:
        return self.first.modalities

    @property
    def first(self) -> ResultRecord:
        return self.rows[0].record

    @property
    def key(self) -> str:
        """A short unique id: setting (with the modality pair unless text x vision: "demo-mknn.vision-vision")
        plus the first 8 hex digits of the dataset fingerprint."""
        pair = "" if self.modalities == DEFAULT_MODALITIES else "." + "-".join(self.modalities)
        return f"{self.setting}{pair}@{self.first.dataset.fingerprint[:8]}"

    @property
    def anchor(self) -> str:
        """The board's anchor in README.md and index.html: its key as lowercase letters, digits, "_" and "-"
        ("demo-mknn@f32e2e84" -> "demo-mknn-f32e2e84")."""
        return "".join(c if c.isascii() and (c.isalnum() or c == "_") else "-" for c in self.key.lower())

    @property
    def title(self) -> str:
        d, m = self.first.dataset, self.first.metric
        direction = "higher is better" if m.higher_is_better else "lower is better"
        pair = "" if self.modalities == DEFAULT_MODALITIES else f" — {modality_label(self.modalities)}"
        return f"{self.setting}{pair} — {m.id} on {d.name} (n={d.n}, {direction})"

    @property
    def records(self) -> list[ResultRecord]:
        return [row.record for row in self.rows]

    @property
    def verdicts(self) -> dict[str, Verdict]:
        """pair_id -> the verdict of each record against its matched controls (a board holds every record
        that can be one: platobench/leaderboard/verdicts.py)."""
        return verdicts(self.records, self.pool)

    @property
    def sentence(self) -> str:
        """How the board's real pairs fare against their matched baselines, as one sentence."""
        return board_sentence(self.records, self.pool)

    @property
    def y_models(self) -> list[str]:
        """The board's real y models (the per-x-model means average over these; baselines excluded)."""
        return sorted({r.record.y.name for r in self.rows if not is_baseline(r.record.y.name)})

    @property
    def headers(self) -> tuple[str, str]:
        """The names of the board's two model columns (`side_headers`)."""
        return side_headers(self.modalities)

    @property
    def x_models(self) -> list[str]:
        return list(dict.fromkeys(r.record.x.name for r in self.rows))


def side_headers(modalities: tuple[str, str]) -> tuple[str, str]:
    """The column names of a board's two model columns: "language model", "vision model" for text x vision
    (as every board has been headed), "x: vision model", "y: vision model" for another modality pair."""
    if modalities == DEFAULT_MODALITIES:
        return "language model", "vision model"
    return f"x: {modalities[0]} model", f"y: {modalities[1]} model"


def rank_records(records: list[ResultRecord]) -> list[Ranked]:
    """Ranks of records that share a protocol (module docstring): those that exceed their own null first,
    then the others, each tier best score first (the metric's direction; equal scores in order of the model
    names); a record its tie group's leader is not separated from shares the leader's rank
    (`paired.record_ranks`, never across tiers); rows with an integrity flag follow, unranked ("withheld"),
    and non-finite scores come last, unranked ("missing")."""
    if not records:
        return []
    higher = records[0].metric.higher_is_better
    if any(r.metric.higher_is_better != higher for r in records):
        raise UserError("cannot rank records whose metrics disagree on the direction (higher/lower is better)")
    order = lambda r: (-r.score if higher else r.score, r.x.name, r.y.name)  # noqa: E731
    scored = sorted((r for r in records if finite(r.score) and not withheld(r)), key=lambda r: (not exceeds_null(r), *order(r)))
    above = sum(bool(exceeds_null(r)) for r in scored)
    ranks = record_ranks(scored[:above]) + [above + rank for rank in record_ranks(scored[above:])]
    out = [Ranked(rank, r, label) for rank, r, label in zip(ranks, scored, rank_labels(ranks))]
    out += [Ranked(None, r, WITHHELD) for r in sorted((r for r in records if finite(r.score) and withheld(r)), key=order)]
    return out + [Ranked(None, r) for r in records if not finite(r.score)]


def build_boards(records: list[ResultRecord], pool: list[ResultRecord] | None = None) -> list[Board]:
    """Group records into boards (setting x dataset fingerprint x modality pair), each ranked; the
    headline board first (the order of platobench/leaderboard/order.py: mutual kNN paired settings, other
    paired settings, zero-shot, stitching; text x vision before the setting's other modality pairs), then
    by setting id and fingerprint. `pool`: where the verdicts find matched controls (default: `records`)."""
    groups: dict[tuple[str, str, tuple[str, str]], list[ResultRecord]] = {}
    for r in records:
        groups.setdefault((r.setting, r.dataset.fingerprint, r.modalities), []).append(r)
    ordered = sorted(groups.items(), key=lambda item: (record_key(item[1][0]), item[0][1]))
    return [Board(setting, rank_records(rs), pool) for (setting, _, _), rs in ordered]


def x_summary(board: Board) -> list[dict[str, Any]]:
    """Per x model of a board: its score against each real y model of the board and the mean over them
    (baseline y models are left out, so a control never enters a real model's mean). The mean is None
    (missing) unless every such y model has a finite score; rows with a mean are ranked, the others follow
    unranked."""
    vision = board.y_models
    higher = board.first.metric.higher_is_better
    scores: dict[str, dict[str, float]] = {}
    for row in board.rows:
        if finite(row.record.score):
            scores.setdefault(row.record.x.name, {})[row.record.y.name] = row.record.score
    rows = []
    for lang in board.x_models:
        got = scores.get(lang, {})
        complete = bool(vision) and all(v in got for v in vision)
        rows.append({
            "x": lang, "scores": {v: got.get(v) for v in vision},
            "mean": sum(got[v] for v in vision) / len(vision) if complete else None,
            "present": sum(v in got for v in vision), "expected": len(vision),
        })
    ranked = sorted((r for r in rows if r["mean"] is not None), key=lambda r: -r["mean"] if higher else r["mean"])
    for i, r in enumerate(ranked):
        r["rank"] = ranked[i - 1]["rank"] if i and ranked[i - 1]["mean"] == r["mean"] else i + 1
    rest = [r for r in rows if r["mean"] is None]
    for r in rest:
        r["rank"] = None
    return ranked + rest


def overview(records: list[ResultRecord]) -> tuple[list[str], list[dict[str, Any]]]:
    """Every (x, y) pair x every setting: (settings, rows of {x, y, modalities, scores}) where a setting the
    pair was not measured under (or whose score is not finite) is None — shown as missing."""
    settings = sorted({r.setting for r in records})
    pairs: dict[tuple[str, str], dict[str, float | None]] = {}
    for r in records:
        pairs.setdefault((r.x.name, r.y.name), {})[r.setting] = r.score if finite(r.score) else None
    kinds = {(r.x.name, r.y.name): r.modalities for r in records}
    rows = [
        {"x": a, "y": b, "modalities": kinds[(a, b)], "scores": {s: got.get(s) for s in settings}}
        for (a, b), got in sorted(pairs.items(), key=lambda kv: (kinds[kv[0]] != DEFAULT_MODALITIES, kinds[kv[0]], kv[0]))
    ]
    return settings, rows


# ---------------------------------------------------------------------------------------------- formatting


def fmt(value: float | None, digits: int = 3) -> str:
    return f"{value:.{digits}f}" if finite(value) else MISSING


def fmt_ci(r: ResultRecord) -> str:
    return f"[{r.ci.lo:.3f}, {r.ci.hi:.3f}]" if r.ci is not None else MISSING


def fmt_top5(r: ResultRecord) -> str:
    """A zero-shot record's top-5 with its chance level, "0.700 (0.625)" (`notes.top5_of`)."""
    top5, chance = top5_of(r)
    return f"{fmt(top5)} ({fmt(chance)})"


def fmt_layers(r: ResultRecord) -> str:
    if r.layers is None:
        return MISSING
    sizes = f" of {len(r.grid)}×{len(r.grid[0])}" if r.grid else ""
    return f"{r.layers[0]}, {r.layers[1]}{sizes}"


def fmt_params(value: float | None, model: str) -> str:
    """A parameter count in millions ("109.5M", "1.5B"). Without a count: NOT_APPLICABLE for a baseline
    (a control without learned weights, such as a caption-length or colour-histogram feature) and
    UNKNOWN for a real model whose record does not say."""
    if value is None or not finite(value):
        return NOT_APPLICABLE if is_baseline(model) else UNKNOWN
    return f"{value / 1000:.1f}B" if value >= 1000 else f"{value:g}M"
