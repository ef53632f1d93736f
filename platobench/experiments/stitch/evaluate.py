"""Caption held-out images through fitted maps and score them, next to the baselines.

For one (text encoder, vision model) pair with a trained text-only captioner:
  paired K     map fitted on K train pairs (one row per K of the sweep; K = all train pairs is the headline);
  unpaired     map found with no pairs (Gromov-Wasserstein matching, then Procrustes);
  shuffled     map fitted on all train pairs with the pairing broken (same data, no pairs: a control);
  random       a random orthonormal map (a control: what the decoder says for an unrelated input);
  retrieval    the nearest decoder-training caption (cosine) to the paired map's output: DeCap-style
               retrieval, the captioner's competitor that cannot say anything new;
  text-bound   the decoder fed the held-out caption's own text embedding (text->text upper bound; the
               same for every vision model of a text encoder, computed once by `text_bound_row`).
Scores: CIDEr-D and BLEU-4 against every reference of each held-out image, with percentile bootstrap
intervals over images (`platobench.experiments.stitch.scores.caption_scores`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from platobench.experiments.stitch.maps import StitchMap, fit_map
from platobench.experiments.stitch.scores import caption_scores

Generate = Callable[[torch.Tensor], list[str]]
N_SAMPLES = 5


@dataclass(frozen=True)
class EvalOptions:
    """ks: pairs for the paired maps (None = all train pairs); unpaired_n: train rows the unpaired matching
    sees; n_boot, level: bootstrap intervals; seed: maps, bootstrap and the shown samples."""

    ks: Sequence[int | None] = (None,)
    unpaired_n: int = 512
    n_boot: int = 1000
    level: float = 0.95
    seed: int = 0


@dataclass
class PairResult:
    """rows: one dict per variant (the record's `details.stitch.rows`); captions: label -> generated captions
    of the test images, one entry per row in the order of `rows`; maps: label -> the fitted map's description."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    captions: dict[str, list[str]] = field(default_factory=dict)
    maps: dict[str, dict[str, Any]] = field(default_factory=dict)

    def headline(self) -> dict[str, Any]:
        """The row of the paired map fitted on the most pairs."""
        return max((r for r in self.rows if r["variant"] == "paired"), key=lambda r: r["k"])


def score_row(variant: str, k: int, map_entries: int, predictions: list[str], references: list[list[str]],
              opts: EvalOptions) -> dict[str, Any]:
    """One table row: the variant, pairs used, map entries and the scores with their intervals."""
    s = caption_scores(predictions, references, n_boot=opts.n_boot, seed=opts.seed, level=opts.level)
    return {"variant": variant, "k": k, "map_entries": map_entries, "cider_d": s.cider_d,
            "cider_d_ci": list(s.cider_d_ci), "bleu4": s.bleu4, "bleu4_ci": list(s.bleu4_ci)}


def text_bound_row(generate: Generate, z_test: torch.Tensor, references: list[list[str]],
                   opts: EvalOptions) -> tuple[dict[str, Any], list[str]]:
    """The decoder on the held-out captions' own normalised embeddings z_test [n, D_t]."""
    captions = generate(z_test)
    return score_row("text-bound", 0, 0, captions, references, opts), captions


def _label(m: StitchMap) -> str:
    return f"paired K={m.k}" if m.method == "paired" else m.method


def nearest_captions(z_hat: torch.Tensor, bank: torch.Tensor, texts: Sequence[str]) -> list[str]:
    """For each row of z_hat [n, D], the text of the most cosine-similar row of bank [M, D] (ties: lower index)."""
    sims = torch.nn.functional.normalize(z_hat.double(), dim=1) @ torch.nn.functional.normalize(bank.double(), dim=1).T
    return [texts[int(i)] for i in sims.argmax(dim=1)]


def mapped(m: StitchMap, x_train: torch.Tensor, x_test: torch.Tensor) -> torch.Tensor:
    """m's output on x_test [n, D_v], scaled so that the train images' outputs have RMS row norm 1, the scale of
    the decoder's training inputs (a map onto fewer dimensions than the vision width keeps only part of the
    norm). The scale uses train images alone, no pairs."""
    return m.apply(x_test) / m.apply(x_train).pow(2).sum(dim=1).mean().sqrt()


def evaluate_pair(
    generate: Generate,
    x_train: torch.Tensor,
    z_train: torch.Tensor,
    x_test: torch.Tensor,
    references: list[list[str]],
    bank: tuple[torch.Tensor, Sequence[str]],
    opts: EvalOptions,
) -> PairResult:
    """Every variant for one vision model. x_train [N, D_v] / z_train [N, D_t]: train images and their
    captions' normalised embeddings (row i = one pair); x_test [n, D_v]: held-out images, `references` their
    captions; bank: (normalised embeddings [M, D_t], texts) of the decoder's training captions."""
    out = PairResult()
    maps = [fit_map("paired", x_train, z_train, k=k, seed=opts.seed) for k in opts.ks]
    maps += [
        fit_map("unpaired", x_train, z_train, seed=opts.seed, unpaired_n=opts.unpaired_n),
        fit_map("shuffled", x_train, z_train, seed=opts.seed),
        fit_map("random", x_train, z_train, seed=opts.seed),
    ]
    for m in maps:
        label = _label(m)
        if label in out.captions:  # two Ks that clip to the same number of pairs
            continue
        out.captions[label] = generate(mapped(m, x_train, x_test))
        out.maps[label] = m.describe()
        out.rows.append(score_row(m.method, m.k, m.n_entries, out.captions[label], references, opts))
    best = max((m for m in maps if m.method == "paired"), key=lambda m: m.k)
    out.captions["retrieval"] = nearest_captions(mapped(best, x_train, x_test), *bank)
    out.rows.append(score_row("retrieval", best.k, best.n_entries, out.captions["retrieval"], references, opts))
    return out


def sample_rows(ids: Sequence[str], references: list[list[str]], captions: dict[str, list[str]],
                seed: int, n: int = N_SAMPLES) -> list[dict[str, Any]]:
    """Up to n seeded random test images with their references and every variant's caption."""
    picks = sorted(np.random.default_rng(seed).choice(len(ids), size=min(n, len(ids)), replace=False).tolist())
    return [{"id": ids[i], "references": list(references[i]),
             "captions": {label: texts[i] for label, texts in captions.items()}} for i in picks]
