"""Held-out layer selection: the layer pair is chosen on one half of the samples and scored on the other.

A best-of-grid score (selection "best", the PRH protocol) chooses its layer pair on the samples it scores,
so its value carries the selection's optimism: the maximum of many noisy cells lies above the expected
value of the cell it picks. Selection "heldout" removes it by two-fold cross-fitting (the sample-splitting
of Cox 1975; cross-fitting as in Chernozhukov et al. 2018, "Double/debiased machine learning"): a seeded
split of the N samples into halves A (floor(N / 2) samples) and B (the rest); the cell that is best on A's
grid is scored on B, the cell that is best on B's grid is scored on A, and the score is the mean of those
two held-out values. Neither value was read by the choice it reports, so the score is an unbiased estimate
of the mean of the cells a half-sample choice picks (at N / 2 samples: a kNN score's chance level is then
k / (N / 2 - 1)).

The split depends only on (seed, N) (`halves`), through a stream of its own, so every pair of one setting on
one sample set is split alike, and the permutation null and the interval's subsets (drawn from the same
seed) are not the same draws. The null (`stats.permutation_null`) shuffles the pairing within each half (a
subgroup of the permutations of N samples, so under independence the test stays exact) and cross-fits
inside every draw; each interval subset (`stats.subset_draws`) keeps every sample in its half and is
cross-fitted the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from platobench.errors import UserError
from platobench.metrics.api import LayerSummaries, summarize_layers
from platobench.metrics.preprocess import LayerStack, RowSubset, prepared_layers
from platobench.metrics.selection import HELDOUT, Selection, best_index

#: Distinguishes the halves' random stream from the null's and the interval's, drawn from the same seed.
HALVES_STREAM = 0x4E1D
#: The fewest samples that can be split into two halves a metric can score.
MIN_SAMPLES = 8


def halves(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The two halves of positions 0..n-1 (sorted index tensors of floor(n / 2) and ceil(n / 2)), a seeded
    split that depends only on (n, seed)."""
    if n < MIN_SAMPLES:
        raise UserError(f"held-out layer selection splits the samples in two halves; {n} samples are too few "
                        f"(at least {MIN_SAMPLES})")
    stream = int(np.random.SeedSequence([seed, HALVES_STREAM]).generate_state(1, dtype=np.uint64)[0] >> 1)
    order = torch.randperm(n, generator=torch.Generator().manual_seed(stream))
    return order[: n // 2].sort().values, order[n // 2:].sort().values


@dataclass(frozen=True)
class Fold:
    """One fold: the cell (x_layer, y_layer) best on half `chosen_on` ("A" or "B"), its `score` on the
    other half and its `in_sample` score on the half that chose it (that half's best-of-grid score)."""

    chosen_on: str
    x_layer: int
    y_layer: int
    score: float
    in_sample: float


@dataclass(frozen=True)
class CrossFit:
    """The held-out score (the mean of the two folds' scores) and its two folds."""

    score: float
    folds: tuple[Fold, Fold]

    @property
    def in_sample(self) -> float:
        """The mean of the halves' best-of-grid scores: at the same N as `score`, so `in_sample - score` is
        the optimism of choosing the cell on the samples scored (negated for lower-is-better metrics)."""
        return (self.folds[0].in_sample + self.folds[1].in_sample) / 2

    def selection(self) -> Selection:
        """As a `Selection`: mode "heldout", the layers chosen on half A, the cross-fitted score."""
        first = self.folds[0]
        return Selection(mode=HELDOUT, x_layer=first.x_layer, y_layer=first.y_layer, score=self.score)


def cross_fit(grid_a: torch.Tensor, grid_b: torch.Tensor, higher_is_better: bool) -> CrossFit:
    """Cross-fit two [Lx, Ly] grids of the same layers on halves A and B (module docstring)."""
    folds = []
    for name, choose, score in (("A", grid_a, grid_b), ("B", grid_b, grid_a)):
        i, j = best_index(choose, higher_is_better)
        folds.append(Fold(name, i, j, float(score[i, j]), float(choose[i, j])))
    return CrossFit((folds[0].score + folds[1].score) / 2, (folds[0], folds[1]))


def cross_fit_value(grid_a: torch.Tensor, grid_b: torch.Tensor, higher_is_better: bool) -> float:
    """`cross_fit(...).score`."""
    return cross_fit(grid_a, grid_b, higher_is_better).score


@dataclass
class HalfSplit:
    """The per-layer summaries of both halves of a sample set, for cross-fitting and its permutation null.

    rows: the two halves as indices into the stacks' rows; stacks: the (X, Y) layer stacks of all samples;
    summaries: each half's `LayerSummaries`."""

    rows: tuple[torch.Tensor, torch.Tensor]
    stacks: tuple[LayerStack, LayerStack]
    summaries: tuple[LayerSummaries, LayerSummaries]
    preprocess: str

    @classmethod
    def of(cls, metric: str, stacks: tuple[LayerStack, LayerStack], n: int, *, seed: int, preprocess: str,
           within: torch.Tensor | None = None, **params: Any) -> HalfSplit:
        """Split the stacks' `n` rows by `halves(n, seed)` and summarise both halves; with `within` (sorted
        indices of a subset of the rows), each half keeps its samples that lie in the subset: a sample stays
        in its half in every subset, so a subset's score differs from the full sample's only by the samples
        it leaves out (not by a new random split, which would add the split's own noise to every subset and
        inflate a jackknife's spread (B - 1)-fold)."""
        parts = halves(n, seed)
        rows = parts if within is None else tuple(p[torch.isin(p, within)] for p in parts)
        summaries = tuple(
            summarize_layers(metric, RowSubset(stacks[0], r), RowSubset(stacks[1], r), preprocess=preprocess, **params)
            for r in rows
        )
        return cls(rows, stacks, summaries, preprocess)  # type: ignore[arg-type]

    def cross_fit(self) -> CrossFit:
        """The held-out score of these halves."""
        a, b = self.summaries
        return cross_fit(a.grid(), b.grid(), a.metric.higher_is_better)

    def permuted_value(self, gen: torch.Generator) -> float:
        """The held-out score with Y's pairing shuffled within each half (one null draw; `gen` advances by
        one permutation per half)."""
        grids = [self._permuted_grid(s, r, torch.randperm(len(r), generator=gen))
                 for s, r in zip(self.summaries, self.rows)]
        return cross_fit_value(grids[0], grids[1], self.summaries[0].metric.higher_is_better)

    def _permuted_grid(self, s: LayerSummaries, rows: torch.Tensor, perm: torch.Tensor) -> torch.Tensor:
        m = s.metric
        if m.extra.get("permute") is not None:
            return s.grid(perm=perm)
        # no cheap permutation of the summaries (a metric whose own split is tied to positions): summarise again
        ys = prepared_layers(LayerStack(RowSubset(self.stacks[1], rows[perm]), "Ys"), self.preprocess)
        summarize_y = m.summarize_y or m.summarize_x
        return LayerSummaries(m, s.params, s.n, s.x, [summarize_y(y, s.params) for y in ys], s.labels).grid()

