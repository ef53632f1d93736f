"""Leaderboard tables, CSV, README and plots from synthetic result records."""

from __future__ import annotations

import csv
import json
import math
import re

import pytest
from bench_fixtures import make_record

from platobench import leaderboard as lb
from platobench.cli import main
from platobench.results import write_record

PNG = b"\x89PNG\r\n\x1a\n"


def test_ranks_follow_metric_direction_and_share_ties():
    recs = [make_record("s", f"a/l{i}", "v/x", s) for i, s in enumerate([0.2, 0.5, 0.5, 0.1])]
    ranked = lb.rank_records(recs)
    assert [(r.rank, r.record.score) for r in ranked] == [(1, 0.5), (1, 0.5), (3, 0.2), (4, 0.1)]
    lower = [make_record("s", f"a/l{i}", "v/x", s, higher=False) for i, s in enumerate([0.2, 0.5, 0.1])]
    assert [r.record.score for r in lb.rank_records(lower)] == [0.1, 0.2, 0.5]


def test_non_finite_score_is_unranked_and_last():
    recs = [make_record("s", "a/l0", "v/x", math.nan), make_record("s", "a/l1", "v/x", 0.3)]
    ranked = lb.rank_records(recs)
    assert [(r.rank, r.record.x.name) for r in ranked] == [(1, "a/l1"), (None, "a/l0")]


def test_mixed_directions_refuse_to_rank():
    with pytest.raises(ValueError, match="direction"):
        lb.rank_records([make_record("s", "a/l0", "v/x", 0.1), make_record("s", "a/l1", "v/x", 0.2, higher=False)])


def test_boards_split_by_setting_and_samples():
    recs = [make_record("s1", "a/l0", "v/x", 0.1), make_record("s1", "a/l1", "v/x", 0.2, fingerprint="e" * 64),
            make_record("s2", "a/l0", "v/x", 0.3)]
    boards = lb.build_boards(recs)
    assert [(b.setting, len(b.rows)) for b in boards] == [("s1", 1), ("s1", 1), ("s2", 1)]
    assert len({b.key for b in boards}) == 3


def test_language_mean_is_missing_when_a_vision_model_is_missing():
    recs = [make_record("s", "a/full", "v/x", 0.2), make_record("s", "a/full", "v/y", 0.4),
            make_record("s", "a/half", "v/x", 0.9)]  # a/half lacks v/y: its high score must not rank it first
    (board,) = lb.build_boards(recs)
    rows = lb.x_summary(board)
    assert rows[0]["x"] == "a/full" and rows[0]["rank"] == 1
    assert rows[0]["mean"] == pytest.approx(0.3)
    assert rows[1] == {"x": "a/half", "scores": {"v/x": 0.9, "v/y": None}, "mean": None,
                       "present": 1, "expected": 2, "rank": None}


def test_overview_shows_a_pair_missing_a_setting_as_missing():
    recs = [make_record("s1", "a/l0", "v/x", 0.1), make_record("s2", "a/l0", "v/x", 0.2),
            make_record("s1", "a/l1", "v/x", 0.3)]
    settings, rows = lb.overview(recs)
    assert settings == ["s1", "s2"]
    assert rows[1] == {"x": "a/l1", "y": "v/x", "modalities": ("text", "vision"), "scores": {"s1": 0.3, "s2": None}}
    text = lb.readme(lb.build_boards(recs), recs, lb.load_paper_values(), {})
    assert "| a/l1 | v/x | 0.300 | missing |" in text


def test_paper_values_are_labelled_and_hold_the_jepa_numbers():
    values = lb.load_paper_values()
    mknn = [v for v in values if v["metric"].startswith("mutual_knn")]
    assert sorted(v["value"] for v in mknn) == [0.124, 0.154, 0.184]
    assert all(v["citation"] and v["vision"] == "DINOv2" for v in mknn)
    (captioner,) = [v for v in values if v not in mknn]
    assert (captioner["value"], captioner["vision"]) == (0.838, "DINOv2 ViT-B") and "CIDEr" in captioner["metric"]


@pytest.fixture
def built(tmp_path):
    results = tmp_path / "results"
    recs = [
        make_record("demo-mknn", "demo/smollm2-135m", "demo/dinov2-s-imgfocus", 0.21, params_l=134.5),
        make_record("demo-mknn", "qwen2.5/qwen2.5-7b", "demo/dinov2-s-imgfocus", 0.25, params_l=7600.0),
        make_record("demo-mknn", "text-jepa/base", "demo/dinov2-s-imgfocus", 0.30, params_l=None, kind_l="text_jepa"),
        make_record("demo-rotation", "demo/smollm2-135m", "demo/dinov2-s-imgfocus", 1.2, higher=False),
    ]
    for r in recs:
        write_record(results, r)
    out = tmp_path / "lb"
    assert main(["leaderboard", "--results", str(results), "--out", str(out), "--json"]) == 0
    return recs, out


def test_csv_holds_every_measured_record_and_no_paper_value(built):
    recs, out = built
    rows = list(csv.DictReader((out / "leaderboard.csv").read_text().splitlines()))
    assert len(rows) == len(recs)
    mknn = [r for r in rows if r["setting"] == "demo-mknn"]
    assert [(r["rank"], r["x"]) for r in mknn] == [
        ("1", "text-jepa/base"), ("2", "qwen2.5/qwen2.5-7b"), ("3", "demo/smollm2-135m")]
    assert mknn[0]["params_x_m"] == ""  # absent, not zero
    assert not any(r["score"] in {"0.184", "0.154", "0.124"} for r in rows)


def test_readme_tables_and_separate_paper_section(built):
    _, out = built
    text = (out / "README.md").read_text()
    measured, paper = text.split("## Reported by papers (not measured here)")
    assert "0.184" not in measured and "0.184" in paper
    assert ("| 1 | text-jepa/base | demo/dinov2-s-imgfocus | 0.300 | 0.222 | [0.280, 0.320] | 0.010 | 0.100 | 0.100 "
            "| 1, 1 of 2×3 | unknown / 22.1M |") in measured
    assert "demo-rotation — rotation_residual_heldout on openclipart-1024 (n=64, lower is better)" in measured
    assert "size plot leaves out text-jepa/base" in measured


def test_plots_are_pngs_with_one_heatmap_per_record(built):
    recs, out = built
    heatmaps = sorted((out / "plots" / "heatmaps").rglob("*.png"))
    assert len(heatmaps) == len(recs)
    sizes = sorted(p.name for p in (out / "plots").glob("size_*.png"))
    assert len(sizes) == 2
    jepa = list((out / "plots").glob("llm_vs_jepa_*.png"))
    assert len(jepa) == 1 and "demo-mknn" in jepa[0].name  # only the board with both an LLM and a text JEPA
    assert all(p.read_bytes()[:8] == PNG for p in [*heatmaps, *jepa])


def test_html_is_self_contained(built):
    recs, out = built
    page = (out / "index.html").read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page), "external asset in index.html"
    assert "<link" not in page
    payload = re.search(r'<script type="application/json" id="pb-data">(.*?)</script>', page, re.DOTALL).group(1)
    data = json.loads(payload)
    assert sum(len(b["rows"]) for b in data["boards"]) == len(recs)
    assert "Reported by papers (not measured here)" in page


def test_leaderboard_without_records_is_a_user_error(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["leaderboard", "--results", str(tmp_path / "empty"), "--out", str(tmp_path / "lb")]) == 2
    assert "no result records" in capsys.readouterr().err
