"""Hostile settings files and result records: ids that become paths, YAML that expands or is not a
mapping, record files that are malformed, inconsistent or duplicated, and writes that hit a full disk."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest
from bench_fixtures import make_record, seed_features

from platobench.bench.settings import Catalog
from platobench.cli import main
from platobench.errors import UserError
from platobench.files.atomic import WriteError
from platobench.results import (
    ResultRecord,
    load_record,
    load_records,
    load_records_checked,
    record_path,
    write_record,
)

RESULTS = Path(__file__).resolve().parents[2] / "results" / "offline"
LANG, VIS = "demo/minilm-l6", "demo/dinov2-s-imgfocus"
N = 24
SETTING = "{dataset: openclipart-1024, metric: cka, n_perm: 0, n_ci: 0}"


def settings_file(tmp_path: Path, text: str, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def refused(path: Path, *needles: str) -> str:
    """The UserError message of loading a catalog with `path`; it must name the file and stay short."""
    with pytest.raises(UserError) as info:
        Catalog([path])
    message = str(info.value)
    assert str(path) in message and len(message) < 600, message
    for needle in needles:
        assert needle in message, message
    return message


def record_json(**changes) -> dict:
    data = make_record("demo-mknn", LANG, VIS, 0.5).model_dump(mode="json")
    data.update(changes)
    return data


def write_json(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


# --- ids that become paths -------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["../../escaped-setting", "/tmp/abs-setting", "<script>alert(1)</script>", "A"])
def test_settings_file_setting_id_must_be_an_id(tmp_path, bad):
    refused(settings_file(tmp_path, f"settings: {{{json.dumps(bad)}: {SETTING}}}\n"), "setting id")


@pytest.mark.parametrize("section", [
    "groups: {'../g': [cka]}", "pair_sets: {'../p': {language: [a], vision: [b]}}",
])
def test_settings_file_group_and_pair_set_names_must_be_ids(tmp_path, section):
    refused(settings_file(tmp_path, section + "\n"), "'../")


def test_setting_dataset_and_inner_id_must_be_ids(tmp_path):
    refused(settings_file(tmp_path, "settings: {ok: {dataset: ../data, metric: cka}}\n"), "dataset", "../data")
    refused(settings_file(tmp_path, "settings: {ok: {id: ../x, dataset: d, metric: cka}}\n"), "../x")


def test_builtin_settings_still_load():
    catalog = Catalog()
    assert "demo-mknn" in catalog.settings and "offline" in catalog.groups and "demo" in catalog.pair_sets


def test_record_path_refuses_traversal_and_stays_inside(tmp_path):
    for setting, lang, vis in [("../x", LANG, VIS), ("/abs", LANG, VIS), ("ok", "../../a/b", VIS),
                               ("ok", LANG, "/etc/passwd"), ("ok", "noslash", VIS)]:
        with pytest.raises(UserError):
            record_path(tmp_path, setting, lang, vis)
    path = record_path(tmp_path, "demo-mknn", LANG, VIS)
    assert path == tmp_path / "demo-mknn" / "demo--minilm-l6__demo--dinov2-s-imgfocus.json"


def test_write_record_refuses_a_record_built_around_validation(tmp_path):
    good = make_record("demo-mknn", LANG, VIS, 0.5)
    bad = ResultRecord.model_construct(**{**dict(good), "setting": "../../escaped"})
    with pytest.raises(UserError):
        write_record(tmp_path / "out", bad)
    assert not any(tmp_path.rglob("*.json"))


def test_run_refuses_a_traversing_setting_before_writing(tmp_path, monkeypatch, capsys):
    home = tmp_path / "home"
    seed_features(home, LANG, N, seed=1)
    seed_features(home, VIS, N, seed=2)
    monkeypatch.setenv("PLATOBENCH_HOME", str(home))
    f = settings_file(tmp_path, f"settings: {{../../escaped-setting: {SETTING}}}\n")
    out = tmp_path / "a" / "b" / "out"
    code = main(["run", "--pairs", f"{LANG}:{VIS}", "--settings", "../../escaped-setting", "--settings-file",
                 str(f), "--limit", str(N), "--out", str(out), "--json"])
    assert code == 2
    assert "escaped-setting" in capsys.readouterr().err
    assert not (tmp_path / "a" / "escaped-setting").exists()
    assert [p for p in tmp_path.rglob("*.json") if home not in p.parents] == []


# --- settings YAML ---------------------------------------------------------------------------------


def test_settings_alias_bomb_is_refused(tmp_path):
    """A million strings from a few hundred bytes, hidden in `params` (copied into every record)."""
    lines = ["settings:", "  ok:", "    dataset: d", "    metric: m", "    params:"]
    lines += ["      a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"      a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 7)]
    refused(settings_file(tmp_path, "\n".join(lines) + "\n"), "alias")


@pytest.mark.parametrize("text,needle", [
    ("- a\n- b\n", "mapping"), ("just a string\n", "mapping"), ("settings: [a, b]\n", "settings"),
    ("settings: {ok: [1, 2]}\n", "ok"), ("groups: [a]\n", "groups"),
])
def test_settings_file_of_the_wrong_shape_is_refused(tmp_path, text, needle):
    refused(settings_file(tmp_path, text), needle)


def test_settings_file_not_utf8_is_refused(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_bytes("settings: {caf\u00e9: {dataset: d, metric: m}}\n".encode("latin-1"))
    refused(path, "UTF-8")


def test_settings_validation_messages_stay_short(tmp_path):
    huge = "x" * 100_000
    refused(settings_file(tmp_path, f"settings: {{ok: {{dataset: d, metric: m, n_perm: '{huge}'}}}}\n"), "n_perm")
    refused(settings_file(tmp_path, f"settings:\n  ? '{huge}'\n  : {SETTING}\n"), "setting id")
    refused(settings_file(tmp_path, f"groups: {{g: ['{huge}']}}\n"), "unknown setting")


# --- writing records -------------------------------------------------------------------------------


def test_written_records_escape_non_ascii_as_before(tmp_path):
    record = make_record("demo-mknn", LANG, VIS, 0.5, details={"note": "caf\u00e9 \u2014 ok"})
    text = write_record(tmp_path, record).read_text()
    assert "caf\\u00e9 \\u2014 ok" in text and text.endswith("}\n")


def test_full_disk_write_raises_write_error_and_leaves_no_temp_file(tmp_path, monkeypatch):
    def no_space(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", no_space)
    with pytest.raises(WriteError) as info:
        write_record(tmp_path, make_record("demo-mknn", LANG, VIS, 0.5))
    assert "demo--minilm-l6__demo--dinov2-s-imgfocus.json" in str(info.value)
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


# --- loading records -------------------------------------------------------------------------------


@pytest.mark.parametrize("changes", [
    {"score": "0.9"}, {"chance": "0.1"}, {"calibrated": True}, {"last_layer_score": "1"},
    {"null": {"mean": "0.1", "std": 0.01, "p_value": 0.01, "n_perm": 100, "seed": 0}},
    {"ci": {"lo": 0.1, "hi": "0.2", "level": 0.95, "method": "m"}},
    {"grid": [[0.1, "0.2"], [0.3, 0.4]]},
    {"layers": [99, -5]}, {"layers": [-1, 0]}, {"layers": [2, 0]}, {"layers": [0, 3]}, {"layers": ["1", "1"]},
    {"grid": [[0.1, 0.2, 0.3], [0.4, 0.5]]},
    {"setting": "../../x"}, {"setting": "<script>"},
    {"language": {"name": "../../etc"}}, {"vision": {"name": "Demo/X"}},
    {"dataset": {"name": "../d", "revision": "r", "n": 3, "fingerprint": "f"}},
    {"dataset": {"name": "d", "revision": "r", "n": "3", "fingerprint": "f"}},
])
def test_invalid_record_values_are_refused(tmp_path, changes):
    path = write_json(tmp_path / "demo-mknn" / "r.json", record_json(**changes))
    with pytest.raises(UserError) as info:
        load_record(path)
    assert str(path) in str(info.value) and len(str(info.value)) < 1000


def test_subset_dataset_names_are_fine(tmp_path):
    dataset = {"name": "synthetic-scenes:heldout0.2", "revision": "r", "n": 3, "fingerprint": "f"}
    assert load_record(write_json(tmp_path / "r.json", record_json(dataset=dataset))).dataset.n == 3
    for bad in ["a:../b", "a:", ":a", "a/b"]:
        with pytest.raises(UserError, match="dataset name"):
            load_record(write_json(tmp_path / "r.json", record_json(dataset={**dataset, "name": bad})))


def test_integers_are_fine_for_float_fields(tmp_path):
    path = write_json(tmp_path / "r.json", record_json(score=1, chance=0, calibrated=1, runtime_s=2))
    assert load_record(path).score == 1.0


@pytest.mark.parametrize("content", [
    b"[1, 2, 3]", b"\"a string\"", b"{\"setting\": \"caf\xe9\"}", b"{not json", b"", b"[" * 100_000,
])
def test_record_files_that_are_not_a_json_object_are_refused(tmp_path, content):
    path = tmp_path / "r.json"
    path.write_bytes(content)
    with pytest.raises(UserError) as info:
        load_record(path)
    assert str(path) in str(info.value) and len(str(info.value)) < 600


def test_checked_loading_returns_good_records_and_one_problem_per_file(tmp_path):
    write_record(tmp_path, make_record("demo-mknn", LANG, VIS, 0.5))
    write_record(tmp_path, make_record("demo-cka", LANG, VIS, 0.4))
    bad = write_json(tmp_path / "demo-cka" / "bad.json", record_json(score="0.9"))
    broken = tmp_path / "demo-cka" / "broken.json"
    broken.write_bytes(b"\xff\xfe")
    records, problems = load_records_checked(tmp_path)
    assert sorted(r.setting for r in records) == ["demo-cka", "demo-mknn"]
    assert len(problems) == 2
    assert any(str(bad) in p for p in problems) and any(str(broken) in p for p in problems)
    with pytest.raises(UserError) as info:
        load_records(tmp_path)
    assert str(bad) in str(info.value) and str(broken) in str(info.value)


def test_duplicate_records_are_one_problem_and_none_is_used(tmp_path):
    first = write_record(tmp_path, make_record("demo-mknn", LANG, VIS, 0.5))
    copies = [write_json(tmp_path / "demo-mknn" / f"copy{i}.json", record_json(score=0.9)) for i in range(2)]
    write_record(tmp_path, make_record("demo-cka", LANG, VIS, 0.4))
    records, problems = load_records_checked(tmp_path)
    assert [r.setting for r in records] == ["demo-cka"]
    assert len(problems) == 1 and all(str(p) in problems[0] for p in [first, *copies])
    with pytest.raises(UserError, match="copy0.json"):
        load_records(tmp_path)


def test_hidden_and_non_regular_files_are_skipped_or_refused(tmp_path):
    write_record(tmp_path, make_record("demo-mknn", LANG, VIS, 0.5))
    write_json(tmp_path / ".staging" / "demo-mknn" / "x.json", record_json())
    (tmp_path / "demo-cka").mkdir()
    os.mkfifo(tmp_path / "demo-cka" / "fifo.json")
    records, problems = load_records_checked(tmp_path)
    assert len(records) == 1 and len(problems) == 1 and "fifo.json" in problems[0]
