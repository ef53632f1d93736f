"""Stitch result records (kind "stitch"): the record round trip, the shape of details["stitch"] and the
stitching table of the leaderboard (Markdown and HTML), next to an ordinary board that must not change."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from bench_fixtures import make_record

from platobench.cli import main
from platobench.errors import UserError
from platobench.leaderboard.stitch_table import stitch_extra
from platobench.results import (
    DatasetRef,
    IntervalRef,
    MetricRef,
    ResultRecord,
    SideRef,
    load_record,
    write_record,
)

SETTING = "stitch-tuxpaint"
DINO = "demo/dinov2-s-imgfocus"
HOSTILE_CAPTION = "<script>alert(1)</script> a | b"
LABELS = ["paired K=8", "paired K=64", "paired K=515", "unpaired (0 pairs)", "shuffled pairs K=515",
          "random orthonormal map", "retrieval through the map", "text→text upper bound"]


def _row(variant: str, k: int, entries: int, cider: float, bleu: float) -> dict[str, Any]:
    return {"variant": variant, "k": k, "map_entries": entries, "cider_d": cider,
            "cider_d_ci": [round(cider - 0.041, 4), round(cider + 0.043, 4)], "bleu4": bleu,
            "bleu4_ci": [round(bleu - 0.012, 4), round(bleu + 0.013, 4)]}


def stitch_payload(caption: str = "a red house with a yellow sun") -> dict[str, Any]:
    """details["stitch"] of a 384-d text encoder stitched to a 384-d vision encoder (147,456 map entries,
    147,456 - 384*385/2 = 73,536 free parameters), 515 train and 129 test images of tuxpaint."""
    e = 384 * 384
    return {
        "decoder": {"name": "prefix-gpt/tiny", "revision": "r1", "params_m": 6.9, "trained_params": 6_912_384,
                    "prefix_len": 4, "tune_lm": True, "epochs": 20},
        "map_entries": e, "map_free": e - 384 * 385 // 2,
        "rows": [_row("paired", 515, e, 0.612, 0.181), _row("paired", 8, e, 0.214, 0.071),
                 _row("paired", 64, e, 0.433, 0.129), _row("unpaired", 0, e, 0.151, 0.052),
                 _row("shuffled", 515, e, 0.097, 0.031), _row("random", 0, e, 0.088, 0.029),
                 _row("retrieval", 515, e, 0.507, 0.144), _row("text-bound", 0, 0, 1.274, 0.342)],
        "samples": [{"id": "tux-0007", "references": ["a house", "a red house under a sun"],
                     "captions": {"paired": caption, "unpaired": "a blue fish", "retrieval": "a house"}},
                    {"id": "tux-0011", "references": ["a cat"], "captions": {"paired": "a dog"}}],
        "split": {"train": 515, "test": 129, "heldout_fraction": 0.2, "decoder_train_captions": 2575,
                  "dropped_duplicates": 3},
    }


def stitch_record(language: str, score: float, payload: dict[str, Any] | None = None) -> ResultRecord:
    """A stitch record as the orchestrator writes it: the paired map's CIDEr-D with a bootstrap CI."""
    return ResultRecord(
        setting=SETTING, kind="stitch",
        metric=MetricRef(id="cider_d", params={"map": "paired", "k": 515, "decoder": "prefix-gpt/tiny"},
                         preprocess="none", selection="last", higher_is_better=True),
        x=SideRef(name=language, params_m=22.7, kind="sentence_encoder", modality="text", input="caption:0"),
        y=SideRef(name=DINO, params_m=22.1, kind="vision_vit", modality="vision", input="image"),
        dataset=DatasetRef(name="tuxpaint", revision="r1", n=644, fingerprint="c" * 64),
        score=score, layers=(6, 12),
        ci=IntervalRef(lo=score - 0.041, hi=score + 0.043, level=0.95, method="percentile bootstrap over images"),
        details={"stitch": payload if payload is not None else stitch_payload()}, runtime_s=41.5,
    )


def test_stitch_record_round_trips_and_older_kinds_rewrite_byte_identically(tmp_path):
    record = stitch_record("demo/minilm-l6", 0.612)
    path = write_record(tmp_path, record)
    loaded = load_record(path)
    assert loaded == record and loaded.kind == "stitch"
    extra = stitch_extra(loaded)
    assert extra is not None and [r.variant for r in extra.rows].count("paired") == 3
    assert extra.decoder.model_extra == {"epochs": 20} and extra.map_free == 73_536
    assert stitch_extra(make_record("s", "a/l0", DINO, 0.3)) is None
    for committed in sorted(Path(__file__).resolve().parents[2].glob("results/offline/*/*.json"))[:: 40]:
        again = write_record(tmp_path / "rewrite", load_record(committed))
        assert again.read_bytes() == committed.read_bytes()


@pytest.mark.parametrize("edit,needle", [
    (lambda p: p["rows"][1].update(cider_d="0.2"), "details.stitch.rows.1.cider_d"),
    (lambda p: p["rows"][0].update(variant="oracle"), "details.stitch.rows.0.variant"),
    (lambda p: p["rows"][0].update(cider_d_ci=[0.7, 0.5]), "lower end above its upper end"),
    (lambda p: p["split"].update(seed=3), "details.stitch.split.seed"),
    (lambda p: p.pop("decoder"), "details.stitch.decoder"),
    (lambda p: p.update(rows=[]), "details.stitch.rows"),
])
def test_malformed_stitch_extra_is_refused_naming_the_record(edit, needle):
    payload = stitch_payload()
    edit(payload)
    with pytest.raises(UserError, match="stitch record of setting stitch-tuxpaint, pair demo/minilm-l6 x "
                                        "demo/dinov2-s-imgfocus") as err:
        stitch_extra(stitch_record("demo/minilm-l6", 0.5, payload))
    assert needle in str(err.value)
    bare = stitch_record("demo/minilm-l6", 0.5).model_copy(update={"details": {}})
    with pytest.raises(UserError, match="details.stitch is missing"):
        stitch_extra(bare)


def _section(text: str, heading: str) -> str:
    """The Markdown of one board: from its `## heading` to the next `## `."""
    return text.split(f"## {heading}", 1)[1].split("\n## ", 1)[0]


def _build(results: Path, out: Path) -> tuple[str, str, str]:
    assert main(["leaderboard", "--results", str(results), "--out", str(out), "--json"]) == 0
    return tuple((out / name).read_text() for name in ("README.md", "index.html", "leaderboard.csv"))


def test_leaderboard_shows_the_stitching_table_escaped_and_leaves_other_boards_alone(tmp_path, capsys):
    ordinary = make_record("demo-mknn", "demo/minilm-l6", DINO, 0.31)
    alone = tmp_path / "alone"
    write_record(alone, ordinary)
    plain_md, plain_html, plain_csv = _build(alone, tmp_path / "lb-alone")

    results = tmp_path / "results"
    write_record(results, ordinary)
    write_record(results, stitch_record("demo/minilm-l6", 0.612, stitch_payload(HOSTILE_CAPTION)))
    write_record(results, stitch_record("demo/mpnet-base", 0.455))
    md, page, table = _build(results, tmp_path / "lb")
    capsys.readouterr()

    board = _section(md, "stitch-tuxpaint — cider_d on tuxpaint (n=644, higher is better)")
    assert "| 1 | demo/minilm-l6 | demo/dinov2-s-imgfocus | 0.612 | missing | [0.571, 0.655] | missing |" in board
    stitching = board.split("### stitching", 1)[1]
    for language in ("demo/minilm-l6", "demo/mpnet-base"):
        rows = [line for line in stitching.splitlines() if line.startswith(f"| {language} |")]
        assert [line.split(" | ")[2] for line in rows] == LABELS
    assert ("| demo/minilm-l6 | demo/dinov2-s-imgfocus | paired K=64 | 147,456 | 0.433 | \\[0.392, 0.476\\] | 0.129 "
            "| \\[0.117, 0.142\\] |") in stitching
    assert "| text→text upper bound | none | 1.274 |" in stitching
    assert "73,536 free parameters" in stitching and "2,575 captions" in stitching
    # the samples of the first pair (the best paired CIDEr-D), its <script> caption escaped
    assert "Sample captions of demo/minilm-l6 x demo/dinov2-s-imgfocus" in stitching
    assert ("| tux-0007 | a house / a red house under a sun | &lt;script&gt;alert(1)&lt;/script&gt; a \\| b "
            "| a blue fish | a house |") in stitching
    assert "| tux-0011 | a cat | a dog | missing | missing |" in stitching
    assert "<script>" not in md
    assert "&lt;script&gt;alert(1)&lt;/script&gt; a | b" in page and "<script>alert" not in page
    assert page.count("<td class=\"\">paired K=8</td>") == 2 and "text→text upper bound" in page

    heading = "demo-mknn — mutual_knn on openclipart-1024 (n=64, higher is better)"
    assert _section(md, heading) == _section(plain_md, heading)
    assert "### stitching" not in _section(md, heading)
    assert [line for line in table.splitlines() if line.startswith("demo-mknn,")] == \
        [line for line in plain_csv.splitlines() if line.startswith("demo-mknn,")]
    assert plain_html.count("<h3>stitching</h3>") == 0 and page.count("<h3>stitching</h3>") == 1
    assert "not plotted: no size or LLM vs text-JEPA plot" in board  # under its own board
    assert not list((tmp_path / "lb" / "plots").glob("size_stitch*"))

    measured, paper = md.split("## Reported by papers (not measured here)")
    assert "0.838" not in measured and "| DINOv2 ViT-B | CIDEr (stitched captioner)" in paper
    assert "| 0.838 | map has 0.22M parameters for DINOv2 ViT-B" in paper
    assert "0.838" not in table
    page_measured, page_paper = page.split('<h2 id="reported-by-papers">Reported by papers (not measured here)</h2>')
    assert "0.838" not in page_measured and "<td class=\"\">0.838</td>" in page_paper


def test_malformed_stitch_record_is_a_note_not_a_failed_build(tmp_path, capsys):
    results = tmp_path / "results"
    broken = stitch_payload()
    broken["rows"][0]["bleu4_ci"] = [0.3]
    write_record(results, stitch_record("demo/minilm-l6", 0.612, broken))
    write_record(results, stitch_record("demo/mpnet-base", 0.455))
    md, page, _ = _build(results, tmp_path / "lb")
    capsys.readouterr()
    stitching = md.split("### stitching", 1)[1]
    assert "- not shown: stitch record of setting stitch-tuxpaint, pair demo/minilm-l6 x demo/dinov2-s-imgfocus: " \
           "details.stitch.rows.0.bleu4_ci" in stitching
    assert "| demo/minilm-l6 | demo/dinov2-s-imgfocus | paired" not in stitching
    assert len([line for line in stitching.splitlines() if line.startswith("| demo/mpnet-base |")]) == len(LABELS)
    assert "not shown: stitch record of setting stitch-tuxpaint" in page



def test_a_stitch_board_judges_the_paired_map_against_its_map_controls():
    from platobench.leaderboard.boards import build_boards
    from platobench.leaderboard.stitch_table import beats_controls, stitch_section

    good = stitch_record("demo/minilm-l6", 0.612)
    weak_payload = stitch_payload()
    weak_payload["rows"][0] = _row("paired", 515, 384 * 384, 0.12, 0.03)  # CI [.079, .163] overlaps random's
    weak = stitch_record("demo/mpnet-base", 0.12, weak_payload)
    assert beats_controls(stitch_extra(good)) and not beats_controls(stitch_extra(weak))
    (board,) = build_boards([good, weak])
    section = stitch_section(board)
    assert section is not None and section.sentence.startswith("1 of 2 pairs: the paired map")


def test_check_does_not_rescore_a_stitch_record_without_captions_and_says_why(tmp_path, capsys):
    import json

    write_record(tmp_path, stitch_record("demo/minilm-l6", 0.612))
    assert main(["check", "--results", str(tmp_path), "--json"]) == 1  # nothing could be recomputed
    (outcome,) = json.loads(capsys.readouterr().out)["records"]
    assert outcome["status"] == "skipped" and "rerun `platobench stitch`" in outcome["reason"]
