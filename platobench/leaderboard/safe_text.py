"""Record text made safe for the leaderboard's outputs: Markdown, spreadsheet cells and terminal lines.

A result record is a file anyone can edit, so its text fields (model names, setting ids, dataset and
metric names) and the values in paper_values.yaml are untrusted: these helpers keep them from adding
markup, links, formulas, extra table cells, extra lines or terminal escape sequences. Text without
such characters comes back unchanged, so ordinary names render exactly as written.
"""

from __future__ import annotations

import re
from typing import Any

# C0 and C1 controls (newline, carriage return, ESC, ...), Unicode line/paragraph separators and the
# bidirectional overrides/isolates that can make a terminal or a page show text in another order.
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]+")
_SURROGATES = re.compile("[\ud800-\udfff]")
# `&` that could start a character reference (&lt; &#60; &#x3c;); a lone "&" (as in "A & B") is left as is.
_REFERENCE = re.compile(r"&(?=[#A-Za-z0-9])")
_MD_SPECIAL = re.compile(r"[\\`|]")
_MD_BRACKET = re.compile(r"[\[\]]")
#: The first characters that make a spreadsheet read a text cell as a formula.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def one_line(text: Any) -> str:
    """`text` as one line: every run of control characters becomes one space; lone surrogates (which
    cannot be written as UTF-8) become U+FFFD."""
    return _SURROGATES.sub("\ufffd", _CONTROLS.sub(" ", str(text)))


def md_text(text: Any, *, brackets: bool = True) -> str:
    """`text` as literal Markdown on one line, also inside a table cell: backslash, backtick and `|`
    are backslash-escaped, `<` and `>` (raw HTML, autolinks) and a `&` that would start a character
    reference become entities. With `brackets` every `[` and `]` is escaped; without, only a `](`
    (the start of an inline link's target) is, for a sentence whose own brackets must stay."""
    text = _MD_SPECIAL.sub(r"\\\g<0>", one_line(text))
    text = _MD_BRACKET.sub(r"\\\g<0>", text) if brackets else text.replace("](", "\\](")
    return _REFERENCE.sub("&amp;", text).replace("<", "&lt;").replace(">", "&gt;")


def csv_cell(value: Any) -> Any:
    """A CSV cell that a spreadsheet shows as written: text starting with a formula character gets a
    leading `'`; numbers (negative ones included), booleans and empty cells are returned unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value
