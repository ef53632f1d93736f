"""Layer selection: which entry of a layer grid [Lx, Ly] is reported as a pair's score.

Specs (strings, so they fit a CLI flag or a settings file); this is the one description of the grammar:
  "best"    the best pair over the whole grid: max for higher-is-better metrics, min for lower-is-better
            ones. This is the PRH protocol (platonic-rep `measure_alignment.compute_score` keeps the
            max over all layer pairs); ties go to the first pair in row-major order (lowest x layer,
            then lowest y layer), as in that function's strict `>` scan. (`compute_alignment` calls it
            as compute_score(y, x), so the reference scans the second model's layers first: the score
            is the same, only the indices of exactly tied pairs can differ. Unlike the reference, which
            starts from 0 and returns no indices when every score is <= 0, any grid has a best pair.)
  "heldout" the best pair chosen on one half of the samples and scored on the other, both ways, averaged
            (two-fold cross-fitting, platobench/metrics/heldout.py): no selection optimism. It needs the
            samples, not one grid: `stats.permutation_null`, `stats.subset_draws` and `platobench run` apply
            it; `select` refuses it.
  "last"    the last layer of each model, (Lx - 1, Ly - 1).
  "fixed:i,j" or "i,j"
            fixed layer indices (negative indices count from the end), e.g. "fixed:11,-1" or "11,-1"; both
            spellings pick the same pair and are kept as written in settings and records.

`select` returns a `Selection` record that says which rule was used and which layers it picked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import torch

from platobench.errors import UserError
from platobench.files.ids import shown
from platobench.registry import did_you_mean


@dataclass(frozen=True)
class Selection:
    """mode: "best" | "heldout" | "last" | "fixed"; x_layer, y_layer: non-negative layer indices; score: the entry."""

    mode: str
    x_layer: int
    y_layer: int
    score: float

    def to_record(self) -> dict[str, Any]:
        """JSON-serialisable form for result records."""
        return asdict(self)


HELDOUT = "heldout"
#: The named specs; any other valid spec is a fixed layer pair.
NAMED = ("best", HELDOUT, "last")
FIXED_PREFIX = "fixed:"


def parse_selection(spec: str | tuple[int, int]) -> str | tuple[int, int]:
    """Validate a selection spec (module docstring) or a tuple (i, j); returns "best", "last" or (i, j)."""
    if isinstance(spec, tuple) and len(spec) == 2 and all(isinstance(v, int) and not isinstance(v, bool) for v in spec):
        return spec
    if isinstance(spec, str):
        if spec in NAMED:
            return spec
        parts = spec.removeprefix(FIXED_PREFIX).split(",")
        if len(parts) == 2:
            try:
                return int(parts[0]), int(parts[1])
            except ValueError:
                pass
    hint = did_you_mean(spec, NAMED) if isinstance(spec, str) else ""
    raise UserError(f"layer selection must be 'best', 'heldout', 'last' or two layer indices 'fixed:i,j' or 'i,j' "
                    f"(e.g. 'fixed:11,-1'), got {shown(spec)}{hint}")


def _fixed_index(i: int, size: int, axis: str) -> int:
    if not -size <= i < size:
        raise UserError(f"layer selection index {i} is out of range for {axis} with {size} layers")
    return i % size


def select_index(shape: tuple[int, int], spec: str | tuple[int, int]) -> tuple[int, int] | None:
    """Indices a spec picks on a grid of `shape` without looking at its values; None for "best" and
    "heldout", which look at the values."""
    spec = parse_selection(spec)
    if spec in ("best", HELDOUT):
        return None
    if spec == "last":
        return shape[0] - 1, shape[1] - 1
    return _fixed_index(spec[0], shape[0], "Xs"), _fixed_index(spec[1], shape[1], "Ys")


def kept_selection(spec: str | tuple[int, int], shape: tuple[int, int], rows: Sequence[int],
                   cols: Sequence[int], names: tuple[str, str] = ("Xs", "Ys")) -> str:
    """`spec` for the grid of the kept layers `rows` x `cols` of a [shape] grid (constant layers left out):
    the named specs as they are, a fixed pair of layer indices of the whole models moved to the kept
    grid's positions (so "fixed:3,5" still scores layers 3 and 5 when layer 0 was left out); UserError when
    a fixed layer is one that was left out."""
    parsed = parse_selection(spec)
    if parsed in NAMED:
        return parsed  # type: ignore[return-value]
    i, j = select_index(shape, parsed)  # type: ignore[misc]
    for index, kept, name in ((i, rows, names[0]), (j, cols, names[1])):
        if index not in kept:
            raise UserError(f"the fixed layer selection names layer {index} of {name}, which is constant across "
                            "the samples (left out of the grid); choose another layer")
    return f"{FIXED_PREFIX}{list(rows).index(i)},{list(cols).index(j)}"


def best_index(grid: torch.Tensor, higher_is_better: bool) -> tuple[int, int]:
    """(i, j) of the max (or min) of grid [Lx, Ly]; the first in row-major order among ties."""
    flat = grid.reshape(-1)
    k = int(torch.argmax(flat) if higher_is_better else torch.argmin(flat))
    return divmod(k, grid.shape[1])


def refuse_heldout(spec: str | tuple[int, int], where: str) -> None:
    """UserError when `spec` is "heldout", which `where` cannot apply (it has one grid, not the samples)."""
    if spec == HELDOUT:
        raise UserError(f"layer selection 'heldout' chooses the layers on one half of the samples and scores the "
                        f"other, so it needs the samples, not one layer grid: {where} cannot apply it (use 'best', "
                        "'last' or 'i,j' there; `platobench run` and `platobench score` apply 'heldout')")


def select(grid: torch.Tensor, spec: str | tuple[int, int], higher_is_better: bool) -> Selection:
    """Apply a selection spec to a layer grid [Lx, Ly] ("heldout" is refused: `refuse_heldout`)."""
    refuse_heldout(spec, "a selection on one grid")
    if grid.ndim != 2 or grid.numel() == 0:
        raise UserError(f"grid must be a non-empty [Lx, Ly] tensor, got shape {tuple(grid.shape)}")
    fixed = select_index(tuple(grid.shape), spec)
    parsed = parse_selection(spec)
    if fixed is None:
        i, j = best_index(grid, higher_is_better)
        mode = "best"
    else:
        i, j = fixed
        mode = "last" if parsed == "last" else "fixed"
    return Selection(mode=mode, x_layer=i, y_layer=j, score=float(grid[i, j]))


def reduce_grids(grids: torch.Tensor, spec: str | tuple[int, int], higher_is_better: bool) -> torch.Tensor:
    """The selected score of each grid in a batch [B, Lx, Ly] -> [B]; "best" is taken inside each grid
    (what a permutation null of a best-of-grid score needs)."""
    refuse_heldout(spec, "a reduction of grids")
    fixed = select_index((grids.shape[1], grids.shape[2]), spec)
    if fixed is None:
        flat = grids.reshape(grids.shape[0], -1)
        return flat.amax(dim=1) if higher_is_better else flat.amin(dim=1)
    return grids[:, fixed[0], fixed[1]]
