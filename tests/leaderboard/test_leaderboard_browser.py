"""Open the generated index.html in Debian's headless chromium and check the rendered tables."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from bench_fixtures import make_record

from platobench.leaderboard import build_leaderboard
from platobench.results import write_record

CHROMIUM = shutil.which("chromium")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (apt-get install chromium)"),
]


def dump_dom(page, profile, fragment: str) -> str:
    """The DOM after the page's scripts ran (and its timers and events, for up to 5 s of virtual time),
    with no network and a throw-away profile."""
    out = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--disable-sync", f"--user-data-dir={profile}",
         "--virtual-time-budget=5000", "--dump-dom", f"{page.as_uri()}{fragment}"],
        capture_output=True, text=True, timeout=120, check=True,
    )
    assert "<html" in out.stdout, f"chromium printed no DOM; stderr ends with:\n{out.stderr[-2000:]}"
    return out.stdout


def rows_of(dom: str, board: int) -> list[list[str]]:
    table = re.search(rf'<table id="board-{board}">(.*?)</table>', dom, re.DOTALL).group(1)
    body = table.split("<tbody>", 1)[1]
    return [re.findall(r"<td[^>]*>(.*?)</td>", tr) for tr in re.findall(r'<tr class="pb-row"[^>]*>(.*?)</tr>', body, re.DOTALL)]


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("lb")
    for lang, score, params in [("demo/smollm2-135m", 0.15, 134.5), ("qwen2.5/qwen2.5-7b", 0.25, 7600.0),
                                ("llama3/llama-3-8b", 0.24, None)]:  # CIs +-0.02: qwen2.5 and llama3 tie
        write_record(tmp / "results", make_record("demo-mknn", lang, "demo/dinov2-s-imgfocus", score, params_l=params))
    for lang, score in [("demo/smollm2-135m", 1.2), ("qwen2.5/qwen2.5-7b", 1.5)]:
        write_record(tmp / "results", make_record("demo-rotation", lang, "demo/dinov2-s-imgfocus", score, higher=False))
    build_leaderboard(tmp / "results", tmp / "lb", with_plots=False)
    return tmp / "lb" / "index.html", tmp / "profile"


def test_rendered_rows_default_order(page):
    dom = dump_dom(*page, "")
    rows = rows_of(dom, 0)
    assert [(r[0], r[1], r[3]) for r in rows] == [
        ("1=", "qwen2.5/qwen2.5-7b", "0.250"), ("1=", "llama3/llama-3-8b", "0.240"), ("3", "demo/smollm2-135m", "0.150")]
    assert rows[1][10] == "unknown"  # a real model without a count; a baseline shows n/a
    assert "3 of 3 rows shown" in dom
    assert [(r[0], r[3]) for r in rows_of(dom, 1)] == [("1", "1.200"), ("2", "1.500")]


def test_sort_by_params_puts_missing_last_in_both_directions(page):
    asc = [r[1] for r in rows_of(dump_dom(*page, "#board-0=params_x.asc"), 0)]
    desc = [r[1] for r in rows_of(dump_dom(*page, "#board-0=params_x.desc"), 0)]
    assert asc == ["demo/smollm2-135m", "qwen2.5/qwen2.5-7b", "llama3/llama-3-8b"]
    assert desc == ["qwen2.5/qwen2.5-7b", "demo/smollm2-135m", "llama3/llama-3-8b"]


def test_family_filter(page):
    dom = dump_dom(*page, "#family=qwen2.5")
    assert [r[1] for r in rows_of(dom, 0)] == ["qwen2.5/qwen2.5-7b"]
    assert "1 of 3 rows shown" in dom
    assert [r[1] for r in rows_of(dom, 1)] == ["qwen2.5/qwen2.5-7b"]


def test_each_table_keeps_its_own_sort(page):
    dom = dump_dom(*page, "#family=&board-0=score.asc&board-1=x.desc")
    assert [r[3] for r in rows_of(dom, 0)] == ["0.150", "0.240", "0.250"]
    assert [r[1] for r in rows_of(dom, 1)] == ["qwen2.5/qwen2.5-7b", "demo/smollm2-135m"]
    dom = dump_dom(*page, "#board-1=score.desc")  # sorting one board leaves the other in rank order
    assert [r[0] for r in rows_of(dom, 0)] == ["1=", "1=", "3"]
    assert [r[3] for r in rows_of(dom, 1)] == ["1.500", "1.200"]


def clicked(page, profile, tmp_path, clicks: list[tuple[int, str]]) -> str:
    """The DOM after clicking the header of column key on board i, for each (i, key) in turn (a copy of
    the page with a script that clicks; each click waits for the re-render of the one before)."""
    script = "".join(
        f'setTimeout(function () {{ document.querySelector(\'#board-{i} th[data-key="{key}"]\').click(); }}, {200 * (n + 1)});'
        for n, (i, key) in enumerate(clicks))
    script += f"setTimeout(function () {{ document.body.setAttribute('data-hash', location.hash); }}, {200 * (len(clicks) + 1)});"
    copy = tmp_path / "clicked.html"
    copy.write_text(page.read_text().replace("</body>", f"<script>{script}</script></body>"))
    return dump_dom(copy, profile, "")


def test_first_click_sorts_best_first_and_only_that_table(page, tmp_path):
    dom = clicked(*page, tmp_path, [(0, "score"), (1, "score")])
    assert [r[3] for r in rows_of(dom, 0)] == ["0.250", "0.240", "0.150"]  # higher is better: descending
    assert [r[3] for r in rows_of(dom, 1)] == ["1.200", "1.500"]  # lower is better: ascending
    assert 'data-hash="#family=&amp;board-0=score.desc&amp;board-1=score.asc"' in dom
    dom = clicked(*page, tmp_path, [(1, "score"), (1, "score")])  # a second click reverses
    assert [r[3] for r in rows_of(dom, 1)] == ["1.500", "1.200"]
    assert [r[0] for r in rows_of(dom, 0)] == ["1=", "1=", "3"]
