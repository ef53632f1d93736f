"""One spelling per concept across commands: `settings`/`pairs` list|show, `cache list` (hidden `ls`),
`--home` (hidden `--root`), `--dataset` (hidden `--data`), aligned tables, one meaning per set name, and
quiet transformers loading bars."""

from __future__ import annotations

import dataclasses
import json
import sys
import types
from pathlib import Path

import pytest
import torch

from platobench.cli import build_parser, main
from platobench.data import ids_hash
from platobench.features.store import FeatureKey, FeatureStore
from platobench.table import format_table
from platobench.zoo import load_zoo


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def aligned(lines: list[str], first_column_width: int) -> bool:
    """Every line has two spaces right after the first column (cells padded to one width)."""
    return all(line[first_column_width : first_column_width + 2] == "  " for line in lines)


# ---------------------------------------------------------------------------------------------- tables


def test_format_table_computes_widths_and_right_aligns():
    lines = format_table(("name", "n"), [["a-long-name", "3"], ["b", "120"]], right={1})
    assert lines == ["name           n", "a-long-name    3", "b            120"]
    assert format_table(("a", "b"), [["x", ""]]) == ["a  b", "x"]  # no trailing spaces


# ---------------------------------------------------------------------------------------------- settings


def test_settings_list_aligns_columns_and_lists_groups_after(capsys):
    code, out, _ = run(capsys, "settings", "list")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["id", "kind", "dataset", "metric", "preprocess", "selection"]
    table = lines[: lines.index("(17 settings)")] if "(17 settings)" in lines else lines[:18]
    width = max(len(line.split()[0]) for line in table)
    assert aligned(table, width)
    dataset_col = lines[0].index("dataset")
    assert all(line[dataset_col - 2 : dataset_col] == "  " and line[dataset_col] != " " for line in table)
    group_header = next(i for i, line in enumerate(lines) if line.startswith("group"))
    assert group_header > lines.index(next(line for line in lines if line.startswith("zs-tuxpaint")))
    assert any(line.split()[0] == "offline" for line in lines[group_header:])


def test_settings_list_json_merges_settings_files(capsys, tmp_path):
    extra = tmp_path / "mine.yaml"
    extra.write_text("settings:\n  my-knn:\n    dataset: tuxpaint\n    metric: mutual_knn\n"
                     "groups:\n  mine: [my-knn, demo-cka]\n")
    code, out, _ = run(capsys, "settings", "list", "--settings-file", str(extra), "--json")
    listed = json.loads(out)
    assert code == 0 and "my-knn" in [s["id"] for s in listed["settings"]]
    assert listed["groups"]["mine"] == ["my-knn", "demo-cka"]
    code, out, _ = run(capsys, "settings", "list", "--settings-file", str(extra))
    assert code == 0 and any(line.split()[:2] == ["my-knn", "paired"] for line in out.splitlines())


def test_settings_show_prints_every_field_and_its_groups(capsys):
    code, out, _ = run(capsys, "settings", "show", "demo-mknn")
    fields = {line.split()[0]: line.split(None, 1)[1] for line in out.splitlines()}
    assert code == 0 and fields["n_perm"] == "100" and fields["params"] == '{"k": 10}'
    assert {"demo", "offline", "same-modality"} <= set(fields["groups"].split(", "))  # groups may grow
    code, out, _ = run(capsys, "settings", "show", "zs-fmnist", "--json")
    record = json.loads(out)
    assert record["kind"] == "zeroshot" and {"demo", "offline", "demo-zeroshot"} <= set(record["groups"])
    assert record["options"]["per_class"] == 100


def test_run_unknown_setting_suggests_the_closest_id(capsys):
    code, _, err = run(capsys, "run", "--settings", "demo-mkn", "--pairs", "demo")
    assert code == 2 and "unknown setting or group 'demo-mkn' (did you mean 'demo-mknn'?)" in err


def test_submit_help_shows_the_real_settings_default(capsys):
    with pytest.raises(SystemExit):
        main(["submit", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "(default demo: the offline demo group)" in text and "offline)" not in text


def test_settings_show_group_lists_its_settings(capsys):
    code, out, _ = run(capsys, "settings", "show", "openclipart", "--json")
    shown = json.loads(out)
    assert code == 0 and shown["group"] == "openclipart"
    assert shown["settings"][:3] == ["oc-mknn", "oc-cka", "oc-rotation"]  # in the file's order; the group may grow


def test_settings_show_unknown_suggests_close_names(capsys):
    code, out, err = run(capsys, "settings", "show", "prh-mnn")
    assert code == 2 and out == ""
    assert "ID: unknown setting or group 'prh-mnn'" in err and "did you mean: prh-mknn" in err
    code, _, err = run(capsys, "settings", "show", "zzzzzz")
    assert code == 2 and "see `platobench settings list`" in err


# ---------------------------------------------------------------------------------------------- pairs


def test_pairs_list_gives_sizes_and_descriptions(capsys):
    code, out, _ = run(capsys, "pairs", "list", "--json")
    rows = {r["name"]: r for r in json.loads(out)}
    assert code == 0 and (rows["demo"]["x"], rows["demo"]["y"], rows["demo"]["pairs"]) == (5, 4, 20)
    assert (rows["prh-val"]["x"], rows["prh-val"]["y"], rows["prh-val"]["modalities"]) == (12, 17, ["text", "vision"])
    code, out, _ = run(capsys, "pairs", "list")
    lines = out.splitlines()
    assert lines[0].split() == ["name", "modalities", "x", "y", "pairs", "description"]
    end = lines[0].index("pairs") + len("pairs")
    demo = next(line for line in lines if line.startswith("demo "))
    assert demo[end - 2 : end] == "20"  # numbers right-aligned under their header
    column = lines[0].index("description")
    assert all(line[column - 2 : column] == "  " and line[column] != " " for line in lines[1:])  # descriptions start in one column


def test_pairs_show_resolves_both_sides(capsys):
    code, out, _ = run(capsys, "pairs", "show", "demo", "--json")
    shown = json.loads(out)
    assert code == 0 and shown["y"] == [
        "demo/efficientnet-lite0", "demo/efficientnet-lite2", "baseline/random-init-efficientnet-lite0",
        "baseline/colour-histogram"]
    assert shown["entries"]["x"]["baselines-text"] == [
        "baseline/random-init-minilm-l6", "baseline/bag-of-words", "baseline/caption-length"]
    assert shown["pairs"] == 20 and "different list" in shown["zoo_set"]  # zoo set `demo` is not this pair set
    code, out, _ = run(capsys, "pairs", "show", "demo")
    assert code == 0 and out.startswith("pair set demo: 5 text (x) x 4 vision (y) = 20 pairs")
    assert "baseline/bag-of-words" in out and "note: zoo set 'demo' is a different list" in out


def test_pairs_show_marks_an_empty_optional_slot(capsys):
    code, out, _ = run(capsys, "pairs", "show", "default21")
    assert code == 0 and "(?text-jepa: optional, names no model in this zoo)" in out
    head, description = out.splitlines()[:2]
    assert head == "pair set default21: 6 text (x) x 3 vision (y) = 18 pairs (empty optional slot: ?text-jepa)"
    assert "comparison: 6 language models plus an optional slot for the zoo set `text-jepa`" in description
    assert "note:" not in out  # no zoo set is called default21 any more


def test_pairs_show_unknown_name_suggests_and_tells_zoo_sets_apart(capsys):
    code, _, err = run(capsys, "pairs", "show", "defalt21")
    assert code == 2 and "NAME: unknown pair set 'defalt21' (did you mean: default21?)" in err
    code, _, err = run(capsys, "pairs", "show", "default21-language")
    assert code == 2 and "is a zoo set, not a pair set" in err


def test_pairs_list_shows_an_unresolvable_user_pair_set_without_failing(capsys, tmp_path):
    extra = tmp_path / "pairs.yaml"
    extra.write_text("pair_sets:\n  mine:\n    language: [nope/missing]\n    vision: [demo-vision]\n")
    code, out, _ = run(capsys, "pairs", "list", "--settings-file", str(extra))
    mine = next(line for line in out.splitlines() if line.startswith("mine "))
    assert code == 0 and mine.split()[1:7] == ["text", "x", "vision", "?", "?", "?"] and "unresolved" in mine
    code, _, err = run(capsys, "pairs", "show", "mine", "--settings-file", str(extra))
    assert code == 2 and "nope/missing" in err


# ---------------------------------------------------------------------------------------------- one meaning per name


def test_prh_custom_sets_renamed_and_old_names_still_resolve():
    zoo = load_zoo()
    assert zoo.sets["prh-custom-language"] == zoo.sets["default21-language"]
    assert zoo.sets["prh-custom-vision"] == zoo.sets["default21-vision"] == ["dinov2/vit-g14.lvd142m"]
    assert len(zoo.sets["prh-custom-language"]) == 20 and "default21" not in zoo.sets


# ---------------------------------------------------------------------------------------------- cache


def _entry(store: FeatureStore, model: str) -> None:
    ids = [f"s{i}" for i in range(3)]
    key = FeatureKey(model=model, model_revision="r", dtype="float32", pooling="mean", layers=(0,),
                     dataset="toy", dataset_revision="r1", ids_hash=ids_hash(ids), prompt="caption:0")
    with store.writer(key, ids, (0,), (2,)) as w:
        w.write_chunk(0, [torch.arange(6, dtype=torch.float32).reshape(3, 2)])
        w.finalize()


def test_cache_list_home_and_the_hidden_ls_and_root_aliases(capsys, tmp_path):
    _entry(FeatureStore(tmp_path / "features"), "demo/a")
    _entry(FeatureStore(tmp_path / "features"), "demo/a-much-longer-model-name-than-28-chars")
    code, out, _ = run(capsys, "cache", "list", "--home", str(tmp_path))
    lines = out.splitlines()
    assert code == 0 and len(lines) == 3 and lines[0].split()[:3] == ["digest", "state", "model"]
    assert "demo/a-much-longer-model-name-than-28-chars" in out  # not cut
    dataset_col = lines[0].index("dataset")
    assert all(line[dataset_col:].startswith(("dataset", "toy")) for line in lines)
    assert run(capsys, "cache", "ls", "--home", str(tmp_path))[1] == out
    assert run(capsys, "cache", "list", "--root", str(tmp_path / "features"))[1] == out
    assert run(capsys, "cache", "list", "--home", str(tmp_path / "features"))[1].startswith("no cache entries")


@pytest.mark.parametrize("argv", [
    ["zoo", "list", "--set", "demo"], ["zoo", "list", "--filter", "demo/*", "--json"], ["zoo", "show", "demo/minilm-l6"],
    ["zoo", "show", "demo", "--json"], ["zoo", "sets"], ["data", "list"], ["data", "list", "--json"],
    ["settings", "list"], ["settings", "show", "demo-mknn", "--json"], ["settings", "show", "demo"],
    ["pairs", "list"], ["pairs", "show", "default21"], ["pairs", "show", "demo", "--json"],
    ["metrics"], ["metrics", "--json"], ["cache", "list"], ["cache", "list", "--json"], ["cache", "verify", "--json"],
])
def test_listing_outputs_end_with_a_newline(capsys, tmp_path, argv):
    if argv[0] == "cache":
        _entry(FeatureStore(tmp_path / "features"), "demo/a")
        argv = [*argv, "--home", str(tmp_path)]
    code, out, _ = run(capsys, *argv)
    assert code == 0 and out.endswith("\n") and not out.endswith("\n\n")


def test_cache_help_shows_list_and_home_only(capsys):
    parser = build_parser()
    with pytest.raises(SystemExit):
        parser.parse_args(["cache", "--help"])
    out = capsys.readouterr().out
    assert "list" in out and " ls " not in out
    with pytest.raises(SystemExit):
        parser.parse_args(["cache", "list", "--help"])
    out = capsys.readouterr().out
    assert "--home DIR" in out and "--root" not in out
    with pytest.raises(SystemExit):  # the two spellings of one place: refused together
        parser.parse_args(["cache", "list", "--home", "a", "--root", "b"])


# ---------------------------------------------------------------------------------------------- --dataset


@pytest.mark.parametrize("command", [["jepa", "train", "--views", "good"], ["jepa", "compare", "--vision", "v"]])
def test_jepa_takes_dataset_with_data_as_hidden_alias(capsys, command):
    parser = build_parser()
    assert parser.parse_args([*command, "--dataset", "openclipart"]).data == "openclipart"
    assert parser.parse_args([*command, "--data", "openclipart"]).data == "openclipart"
    with pytest.raises(SystemExit):
        parser.parse_args(command)
    assert "--dataset is required" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parser.parse_args([*command, "--help"])
    out = capsys.readouterr().out
    assert "--dataset DATASET" in out and "--data " not in out


# ---------------------------------------------------------------------------------------------- run --dry-run


def test_dry_run_prints_an_aligned_table(capsys, monkeypatch, tmp_path):
    import platobench.bench.dry_run as dry_run

    rows = [{"model": "demo/minilm-l6", "dataset": "tuxpaint", "input": "caption:0", "params_m": 22.7,
             "est_gpu_gib": 0.1, "cached": True},
            {"model": "baseline/random-init-efficientnet-lite0", "dataset": "tuxpaint-categories", "input": "image",
             "params_m": None, "est_gpu_gib": None, "cached": "unavailable: no data"}]
    monkeypatch.setattr(dry_run, "plan_rows", lambda jobs, opts, store: rows)
    monkeypatch.setenv("PLATOBENCH_HOME", str(tmp_path))
    code, out, _ = run(capsys, "run", "--pairs", "demo", "--settings", "demo-mknn", "--dry-run")
    lines = out.splitlines()[1:-1]
    assert out.splitlines()[-1].startswith("statistics (nulls, intervals, restarts) of the records to compute: ~")
    assert code == 0 and lines[0].split()[:3] == ["model", "dataset", "input"]
    cached_col = lines[0].index("cached")
    assert [line[cached_col:].split("  ")[0] for line in lines] == ["cached", "yes", "unavailable: no data"]
    params_end = lines[0].index("params (M)") + len("params (M)")
    assert lines[1][:params_end].endswith("22.7") and lines[2][:params_end].endswith("?")


# ---------------------------------------------------------------------------------------------- loading bars


def test_model_loading_silences_transformers_bars_and_restores_them(monkeypatch):
    from huggingface_hub.utils import are_progress_bars_disabled
    from transformers.utils import logging as hf_logging

    import platobench.encoders as encoders

    seen: list[tuple[bool, bool]] = []
    fake = types.ModuleType("fake_loader")
    fake.load = lambda spec, **kw: seen.append((hf_logging.is_progress_bar_enabled(), are_progress_bars_disabled()))
    monkeypatch.setitem(sys.modules, "fake_loader", fake)
    spec = load_zoo().get("baseline/bag-of-words")
    from platobench.zoo import support

    monkeypatch.setitem(support.LOADERS._entries, spec.loader,
                        dataclasses.replace(support.loader_support(spec.loader), module="fake_loader"))
    hf_logging.enable_progress_bar()
    try:
        encoders.load_encoder(spec)
        assert seen == [(False, False)]  # transformers' bars off; the hub's download bars left on
        assert hf_logging.is_progress_bar_enabled() and not are_progress_bars_disabled()
        hf_logging.disable_progress_bar()  # a user who turned them off keeps them off
        encoders.load_encoder(spec)
        assert not hf_logging.is_progress_bar_enabled() and are_progress_bars_disabled()
    finally:
        hf_logging.enable_progress_bar()


def test_readme_command_table_names_the_new_commands():
    table = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text("utf-8")
    assert "`platobench settings list`" in table and "`pairs show NAME`" in table
    assert "cache list" in table and "cache ls" not in table


def test_dry_run_says_what_is_reused_computed_and_missing(capsys, monkeypatch, tmp_path):
    """A fresh clone's demo run reuses every committed record, and says so; a hub model that is not in the
    Hugging Face cache is named as missing, with the download's size."""
    from pathlib import Path

    import platobench.bench.dry_run as dry_run

    committed = Path(__file__).resolve().parents[2] / "results" / "offline"
    code, out, _ = run(capsys, "run", "--pairs", "demo", "--settings", "demo-mknn", "--out", str(committed),
                       "--dry-run")
    assert code == 0 and "20 records: 20 reused (inputs unchanged), 0 to compute" in out
    monkeypatch.setattr(dry_run, "hub_weights", lambda spec: "missing, ~45.4 MB to download")
    code, out, _ = run(capsys, "run", "--pairs", "sentence-transformers/all-minilm-l6-v2:demo/efficientnet-lite0",
                       "--settings", "demo-mknn", "--out", str(tmp_path), "--dry-run")
    assert code == 0 and "1 records: 0 reused (inputs unchanged), 1 to compute" in out
    row = next(line for line in out.splitlines() if "all-minilm-l6-v2" in line)
    assert "missing, ~45.4 MB to download" in row and "MB" in row.split("no")[1]


def test_hub_weights_checks_the_local_hub_cache(monkeypatch, tmp_path):
    from platobench.bench.dry_run import hub_weights, human_bytes
    from platobench.zoo import load_zoo

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    spec = load_zoo().get("sentence-transformers/all-minilm-l6-v2")
    assert hub_weights(spec) == "missing, ~45.4 MB to download"
    assert hub_weights(load_zoo().get("demo/minilm-l6")) == "packaged"
    assert human_bytes(999) == "999 B" and human_bytes(1234567) == "1.2 MB"


def test_a_closed_pipe_stops_quietly():
    """`platobench zoo list --json | head -1`: no BrokenPipeError traceback when the reader leaves."""
    import subprocess
    import sys

    proc = subprocess.run(f"{sys.executable} -m platobench zoo list --json | head -c 10", shell=True,
                          capture_output=True, text=True, timeout=120)
    assert proc.stdout == "[\n  {\n    " and "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr
