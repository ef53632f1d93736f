"""The board that `run`, `submit` and `jepa compare` end with: one table per setting.

Columns: rank, language x vision, score, confidence interval, chance level, permutation-null mean,
calibrated score, p-value, chosen layers and the baseline verdict (platobench/leaderboard/baselines.py). Rows
are sorted best first (by the metric's direction); baseline rows are tagged `[baseline]`. The rank is
CI-aware: entries whose CI overlaps their group leader's share a rank (`platobench.leaderboard.ranks`).
`board_rows` gives the same numbers as plain dicts for `--json`. `print_board` draws the tables with
`rich` when stdout is a terminal and as plain text otherwise (pipes, tests, CI). Text from records is
printed on one line with control characters (terminal escape sequences included) replaced by spaces.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any, TextIO

from platobench.leaderboard.baselines import board_sentence, is_baseline, verdicts
from platobench.leaderboard.ranks import tie_ranks
from platobench.leaderboard.safe_text import one_line
from platobench.results import ResultRecord
from platobench.table import format_table

COLUMNS = ("rank", "pair", "score", "ci", "chance", "null", "calibrated", "p", "layers", "verdict")


def _num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _sorted(records: list[ResultRecord]) -> list[ResultRecord]:
    higher = records[0].metric.higher_is_better
    return sorted(records, key=lambda r: (-r.score if higher else r.score, r.pair_id))


def board_rows(records: Iterable[ResultRecord]) -> dict[str, list[dict[str, Any]]]:
    """setting -> rows (best first) with the printed numbers, unrounded."""
    by_setting: dict[str, list[ResultRecord]] = {}
    for r in records:
        by_setting.setdefault(r.setting, []).append(r)
    out: dict[str, list[dict[str, Any]]] = {}
    for setting, rs in sorted(by_setting.items()):
        verdict = verdicts(rs)
        ordered = _sorted(rs)
        ranks = tie_ranks([r.score for r in ordered], [None if r.ci is None else (r.ci.lo, r.ci.hi) for r in ordered],
                          ordered[0].metric.higher_is_better)
        out[setting] = [
            {
                "rank": rank,
                "language": r.language.name,
                "vision": r.vision.name,
                "baseline": is_baseline(r.language.name) or is_baseline(r.vision.name),
                "score": r.score,
                "ci": None if r.ci is None else [r.ci.lo, r.ci.hi],
                "chance": r.chance,
                "null_mean": None if r.null is None else r.null.mean,
                "calibrated": r.calibrated,
                "p_value": None if r.null is None else r.null.p_value,
                "layers": None if r.layers is None else list(r.layers),
                "verdict": verdict.get(r.pair_id, ""),
            }
            for r, rank in zip(ordered, ranks)
        ]
    return out


def _sections(records: list[ResultRecord]) -> list[tuple[str, list[list[str]], list[bool], list[str]]]:
    """Per setting: (title line, table cells in COLUMNS order, whether each row is a baseline, notes printed
    under the table)."""
    by_setting: dict[str, list[ResultRecord]] = {}
    for r in records:
        by_setting.setdefault(r.setting, []).append(r)
    out = []
    for setting, rows in board_rows(records).items():
        first = by_setting[setting][0]
        better = "higher" if first.metric.higher_is_better else "lower"
        title = one_line(
            f"== {setting}: {first.metric.id} on {first.dataset.name} (N={first.dataset.n}, "
            f"{first.metric.preprocess}, {first.metric.selection}; {better} is better)"
        )
        body = []
        for row in rows:
            tag = " [baseline]" if row["baseline"] else ""
            ci = "-" if row["ci"] is None else f"[{row['ci'][0]:.3f}, {row['ci'][1]:.3f}]"
            layers = "-" if row["layers"] is None else f"{row['layers'][0]},{row['layers'][1]}"
            body.append([
                str(row["rank"]), one_line(f"{row['language']} x {row['vision']}{tag}"), _num(row["score"], 4), ci,
                _num(row["chance"]), _num(row["null_mean"]), _num(row["calibrated"]), _num(row["p_value"], 4),
                layers, row["verdict"],
            ])
        notes = []
        sentence = board_sentence(by_setting[setting])
        if sentence:
            notes.append(one_line(sentence))
        n_perm = {r.null.n_perm for r in by_setting[setting] if r.null is not None and r.null.n_perm > 0}
        if n_perm:
            floor = ", ".join(f"{1 / (b + 1):.4f}" for b in sorted(n_perm))
            notes.append(f"p-values are permutation p-values; their floor is 1/(B+1) = {floor}.")
        out.append((title, body, [row["baseline"] for row in rows], notes))
    return out


def render(records: Iterable[ResultRecord]) -> str:
    """Plain-text tables, one per setting, each followed by its baseline sentence."""
    lines: list[str] = []
    for title, body, _, notes in _sections(list(records)):
        lines += [title, *format_table(COLUMNS, body, rule=True), *notes, ""]
    return "\n".join(lines)


def render_rich(records: Iterable[ResultRecord], file: TextIO, *, width: int | None = None) -> None:
    """The same tables drawn with rich (header rule, bold rank-1 rows, dim baselines) onto `file`; `width`:
    the console width (default: the terminal's)."""
    from rich import box
    from rich.console import Console
    from rich.measure import Measurement
    from rich.table import Table
    from rich.text import Text

    console = Console(file=file, width=width, highlight=False, emoji=False, markup=False)
    screen = console.width
    for title, body, baselines, notes in _sections(list(records)):
        table = Table(title=Text(title, style="bold"), title_justify="left", box=box.SIMPLE_HEAD)
        for i, name in enumerate(COLUMNS):
            numeric = name not in ("pair", "layers", "verdict")
            if name in ("pair", "verdict"):  # free text wraps between words in a narrow terminal
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


def print_board(records: Iterable[ResultRecord], file: TextIO | None = None, *, tty: bool | None = None) -> None:
    """Print the board of `records` to `file` (default sys.stdout): rich tables when `tty` (default:
    whether `file` is a terminal), otherwise the plain text of `render`."""
    file = sys.stdout if file is None else file
    records = list(records)
    if tty is None:
        isatty = getattr(file, "isatty", None)
        tty = bool(isatty and isatty())
    if tty:
        render_rich(records, file)
    else:
        print(render(records), file=file)
