"""Plots a reader can read: one labelled line per baseline language model with labels apart, plain x
ticks naming the language models, CIs on every LLM-vs-JEPA bar, heatmaps of one size."""

from __future__ import annotations

import numpy as np
from bench_fixtures import make_record
from matplotlib.image import imread

from platobench.leaderboard import plots

VISION = ["demo/dinov2-s-imgfocus", "demo/efficientnet-lite0", "demo/efficientnet-lite1", "demo/efficientnet-lite2"]


def board_records():
    recs = []
    for j, v in enumerate(VISION):
        for name, kind, size, score in [("demo/minilm-l3", "text_encoder", 17.2, 0.19), ("demo/minilm-l6", "text_encoder", 22.7, 0.2),
                                        ("qwen2.5/qwen2.5-7b", "causal_lm", 7000.0, 0.26), ("llama3/llama-3-8b", "causal_lm", 8000.0, 0.25),
                                        ("text-jepa/base", "text_jepa", 110.0, 0.22),
                                        ("baseline/bag-of-words", "bow", 8.2, 0.14), ("baseline/caption-length", "feature", None, 0.141),
                                        ("baseline/random-init-minilm-l6", "text_encoder", 22.7, 0.11)]:
            recs.append(make_record("demo-mknn", name, v, score - 0.005 * j, params_l=size, kind_l=kind))
    return recs


def test_size_plot_has_one_line_per_baseline_language_model_with_labels_apart():
    fig, _ = plots.size_figure(board_records())
    ax = fig.axes[0]
    dotted = [line for line in ax.get_lines() if line.get_linestyle() == ":"]
    assert len(dotted) == 3  # not one per baseline x vision model (12)
    labels = {t.get_text(): t.xy[1] for t in ax.texts}
    assert set(labels) == {"bag-of-words", "caption-length", "random-init-minilm-l6"}
    lo, hi = ax.get_ylim()
    heights = sorted(labels.values())
    assert min(np.diff(heights)) >= plots.LABEL_GAP * (hi - lo) - 1e-12  # 0.140 and 0.141 no longer collide


def test_size_plot_ticks_name_each_language_model_without_log_tick_labels():
    fig, _ = plots.size_figure(board_records())
    ax = fig.axes[0]
    fig.canvas.draw()
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert "demo/minilm-l3 (17.2M)" in ticks and "text-jepa/base (110M)" in ticks
    assert "qwen2.5/qwen2.5-7b / llama3/llama-3-8b (7B)" in ticks  # too close to label apart: one tick
    assert not [t for t in ax.get_xticklabels(minor=True) if t.get_text()]
    assert not any("10^" in t or "×10" in t or "$" in t for t in ticks)


def test_llm_vs_jepa_bars_carry_their_ci(tmp_path):
    recs = [r for r in board_records() if r.x.kind in ("causal_lm", "text_jepa")]
    assert plots.llm_vs_jepa(recs, tmp_path / "jepa.png")
    fig = plots.llm_vs_jepa_figure(recs)
    bars = [c for ax in fig.axes for c in ax.containers if type(c).__name__ == "BarContainer"]
    assert sum(len(c) for c in bars) == len(recs) and all(c.errorbar is not None for c in bars)
    ends = sorted(y for c in bars for seg in c.errorbar.lines[2][0].get_segments() for _, y in seg)
    assert ends[0] == min(r.ci.lo for r in recs) and ends[-1] == max(r.ci.hi for r in recs)


def test_heatmaps_of_different_grids_have_one_size(tmp_path):
    small = make_record("s", "demo/minilm-l3", VISION[0], 0.3)
    big = make_record("s", "demo/smollm2-135m", VISION[0], 0.3, grid=[[0.1 * (i + j) for j in range(13)] for i in range(31)])
    plots.heatmap(small, tmp_path / "small.png")
    plots.heatmap(big, tmp_path / "big.png")
    assert imread(tmp_path / "small.png").shape == imread(tmp_path / "big.png").shape
