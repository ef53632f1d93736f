"""The board that `run`, `submit` and `jepa compare` end with: one table per setting and modality pair
(`order.board_name`: "demo-mknn", "demo-mknn (vision x vision)"), in the leaderboard's order
(platobench/leaderboard/order.py), sized for a terminal of about 120 columns.

Columns: rank, the pair (x x y), score, confidence interval, calibrated score, p-value, chosen layers and
the baseline verdict (platobench/leaderboard/baselines.py). A baseline model shows without its family and
with a `*` ("bag-of-words*"). The p column is left out when every row has the same p (typically all at the
permutation floor 1/(B+1)), and a note says so; a p at that floor shows as "≤0.010". The chance level and
the permutation-null means are one note line per table. Rows are sorted best first (by the metric's
direction). The rank is CI-aware: entries whose CI overlaps their group leader's share a rank
(`platobench.leaderboard.ranks`). `board_rows` gives every number, chance and null mean included, as
plain dicts for `--json`. `print_board` draws the tables with
`rich` when stdout is a terminal and as plain text otherwise (pipes, tests, CI). Text from records is
printed on one line with control characters (terminal escape sequences included) replaced by spaces.
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterable
from typing import Any, TextIO

from platobench.leaderboard.baselines import is_baseline
from platobench.leaderboard.boards import rank_records
from platobench.leaderboard.flags import flags_note, record_flags
from platobench.leaderboard.notes import MISSING, fmt_p, p_at_floor, top5_of, zeroshot_sentence
from platobench.leaderboard.order import board_name, record_key
from platobench.leaderboard.safe_text import one_line
from platobench.leaderboard.verdicts import (
    AT_NULL,
    BASELINE,
    BEATS,
    BELOW,
    BELOW_NULL,
    NO_DIFFERENCE,
    NO_MATCH,
    NOT_ABOVE_NULL,
    TIES_NO_CI,
    WITHIN,
    board_sentence,
    verdicts,
)
from platobench.results import NullRef, ResultRecord
from platobench.table import format_table

COLUMNS = ("rank", "pair", "score", "ci", "calib", "p", "layers", "verdict", "flags")
BASELINE_MARK = "*"  # after a baseline model's name, which is shown without its family "baseline/"
WIDTH = 120  # the terminal width the plain board is laid out for; notes are wrapped to it
SHORT_VERDICTS = (  # (full, short) in order: the printed verdict column; --json keeps the full text
    (BEATS, "beats"), (NO_DIFFERENCE, "no evidence"), (NO_MATCH, "no control"), (WITHIN, "within CI"),
    (BELOW, "below"), (TIES_NO_CI, "ties (no CI)"), (BASELINE + AT_NULL, "at null"),
    (NOT_ABOVE_NULL, "not > null"), (BELOW_NULL, "< null"),
)
VERDICT_KEY = ("verdict vs the pair's own matched baselines (paired tests, each pair at .05, not adjusted across the "
               "board): beats / no evidence (of a difference) / below; within CI: records without subset scores, by "
               "interval overlap; no control: no matched baseline was run; baseline / at null (its own null) for "
               "baseline rows; not > null / < null: none of its controls exceeds its null, so the record's own "
               "null is the bar; full text under --json. Rows that do not exceed their own null rank below every "
               "row that does.")


def short_verdict(verdict: str) -> str:
    """The verdict as the verdict column prints it ("within baseline CI (no CI)" -> "within CI (no CI)")."""
    for full, short in SHORT_VERDICTS:
        if verdict.startswith(full):
            return short + verdict[len(full):]
    return verdict


def _num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _model(name: str) -> str:
    """A model name in the pair column: a baseline as "bag-of-words*" (BASELINE_MARK), others as written."""
    return name.split("/", 1)[1] + BASELINE_MARK if is_baseline(name) else name


def _by_setting(records: Iterable[ResultRecord]) -> dict[str, list[ResultRecord]]:
    """board name (`order.board_name`: setting and modality pair) -> its records, in the leaderboard's
    order (platobench/leaderboard/order.py)."""
    by_setting: dict[str, list[ResultRecord]] = {}
    for r in records:
        by_setting.setdefault(board_name(r), []).append(r)
    return dict(sorted(by_setting.items(), key=lambda kv: record_key(kv[1][0])))


def board_rows(records: Iterable[ResultRecord], pool: Iterable[ResultRecord] | None = None
               ) -> dict[str, list[dict[str, Any]]]:
    """board name (setting, and the modality pair when not text x vision) -> rows in the leaderboard's rank
    order (platobench/leaderboard/boards.py) with every number, unrounded (the printed board shows fewer
    columns). Verdicts read each record's matched controls in `pool` (default: `records`; the results folder
    for `run` and `submit`, so that every view gives a record the same verdict)."""
    records = list(records)
    pool = records if pool is None else list(pool)
    out: dict[str, list[dict[str, Any]]] = {}
    for setting, rs in _by_setting(records).items():
        verdict = verdicts(rs, pool)
        ranked = rank_records(rs)
        out[setting] = [
            {
                "rank": rank,
                "rank_label": label,
                "x": r.x.name,
                "y": r.y.name,
                "baseline": is_baseline(r.x.name) or is_baseline(r.y.name),
                "score": r.score,
                "top5": top5_of(r)[0],
                "ci": None if r.ci is None else [r.ci.lo, r.ci.hi],
                "chance": r.chance,
                "null_mean": None if r.null is None else r.null.mean,
                "calibrated": r.calibrated,
                "p_value": None if r.null is None else r.null.p_value,
                "layers": None if r.layers is None else list(r.layers),
                "verdict": verdict[r.pair_id].text,
                "verdict_rule": verdict[r.pair_id].rule or None,
                "verdict_p": verdict[r.pair_id].p,
                "verdict_control": verdict[r.pair_id].binding,
                "flags": record_flags(r),
            }
            for row in ranked for r, rank, label in [(row.record, row.rank, row.label)]
        ]
    return out


def _span(values: list[float | None]) -> str:
    """"0.016" for one value, "0.018-0.020" for a range, "-" for none."""
    got = sorted(v for v in values if v is not None)
    if not got:
        return "-"
    return _num(got[0]) if _num(got[0]) == _num(got[-1]) else f"{_num(got[0])}-{_num(got[-1])}"


def _p_cell(null: NullRef | None) -> str:
    return "-" if null is None else fmt_p(null)


def _p_note(rs: list[ResultRecord]) -> str | None:
    """The note that replaces the p column when every row's p cell is the same, else None."""
    cells = {_p_cell(r.null) for r in rs}
    if len(cells) != 1:
        return None
    floor = sorted({r.null.n_perm for r in rs if r.null is not None and p_at_floor(r.null)})
    if floor:
        bound = ", ".join(f"{1 / (b + 1):.4f}" for b in floor)
        return (f"p column left out: every p is at its floor 1/(B+1) = {bound} (B = "
                f"{', '.join(map(str, floor))} permutations; none reached any score).")
    if cells == {"-"}:
        return "p column left out: no record has a permutation null."
    return f"p column left out: every p is {next(iter(cells))}."


def _sections(records: list[ResultRecord], pool: list[ResultRecord] | None = None
              ) -> list[tuple[str, list[str], list[list[str]], list[bool], list[str]]]:
    """Per setting: (title line, column names, table cells, whether each row is a baseline, notes printed
    under the table). Chance and permutation-null means go in the notes (per row under --json); the p
    column is left out, and the notes say so, when every row has the same p."""
    by_setting = _by_setting(records)
    out = []
    for setting, rows in board_rows(records, pool).items():
        rs = by_setting[setting]
        first = rs[0]
        better = "higher" if first.metric.higher_is_better else "lower"
        title = one_line(
            f"== {setting}: {first.metric.id} on {first.dataset.name} (N={first.dataset.n}, "
            f"{first.metric.preprocess}, {first.metric.selection}; {better} is better)"
        )
        p_note = _p_note(rs)
        flagged = any(row["flags"] for row in rows)
        columns = [c for c in COLUMNS if (c != "p" or p_note is None) and (c != "flags" or flagged)]
        nulls = {(r.x.name, r.y.name): r.null for r in rs}
        body = []
        for row in rows:
            ci = "-" if row["ci"] is None else f"[{row['ci'][0]:.3f}, {row['ci'][1]:.3f}]"
            layers = "-" if row["layers"] is None else f"{row['layers'][0]},{row['layers'][1]}"
            cells = {
                "rank": str(row["rank"]) if row["rank"] is not None else "-" if row["rank_label"] == MISSING else row["rank_label"], "pair": one_line(f"{_model(row['x'])} x {_model(row['y'])}"),
                "score": _num(row["score"]), "ci": ci, "calib": _num(row["calibrated"]),
                "p": _p_cell(nulls[(row["x"], row["y"])]), "layers": layers,
                "verdict": short_verdict(row["verdict"]), "flags": ", ".join(row["flags"]),
            }
            body.append([cells[c] for c in columns])
        notes = []
        if any(row["baseline"] for row in rows):
            notes.append(f"{BASELINE_MARK} baseline (zoo family baseline/). calib: calibrated score.")
        if any(row["verdict"] for row in rows):
            notes.append(VERDICT_KEY)
        chance, null = _span([row["chance"] for row in rows]), _span([row["null_mean"] for row in rows])
        if (chance, null) != ("-", "-"):
            notes.append(f"chance {chance}; permutation-null mean {null} (every column per row: --json).")
        notes += [p_note] if p_note else []
        flag_note = flags_note(rs)
        notes += [flag_note] if flag_note else []
        sentence = board_sentence(rs, records if pool is None else pool)
        if sentence:
            notes.append(one_line(sentence))
        zs = zeroshot_sentence(rs)
        notes += [zs] if zs else []
        out.append((title, columns, body, [row["baseline"] for row in rows], notes))
    return out


def render(records: Iterable[ResultRecord], pool: Iterable[ResultRecord] | None = None) -> str:
    """Plain-text tables, one per setting, each followed by its baseline sentence; verdicts read the matched
    controls in `pool` (default: `records`)."""
    lines: list[str] = []
    for title, columns, body, _, notes in _sections(list(records), None if pool is None else list(pool)):
        wrapped = [line for note in notes for line in textwrap.wrap(note, WIDTH, break_long_words=False)]
        lines += [title, *format_table(columns, body, rule=True), *wrapped, ""]
    return "\n".join(lines)


def render_rich(records: Iterable[ResultRecord], file: TextIO, *, width: int | None = None,
                pool: Iterable[ResultRecord] | None = None) -> None:
    """The same tables drawn with rich (header rule, bold rank-1 rows, dim baselines) onto `file`; `width`:
    the console width (default: the terminal's)."""
    from rich import box
    from rich.console import Console
    from rich.measure import Measurement
    from rich.table import Table
    from rich.text import Text

    console = Console(file=file, width=width, highlight=False, emoji=False, markup=False)
    screen = console.width
    for title, columns, body, baselines, notes in _sections(list(records), None if pool is None else list(pool)):
        table = Table(title=Text(title, style="bold"), title_justify="left", box=box.SIMPLE_HEAD)
        for i, name in enumerate(columns):
            numeric = name not in ("pair", "layers", "verdict", "flags")
            if name in ("pair", "verdict", "flags"):  # free text wraps between words in a narrow terminal
                longest_word = max(len(word) for cells in body for word in [name, *cells[i].split()])
                table.add_column(name, overflow="fold", min_width=longest_word)
            else:  # numbers are never cut
                table.add_column(name, justify="right" if numeric else "left", no_wrap=True,
                                 min_width=max(len(name), *(len(cells[i]) for cells in body)))
        for cells, baseline in zip(body, baselines):
            style = "dim" if baseline else ("bold" if cells[0] == "1" else None)
            table.add_row(*(Text(c) for c in cells), style=style)
        # never narrower than its minimum (rich would drop or cut columns): the terminal wraps instead
        least = Measurement.get(console, console.options.update(max_width=10_000), table).minimum
        console.width = max(screen, least)
        console.print(table, crop=False)
        console.width = screen
        for note in notes:
            console.print(Text(note))
        console.print()


def print_board(records: Iterable[ResultRecord], file: TextIO | None = None, *, tty: bool | None = None,
                pool: Iterable[ResultRecord] | None = None) -> None:
    """Print the board of `records` to `file` (default sys.stdout): rich tables when `tty` (default:
    whether `file` is a terminal), otherwise the plain text of `render`; verdicts read the matched controls
    in `pool` (default: `records`)."""
    file = sys.stdout if file is None else file
    records = list(records)
    if tty is None:
        isatty = getattr(file, "isatty", None)
        tty = bool(isatty and isatty())
    if tty:
        render_rich(records, file, pool=pool)
    else:
        print(render(records, pool), file=file)
