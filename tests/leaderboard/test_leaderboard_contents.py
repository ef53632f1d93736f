"""The leaderboard a newcomer reads first: headline board first, a contents list of per-board anchors,
parameter counts that do not apply vs unknown, p-values at their permutation floor, zero-shot zeros."""

from __future__ import annotations

import csv
import io
import json
import re

from bench_fixtures import make_record

from platobench import leaderboard as lb
from platobench.leaderboard import csv_table, html_page
from platobench.leaderboard.notes import (
    NOT_APPLICABLE,
    UNKNOWN,
    fmt_p,
    in_sample_of,
    top5_of,
    zeroshot_sentence,
)
from platobench.leaderboard.order import setting_key
from platobench.results import IntervalRef, MetricRef, NullRef

V = "demo/dinov2-s-imgfocus"


def _kind(setting: str, kind: str, metric: str, score: float = 0.3):
    return make_record(setting, "demo/minilm-l6", V, score).model_copy(update={
        "kind": kind, "metric": MetricRef(id=metric, params={}, preprocess="l2", selection="last",
                                          higher_is_better=True)})


def mixed_records():
    return [_kind("a-cka", "paired", "cka"), _kind("z-mknn", "paired", "mutual_knn"),
            _kind("b-stitch", "stitch", "cider_d"), _kind("c-zs", "zeroshot", "zeroshot_matching"),
            _kind("b-mknn", "paired", "mutual_knn")]


def test_headline_mutual_knn_boards_come_first_then_paired_zeroshot_stitch():
    boards = lb.build_boards(mixed_records())
    assert [b.setting for b in boards] == ["b-mknn", "z-mknn", "a-cka", "c-zs", "b-stitch"]
    assert setting_key("x", "paired", "mutual_knn") < setting_key("a", "paired", "cka")


def test_readme_and_html_have_contents_linking_each_board_anchor():
    recs = mixed_records()[:3]
    boards = lb.build_boards(recs)
    text = lb.readme(boards, recs, [], {})
    contents = text.split("## Contents")[1].split("\n## ")[0]
    links = re.findall(r"\]\(#([a-z0-9_-]+)\)", contents)
    assert links == [b.anchor for b in boards] + ["overview", "reported-by-papers"]
    for anchor in links:
        assert f'<a id="{anchor}"></a>' in text
    assert text.index('<a id="z-mknn-ffffffff"></a>') < text.index('<a id="a-cka-ffffffff"></a>')
    page = html_page.render(boards, recs, [], {})
    nav = re.search(r'<nav id="contents">(.*?)</nav>', page, re.DOTALL).group(1)
    assert re.findall(r'href="#([a-z0-9_-]+)"', nav) == links
    for anchor in links:
        assert f'id="{anchor}"' in page


def test_parameter_count_not_applicable_for_a_baseline_unknown_for_a_real_model():
    recs = [make_record("s", "baseline/caption-length", V, 0.2, params_l=None),
            make_record("s", "text-jepa/base", V, 0.3, params_l=None, kind_l="text_jepa")]
    text = lb.readme(lb.build_boards(recs), recs, [], {})
    assert f"| {UNKNOWN} / 22.1M |" in text and f"| {NOT_APPLICABLE} / 22.1M |" in text
    assert "| missing / 22.1M |" not in text
    page = html_page.render(lb.build_boards(recs), recs, [], {})
    payload = json.loads(re.search(r'id="pb-data">(.*?)</script>', page, re.DOTALL).group(1))
    cells = {r["x"]: r["cells"]["params_x"] for r in payload["boards"][0]["rows"]}
    assert cells == {"text-jepa/base": UNKNOWN, "baseline/caption-length": NOT_APPLICABLE}


def test_p_at_its_permutation_floor_is_shown_as_a_bound():
    floor = NullRef(mean=0.1, std=0.01, p_value=1 / 101, n_perm=100, seed=0)
    assert fmt_p(floor) == "≤0.010"
    assert fmt_p(NullRef(mean=0.1, std=0.01, p_value=1 / 50, n_perm=49, seed=0)) == "≤0.020"
    assert fmt_p(NullRef(mean=0.1, std=0.01, p_value=0.25, n_perm=100, seed=0)) == "0.250"
    assert fmt_p(NullRef(mean=0.1, std=0.1, p_value=0.0, n_perm=0, seed=0)) == "0.000"  # exact null: no floor
    assert fmt_p(None) == "missing"
    recs = [make_record("s", "demo/minilm-l6", V, 0.3).model_copy(update={"null": floor})]
    assert "| ≤0.010 |" in lb.readme(lb.build_boards(recs), recs, [], {})


def test_zero_shot_zeros_are_explained_as_measured_not_missing():
    zero = _kind("zs", "zeroshot", "zeroshot_matching", 0.0).model_copy(update={
        "ci": IntervalRef(lo=0.0, hi=0.0, level=2 / 3, method="range over 5 seeds")})
    other = _kind("zs", "zeroshot", "zeroshot_matching", 0.2).model_copy(update={"x": zero.y.model_copy(update={"modality": "text", "input": "prompts"})})
    sentence = zeroshot_sentence([zero, other])
    assert "1 row(s) read 0.000 [0.000, 0.000]: a measured zero" in sentence and "0.667" in sentence
    assert zeroshot_sentence([make_record("s", "a/l", V, 0.3)]) is None
    text = lb.readme(lb.build_boards([zero, other]), [zero, other], [], {})
    assert "a measured zero" in text and "| 0.000 | " in text


def test_zero_shot_boards_show_top5_with_its_chance_and_no_other_board_does():
    zs = _kind("zs", "zeroshot", "zeroshot_matching", 0.25).model_copy(update={
        "details": {"top5": {"mean": 0.7, "std": 0.1, "per_seed": [0.6, 0.8]}, "chance_top5": 0.625}})
    forged = _kind("zs", "zeroshot", "zeroshot_matching", 0.1).model_copy(update={
        "x": zs.x.model_copy(update={"name": "demo/minilm-l3"}), "details": {"top5": {"mean": "0.9"}, "chance_top5": True}})
    paired = _kind("p-mknn", "paired", "mutual_knn")
    records = [zs, forged, paired]
    assert top5_of(zs) == (0.7, 0.625) and top5_of(forged) == (None, None) and top5_of(paired) == (None, None)
    text = lb.readme(lb.build_boards(records), records, [], {})
    zs_table, paired_table = text.split("## zs")[1], text.split("## p-mknn")[1].split("## ")[0]
    assert "| top-5 (chance) |" in zs_table and "| 0.700 (0.625) |" in zs_table and "| missing (missing) |" in zs_table
    assert "top-5" not in paired_table
    page = html_page.render(lb.build_boards(records), records, [], {})
    payload = json.loads(re.search(r'id="pb-data">(.*?)</script>', page, re.DOTALL).group(1))
    hide = {b["rows"][0]["cells"]["score"]: b["hide"] for b in payload["boards"]}
    assert sorted(map(tuple, hide.values())) == [("in_sample", "flags"), ("top5", "in_sample", "flags")]
    rows = {r["x"]: r for r in csv.DictReader(io.StringIO(csv_table.csv_text(lb.build_boards(records))))}
    assert (rows["demo/minilm-l6"]["top5"], rows["demo/minilm-l6"]["chance_top5"]) in {("0.7", "0.625")}


def test_a_heldout_board_shows_its_in_sample_best_beside_the_ranked_score():
    """A held-out selection's board ranks its held-out score and shows `details.heldout_selection.in_sample`
    beside it (markdown, page and csv); other boards do not show the column, and a forged value shows as
    missing."""
    held = _kind("p-ho", "paired", "mutual_knn", 0.2)
    held = held.model_copy(update={
        "metric": held.metric.model_copy(update={"selection": "heldout"}),
        "details": {"heldout_selection": {"in_sample": 0.25}}})
    forged = held.model_copy(update={"x": held.x.model_copy(update={"name": "demo/minilm-l3"}), "score": 0.1,
                                     "details": {"heldout_selection": {"in_sample": "0.9"}}})
    best = _kind("p-best", "paired", "mutual_knn", 0.3)
    records = [held, forged, best]
    assert in_sample_of(held) == 0.25 and in_sample_of(forged) is None and in_sample_of(best) is None
    text = lb.readme(lb.build_boards(records), records, [], {})
    ho_table, best_table = text.split("## p-ho")[1].split("## ")[0], text.split("## p-best")[1].split("## ")[0]
    assert "| in-sample best |" in ho_table and "| 0.200 | 0.250 |" in ho_table and "| 0.100 | missing |" in ho_table
    assert "in-sample" not in best_table
    page = html_page.render(lb.build_boards(records), records, [], {})
    payload = json.loads(re.search(r'id="pb-data">(.*?)</script>', page, re.DOTALL).group(1))
    hide = {b["rows"][0]["cells"]["score"]: b["hide"] for b in payload["boards"]}
    assert hide == {"0.200": ["top5", "flags"], "0.300": ["top5", "in_sample", "flags"]}
    rows = list(csv.DictReader(io.StringIO(csv_table.csv_text(lb.build_boards(records)))))
    assert {(r["setting"], r["x"]): r["in_sample_best"] for r in rows} == {
        ("p-ho", "demo/minilm-l6"): "0.25", ("p-ho", "demo/minilm-l3"): "", ("p-best", "demo/minilm-l6"): ""}
