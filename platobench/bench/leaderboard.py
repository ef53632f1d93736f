"""The leaderboard, built from result records only: ranked tables per setting, README.md, leaderboard.csv,
a static index.html and PNG plots (`platobench leaderboard`).

A *board* is every record of one setting measured on one sample set (same dataset fingerprint): scores are
only ranked against scores of the same protocol on the same samples. Ranks are the ones the data can
support (platobench/bench/ranks.py): a record whose CI overlaps the CI of its tie group's leader shares
the leader's rank, shown as "1=" (competition ranking: "1=, 1=, 3"); a record whose score is not finite is
shown as missing and gets no rank. Aggregates never
skip missing values: a language model that lacks a vision reference of its board has no mean (it shows as
"missing (k/n)"), and a pair that lacks a setting shows as missing in the overview, never as a better mean.

Baselines (zoo family `baseline/`, negative controls) stay in the ranked tables, tagged "(baseline)"; every
row carries its verdict against the board's strongest baseline and each table ends with one sentence saying
whether any real model beats the baselines beyond the confidence intervals (platobench/bench/baselines.py).

Values reported by papers (paper_values.yaml) are listed in a separate, labelled table, never in measured rows.

Record text is untrusted (platobench/bench/safe_text.py): the Markdown escapes it, the CSV neutralises
spreadsheet formulas. A build is written into a staging folder and swapped in whole, so a failed build
leaves the previous one untouched; the swap replaces OUT, so OUT must be new, empty or an earlier build.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from platobench.bench.baselines import board_sentence, is_baseline, verdicts
from platobench.bench.leaderboard_folder import MARKER, MARKER_TEXT, check_out_dir, staged_build, write_file
from platobench.bench.leaderboard_notes import MISSING, TIE_RULE, p_floor_sentence, rank_labels
from platobench.bench.ranks import tie_ranks
from platobench.bench.results import ResultRecord, load_records_checked
from platobench.bench.safe_text import csv_cell, md_text, one_line
from platobench.cli_options import add_json_option
from platobench.errors import UserError
from platobench.files.atomic import atomic_write_text
from platobench.files.ids import shown
from platobench.files.yaml_safe import read_yaml

PAPER_VALUES = Path(__file__).with_name("paper_values.yaml")
CSV_COLUMNS = (
    "setting", "dataset", "n", "dataset_fingerprint", "rank", "language", "vision", "language_family",
    "vision_family", "language_kind", "vision_kind", "is_baseline", "verdict", "metric", "higher_is_better", "score", "calibrated",
    "ci_lo", "ci_hi", "ci_level", "p_value", "null_mean", "chance", "layer_language", "layer_vision",
    "last_layer_score", "params_language_m", "params_vision_m", "schema_version", "platobench_version",
    "git_sha", "created",
)


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
    """Records of one setting on one sample set, best first."""

    setting: str
    rows: list[Ranked]

    @property
    def first(self) -> ResultRecord:
        return self.rows[0].record

    @property
    def key(self) -> str:
        """A short unique id: setting plus the first 8 hex digits of the dataset fingerprint."""
        return f"{self.setting}@{self.first.dataset.fingerprint[:8]}"

    @property
    def title(self) -> str:
        d, m = self.first.dataset, self.first.metric
        direction = "higher is better" if m.higher_is_better else "lower is better"
        return f"{self.setting} — {m.id} on {d.name} (n={d.n}, {direction})"

    @property
    def verdicts(self) -> dict[str, str]:
        """pair_id -> verdict against the board's strongest baseline ({} without a baseline row)."""
        return verdicts([row.record for row in self.rows])

    @property
    def sentence(self) -> str:
        """Whether any real pair of the board beats its strongest baseline, as one sentence."""
        return board_sentence([row.record for row in self.rows])

    @property
    def vision_models(self) -> list[str]:
        """The board's real vision models (the per-language means average over these; baselines excluded)."""
        return sorted({r.record.vision.name for r in self.rows if not is_baseline(r.record.vision.name)})

    @property
    def language_models(self) -> list[str]:
        return list(dict.fromkeys(r.record.language.name for r in self.rows))


def rank_records(records: list[ResultRecord]) -> list[Ranked]:
    """Ranks of records that share a protocol, best score first (the metric's direction; equal scores in
    order of the model names): a record whose CI overlaps its tie group leader's CI shares the leader's
    rank (`tie_ranks`); non-finite scores come last, unranked."""
    if not records:
        return []
    higher = records[0].metric.higher_is_better
    if any(r.metric.higher_is_better != higher for r in records):
        raise UserError("cannot rank records whose metrics disagree on the direction (higher/lower is better)")
    scored = [r for r in records if finite(r.score)]
    scored.sort(key=lambda r: (-r.score if higher else r.score, r.language.name, r.vision.name))
    cis = [None if r.ci is None else (r.ci.lo, r.ci.hi) for r in scored]
    ranks = tie_ranks([r.score for r in scored], cis, higher)
    out = [Ranked(rank, r, label) for rank, r, label in zip(ranks, scored, rank_labels(ranks))]
    return out + [Ranked(None, r) for r in records if not finite(r.score)]


def build_boards(records: list[ResultRecord]) -> list[Board]:
    """Group records into boards (setting x dataset fingerprint), each ranked; ordered by setting id."""
    groups: dict[tuple[str, str], list[ResultRecord]] = {}
    for r in records:
        groups.setdefault((r.setting, r.dataset.fingerprint), []).append(r)
    return [Board(setting, rank_records(rs)) for (setting, _), rs in sorted(groups.items())]


def language_summary(board: Board) -> list[dict[str, Any]]:
    """Per language model of a board: its score against each real vision model of the board and the mean
    over them (baseline vision models are left out, so a control never enters a real model's mean). The
    mean is None (missing) unless every such vision model has a finite score; rows with a mean are ranked,
    the others follow unranked."""
    vision = board.vision_models
    higher = board.first.metric.higher_is_better
    scores: dict[str, dict[str, float]] = {}
    for row in board.rows:
        if finite(row.record.score):
            scores.setdefault(row.record.language.name, {})[row.record.vision.name] = row.record.score
    rows = []
    for lang in board.language_models:
        got = scores.get(lang, {})
        complete = bool(vision) and all(v in got for v in vision)
        rows.append({
            "language": lang, "scores": {v: got.get(v) for v in vision},
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
    """Every (language, vision) pair x every setting: (settings, rows of {language, vision, scores}) where
    a setting the pair was not measured under (or whose score is not finite) is None — shown as missing."""
    settings = sorted({r.setting for r in records})
    pairs: dict[tuple[str, str], dict[str, float | None]] = {}
    for r in records:
        pairs.setdefault((r.language.name, r.vision.name), {})[r.setting] = r.score if finite(r.score) else None
    rows = [
        {"language": a, "vision": b, "scores": {s: got.get(s) for s in settings}}
        for (a, b), got in sorted(pairs.items())
    ]
    return settings, rows


# ---------------------------------------------------------------------------------------------- formatting


def fmt(value: float | None, digits: int = 3) -> str:
    return f"{value:.{digits}f}" if finite(value) else MISSING


def fmt_ci(r: ResultRecord) -> str:
    return f"[{r.ci.lo:.3f}, {r.ci.hi:.3f}]" if r.ci is not None else MISSING


def fmt_layers(r: ResultRecord) -> str:
    if r.layers is None:
        return MISSING
    sizes = f" of {len(r.grid)}×{len(r.grid[0])}" if r.grid else ""
    return f"{r.layers[0]}, {r.layers[1]}{sizes}"


def model_cell(name: str) -> str:
    """A model name as the Markdown tables show it (escaped): baselines tagged "(baseline)"."""
    return f"{md_text(name)} (baseline)" if is_baseline(name) else md_text(name)


def fmt_params(value: float | None) -> str:
    if value is None:
        return MISSING
    return f"{value / 1000:.1f}B" if value >= 1000 else f"{value:g}M"


def csv_row(rank: int | None, r: ResultRecord, verdict: str = "") -> dict[str, Any]:
    """One CSV row; `verdict` is the record's verdict against its board's strongest baseline. Text
    cells that a spreadsheet would run as a formula are prefixed with `'` (`csv_cell`)."""
    row = {
        "setting": r.setting, "dataset": r.dataset.name, "n": r.dataset.n, "dataset_fingerprint": r.dataset.fingerprint,
        "rank": rank if rank is not None else "", "language": r.language.name, "vision": r.vision.name,
        "language_family": family(r.language.name), "vision_family": family(r.vision.name),
        "language_kind": r.language.kind or "", "vision_kind": r.vision.kind or "",
        "is_baseline": is_baseline(r.language.name) or is_baseline(r.vision.name), "verdict": verdict,
        "metric": r.metric.id,
        "higher_is_better": r.metric.higher_is_better, "score": r.score,
        "calibrated": "" if r.calibrated is None else r.calibrated,
        "ci_lo": "" if r.ci is None else r.ci.lo, "ci_hi": "" if r.ci is None else r.ci.hi,
        "ci_level": "" if r.ci is None else r.ci.level, "p_value": "" if r.null is None else r.null.p_value,
        "null_mean": "" if r.null is None else r.null.mean, "chance": "" if r.chance is None else r.chance,
        "layer_language": "" if r.layers is None else r.layers[0], "layer_vision": "" if r.layers is None else r.layers[1],
        "last_layer_score": "" if r.last_layer_score is None else r.last_layer_score,
        "params_language_m": "" if r.language.params_m is None else r.language.params_m,
        "params_vision_m": "" if r.vision.params_m is None else r.vision.params_m,
        "schema_version": r.schema_version, "platobench_version": r.platobench_version, "git_sha": r.git_sha or "",
        "created": r.created,
    }
    return {key: csv_cell(value) for key, value in row.items()}


def csv_text(boards: list[Board]) -> str:
    """leaderboard.csv: one row per record (empty cells where a value is absent), boards in order, best first."""
    buffer = io.StringIO(newline="")
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS)
    writer.writeheader()
    for board in boards:
        got = board.verdicts
        writer.writerows(csv_row(row.rank, row.record, got.get(row.record.pair_id, "")) for row in board.rows)
    return buffer.getvalue()


def write_csv(boards: list[Board], path: Path) -> None:
    """`csv_text` written to `path` as UTF-8, atomically (a reader never sees half a table)."""
    atomic_write_text(path, csv_text(boards))


PAPER_TEXT = ("source", "citation", "language", "vision", "metric")


def load_paper_values(path: Path = PAPER_VALUES) -> list[dict[str, Any]]:
    """Values reported by papers (not measured by platobench): a list of mappings with source, citation,
    language, vision, metric (text), value (a number) and an optional note. UserError naming the file
    when it has another shape."""
    data = read_yaml(path, "paper values file")
    reported = data.get("reported") if isinstance(data, dict) else None
    if not isinstance(reported, list):
        raise UserError(f"paper values file {path}: expected a mapping with a list `reported`")
    for i, entry in enumerate(reported):
        where = f"paper values file {path}: reported[{i}]"
        if not isinstance(entry, dict):
            raise UserError(f"{where} must be a mapping, not {shown(entry)}")
        for key in PAPER_TEXT:
            if not isinstance(entry.get(key), str):
                raise UserError(f"{where}: `{key}` must be text, not {shown(entry.get(key))}")
        value = entry.get("value")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise UserError(f"{where}: `value` must be a number, not {shown(value)}")
    return reported


def _md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table; every cell must already be Markdown (record text escaped with `md_text`)."""
    return [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
        *["| " + " | ".join(row) + " |" for row in rows],
    ]


def readme(boards: list[Board], records: list[ResultRecord], paper: list[dict[str, Any]], plots: dict[str, Any]) -> str:
    """The leaderboard's README.md: per-board ranked tables, per-language summaries, the pair x setting
    overview, plots, and the separate table of values reported by papers. Every text taken from a record,
    a plot note or a paper value is escaped (`md_text`), so it shows as written and adds no markup."""
    lines = [
        "# platobench leaderboard",
        "",
        f"Built from {len(records)} result records by `platobench leaderboard`. Scores are ranked only against",
        "scores of the same setting on the same samples. *calibrated*: the score against its permutation null",
        "(see the record's `null`); *CI*: subsampling confidence interval; *layers*: chosen (language, vision)",
        f"layer indices of the grid. `{MISSING}` marks a value that was not measured — never skipped silently.",
        "*(baseline)* tags a negative control (zoo family `baseline/`); *verdict* compares a real pair with the",
        "board's strongest baseline: *beats baselines* only when its CI lies entirely beyond that baseline's CI.",
        "*null mean*: the mean score of the permutation null; *chance*: the score expected of unrelated",
        "representations (the record's `chance`). A rank marked `=` is shared by rows whose CIs overlap.",
        "",
    ]
    for board in boards:
        lines += [f"## {md_text(board.title)}", ""]
        got = board.verdicts
        lines += _md_table(
            ["rank", "language model", "vision model", "score", "calibrated", "CI", "p", "null mean", "chance",
             "layers", "params (L / V)", "verdict"],
            [[
                row.label, model_cell(r.language.name), model_cell(r.vision.name), fmt(r.score), fmt(r.calibrated),
                fmt_ci(r), fmt(r.null.p_value if r.null else None), fmt(r.null.mean if r.null else None),
                fmt(r.chance), fmt_layers(r),
                f"{fmt_params(r.language.params_m)} / {fmt_params(r.vision.params_m)}", got.get(r.pair_id, ""),
            ] for row in board.rows for r in [row.record]],
        )
        lines += ["", TIE_RULE, ""]
        p_note = p_floor_sentence([row.record for row in board.rows])
        lines += [p_note, ""] if p_note else []
        lines += [md_text(board.sentence, brackets=False)]  # its CI "[lo, hi]" stays as written
        vision = board.vision_models
        if len(vision) > 1:
            lines += ["", f"Per language model, mean over the {len(vision)} vision models of this board:", ""]
            lines += _md_table(
                ["rank", "language model", *[model_cell(v) for v in vision], "mean"],
                [[
                    str(s["rank"]) if s["rank"] is not None else MISSING, model_cell(s["language"]),
                    *[fmt(s["scores"][v]) for v in vision],
                    fmt(s["mean"]) if s["mean"] is not None else f"{MISSING} ({s['present']}/{s['expected']})",
                ] for s in language_summary(board)],
            )
        lines.append("")
    settings, rows = overview(records)
    if len(settings) > 1:
        lines += ["## Overview: every pair under every setting", ""]
        lines += _md_table(["language model", "vision model", *map(md_text, settings)],
                           [[model_cell(r["language"]), model_cell(r["vision"]), *[fmt(r["scores"][s]) for s in settings]]
                            for r in rows])
        lines.append("")
    if plots.get("files"):
        lines += ["## Plots", ""]
        lines += [f"- [{md_text(Path(p).name)}]({md_text(p)})" for p in plots["files"]]
        lines += [f"- not plotted: {md_text(why)}" for why in plots.get("notes", [])]
        lines.append("")
    lines += [
        "## Reported by papers (not measured here)",
        "",
        "Values copied from the papers named below, for comparison only. They come from other code, data and",
        "model versions and are **not** platobench measurements; they are never mixed into the tables above.",
        "",
    ]
    lines += _md_table(
        ["source", "language model", "vision model", "metric", "value", "note"],
        [[*(md_text(p[k]) for k in ("source", "language", "vision", "metric")), f"{p['value']:.3f}",
          md_text(p.get("note", ""))] for p in paper],
    )
    lines += ["", "Citations:", ""]
    lines += [f"- {md_text(c)}" for c in dict.fromkeys(p["citation"] for p in paper)]
    return "\n".join(lines) + "\n"


@dataclass
class BuildSummary:
    """What a build wrote; `problems` has one line per result file left out (invalid or duplicated)."""

    records: int
    boards: list[str]
    files: list[str]
    notes: list[str]
    problems: list[str]

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def build_leaderboard(results_dir: Path, out_dir: Path, *, with_plots: bool = True) -> BuildSummary:
    """Read every valid record under `results_dir` and replace `out_dir` whole with README.md,
    leaderboard.csv, index.html, the marker file and (unless `with_plots` is False) plots/*.png; the
    previous build stays as it was when anything fails. Files that are not valid records are left out
    and listed in the summary's `problems`. UserError when no valid record remains or `out_dir` may not
    be replaced (platobench/bench/leaderboard_folder.py); WriteError naming the path when a write fails."""
    from platobench.bench import leaderboard_html

    results_dir, out_dir = Path(results_dir), Path(out_dir)
    if not results_dir.is_dir():
        raise UserError(f"--results: {results_dir} is not a folder of result records")
    target = check_out_dir(out_dir, results_dir)
    records, problems = load_records_checked(results_dir)
    if not records:
        if problems:
            raise UserError(f"--results: no valid result record under {results_dir}: {len(problems)} problem(s), "
                            f"e.g. {problems[0]}")
        raise UserError(f"--results: no result records (*.json) under {results_dir}; run `platobench run` first")
    boards = build_boards(records)
    paper = load_paper_values()
    plotted: dict[str, Any] = {"files": [], "notes": []}
    with staged_build(target) as staging:
        if with_plots:
            from platobench.bench import plots  # matplotlib, and the metric descriptors (torch)

            plotted = plots.plot_all(boards, staging)
        write_file(staging, out_dir, MARKER, MARKER_TEXT)
        write_file(staging, out_dir, "README.md", readme(boards, records, paper, plotted))
        write_file(staging, out_dir, "leaderboard.csv", csv_text(boards))
        write_file(staging, out_dir, "index.html", leaderboard_html.render(boards, records, paper, plotted))
    files = ["README.md", "leaderboard.csv", "index.html", *plotted["files"]]
    return BuildSummary(len(records), [b.key for b in boards], [str(out_dir / f) for f in files], plotted["notes"],
                        problems)


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "leaderboard", help="build the leaderboard (README.md, CSV, index.html, plots) from result records",
        description=(
            "Read every result record under RESULTS and write OUT/README.md (ranked tables per setting, per-"
            "language means that show missing pairs as missing, a pair x setting overview, values reported "
            "by papers in a separate table), OUT/leaderboard.csv, OUT/index.html (sortable tables and a model-"
            "family filter; opens offline) and OUT/plots/*.png (layer x layer heatmaps per pair, alignment "
            "against language-model size, LLM versus text JEPA). OUT is replaced whole at the end of a "
            "build, so it must be new, empty or an earlier build. Result files that are not valid records "
            "are left out and listed; the exit code is then 1. Example: platobench leaderboard --results results"
        ),
    )
    p.add_argument("--results", type=Path, default=Path("results"), help="folder of result records (default ./results)")
    p.add_argument("--out", type=Path, default=Path("leaderboard"), help="output folder (default ./leaderboard)")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    add_json_option(p, what="what was written")
    p.set_defaults(func=_leaderboard)


def _leaderboard(args: argparse.Namespace) -> int:
    summary = build_leaderboard(args.results, args.out, with_plots=not args.no_plots)
    if args.json:
        print(json.dumps(summary.as_dict(), indent=1))
    else:
        print(f"{summary.records} records, {len(summary.boards)} boards -> {args.out}")
        for f in summary.files[:3]:
            print(f"  {f}")
        if len(summary.files) > 3:
            print(f"  ... and {len(summary.files) - 3} plots under {Path(args.out) / 'plots'}")
        for note in summary.notes:
            print(f"  note: {one_line(note)}", file=sys.stderr)
    if summary.problems:
        print(f"platobench leaderboard: {len(summary.problems)} result file(s) left out of the board:", file=sys.stderr)
        for problem in summary.problems:
            print(f"  {one_line(problem)}", file=sys.stderr)
    return 1 if summary.problems else 0
