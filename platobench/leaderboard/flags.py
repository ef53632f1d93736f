"""Flags: what a referee should know about a row before reading its score, read from the record alone.

A flag never changes a score, rank or verdict; every board shows the flags of its rows (a `flags` column in
leaderboard.csv, the Markdown and HTML tables and `run`'s board) and `FLAGS` says what each means:

- `tied`: a chosen layer's neighbour lists are mostly ties (more than `TIED_SHARE` of the samples' k-th
  neighbour is tied, `details.tie_share` of the record; platobench/metrics/knn.py). The list is then a
  choice among equal inner products, and the score says more about how ties are resolved than about the
  representation (mutual kNN counts them by expectation; the other kNN metrics keep the lower index).
- `fitted on eval`: a side's zoo entry discloses `fitted_on_eval: true` (fitted on the evaluation data).
- `trained on eval`: a side's `trained_on` names this board's dataset (`trains_on`).
"""

from __future__ import annotations

from collections.abc import Sequence

from platobench.results import ModelRef, ResultRecord

TIED_SHARE = 0.5
TIED, FITTED, TRAINED = "tied", "fitted on eval", "trained on eval"
FLAGS = {
    TIED: f"more than {TIED_SHARE:.0%} of the samples' k-th neighbour is tied at a chosen layer: the neighbour lists "
          "there are a choice among equal inner products",
    FITTED: "a model was fitted on the evaluation data (its zoo entry: fitted_on_eval)",
    TRAINED: "a model's disclosed training data names this board's dataset (its zoo entry: trained_on)",
}


def _family(name: str) -> str:
    """A dataset's family: its name up to the first '-' or ':' ("openclipart-1024" -> "openclipart")."""
    return name.replace(":", "-").split("-", 1)[0].lower()


def trains_on(model: ModelRef, dataset: str) -> bool:
    """Whether `model.trained_on` names dataset `dataset`: an entry (its last '/'-part, any case) equal to the
    dataset's name or family, or starting with the family and '-' ("embedding-data/flickr30k-captions" names
    "flickr30k"; "imagenet-1k" names "imagenet-100")."""
    family = _family(dataset)
    for entry in model.trained_on or ():
        item = entry.rsplit("/", 1)[-1].lower()
        if item in (dataset.lower(), family) or item.startswith(family + "-"):
            return True
    return False


def _tied(record: ResultRecord) -> bool:
    shares = record.details.get("tie_share") if isinstance(record.details, dict) else None
    if not isinstance(shares, dict) or record.layers is None:
        return False
    for side, layer in zip(("x", "y"), record.layers):
        values = shares.get(side)
        if isinstance(values, Sequence) and isinstance(layer, int) and 0 <= layer < len(values):
            value = values[layer]
            if isinstance(value, (int, float)) and value > TIED_SHARE:
                return True
    return False


def record_flags(record: ResultRecord) -> list[str]:
    """The flags of `record` (module docstring), in the order of `FLAGS`."""
    out = []
    if _tied(record):
        out.append(TIED)
    if any(side.fitted_on_eval for side in (record.x, record.y)):
        out.append(FITTED)
    if any(trains_on(side, record.dataset.name) for side in (record.x, record.y)):
        out.append(TRAINED)
    return out


def flags_note(records: Sequence[ResultRecord]) -> str | None:
    """One line explaining the flags shown among `records` (None when none is flagged)."""
    shown = {f for r in records for f in record_flags(r)}
    if not shown:
        return None
    return "flags: " + "; ".join(f"{name}: {text}" for name, text in FLAGS.items() if name in shown) + "."


__all__ = ["FITTED", "FLAGS", "TIED", "TIED_SHARE", "TRAINED", "flags_note", "record_flags", "trains_on"]
