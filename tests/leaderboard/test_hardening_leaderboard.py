"""Hostile result records against the leaderboard writers: Markdown and HTML injection, spreadsheet
formulas in the CSV, plot file names and labels, a full disk in the middle of a build, output folders
that are not leaderboard builds, and bad record files next to good ones."""

from __future__ import annotations

import csv
import errno
import json
import math
import os
import re
from pathlib import Path
from typing import Any

import pytest
from bench_fixtures import make_record

from platobench import leaderboard as lb
from platobench.bench import terminal_board
from platobench.cli import main
from platobench.errors import UserError
from platobench.files.atomic import WriteError
from platobench.leaderboard import html_page as leaderboard_html
from platobench.leaderboard import plots
from platobench.results import DatasetRef, MetricRef, Provenance, ResultRecord, SideRef, write_record

HOSTILE = ("<script>alert(1)</script>|[x](https://evil.example)[y](javascript:alert(1))\n# `code` "
           "&lt;b&gt; a\\|b <iframe src=x>\r\x1b[31m")
V = "demo/dinov2-s-imgfocus"


def hostile(record: ResultRecord, text: str, *, setting: str | None = None) -> ResultRecord:
    """`record` with `text` in every free-text field (built around validation, as a forged file could be)."""
    def model(ref: SideRef, name: str) -> SideRef:
        return SideRef.model_construct(name=name, revision=text, params_m=ref.params_m, kind=text,
                                       modality=ref.modality, input=ref.input)

    return record.model_copy(update={
        "setting": setting if setting is not None else f"s{text}",
        "x": model(record.x, f"{text}/lang"), "y": model(record.y, f"vis/{text}"),
        "dataset": DatasetRef.model_construct(name=text, revision=text, n=record.dataset.n,
                                              fingerprint=record.dataset.fingerprint),
        "metric": MetricRef.model_construct(id=text, params={text: text}, preprocess=text, selection=text,
                                            higher_is_better=record.metric.higher_is_better),
        "provenance": Provenance.model_construct(git_sha=text), "platobench_version": text, "created": text,
        "details": {text: text},
    })


def hostile_board(text: str = HOSTILE) -> list[ResultRecord]:
    """A board with two hostile pairs and a baseline, plus a second setting (so the overview is written)."""
    return [
        hostile(make_record("s", "a/l0", V, 0.4), text),
        hostile(make_record("s", "a/l1", V, 0.3), text).model_copy(update={
            "y": SideRef.model_construct(name=f"v2/{text}", kind=text, params_m=1.0, modality="vision", input="image")}),
        make_record("s", "baseline/bag-of-words", V, 0.2).model_copy(update={"setting": f"s{text}"}),
        hostile(make_record("t", "a/l0", V, -0.5), text, setting="t"),
    ]


def hostile_paper(text: str = HOSTILE) -> list[dict[str, Any]]:
    return [{"source": text, "citation": text, "language": text, "vision": text, "metric": text, "value": 0.5,
             "note": text}]


def unescaped(text: str, char: str) -> list[int]:
    """Offsets of `char` in Markdown `text` where no backslash escapes it."""
    found, i = [], 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == char:
            found.append(i)
        i += 1
    return found


# --- Markdown ----------------------------------------------------------------------------------------


def test_readme_escapes_every_record_and_paper_text():
    records = hostile_board()
    boards = lb.build_boards(records)
    notes = {"files": ["plots/size_x.png"], "notes": [], "boards": {boards[0].key: {
        "figures": ["plots/size_x.png"], "heatmaps": [], "notes": [f"not plotted because {HOSTILE}"]}}}
    text = lb.readme(boards, records, hostile_paper(), notes)
    for raw in ["<script", "<iframe", "&lt;b&gt;", "\r", "\x1b"]:
        assert raw not in text, raw
    measured = text.split("## Reported by papers")[0]
    assert unescaped(measured, "`") == unescaped(lb.readme([], [], [], {}).split("## Reported")[0], "`")
    links = [text[i + 1:text.index(")", i)] for i in unescaped(text, "]") if text[i + 1] == "("]
    anchors = [f"(#{b.anchor}" for b in boards] + ["(#overview", "(#reported-by-papers"]
    assert links == [*anchors, "(plots/size_x.png"]  # the contents and the plot only
    assert [line for line in text.splitlines() if line.startswith("# ")] == ["# platobench leaderboard"]
    for block in re.findall(r"((?:^\|.*\n)+)", text, re.MULTILINE):  # every table keeps its column count
        lines = block.splitlines()
        assert {len(unescaped(line, "|")) for line in lines} == {len(unescaped(lines[0], "|"))}, block


def test_readme_renders_without_markup_from_records():
    markdown_it = pytest.importorskip("markdown_it")
    records = hostile_board()
    text = lb.readme(lb.build_boards(records), records, hostile_paper(), {})
    page = markdown_it.MarkdownIt("commonmark").enable("table").render(text)
    page = re.sub(r'<a id="[a-z0-9_-]+"></a>|<a href="#[a-z0-9_-]+">', "", page)  # the anchors and contents
    assert "<script" not in page and "<iframe" not in page and "<a " not in page and "<code>code" not in page
    assert page.count("<table>") == text.count("\n|---")
    first = re.search(r"<table>.*?</table>", page, re.DOTALL).group(0)
    assert {len(re.findall(r"<t[dh]", tr)) for tr in re.findall(r"<tr>.*?</tr>", first, re.DOTALL)} == {12}


def test_readme_of_plain_records_is_unchanged_by_escaping():
    recs = [make_record("demo-mknn", "demo/minilm-l6", V, 0.3), make_record("demo-mknn", "baseline/bag-of-words", V, 0.2)]
    text = lb.readme(lb.build_boards(recs), recs, lb.load_paper_values(), {})
    assert "| 1 | demo/minilm-l6 | demo/dinov2-s-imgfocus | 0.300 |" in text
    assert "| Balestriero & LeCun (JEPA follow-up to PRH) |" in text
    assert "1 of 1 real pairs judged by interval overlap with their strongest matched control beat it." in text


@pytest.mark.parametrize("paper,needle", [
    ("- just a list\n", "reported"), ("reported: [1, 2]\n", "mapping"),
    ("reported: [{source: s, citation: c, language: l, vision: v, metric: m, value: high}]\n", "value"),
    ("reported: [{source: s, language: l, vision: v, metric: m, value: 0.1}]\n", "citation"),
])
def test_malformed_paper_values_are_a_user_error(tmp_path, paper, needle):
    path = tmp_path / "paper.yaml"
    path.write_text(paper)
    with pytest.raises(UserError, match=needle) as info:
        lb.load_paper_values(path)
    assert str(path) in str(info.value)


# --- CSV ---------------------------------------------------------------------------------------------


def test_csv_neutralises_formulas_and_keeps_numbers(tmp_path):
    formula = '=HYPERLINK("evil.example","x")'
    rec = make_record("s", "a/l0", V, -0.5).model_copy(update={
        "x": SideRef.model_construct(name=f"{formula}/x", revision=formula, kind="+cmd", params_m=None, modality="text", input="caption:0"),
        "y": SideRef.model_construct(name="@v/x", kind="-k", params_m=-1.0, modality="vision", input="image"),
        "dataset": DatasetRef.model_construct(name="\tds", revision="r", n=3, fingerprint="\rfp"),
        "provenance": Provenance.model_construct(git_sha="=1+1"), "created": "-2", "platobench_version": "@v",
    })
    path = tmp_path / "lb.csv"
    lb.write_csv(lb.build_boards([rec]), path)
    with open(path, newline="", encoding="utf-8") as f:
        (row,) = list(csv.DictReader(f))
    assert row["x"] == f"'{formula}/x" and row["x_family"] == f"'{formula}"
    assert row["x_kind"] == "'+cmd" and row["y"] == "'@v/x" and row["y_kind"] == "'-k"
    assert row["dataset"] == "'\tds" and row["git_sha"] == "'=1+1" and row["created"] == "'-2"
    assert row["platobench_version"] == "'@v"
    assert float(row["score"]) == -0.5 and float(row["ci_lo"]) == pytest.approx(-0.52)
    assert float(row["params_y_m"]) == -1.0 and row["rank"] == "1"
    for key, value in row.items():
        assert not (value[:1] in {"=", "+", "@", "\t", "\r"} or (value.startswith("-") and not _number(value))), key


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


# --- HTML --------------------------------------------------------------------------------------------


def test_html_never_shows_a_record_script_unescaped():
    records = hostile_board()
    notes = {"files": ["plots/size_x.png"], "notes": [HOSTILE]}
    page = leaderboard_html.render(lb.build_boards(records), records, hostile_paper(), notes)
    assert page.count("<script") == 2 and page.count("</script") == 2  # the data block and the page script
    assert "<iframe" not in page
    payload = re.search(r'<script type="application/json" id="pb-data">(.*?)</script>', page, re.DOTALL).group(1)
    json.loads(payload)


def test_html_payload_is_strict_json_with_non_finite_parameter_counts():
    rec = make_record("s", "a/l0", V, 0.4).model_copy(update={
        "x": SideRef.model_construct(name="a/l0", params_m=math.nan, kind="causal_lm", modality="text", input="caption:0")})
    page = leaderboard_html.render(lb.build_boards([rec]), [rec], [], {})
    payload = re.search(r'id="pb-data">(.*?)</script>', page, re.DOTALL).group(1)

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} is not JSON: the page's JSON.parse would fail")

    json.loads(payload, parse_constant=refuse)


# --- plots and the terminal --------------------------------------------------------------------------


def test_plots_survive_mathtext_and_long_names(tmp_path):
    long_name = "a" * 100 + "/" + "b" * 100  # valid: pair ids of such names pass the 255-byte name limit
    math = make_record("s", "a/l0", V, 0.4).model_copy(update={"metric": MetricRef.model_construct(
        id="$\\frac{$", params={}, preprocess="prh", selection="$\\frac{$", higher_is_better=True)})
    recs = [math, make_record("s", long_name, long_name, 0.3)]
    got = plots.plot_all(lb.build_boards(recs), tmp_path)
    assert len([f for f in got["files"] if "heatmaps" in f]) == 2
    assert all(len(Path(f).name.encode()) <= 255 and (tmp_path / f).is_file() for f in got["files"])
    assert all((tmp_path / f).resolve().is_relative_to(tmp_path.resolve()) for f in got["files"])


def test_terminal_board_drops_control_characters():
    text = terminal_board.render(hostile_board())
    assert "\x1b" not in text and "\r" not in text
    assert not any(line.startswith("# ") for line in text.splitlines())


# --- the build: atomic swap, output folder, bad records ----------------------------------------------


def write_results(root: Path, scores: list[float]) -> Path:
    for i, score in enumerate(scores):
        write_record(root, make_record("demo-mknn", f"demo/l{i}", V, score))
    return root


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_full_disk_while_writing_index_keeps_the_previous_build(tmp_path, monkeypatch):
    out = tmp_path / "lb"
    lb.build_leaderboard(write_results(tmp_path / "r1", [0.2, 0.3]), out, with_plots=False)
    before = snapshot(out)
    assert {"README.md", "leaderboard.csv", "index.html"} <= set(before)
    original = Path.write_text
    hits = []

    def full_disk(self: Path, data: str, *args: Any, **kwargs: Any) -> int:
        if self.name == "index.html":
            hits.append(self)
            original(self, data[:4096], *args, **kwargs)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return original(self, data, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", full_disk)
    with pytest.raises(WriteError) as info:
        lb.build_leaderboard(write_results(tmp_path / "r2", [0.5, 0.1, 0.7]), out, with_plots=False)
    assert hits, "the simulated full disk was never reached"
    assert str(out / "index.html") in str(info.value) and "No space left" in str(info.value)
    assert snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lb", "r1", "r2"]  # no staging folder left behind


def test_out_folder_that_is_not_a_build_is_refused_before_writing(tmp_path, capsys):
    results = write_results(tmp_path / "r", [0.2])
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("precious")
    (out / "README.md").write_text("my readme")
    before = snapshot(out)
    assert main(["leaderboard", "--results", str(results), "--out", str(out), "--no-plots"]) == 2
    err = capsys.readouterr().err
    assert str(out) in err and "thesis.tex" in err
    assert snapshot(out) == before and sorted(p.name for p in tmp_path.iterdir()) == ["mine", "r"]
    (tmp_path / "file").write_text("x")
    with pytest.raises(UserError, match="not a folder"):
        lb.build_leaderboard(results, tmp_path / "file", with_plots=False)
    with pytest.raises(UserError, match="results"):
        lb.build_leaderboard(results, tmp_path, with_plots=False)  # would swap away the records themselves


def test_previous_build_without_marker_and_marked_build_are_replaced(tmp_path):
    results = write_results(tmp_path / "r", [0.2])
    out = tmp_path / "lb"
    (out / "plots" / "heatmaps" / "b").mkdir(parents=True)
    for name in ["README.md", "leaderboard.csv", "index.html", "plots/size_x.png", "plots/heatmaps/b/p.png"]:
        (out / name).write_text("old")
    lb.build_leaderboard(results, out, with_plots=False)
    assert (out / lb.MARKER).is_file() and not (out / "plots").exists()
    assert "demo/l0" in (out / "README.md").read_text()
    (out / "extra.txt").write_text("kept by a marked build folder until the next swap")
    lb.build_leaderboard(results, out, with_plots=False)
    assert not (out / "extra.txt").exists()
    umask = os.umask(0)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o777 & ~umask  # not the 0700 of a temporary folder


def test_empty_existing_out_folder_is_accepted(tmp_path):
    results = write_results(tmp_path / "r", [0.2])
    (tmp_path / "lb").mkdir()
    assert lb.build_leaderboard(results, tmp_path / "lb", with_plots=False).records == 1


def test_bad_record_files_are_reported_and_the_board_is_built(tmp_path, capsys):
    results = write_results(tmp_path / "r", [0.2, 0.3])
    bad = results / "demo-mknn" / "broken.json"
    bad.write_text("{not json")
    out = tmp_path / "lb"
    assert main(["leaderboard", "--results", str(results), "--out", str(out), "--no-plots"]) == 1
    err = capsys.readouterr().err
    assert str(bad) in err
    readme = (out / "README.md").read_text()
    assert "demo/l0" in readme and "demo/l1" in readme and "Built from 2 result records" in readme
    summary = lb.build_leaderboard(results, out, with_plots=False)
    assert summary.records == 2 and len(summary.problems) == 1 and str(bad) in summary.problems[0]
    bad.unlink()
    assert main(["leaderboard", "--results", str(results), "--out", str(out), "--no-plots"]) == 0


def test_only_bad_record_files_is_a_user_error(tmp_path, capsys):
    (tmp_path / "r" / "s").mkdir(parents=True)
    (tmp_path / "r" / "s" / "broken.json").write_text("[]")
    assert main(["leaderboard", "--results", str(tmp_path / "r"), "--out", str(tmp_path / "lb")]) == 2
    err = capsys.readouterr().err
    assert "broken.json" in err and not (tmp_path / "lb").exists()


def test_duplicated_records_leave_the_pair_out_and_name_both_files(tmp_path, capsys):
    results = write_results(tmp_path / "r", [0.2, 0.3])
    first = next((results / "demo-mknn").glob("demo--l0__*.json"))
    copy = first.with_name("copy.json")
    copy.write_bytes(first.read_bytes())
    out = tmp_path / "lb"
    assert main(["leaderboard", "--results", str(results), "--out", str(out), "--no-plots"]) == 1
    err = capsys.readouterr().err
    assert str(first) in err and str(copy) in err
    readme = (out / "README.md").read_text()
    assert "| demo/l1 |" in readme and "| demo/l0 |" not in readme


@pytest.mark.parametrize("edit, why", [
    (lambda d: d.update(score=d["score"] + 0.3), "is not the grid cell at the chosen layers"),
    (lambda d: d["ci"].update(hi=d["score"] - 0.001), "does not contain the score"),
    (lambda d: d.update(calibrated=d["calibrated"] + 0.05), "calibrated score"),
    (lambda d: d["null"].update(p_value=0.0), "p-value"),
])
def test_a_record_that_contradicts_itself_is_refused_by_name(tmp_path, capsys, edit, why):
    results = write_results(tmp_path / "r", [0.2, 0.3])
    first = next((results / "demo-mknn").glob("demo--l0__*.json"))
    data = json.loads(first.read_text())
    edit(data)
    first.write_text(json.dumps(data))
    out = tmp_path / "lb"
    assert main(["leaderboard", "--results", str(results), "--out", str(out), "--no-plots"]) == 1
    err = capsys.readouterr().err
    assert "demo/l0" in err and "contradicts itself" in err and why in err
    readme = (out / "README.md").read_text()
    assert "| demo/l1 |" in readme and "| demo/l0 |" not in readme


def test_a_relabelled_vision_x_vision_record_is_refused_not_ranked_as_text_x_vision():
    """A committed vision x vision record whose x side was edited into a text model (modality, input and kind
    together) contradicts the model it names; half an edit contradicts its own kind."""
    from pathlib import Path

    from platobench.leaderboard.consistency import consistent_records, inconsistencies
    from platobench.results import load_records

    results = Path(__file__).resolve().parents[2] / "results" / "offline" / "demo-mknn"
    record = next(r for r in load_records(results) if r.modalities == ("vision", "vision"))
    whole = record.model_copy(update={"x": record.x.model_copy(update={
        "modality": "text", "input": "caption:0", "kind": "text_encoder"})})
    half = record.model_copy(update={"x": record.x.model_copy(update={"modality": "text", "input": "caption:0"})})
    assert any("built-in zoo is a vision model" in p for p in inconsistencies(whole))
    assert any("its kind vision_cnn is a vision model" in p for p in inconsistencies(half))
    kept, problems = consistent_records([record, whole])
    assert kept == [record] and len(problems) == 1
