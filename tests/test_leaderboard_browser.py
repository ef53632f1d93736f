"""Open the generated index.html in Debian's headless chromium and check the rendered tables."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from bench_fixtures import make_record

from platobench.bench.leaderboard import build_leaderboard
from platobench.bench.results import write_record

CHROMIUM = shutil.which("chromium")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (apt-get install chromium)"),
]


def dump_dom(page, profile, fragment: str) -> str:
    """The DOM after the page's scripts ran, with no network and a throw-away profile."""
    out = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--disable-sync", f"--user-data-dir={profile}",
         "--dump-dom", f"{page.as_uri()}{fragment}"],
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
    for lang, score, params in [("demo/smollm2-135m", 0.21, 134.5), ("qwen2.5/qwen2.5-7b", 0.25, 7600.0),
                                ("llama3/llama-3-8b", 0.23, None)]:
        write_record(tmp / "results", make_record("demo-mknn", lang, "demo/dinov2-s-imgfocus", score, params_l=params))
    write_record(tmp / "results", make_record("demo-rotation", "demo/smollm2-135m", "demo/dinov2-s-imgfocus", 1.2, higher=False))
    build_leaderboard(tmp / "results", tmp / "lb", with_plots=False)
    return tmp / "lb" / "index.html", tmp / "profile"


def test_rendered_rows_default_order(page):
    dom = dump_dom(*page, "")
    rows = rows_of(dom, 0)
    assert [(r[0], r[1], r[3]) for r in rows] == [
        ("1", "qwen2.5/qwen2.5-7b", "0.250"), ("2", "llama3/llama-3-8b", "0.230"), ("3", "demo/smollm2-135m", "0.210")]
    assert rows[1][8] == "missing"
    assert "3 of 3 rows shown" in dom
    assert [(r[0], r[3]) for r in rows_of(dom, 1)] == [("1", "1.200")]


def test_sort_by_params_puts_missing_last_in_both_directions(page):
    asc = [r[1] for r in rows_of(dump_dom(*page, "#sort=params_language&dir=asc"), 0)]
    desc = [r[1] for r in rows_of(dump_dom(*page, "#sort=params_language&dir=desc"), 0)]
    assert asc == ["demo/smollm2-135m", "qwen2.5/qwen2.5-7b", "llama3/llama-3-8b"]
    assert desc == ["qwen2.5/qwen2.5-7b", "demo/smollm2-135m", "llama3/llama-3-8b"]


def test_family_filter(page):
    dom = dump_dom(*page, "#family=qwen2.5")
    assert [r[1] for r in rows_of(dom, 0)] == ["qwen2.5/qwen2.5-7b"]
    assert "1 of 3 rows shown" in dom
    assert rows_of(dom, 1) == []  # the rotation board has no qwen2.5 record
