"""Pairs of any two modalities (issue 27, item 1): schema-2 record sides `x` / `y` with their modality and
input, the schema-1 upgrader, pair sets of any modality pair, settings whose sides read two views, the
refusal of a pair that cannot read its inputs before any model runs, and boards grouped by modality pair."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from bench_fixtures import make_record, seed_features

from platobench.bench.evaluation import Results
from platobench.bench.pairs import resolve_pairs
from platobench.bench.runner import RunSummary, job_inputs
from platobench.bench.settings import Catalog, PairSet, Setting
from platobench.cli import main
from platobench.errors import UserError
from platobench.leaderboard import build_boards, csv_table, html_page, readme
from platobench.leaderboard.order import board_name
from platobench.results import SideRef, load_record, load_records, write_record
from platobench.zoo import load_zoo

ROOT = Path(__file__).resolve().parents[2]
N = 24
SAME_MODALITY = """
settings:
  tiny-mknn:
    dataset: openclipart-1024
    metric: mutual_knn
    params: {k: 5}
    selection: best
    n_perm: 4
    n_ci: 3
pair_sets:
  tiny-vv:
    modalities: [vision, vision]
    x: [demo/efficientnet-lite0, demo/dinov2-s-imgfocus]
    y: [demo/dinov2-s-imgfocus]
  tiny-both:
    modalities: [vision, vision]
    x: [demo/efficientnet-lite0, demo/dinov2-s-imgfocus]
    y: [demo/efficientnet-lite0, demo/dinov2-s-imgfocus]
  tiny-tt:
    modalities: [text, text]
    x: [demo/minilm-l6]
    y: [demo/mpnet-base]
"""


V1 = Path(__file__).with_name("records_v1")  # schema-1 records as `make board` and `stitch` wrote them
V2 = Path(__file__).with_name("records_v2")  # schema-2 records as they were committed before schema 3


@pytest.mark.parametrize("name", ["paired", "zeroshot", "stitch"])
def test_a_schema_1_record_upgrades_to_x_and_y_with_its_numbers_unchanged(name):
    raw = json.loads((V1 / f"{name}.json").read_text())
    record = load_record(V1 / f"{name}.json")
    assert raw["schema_version"] == 1 and record.schema_version == 3
    assert record.x.model_dump(exclude={"modality", "input"}) == raw["language"]
    assert record.y.model_dump(exclude={"modality", "input"}) == raw["vision"]
    assert record.modalities == ("text", "vision") and record.y.input == "image"
    assert record.x.input == ("prompts" if name == "zeroshot" else "caption:0")
    assert record.provenance.inputs == {"x": raw["extra"]["inputs"]["language"], "y": raw["extra"]["inputs"]["vision"]}
    # the numbers are carried over as they are: score, interval, null and grid bit for bit
    assert (record.score, record.grid, list(record.layers)) == (raw["score"], raw.get("grid"), raw["layers"])
    assert (record.ci.lo, record.ci.hi) == (raw["ci"]["lo"], raw["ci"]["hi"])
    assert record.null is None or record.null.mean == raw["null"]["mean"]
    side_keyed = {"paired": "excluded_layers", "zeroshot": "layers", "stitch": None}[name]
    if side_keyed:
        assert record.details[side_keyed] == {{"language": "x", "vision": "y"}.get(k, k): v
                                            for k, v in raw["extra"][side_keyed].items()}


def test_an_upgraded_record_is_written_as_the_current_schema_and_reads_back_equal(tmp_path):
    record = load_record(V1 / "paired.json")
    path = write_record(tmp_path, record)
    assert json.loads(path.read_text())["schema_version"] == 3 and load_record(path) == record


def test_a_schema_1_record_with_x_y_sides_or_a_side_reading_the_wrong_input_is_refused(tmp_path):
    raw = json.loads((V1 / "paired.json").read_text())
    forged = tmp_path / "s" / "a.json"
    forged.parent.mkdir()
    forged.write_text(json.dumps({**raw, "x": raw["language"]}))
    with pytest.raises(UserError, match="schema_version 1 record has 'language' and 'vision' sides"):
        load_record(forged)
    v2 = make_record("s-mknn", "a/l", "v/x", 0.4).model_dump(mode="json")
    v2["y"]["input"] = "caption:0"
    forged.write_text(json.dumps(v2))
    with pytest.raises(UserError, match="a vision model cannot read input 'caption:0'"):
        load_record(forged)
    with pytest.raises(ValueError, match="must be 'image', 'caption:<i>'"):
        SideRef(name="a/b", modality="text", input="caption:01")


def test_pair_sets_of_any_modalities_resolve_without_self_pairs_unless_asked(tmp_path):
    settings = tmp_path / "s.yaml"
    settings.write_text(SAME_MODALITY)
    catalog, zoo = Catalog([settings]), load_zoo()
    vv = [(a.name, b.name) for a, b in resolve_pairs("tiny-vv", catalog, zoo)]
    assert vv == [("demo/efficientnet-lite0", "demo/dinov2-s-imgfocus")]  # dinov2 x dinov2 left out
    both = [(a.name, b.name) for a, b in resolve_pairs("tiny-both", catalog, zoo)]
    assert both == [("demo/efficientnet-lite0", "demo/dinov2-s-imgfocus")]  # each pair once: not also (b, a)
    views = [(a.name, b.name) for a, b in resolve_pairs("demo-views", Catalog(), zoo)]
    assert ("demo/mpnet-base", "demo/mpnet-base") in views and len(views) == 7  # self_pairs: true
    explicit = resolve_pairs("demo/minilm-l6:demo/mpnet-base,demo/efficientnet-lite0:demo/minilm-l6", catalog, zoo)
    assert [(a.modality, b.modality) for a, b in explicit] == [("text", "text"), ("vision", "text")]
    assert PairSet.model_validate({"language": ["a"], "vision": ["b"]}) == PairSet(x=["a"], y=["b"])
    with pytest.raises(ValueError, match="either x / y"):
        PairSet.model_validate({"language": ["a"], "y": ["b"]})


def test_a_pair_that_cannot_read_its_inputs_is_refused_naming_both_models():
    zoo, catalog = load_zoo(), Catalog()
    text, vision = zoo.get("demo/minilm-l6"), zoo.get("demo/efficientnet-lite0")
    with pytest.raises(UserError, match="demo/efficientnet-lite0 x demo/minilm-l6 is vision x text; use a text x vision"):
        job_inputs(catalog.settings["zs-tuxpaint"], 8, {}, (vision, text))
    views = catalog.settings["views-mknn"]
    with pytest.raises(UserError, match=r"demo/efficientnet-lite0 \(vision\) cannot read 'caption:0'"):
        job_inputs(views, 8, {}, (vision, text))
    two_views = Setting(id="v", dataset="openclipart-1024", metric="mutual_knn", params={"k": 2},
                        inputs=("caption:0", "caption:1"))
    with pytest.raises(UserError, match="caption"):  # most openclipart-1024 clips have a title only
        job_inputs(two_views, 64, {}, (text, text))
    got = job_inputs(views, 24, {}, (text, zoo.get("demo/mpnet-base")))  # a limit views-mknn can score
    assert got.reads == ("caption:0", "caption:1") and got.x.data is got.y.data and got.paired
    assert got.x.data.captions(0) != got.x.data.captions(1)


def test_inputs_are_a_paired_field_and_a_setting_without_them_dumps_as_before():
    base = dict(id="v", dataset="tuxpaint", metric="mutual_knn", params={"k": 2})
    assert "inputs" not in Setting(**base).model_dump(mode="json")
    assert Setting(**base, inputs=("caption:0", "image")).model_dump(mode="json")["inputs"] == ["caption:0", "image"]
    with pytest.raises(ValueError, match="name the caption in inputs only"):
        Setting(**base, caption_index=1, inputs=("caption:0", "caption:1"))
    with pytest.raises(ValueError, match="'prompts' is what zero-shot settings read"):
        Setting(**base, inputs=("prompts", "image"))
    assert Setting(**base).input_for(0, "text") == "caption:0" and Setting(**base).input_for(0, "vision") == "image"


def test_same_modality_pairs_run_end_to_end_onto_boards_of_their_own(tmp_path, monkeypatch, capsys):
    home = tmp_path / "home"
    for i, model in enumerate(("demo/minilm-l6", "demo/mpnet-base", "demo/efficientnet-lite0", "demo/dinov2-s-imgfocus")):
        seed_features(home, model, N, seed=i + 1)
    settings = tmp_path / "s.yaml"
    settings.write_text(SAME_MODALITY)
    monkeypatch.setenv("PLATOBENCH_HOME", str(home))
    out = tmp_path / "results"
    pairs = "tiny-vv,tiny-tt,demo/minilm-l6:demo/dinov2-s-imgfocus"
    assert main(["run", "--pairs", pairs, "--settings", "tiny-mknn", "--settings-file", str(settings),
                 "--limit", str(N), "--out", str(out), "--json"]) == 0
    board = json.loads(capsys.readouterr().out)["board"]
    assert set(board) == {"tiny-mknn", "tiny-mknn (vision x vision)", "tiny-mknn (text x text)"}
    records = load_records(out)
    by = {r.modalities: r for r in records}
    assert set(by) == {("text", "vision"), ("vision", "vision"), ("text", "text")}
    vv, tt = by[("vision", "vision")], by[("text", "text")]
    assert (vv.x.input, vv.y.input, tt.x.input, tt.y.input) == ("image", "image", "caption:0", "caption:0")
    assert board_name(vv) == "tiny-mknn (vision x vision)" and vv.chance is not None and vv.null is not None
    boards = build_boards(records)
    assert [b.modalities for b in boards] == [("text", "vision"), ("text", "text"), ("vision", "vision")]
    assert len({b.key for b in boards}) == 3 and boards[2].key.startswith("tiny-mknn.vision-vision@")
    text = readme(boards, records, [], {})
    assert "| rank | x: vision model | y: vision model |" in text and "| rank | language model | vision model |" in text
    assert "## tiny-mknn — vision x vision — mutual_knn on openclipart-1024" in text
    page = html_page.render(boards, records, [], {})
    payload = json.loads(re.search(r'id="pb-data">(.*?)</script>', page, re.DOTALL).group(1))
    assert [b["headers"].get("x") for b in payload["boards"]] == [None, "x: text model", "x: vision model"]
    rows = list(csv.DictReader(io.StringIO(csv_table.csv_text(boards))))
    assert {(r["modalities"], r["x_input"], r["y_input"]) for r in rows} == {
        ("text x vision", "caption:0", "image"), ("text x text", "caption:0", "caption:0"), ("vision x vision", "image", "image")}
    table = Results(records, RunSummary(), out)
    assert list(table.board("tiny-mknn", modalities="vision x vision")["x"]) == ["demo/efficientnet-lite0"]
    assert len(table.board("tiny-mknn")) == 3 and len(table.board("tiny-mknn", ("text", "text"))) == 1
    with pytest.raises(UserError, match=r"no text x text record.*modality pairs"):
        Results([vv], RunSummary(), out).board("tiny-mknn", "text x text")
    # the same run reuses every record: inputs and setting unchanged
    assert main(["run", "--pairs", pairs, "--settings", "tiny-mknn", "--settings-file", str(settings),
                 "--limit", str(N), "--out", str(out), "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["up_to_date"]) == 3
    # check recomputes a vision x vision record from its own sides
    assert main(["check", "--results", str(out), "--settings-file", str(settings), "--no-extract", "--json"]) == 0


def test_the_readme_pair_kind_example_is_data_that_loads_resolves_and_refuses_a_mismatch(tmp_path):
    readme_text = (ROOT / "docs" / "extending" / "README.md").read_text()
    block = readme_text.split("**A pair kind** (no code).", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    path = tmp_path / "my_pairs.yaml"
    path.write_text(block)
    catalog, zoo = Catalog([path]), load_zoo()
    vision = resolve_pairs("my-vision", catalog, zoo)
    assert [a.name for a, _ in vision] == ["demo/efficientnet-lite0", "demo/efficientnet-lite1", "demo/efficientnet-lite2",
                                           "baseline/random-init-efficientnet-lite0", "baseline/colour-histogram"]
    views = resolve_pairs("my-views", catalog, zoo)
    assert ("demo/mpnet-base", "demo/mpnet-base") in [(a.name, b.name) for a, b in views]
    assert catalog.settings["my-views-mknn"].inputs == ("caption:0", "caption:1")
    with pytest.raises(UserError, match="cannot read 'caption:0'"):  # refused before the dataset is read
        job_inputs(catalog.settings["my-views-mknn"], None, {}, vision[0])


IDS_ZOO = """
version: 1
models:
  - {name: astro/spectra, modality: text, kind: text_encoder, loader: features, source: ./spectra.safetensors,
     pooling: avg, num_layers: 1, width: 6, license: MIT}
  - {name: astro/images, modality: vision, kind: vision_vit, loader: features, source: ./images.safetensors,
     pooling: avg, num_layers: 1, width: 5, license: MIT}
"""
IDS_SETTINGS = """
settings:
  astro-mknn: {dataset: galaxies, metric: mutual_knn, params: {k: 5}, selection: best, n_perm: 4, n_ci: 3}
"""


def _ids_project(tmp_path: Path, n: int = 40) -> Path:
    """A folder with an ids-only dataset (galaxies.txt), two embeddings files of it sharing a latent, a zoo,
    a settings file and a datasets file."""
    import torch

    from platobench.encoders import precomputed

    ids = [f"g{i:03d}" for i in range(n)]
    (tmp_path / "galaxies.txt").write_text("\n".join(ids) + "\n")
    g = torch.Generator().manual_seed(0)
    latent = torch.randn(n, 3, generator=g)
    for name, width, read in (("spectra", 6, "caption:0"), ("images", 5, "image")):
        layers = [latent @ torch.randn(3, width, generator=g) + s * torch.randn(n, width, generator=g) for s in (2.0, 0.3)]
        precomputed.write_safetensors(tmp_path / f"{name}.safetensors", ids, [0, 1], layers, input=read)
    (tmp_path / "zoo.yaml").write_text(IDS_ZOO)
    (tmp_path / "settings.yaml").write_text(IDS_SETTINGS)
    (tmp_path / "datasets.yaml").write_text("datasets:\n  galaxies: {type: ids, ids: ./galaxies.txt, licence: CC0-1.0}\n")
    return tmp_path


def test_embeddings_on_an_ids_only_dataset_go_on_a_board_and_a_real_model_is_refused(tmp_path, monkeypatch, capsys):
    from platobench.data.datasets_file import using

    root = _ids_project(tmp_path)
    monkeypatch.setenv("PLATOBENCH_HOME", str(tmp_path / "home"))
    files = ["--settings-file", str(root / "settings.yaml"), "--datasets-file", str(root / "datasets.yaml"),
             "--zoo", str(root / "zoo.yaml")]
    assert main(["run", "--pairs", "astro/spectra:astro/images", "--settings", "astro-mknn", *files,
                 "--out", str(root / "results"), "--json"]) == 0
    capsys.readouterr()
    (record,) = load_records(root / "results")
    assert record.dataset.name == "galaxies" and record.dataset.n == 40 and record.dataset.revision.startswith("ids:sha256:")
    assert record.score > record.null.mean  # the two files share a latent
    assert main(["data", "show", "galaxies", "--datasets-file", str(root / "datasets.yaml"), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["kind"] == "ids" and shown["n"] == 40 and shown["licence"] == "CC0-1.0"
    zoo = load_zoo([root / "zoo.yaml"])
    with using([root / "datasets.yaml"]):
        setting = Catalog([root / "settings.yaml"]).settings["astro-mknn"]
        with pytest.raises(UserError, match="galaxies holds sample ids only.*demo/minilm-l6 would have to read"):
            job_inputs(setting, None, {}, (zoo.get("demo/minilm-l6"), zoo.get("astro/images")))
        before = job_inputs(setting, None, {}, (zoo.get("astro/spectra"), zoo.get("astro/images"))).dataset.fingerprint
    (root / "galaxies.txt").write_text("\n".join(f"g{i:03d}" for i in range(40) if i != 7) + "\n")
    with using([root / "datasets.yaml"]):
        after = job_inputs(setting, None, {}, (zoo.get("astro/spectra"), zoo.get("astro/images"))).dataset
    assert after.fingerprint != before and len(after) == 39
    (root / "galaxies.txt").write_text("g1\ng2\ng1\n")
    with using([root / "datasets.yaml"]), pytest.raises(UserError, match="share an id"):
        job_inputs(setting, None, {}, (zoo.get("astro/spectra"), zoo.get("astro/images")))


@pytest.mark.parametrize(("pairs", "settings", "count"), [
    ("demo-vision-vision,demo-text-text", "same-modality", 60), ("demo-views", "views", 14)])
def test_the_committed_same_modality_boards_are_reused_as_the_readme_runs_them(pairs, settings, count, capsys):
    """The README's commands for the vision x vision, text x text and two-view boards plan no computation:
    every committed record's feature-cache keys and setting are what the code computes now."""
    assert main(["run", "--pairs", pairs, "--settings", settings, "--out", str(ROOT / "results" / "offline"),
                 "--dry-run", "--json"]) == 0
    plans = json.loads(capsys.readouterr().out)["records"]
    assert len(plans) == count and {p["status"] for p in plans} == {"reuse"}


@pytest.mark.parametrize("name", ["paired", "paired_tolerance", "zeroshot", "stitch"])
def test_a_schema_2_record_upgrades_to_typed_provenance_reproducibility_and_details_losing_nothing(name):
    """Schema 2 -> 3 moves `extra` into three fields and changes no value: every entry of `extra` is found in
    exactly one of them, and every other field is carried over as it was."""
    raw = json.loads((V2 / f"{name}.json").read_text())
    record = load_record(V2 / f"{name}.json")
    assert raw["schema_version"] == 2 and record.schema_version == 3
    written = record.model_dump(mode="json")
    for key in raw.keys() - {"extra", "git_sha", "schema_version"}:
        assert written[key] == raw[key], key
    assert record.provenance.git_sha == raw.get("git_sha")
    moved = {**written["provenance"], **(written["reproducibility"] or {}), **written["details"]}
    moved.pop("git_sha")
    assert {k: v for k, v in moved.items() if v is not None} == raw["extra"]
    assert record.provenance.inputs == raw["extra"]["inputs"]
    assert (record.reproducibility is not None) == ("rounding" in raw["extra"])
    if name == "paired_tolerance":
        assert record.reproducibility.check_tolerance == raw["extra"]["check_tolerance"] > 0.001
    if name != "stitch":
        assert record.provenance.setting_config == raw["extra"]["setting_config"]


def test_a_schema_2_record_with_schema_3_fields_is_refused(tmp_path):
    raw = json.loads((V2 / "paired.json").read_text())
    forged = tmp_path / "s" / "a.json"
    forged.parent.mkdir()
    forged.write_text(json.dumps({**raw, "details": {}}))
    with pytest.raises(UserError, match="schema_version 2 record keeps its provenance and details in 'extra'"):
        load_record(forged)
