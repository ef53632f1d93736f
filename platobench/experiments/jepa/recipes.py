"""Training recipes of the learning-curve and scaling experiments: an objective plus, for a JEPA, its views.

Spellings (`--objectives`): "jepa-good", "jepa-bad", "jepa-mix:P" (a share P of good pairs) and "ntp"
(next-token prediction on the same texts, which Balestriero & LeCun (2026) read as a JEPA with bad views:
prefix and continuation of one document).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from platobench.api import UserError
from platobench.experiments.jepa.train import TrainConfig
from platobench.experiments.jepa.views import ViewMode, parse_views


@dataclass(frozen=True)
class Recipe:
    """`objective` "jepa" or "ntp"; `views` the JEPA's pairs (ignored by ntp, kept at its default)."""

    objective: str
    views: ViewMode

    @property
    def label(self) -> str:
        """The command-line spelling: jepa-good, jepa-bad, jepa-mix:0.5 or ntp."""
        return "ntp" if self.objective == "ntp" else f"jepa-{self.views.label}"

    @property
    def p_good(self) -> float:
        """Share of good-view pairs: 1 for jepa-good, 0 for jepa-bad and for ntp."""
        return 0.0 if self.objective == "ntp" else self.views.p_good


def parse_recipe(text: str) -> Recipe:
    """Parse one spelling; UserError naming --objectives otherwise."""
    text = text.strip()
    if text == "ntp":
        return Recipe("ntp", ViewMode("good", 1.0))
    if text.startswith("jepa-"):
        try:
            return Recipe("jepa", parse_views(text.removeprefix("jepa-")))
        except UserError:
            pass
    raise UserError(f"--objectives: expected jepa-good, jepa-bad, jepa-mix:P (P in [0, 1]) or ntp, got {text!r}")


def parse_recipes(text: str) -> list[Recipe]:
    """A comma-separated list of recipes, without repeats (UserError on an empty list or a repeat)."""
    recipes = [parse_recipe(part) for part in text.split(",") if part.strip()]
    if not recipes:
        raise UserError("--objectives: give at least one of jepa-good, jepa-bad, jepa-mix:P, ntp")
    labels = [r.label for r in recipes]
    repeated = sorted({label for label in labels if labels.count(label) > 1})
    if repeated:
        raise UserError(f"--objectives: {', '.join(repeated)} given twice")
    return recipes


def log_spaced(first: int, last: int, count: int, multiple: int) -> list[int]:
    """`count` example counts from `first` to `last`, evenly spaced in log, each rounded up to a multiple of
    `multiple` (the global batch: a checkpoint falls after a whole step), repeats removed, ascending."""
    if not 1 <= first <= last or count < 1 or multiple < 1:
        raise UserError(f"example counts: need 1 <= first ({first}) <= last ({last}) and a count >= 1")
    if count == 1:
        points = [float(last)]
    else:
        ratio = (last / first) ** (1 / (count - 1))
        points = [first * ratio**i for i in range(count)]
    return sorted({multiple * math.ceil(round(p, 6) / multiple) for p in points})


def run_config(base: TrainConfig, recipe: Recipe, seed: int, checkpoints: list[int]) -> TrainConfig:
    """The config of one curve run: `recipe` and `seed` on `base`, a constant learning rate after warm-up
    (so a checkpoint after n examples is comparable with a shorter run), as many steps as the largest
    checkpoint needs, and a snapshot at every checkpoint."""
    steps = math.ceil(max(checkpoints) / base.batch_size)
    return replace(
        base,
        objective=recipe.objective,
        views=recipe.views,
        seed=seed,
        schedule="constant",
        steps=steps,
        checkpoints=tuple(checkpoints),
        log_every=0,
    )
