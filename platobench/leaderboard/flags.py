"""Flags: what a referee should know about a row before reading its score, read from the record alone.

Every board shows the flags of its rows (a `flags` column in leaderboard.csv, the Markdown and HTML tables and
`run`'s and `submit`'s boards) and `FLAGS` says what each means. Two are *integrity* flags (`INTEGRITY`): a
row that carries one is not ranked (its rank is withheld, the row stays on the board with its verdict), so
that a copy cannot top a board:

- `copy`: one side's features are, up to rotation, isotropic scale and translation, another model's: the
  largest linear CKA between a layer of one side and a layer of the other (`details.copy_cka`, computed when
  the record is scored; platobench/bench/scoring.py) is at least `COPY_CKA`. A "text encoder" that looks its
  caption up and returns the vision model's own features scores 1.000 there; on the committed boards no
  pair of different models comes near it (tests/committed/test_committed_flags.py gives the largest).
- `at maximum`: a paired score equal to its metric's best value (mutual kNN 1, CKA 1, a residual 0), which
  two different models do not reach.

The others inform and change nothing:
- `precomputed`: a side was read from a features file (`loader: features`): no model was run, so nothing
  but the file says what produced the numbers.

- `tied`: a chosen layer's neighbour lists are mostly ties (more than `TIED_SHARE` of the samples' k-th
  neighbour is tied, `details.tie_share` of the record; platobench/metrics/knn.py). The list is then a
  choice among equal inner products, and the score says more about how ties are resolved than about the
  representation (mutual kNN counts them by expectation; the other kNN metrics keep the lower index).
- `fitted on eval`: a side's zoo entry discloses `fitted_on_eval: true` (fitted on the evaluation data).
- `trained on eval`: a side's `trained_on` names this board's dataset (`trains_on`).
"""

from __future__ import annotations

from collections.abc import Sequence

from platobench.leaderboard.consistency import best_value
from platobench.results import ModelRef, ResultRecord

TIED_SHARE = 0.5
COPY_CKA = 0.99
COPY, AT_MAX, PRECOMPUTED = "copy", "at maximum", "precomputed"
TIED, FITTED, TRAINED = "tied", "fitted on eval", "trained on eval"
INTEGRITY = frozenset({COPY, AT_MAX})
FLAGS = {
    COPY: f"one side's features are another model's up to rotation and scale (linear CKA >= {COPY_CKA} between a "
          "layer of each side): rank withheld",
    AT_MAX: "the score is its metric's best possible value, which two different models do not reach: rank withheld",
    PRECOMPUTED: "a side was read from a features file (loader: features): no model was run",
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


def _copied(record: ResultRecord) -> bool:
    value = record.details.get("copy_cka") if isinstance(record.details, dict) else None
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value >= COPY_CKA


def _at_max(record: ResultRecord) -> bool:
    best = best_value(record)
    return record.kind == "paired" and best is not None and record.score == best


def record_flags(record: ResultRecord) -> list[str]:
    """The flags of `record` (module docstring), in the order of `FLAGS`."""
    out = []
    if _copied(record):
        out.append(COPY)
    if _at_max(record):
        out.append(AT_MAX)
    if any(side.loader == "features" for side in (record.x, record.y)):
        out.append(PRECOMPUTED)
    if _tied(record):
        out.append(TIED)
    if any(side.fitted_on_eval for side in (record.x, record.y)):
        out.append(FITTED)
    if any(trains_on(side, record.dataset.name) for side in (record.x, record.y)):
        out.append(TRAINED)
    return out


def withheld(record: ResultRecord) -> bool:
    """Whether the record carries an integrity flag, so that the board withholds its rank."""
    return bool(INTEGRITY.intersection(record_flags(record)))


def flags_note(records: Sequence[ResultRecord]) -> str | None:
    """One line explaining the flags shown among `records` (None when none is flagged)."""
    shown = {f for r in records for f in record_flags(r)}
    if not shown:
        return None
    return "flags: " + "; ".join(f"{name}: {text}" for name, text in FLAGS.items() if name in shown) + "."


__all__ = ["AT_MAX", "COPY", "COPY_CKA", "FITTED", "FLAGS", "INTEGRITY", "PRECOMPUTED", "TIED", "TIED_SHARE", "TRAINED",
           "flags_note", "record_flags", "trains_on", "withheld"]
