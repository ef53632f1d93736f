"""Ranks the data can support (tie groups of overlapping CIs), the chance and null-mean columns, the
p-value floor sentence, the HTML's per-table sort directions and family list, and size plots whose y
axis never zooms into noise."""

from __future__ import annotations

import csv
import json
import re
import warnings

import numpy as np
import pytest
from bench_fixtures import make_record

from platobench import leaderboard as lb
from platobench.leaderboard import html_page as leaderboard_html
from platobench.leaderboard import plots
from platobench.leaderboard.notes import TIE_RULE, p_floor_sentence, rank_labels
from platobench.results import IntervalRef, NullRef

V = "demo/dinov2-s-imgfocus"


def with_ci(record, lo: float, hi: float):
    return record.model_copy(update={"ci": IntervalRef(lo=lo, hi=hi, level=0.95, method="test")})


def mknn_board() -> list:
    """Mutual-kNN scores .273, .269, .265 with CIs ~.13 wide (one tie group) and a clearly better .6."""
    recs = [with_ci(make_record("demo-mknn", f"a/l{i}", V, s), s - 0.065, s + 0.065)
            for i, s in enumerate([0.265, 0.273, 0.269])]
    return [*recs, make_record("demo-mknn", "b/top", V, 0.6)]


def payload(page: str) -> dict:
    return json.loads(re.search(r'id="pb-data">(.*?)</script>', page, re.DOTALL).group(1))


def test_overlapping_cis_share_a_rank_in_every_output(tmp_path):
    recs = mknn_board()
    (board,) = lb.build_boards(recs)
    assert [(r.rank, r.label, r.record.score) for r in board.rows] == [
        (1, "1", 0.6), (2, "2=", 0.273), (2, "2=", 0.269), (2, "2=", 0.265)]
    text = lb.readme([board], recs, [], {})
    assert "| 2= | a/l1 | demo/dinov2-s-imgfocus | 0.273 |" in text and "| 2= | a/l0 |" in text
    assert TIE_RULE in text
    path = tmp_path / "lb.csv"
    lb.write_csv([board], path)
    with open(path, newline="", encoding="utf-8") as f:
        assert [row["rank"] for row in csv.DictReader(f)] == ["1", "2", "2", "2"]  # numbers, no marker
    page = leaderboard_html.render([board], recs, [], {})
    assert [r["cells"]["rank"] for r in payload(page)["boards"][0]["rows"]] == ["1", "2=", "2=", "2="]
    assert [r["sort"]["rank"] for r in payload(page)["boards"][0]["rows"]] == [1, 2, 2, 2]
    assert TIE_RULE in page


def test_rows_without_ci_never_tie_and_non_finite_scores_stay_unranked():
    recs = [make_record("s", "a/l0", V, 0.3).model_copy(update={"ci": None}),
            make_record("s", "a/l1", V, 0.3).model_copy(update={"ci": None}),
            make_record("s", "a/l2", V, float("nan"))]
    assert [(r.rank, r.label) for r in lb.rank_records(recs)] == [(1, "1"), (2, "2"), (None, "missing")]
    assert rank_labels([1, 1, 3, None]) == ["1=", "1=", "3", "missing"]


def test_readme_and_html_show_chance_and_null_mean():
    recs = [make_record("s", "a/l0", V, 0.4).model_copy(update={
        "chance": 0.031, "null": NullRef(mean=0.042, std=0.01, p_value=0.01, n_perm=100, seed=0)})]
    text = lb.readme(lb.build_boards(recs), recs, [], {})
    assert "| score | calibrated | CI | p | null mean | chance |" in text
    assert "| 0.400 | 0.333 | [0.380, 0.420] | 0.010 | 0.042 | 0.031 |" in text
    row = payload(leaderboard_html.render(lb.build_boards(recs), recs, [], {}))["boards"][0]["rows"][0]
    assert (row["cells"]["null_mean"], row["cells"]["chance"]) == ("0.042", "0.031")
    assert (row["sort"]["null_mean"], row["sort"]["chance"]) == (0.042, 0.031)
    missing = [make_record("s", "a/l0", V, 0.4).model_copy(update={"chance": None, "null": None})]
    assert "| missing | missing | missing |" in lb.readme(lb.build_boards(missing), missing, [], {})


def test_p_value_floor_sentence_names_the_actual_b():
    perm = [make_record("s", "a/l0", V, 0.4)]  # n_perm 100
    sentence = p_floor_sentence(perm)
    assert "B = 100" in sentence and "1/(B+1) = 0.0099 (shown as 0.010)" in sentence
    text = lb.readme(lb.build_boards(perm), perm, [], {})
    assert sentence in text and sentence in leaderboard_html.render(lb.build_boards(perm), perm, [], {})
    exact = [make_record("s", "a/l0", V, 0.4).model_copy(update={
        "null": NullRef(mean=0.1, std=0.1, p_value=0.6, n_perm=0, seed=0, method="exact")})]
    assert "B = 0" in p_floor_sentence(exact) and "no 1/(B+1) floor" in p_floor_sentence(exact)
    assert "B = 20 or 50" in p_floor_sentence([
        make_record("s", "a/l0", V, 0.4).model_copy(update={"null": NullRef(mean=0, std=1, p_value=1, n_perm=n, seed=0)})
        for n in (50, 20)])
    no_p = [make_record("s", "a/l0", V, 0.4).model_copy(update={"null": None})]
    assert p_floor_sentence(no_p) is None
    assert "1/(B+1)" not in lb.readme(lb.build_boards(no_p), no_p, [], {})


def test_first_click_sorts_best_first():
    higher, lower = leaderboard_html.first_directions(True), leaderboard_html.first_directions(False)
    assert higher["score"] == higher["calibrated"] == higher["ci"] == "desc"
    assert lower["score"] == lower["calibrated"] == lower["ci"] == "asc"
    assert higher["rank"] == higher["p"] == higher["x"] == "asc"
    assert set(higher) == {c[0] for c in leaderboard_html.COLUMNS}
    recs = [make_record("s", "a/l0", V, 0.4), make_record("t", "a/l0", V, 1.2, higher=False)]
    boards = payload(leaderboard_html.render(lb.build_boards(recs), recs, [], {}))["boards"]
    assert [(b["id"], b["first"]["score"]) for b in boards] == [("board-0", "desc"), ("board-1", "asc")]


def test_family_filter_lists_every_family_of_every_board():
    recs = [make_record("s", f"lang{i}/m", f"vis{i}/m", 0.1 * i) for i in range(1, 13)]
    recs += [make_record("t", "only-t/m", "late-vision/m", 0.5, higher=False)]
    page = leaderboard_html.render(lb.build_boards(recs), recs, [], {})
    select = re.search(r'<select id="family">(.*?)</select>', page, re.DOTALL).group(1)
    options = re.findall(r'<option value="([^"]*)">', select)
    expected = {f"lang{i}" for i in range(1, 13)} | {f"vis{i}" for i in range(1, 13)} | {"only-t", "late-vision"}
    assert options == ["", *sorted(expected)]


# --- size plots ----------------------------------------------------------------------------------------


def test_y_limits_never_zoom_into_noise():
    lo, hi = plots.y_limits([0.265, 0.273, 0.269], "mutual_knn")  # kNN: from 0
    assert lo <= 0.0 and 0.273 < hi and hi - lo >= 0.1
    lo, hi = plots.y_limits([0.5, 0.51], "cka")  # CKA's range [-1, 1]: at least 0.2 wide, around the data
    assert hi - lo >= 0.2 and lo < 0.5 and hi > 0.51 and lo > 0.0
    lo, hi = plots.y_limits([0.99, 0.995], "svcca")  # pushed down to stay inside [0, 1] (plus the margin)
    assert hi <= 1.0 + 0.006 and lo <= 0.9
    lo, hi = plots.y_limits([100.0, 101.0, float("nan")], "unknown-metric")  # unbounded: 10% of the values
    assert hi - lo >= 10.0 and lo < 100.0 < 101.0 < hi
    lo, hi = plots.y_limits([0.0, 0.8], "mutual_knn")  # a wide spread is kept, with a margin
    assert lo == pytest.approx(-0.04) and hi == pytest.approx(0.84)


def test_size_plot_has_error_bars_chance_and_null_lines(tmp_path):
    recs = [with_ci(make_record("demo-mknn", f"a/l{i}", V, s, params_l=p), s - 0.065, s + 0.065).model_copy(
        update={"chance": 0.0155, "null": NullRef(mean=0.016 + 0.001 * i, std=0.001, p_value=0.01, n_perm=100, seed=0)})
        for i, (s, p) in enumerate([(0.265, 100.0), (0.273, 1000.0), (0.269, 7000.0)])]
    fig, left_out = plots.size_figure(recs)
    assert left_out == []
    ax = fig.axes[0]
    lo, hi = ax.get_ylim()
    assert lo <= 0.0155 and hi >= 0.273 + 0.065 and hi - lo >= 0.1  # today's .265-.273 zoom is gone
    bars = [c for c in ax.containers if type(c).__name__ == "ErrorbarContainer"]
    assert len(bars) == 3
    segments = np.array([seg for c in bars for seg in c.lines[2][0].get_segments()])  # [bar, end, (x, y)]
    assert segments[:, :, 1].min() == pytest.approx(0.2) and segments[:, :, 1].max() == pytest.approx(0.338)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "chance" in labels and any(t.startswith("permutation null mean") for t in labels)
    horizontal = {round(line.get_ydata()[0], 4) for line in ax.get_lines() if len(set(line.get_ydata())) == 1}
    assert {0.0155, 0.017} <= horizontal  # the chance line and the mean of the null means
    assert plots.size_plot(recs, tmp_path / "size.png") == (True, [])
    assert (tmp_path / "size.png").read_bytes()[:4] == b"\x89PNG"


def test_size_plot_legend_survives_a_long_model_name(tmp_path):
    long_name = "a" * 100 + "/" + "b" * 100
    recs = [make_record("s", "a/l0", V, 0.4), make_record("s", "a/l1", long_name, 0.3)]
    fig, _ = plots.size_figure(recs)
    assert max(len(t.get_text()) for t in fig.legends[0].get_texts()) <= 60
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # constrained layout would warn when the legend squeezes the axes away
        assert plots.size_plot(recs, tmp_path / "size.png") == (True, [])


def test_each_record_kind_has_its_view_and_an_unregistered_kind_the_generic_one(monkeypatch):
    from platobench.leaderboard.kinds import GENERIC, RECORD_KINDS, RecordKind, record_kind
    from platobench.leaderboard.order import board_group

    assert {"paired", "zeroshot", "stitch"} <= set(RECORD_KINDS.names())
    assert record_kind("zeroshot").top5 and record_kind("zeroshot").calibration == "chance"
    assert record_kind("paired").paired_draws and not record_kind("stitch").alignment_plots
    assert record_kind("spectrum") is GENERIC  # a plugin kind no one described
    assert [board_group(k, m) for k, m in [("paired", "mutual_knn"), ("paired", "cka"), ("zeroshot", "zeroshot_matching"),
                                            ("stitch", "cider_d"), ("spectrum", "spectrum_overlap")]] == [0, 1, 2, 3, 4]
    monkeypatch.setitem(RECORD_KINDS._entries, "test-kind-view", RecordKind(order=1, top5=True))  # as a plugin would
    assert board_group("test-kind-view", "x") == 1 and record_kind("test-kind-view").top5
