"""Values reported by papers (paper_values.yaml beside this module): listed by the leaderboard in a
separate, labelled table, never in measured rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from platobench.errors import UserError
from platobench.files.ids import shown
from platobench.files.yaml_safe import read_yaml

PAPER_VALUES = Path(__file__).with_name("paper_values.yaml")
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
