"""Baseline verdicts (platobench/leaderboard/verdicts.py, controls from baselines.py) on hand-made records, and how
the leaderboard shows them."""

from __future__ import annotations

import csv
import json
import re
import shutil
import subprocess

import pytest
from bench_fixtures import make_record

from platobench.leaderboard import baselines as bl
from platobench.leaderboard import build_leaderboard
from platobench.leaderboard import verdicts as vd
from platobench.results import IntervalRef, NullRef, ResultRecord, write_record

V = "demo/dinov2-s-imgfocus"


def with_ci(r: ResultRecord, lo: float | None, hi: float | None = None) -> ResultRecord:
    ci = None if lo is None else IntervalRef(lo=lo, hi=hi, level=0.95, method="test")
    return r.model_copy(update={"ci": ci})


def board(higher: bool = True) -> list[ResultRecord]:
    """Strongest baseline 0.30 [0.28, 0.32]; real pairs above, overlapping and below it."""
    s = "demo-mknn" if higher else "demo-rotation"
    sign = 1 if higher else -1
    return [
        make_record(s, "baseline/caption-length", V, 1 + sign * 0.30, higher=higher),
        make_record(s, "baseline/bag-of-words", V, 1 + sign * 0.20, higher=higher),
        make_record(s, "demo/smollm2-135m", "baseline/colour-histogram", 1 + sign * 0.10, higher=higher),
        make_record(s, "qwen2.5/qwen2.5-7b", V, 1 + sign * 0.40, higher=higher),  # CI [.38, .42]: beats
        make_record(s, "demo/minilm-l6", V, 1 + sign * 0.33, higher=higher),  # CI [.31, .35]: overlaps
        make_record(s, "demo/smollm2-135m", V, 1 + sign * 0.25, higher=higher),  # CI [.23, .27]: below
    ]


def texts(records, pool=None) -> dict[str, str]:
    return {k: v.text for k, v in vd.verdicts(records, pool).items()}


def test_is_baseline_by_family():
    assert bl.is_baseline("baseline/caption-length") and not bl.is_baseline("demo/minilm-l6")
    assert not bl.is_baseline("baselines/x") and not bl.is_baseline("qwen/baseline")


@pytest.mark.parametrize("higher", [True, False])
def test_verdicts_follow_the_metric_direction(higher):
    records = board(higher)
    strongest = bl.strongest_baseline(records)
    assert strongest is not None and strongest.x.name == "baseline/caption-length"
    got = vd.verdicts(records)
    assert {k: v.text for k, v in got.items()} == {
        "baseline/caption-length__" + V: vd.BASELINE,
        "baseline/bag-of-words__" + V: vd.BASELINE,
        "demo/smollm2-135m__baseline/colour-histogram": vd.BASELINE,
        "qwen2.5/qwen2.5-7b__" + V: "beats baselines",
        "demo/minilm-l6__" + V: "within baseline CI",
        "demo/smollm2-135m__" + V: "below baseline",
    }
    # each pair is held to the strongest of its OWN matched controls; smollm2's include its colour-histogram row
    assert got["demo/smollm2-135m__" + V].controls == tuple(sorted(
        ["baseline/caption-length__" + V, "baseline/bag-of-words__" + V, "demo/smollm2-135m__baseline/colour-histogram"]))
    assert got["qwen2.5/qwen2.5-7b__" + V].binding == "baseline/caption-length__" + V
    assert vd.board_sentence(records).startswith(
        "1 of 3 real pairs judged by interval overlap with their strongest matched control beat it")


def test_ci_edges_touching_is_not_beating():
    base = with_ci(make_record("s", "baseline/caption-length", V, 0.30), 0.28, 0.32)
    touching = with_ci(make_record("s", "demo/minilm-l6", V, 0.34), 0.32, 0.36)
    assert texts([base, touching])[touching.pair_id] == "within baseline CI"


def test_missing_cis_compare_scores_and_say_so():
    base = with_ci(make_record("s", "baseline/caption-length", V, 0.30), None)
    above = make_record("s", "qwen2.5/qwen2.5-7b", V, 0.31)  # has a CI, the baseline does not
    below = with_ci(make_record("s", "demo/minilm-l6", V, 0.10), None)
    tie = with_ci(make_record("s", "demo/smollm2-135m", V, 0.30), None)
    got = texts([base, above, below, tie])
    assert got[above.pair_id] == "beats baselines (no CI)"
    assert got[below.pair_id] == "below baseline (no CI)"
    assert got[tie.pair_id] == "ties baseline (no CI)"
    assert "1 of them by score alone" in vd.board_sentence([base, above, below, tie])
    lower = [with_ci(make_record("s", "baseline/caption-length", V, 1.0, higher=False), None),
             with_ci(make_record("s", "demo/minilm-l6", V, 0.9, higher=False), None)]
    assert texts(lower)[lower[1].pair_id] == "beats baselines (no CI)"


def test_no_real_model_beats_and_no_baseline_boards():
    records = [r for r in board() if r.x.name != "qwen2.5/qwen2.5-7b"]
    assert vd.board_sentence(records).startswith(
        "0 of 2 real pairs judged by interval overlap with their strongest matched control beat it")
    real = [r for r in board() if not bl.is_baseline_record(r)]
    assert set(texts(real).values()) == {vd.NO_MATCH}
    assert vd.board_sentence(real).startswith("No real pair on this board has a matched baseline")
    nan = make_record("s", "baseline/caption-length", V, float("nan"))
    assert texts([nan, real[0]])[real[0].pair_id] == vd.NO_MATCH  # a baseline without a finite score judges nothing
    only = [r for r in board() if bl.is_baseline_record(r)]
    assert vd.board_sentence(only).startswith("Only baselines on this board")


def test_non_finite_real_score_has_no_verdict():
    records = [*board(), make_record("demo-mknn", "llama/llama-7b", V, float("nan"))]
    assert texts(records)["llama/llama-7b__" + V] == "no score"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("lb")
    records = [*board(True), *board(False)]
    for r in records:
        write_record(tmp / "results", r)
    build_leaderboard(tmp / "results", tmp / "out")
    return records, tmp / "out"


def test_markdown_marks_baselines_and_states_the_verdicts(built):
    _, out = built
    text = (out / "README.md").read_text()
    assert "| baseline/caption-length (baseline) | demo/dinov2-s-imgfocus | 1.300 |" in text
    assert "| demo/smollm2-135m | baseline/colour-histogram (baseline) |" in text
    assert re.search(r"\| qwen2\.5/qwen2\.5-7b \| demo/dinov2-s-imgfocus \|.*\| beats baselines \|", text)
    assert re.search(r"\| demo/minilm-l6 \| demo/dinov2-s-imgfocus \|.*\| within baseline CI \|", text)
    assert text.count("1 of 3 real pairs judged by interval overlap with their strongest matched control beat it") == 2


def test_csv_has_baseline_and_verdict_columns(built):
    records, out = built
    rows = list(csv.DictReader((out / "leaderboard.csv").read_text().splitlines()))
    assert len(rows) == len(records)
    by = {(r["setting"], r["x"], r["y"]): r for r in rows}
    cap = by[("demo-mknn", "baseline/caption-length", V)]
    assert (cap["is_baseline"], cap["verdict"]) == ("True", "baseline")
    assert by[("demo-mknn", "demo/smollm2-135m", "baseline/colour-histogram")]["is_baseline"] == "True"
    qwen = by[("demo-rotation", "qwen2.5/qwen2.5-7b", V)]
    assert (qwen["is_baseline"], qwen["verdict"], qwen["verdict_rule"]) == ("False", "beats baselines", "overlap")
    assert qwen["verdict_control"] == "baseline/caption-length__" + V and qwen["verdict_controls"] == "2"


def test_html_marks_baseline_rows_and_has_a_verdict_column(built):
    _, out = built
    page = (out / "index.html").read_text()
    data = json.loads(re.search(r'id="pb-data">(.*?)</script>', page, re.DOTALL).group(1))
    assert ["verdict", "verdict vs baselines", "text"] in data["columns"]
    rows = [row for b in data["boards"] for row in b["rows"]]
    cap = next(r for r in rows if r["x"] == "baseline/caption-length")
    assert cap["baseline"] and '<span class="tag">baseline</span>' in cap["cells"]["x"]
    assert cap["cells"]["verdict"] == "baseline"
    assert sum(r["baseline"] for r in rows) == 6
    assert '<p class="verdict">1 of 3 real pairs judged by interval overlap' in page


@pytest.mark.browser
@pytest.mark.skipif(shutil.which("chromium") is None, reason="Debian's chromium is not installed")
def test_rendered_page_shades_baseline_rows_and_shows_verdicts(built, tmp_path):
    _, out = built
    dom = subprocess.run(
        [shutil.which("chromium"), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", (out / "index.html").as_uri()],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout
    table = re.search(r'<table id="board-0">(.*?)</table>', dom, re.DOTALL).group(1)
    rows = re.findall(r'<tr class="(pb-row[^"]*)"[^>]*>(.*?)</tr>', table, re.DOTALL)
    assert len(rows) == 6 and sum(cls == "pb-row baseline" for cls, _ in rows) == 3
    assert all(('<span class="tag">baseline</span>' in body) == (cls == "pb-row baseline") for cls, body in rows)
    assert "<th" in table and "verdict vs baselines" in table
    assert re.search(r"qwen2\.5/qwen2\.5-7b.*beats baselines", table)


def test_a_degenerate_row_at_its_null_never_sets_the_bar():
    """A submitted encoder with many all-zero rows scores high raw against a random-init vision baseline
    (above every real pair here), but its null mean is as high (calibrated 0, p .62): it must not become
    the strongest baseline, and no real pair's verdict may move."""
    records = board()
    before = texts(records)
    null = NullRef(mean=0.45, std=0.01, p_value=0.62, n_perm=100, seed=0)
    degenerate = make_record("demo-mknn", "mine/zero-rows", "baseline/random-init-efficientnet-lite0", 0.45)
    degenerate = with_ci(degenerate.model_copy(update={"null": null, "calibrated": 0.0}), 0.43, 0.47)
    after = texts([*records, degenerate])
    assert after[degenerate.pair_id] == "baseline (at null)"
    assert {k: v for k, v in after.items() if k != degenerate.pair_id} == before
    assert bl.strongest_baseline([*records, degenerate]).x.name == "baseline/caption-length"


def test_raw_scores_never_judge_when_nulls_are_known():
    """A baseline with the highest raw score but a higher null is weaker than one with a lower raw score
    far above its null."""
    high_null = make_record("s", "baseline/caption-length", V, 0.50).model_copy(
        update={"null": NullRef(mean=0.45, std=0.01, p_value=0.01, n_perm=100, seed=0), "calibrated": 0.05 / 0.55})
    high_null = with_ci(high_null, 0.48, 0.52)
    far = make_record("s", "baseline/bag-of-words", V, 0.40)  # null 0.1: calibrated 0.333 [0.311, 0.356]
    real = make_record("s", "demo/minilm-l6", V, 0.45)  # calibrated 0.389 [0.367, 0.411]
    assert bl.strongest_baseline([high_null, far, real]).pair_id == far.pair_id
    assert texts([high_null, far, real])[real.pair_id] == "beats baselines"


def test_with_every_baseline_at_null_real_pairs_are_judged_against_their_own_null():
    at_null = make_record("s", "baseline/caption-length", V, 0.11).model_copy(
        update={"null": NullRef(mean=0.1, std=0.01, p_value=0.3, n_perm=100, seed=0), "calibrated": 0.01 / 0.9})
    at_null = with_ci(at_null, 0.09, 0.13)
    real = make_record("s", "demo/minilm-l6", V, 0.30)
    weak = with_ci(make_record("s", "demo/mpnet-base", V, 0.11), 0.09, 0.13)
    got = texts([at_null, real, weak])
    assert got[at_null.pair_id] == "baseline (at null)"
    assert got[real.pair_id] == "beats baselines" and got[weak.pair_id] == "not above its null"
    below = with_ci(make_record("s", "demo/mpnet-base", V, 0.05), 0.03, 0.07)  # calibrated interval below 0
    assert texts([at_null, below])[below.pair_id] == "below its null"
    assert vd.board_sentence([at_null, real, weak]) == (
        "1 of 2 real pairs judged by interval overlap with their strongest matched control beat it (2 against their "
        "own null: none of their controls exceeds its null).")
