"""`--limit`: a limited extraction is sliced from a cached superset (its own entry, no model run); on class
datasets the limit applies per class; every setting's inputs are built before a model runs; a limited run
warns and marks its records, which `check` still reproduces. Fake encoders and synthetic cache entries only."""

from __future__ import annotations

import json

import pytest
import torch
from bench_fixtures import TINY_SETTINGS, make_record, seed_features
from test_extract_engine import LAYERS, SPEC, FakeText

from platobench.bench import runner
from platobench.bench import zeroshot_inputs as zi
from platobench.bench.protocols import scorers
from platobench.bench.runner import Job, RunOptions, execute, plan_rows, record_limits
from platobench.bench.settings import Setting
from platobench.cli import main
from platobench.data import ClassDataset, PairedDataset, get_dataset
from platobench.data.subset import first_per_class
from platobench.errors import UserError
from platobench.features import extract as ex
from platobench.features.store import FeatureStore
from platobench.results import Provenance, load_record, load_records, record_path, write_record
from platobench.zoo import load_zoo

PAIR = "demo/minilm-l6:demo/dinov2-s-imgfocus"
LANG, VIS = (load_zoo().get(n) for n in PAIR.split(":"))


def forbidden(*a, **k):
    raise AssertionError("no model may be loaded")


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    """(store, 20-sample superset entry extracted with FakeText). The dataset is built before the home moves:
    the session home keeps the openclipart catalogue (a half-minute scan of the packages where it does not)."""
    data = get_dataset("openclipart-1024", limit=20)
    monkeypatch.setenv("PLATOBENCH_HOME", str(tmp_path / "home"))
    store = FeatureStore(tmp_path / "features")
    monkeypatch.setattr(ex, "load_encoder", lambda *a, **k: FakeText())
    full, _ = ex.extract(SPEC, data, store=store, chunk_size=8, progress=False)
    return store, full


# ------------------------------------------------------------------------------------- slicing


def test_limited_extraction_slices_the_cached_superset_into_its_own_entry(cache, monkeypatch, capsys):
    store, full = cache
    full_manifest = (full.path / "manifest.json").read_bytes()
    monkeypatch.setattr(ex, "load_encoder", forbidden)
    ds = get_dataset("openclipart-1024", limit=8)
    entry, report = ex.extract(SPEC, ds, store=store, progress=False)
    err = capsys.readouterr().err
    assert "reusing the first 8 of 20 cached samples of demo/minilm-l6 on openclipart-1024" in err
    key = ex.feature_key(SPEC, ds, prompt="caption:0", device=torch.device("cpu"))
    assert entry.digest == key.digest() and entry.key == key.as_dict()  # the normal key of the 8 ids
    assert entry.ids == full.ids[:8] and entry.manifest["sliced_from"] == full.digest
    assert report.sliced_from == full.digest and report.cached and report.n == 8
    for i in range(len(LAYERS)):
        assert torch.equal(entry.layer(i, upcast=False), full.layer(i, upcast=False)[:8])
    assert entry.verify() == []
    assert (full.path / "manifest.json").read_bytes() == full_manifest  # the superset is untouched
    again, report = ex.extract(SPEC, ds, store=store, progress=False)
    assert again.digest == entry.digest and report.cached
    assert "reusing" not in capsys.readouterr().err  # now an ordinary cache hit


def test_no_slice_unless_the_ids_are_the_first_ones_of_the_same_key(cache, monkeypatch):
    store, full = cache
    loads = []
    monkeypatch.setattr(ex, "load_encoder", lambda *a, **k: loads.append(1) or FakeText())
    ds = get_dataset("openclipart-1024", limit=20)
    shifted = PairedDataset(ds.name, ds.revision, ds.ids[1:9], [ds.caption_views(i) for i in range(1, 9)],
                            lambda i: ds.image(i + 1))
    entry, report = ex.extract(SPEC, shifted, store=store, progress=False)
    assert loads == [1] and report.sliced_from is None and "sliced_from" not in entry.manifest
    first8 = get_dataset("openclipart-1024", limit=8)
    _, report = ex.extract(SPEC, first8, store=store, prompt="other", texts=first8.captions(0), progress=False)
    assert loads == [1, 1] and report.sliced_from is None


def test_a_damaged_superset_is_extracted_instead(cache, monkeypatch, capsys):
    store, full = cache
    layer = full.path / full.manifest["files"][0]["file"]
    data = bytearray(layer.read_bytes())
    data[-1] ^= 0xFF
    layer.write_bytes(bytes(data))
    loads = []
    monkeypatch.setattr(ex, "load_encoder", lambda *a, **k: loads.append(1) or FakeText())
    entry, report = ex.extract(SPEC, get_dataset("openclipart-1024", limit=8), store=store, progress=False)
    assert loads == [1] and not report.cached and "sliced_from" not in entry.manifest
    assert "extracting instead" in capsys.readouterr().err


def test_dry_run_plan_says_a_slice_is_available(tmp_path, monkeypatch):
    monkeypatch.setenv("PLATOBENCH_HOME", str(tmp_path / "home"))
    seed_features(tmp_path / "home", LANG.name, 24)
    setting = Setting(id="t", dataset="openclipart-1024", metric="cka", n_perm=0, n_ci=0)
    opts = RunOptions(out=tmp_path / "r", limit=16, progress=False)
    rows = plan_rows([Job(setting, LANG, VIS)], opts, FeatureStore(tmp_path / "home" / "features"))
    assert [r["cached"] for r in rows] == ["first 16 of 24 cached samples", False]


# ------------------------------------------------------------------------------------- run, records, check


def test_limited_run_slices_warns_marks_records_and_check_reproduces_them(tmp_path, monkeypatch, capsys):
    home = tmp_path / "home"
    monkeypatch.setenv("PLATOBENCH_HOME", str(home))
    seed_features(home, LANG.name, 24, seed=1)
    seed_features(home, VIS.name, 24, seed=2)
    settings = tmp_path / "tiny.yaml"
    settings.write_text(TINY_SETTINGS)
    monkeypatch.setattr(ex, "load_encoder", forbidden)
    out = tmp_path / "results"
    assert main(["run", "--pairs", PAIR, "--settings", "tiny", "--settings-file", str(settings), "--limit", "16",
                 "--out", str(out), "--json"]) == 0
    err = capsys.readouterr().err
    assert err.count("--limit 16: a limited run is for testing only") == 1
    assert err.count("reusing the first 16 of 24 cached samples") == 2  # each model sliced once, not per setting
    records = sorted(out.rglob("*.json"))
    assert len(records) == 2
    for path in records:
        rec = json.loads(path.read_text())
        assert rec["provenance"]["limit"] == 16 and rec["dataset"]["n"] == 16
    assert main(["check", "--results", str(out), "--no-extract", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["counts"]["ok"] == 2


def test_full_run_records_are_not_marked(tmp_path, monkeypatch, capsys):
    home = tmp_path / "home"
    monkeypatch.setenv("PLATOBENCH_HOME", str(home))
    seed_features(home, LANG.name, 24, seed=1)
    seed_features(home, VIS.name, 24, seed=2)
    monkeypatch.setattr("platobench.data.get_dataset", lambda name, limit=None: get_dataset(name, limit=24))
    setting = Setting(id="tiny-cka", dataset="openclipart-1024", metric="cka", n_perm=0, n_ci=0)
    summary = execute([Job(setting, LANG, VIS)], RunOptions(out=tmp_path / "r", progress=False),
                      FeatureStore(home / "features"), scorers())
    assert not summary.failed, summary.failed
    assert json.loads(open(summary.written[0]).read())["provenance"]["limit"] is None
    assert "limited run" not in capsys.readouterr().err


def test_a_limit_that_cut_nothing_leaves_no_stale_mark(tmp_path, monkeypatch, capsys):
    """Same feature entries with and without --limit (the limit cut nothing): the full run rewrites the
    record without `extra.limit` instead of reusing the limited one as up to date."""
    home = tmp_path / "home"
    monkeypatch.setenv("PLATOBENCH_HOME", str(home))
    seed_features(home, LANG.name, 24, seed=1)
    seed_features(home, VIS.name, 24, seed=2)
    monkeypatch.setattr("platobench.data.get_dataset", lambda name, limit=None: get_dataset(name, limit=24))
    setting = Setting(id="tiny-cka", dataset="openclipart-1024", metric="cka", n_perm=0, n_ci=0)
    store = FeatureStore(home / "features")
    limited = execute([Job(setting, LANG, VIS)], RunOptions(out=tmp_path / "r", progress=False, limit=5000),
                      store, scorers())
    assert json.loads(open(limited.written[0]).read())["provenance"]["limit"] == 5000
    full = execute([Job(setting, LANG, VIS)], RunOptions(out=tmp_path / "r", progress=False), store, scorers())
    assert full.written and not full.up_to_date and full.written != limited.written
    assert json.loads(open(full.written[0]).read())["provenance"]["limit"] is None
    again = execute([Job(setting, LANG, VIS)], RunOptions(out=tmp_path / "r", progress=False), store, scorers())
    assert again.up_to_date and not again.written
    # the two records measure the same samples: the folder reads as the full record alone, not two rows
    assert [r.provenance.limit for r in load_records(tmp_path / "r")] == [None]


def test_a_limited_run_never_replaces_the_full_record(tmp_path, monkeypatch, capsys):
    """A `--limit` run in the folder of the full records writes its own file (`--limit-N.json`): the full
    record (N=24 here) stays byte for byte, both load, each on its own samples."""
    home = tmp_path / "home"
    monkeypatch.setenv("PLATOBENCH_HOME", str(home))
    seed_features(home, LANG.name, 24, seed=1)
    seed_features(home, VIS.name, 24, seed=2)
    monkeypatch.setattr("platobench.data.get_dataset", lambda name, limit=None: get_dataset(name, limit=min(limit or 24, 24)))
    setting = Setting(id="tiny-cka", dataset="openclipart-1024", metric="cka", n_perm=0, n_ci=0)
    store, out = FeatureStore(home / "features"), tmp_path / "r"
    full = execute([Job(setting, LANG, VIS)], RunOptions(out=out, progress=False), store, scorers())
    before = open(full.written[0], "rb").read()
    limited = execute([Job(setting, LANG, VIS)], RunOptions(out=out, progress=False, limit=12), store, scorers())
    assert not limited.failed, limited.failed
    assert limited.written == [str(record_path(out, "tiny-cka", LANG.name, VIS.name, 12))]
    assert limited.written[0].endswith("demo--minilm-l6__demo--dinov2-s-imgfocus--limit-12.json")
    assert open(full.written[0], "rb").read() == before
    assert sorted((r.dataset.n, r.provenance.limit) for r in load_records(out)) == [(12, 12), (24, None)]
    # reruns reuse each record from its own file
    for limit in (None, 12):
        again = execute([Job(setting, LANG, VIS)], RunOptions(out=out, progress=False, limit=limit), store, scorers())
        assert again.up_to_date and not again.written


def test_a_limited_record_path_cannot_be_spelled_by_a_full_one(tmp_path):
    """Model names hold no '--' of their own, so `--limit-N` never names another pair's full record."""
    assert record_path(tmp_path, "s", "f/a", "f/b") == tmp_path / "s" / "f--a__f--b.json"
    assert record_path(tmp_path, "s", "f/a", "f/b", 5) == tmp_path / "s" / "f--a__f--b--limit-5.json"
    with pytest.raises(UserError):
        record_path(tmp_path, "s", "f/a", "f/b--limit-5")
    for bad in (0, -1, True, 2.5):
        with pytest.raises(UserError, match="positive integer"):
            record_path(tmp_path, "s", "f/a", "f/b", bad)


def test_check_tries_the_recorded_limit_first():
    assert record_limits(make_record("s", "f/a", "f/b", 0.5, n=40, provenance=Provenance(limit=12))) == [12, 40, None]
    assert record_limits(make_record("s", "f/a", "f/b", 0.5, n=40)) == [40, None]
    with pytest.raises(ValueError, match="must be a number"):  # a limit is a positive integer, never a bool
        Provenance(limit=True)


# ------------------------------------------------------------------------------------- per-class limits


def test_limit_on_a_class_dataset_is_per_class():
    full = get_dataset("openclipart-categories")
    limited = get_dataset("openclipart-categories", limit=12)
    assert set(limited.labels) == set(range(len(full.class_names)))
    assert set(get_dataset("openclipart-categories", limit=128).labels) == set(limited.labels)  # was 13 of 14
    assert limited.ids == first_per_class(full, 12).ids
    counts = [limited.labels.count(c) for c in range(len(full.class_names))]
    assert counts == [min(12, full.labels.count(c)) for c in range(len(full.class_names))]
    order = {sid: i for i, sid in enumerate(full.ids)}
    assert [order[s] for s in limited.ids] == sorted(order[s] for s in limited.ids)  # dataset order kept
    assert limited.name == full.name and limited.revision == full.revision
    assert get_dataset("openclipart-1024", limit=12).ids == get_dataset("openclipart-1024").ids[:12]  # paired: first n


def test_a_bad_limit_is_refused_for_class_datasets_too():
    with pytest.raises(UserError, match="limit=0: expected a positive integer"):
        get_dataset("tuxpaint-categories", limit=0)


def test_zeroshot_inputs_refuse_a_class_without_images(monkeypatch):
    ds = ClassDataset("toy", "v1", ["a", "b"], [0, 0], ["cat", "dog"], ["a {}"], lambda i: None)
    monkeypatch.setattr(zi, "get_dataset", lambda name, **kw: ds)
    setting = Setting(id="zs-toy", kind="zeroshot", dataset="toy", metric="zeroshot_matching", selection="last")
    with pytest.raises(UserError, match=r"setting 'zs-toy': 1 class\(es\) of 'toy' have no images \('dog'\)"):
        zi.zeroshot_inputs(setting)


def test_zs_openclipart_limit_keeps_every_class():
    setting = Setting(id="zs-oc", kind="zeroshot", dataset="openclipart-categories", metric="zeroshot_matching",
                      selection="last", options={"templates": "openclipart"})
    ds, prompts = zi.zeroshot_inputs(setting, 12)
    assert set(ds.labels) == set(range(len(ds.class_names))) and len(ds) <= 12 * len(ds.class_names)
    assert len(set(prompts.classes)) == len(ds.class_names)


# ------------------------------------------------------------------------------------- inputs first


def test_every_settings_inputs_are_built_before_any_model_runs(tmp_path, monkeypatch, capsys):
    events = []

    def fake_extract(spec, data, **kw):
        events.append("extract")
        raise RuntimeError("stop here")

    monkeypatch.setattr(runner, "extract", fake_extract)
    good = Setting(id="good", dataset="openclipart-1024", metric="cka", n_perm=0, n_ci=0)
    bad = Setting(id="bad", kind="zeroshot", dataset="openclipart-categories", metric="zeroshot_matching",
                  selection="last", options={"templates": "no-such-templates"})
    real = zi.get_dataset

    def watched(name, **kw):
        try:
            return real(name, **kw)
        except UserError:
            events.append("inputs failed")
            raise

    monkeypatch.setattr(zi, "get_dataset", watched)
    summary = execute([Job(good, LANG, VIS), Job(bad, LANG, VIS)],
                      RunOptions(out=tmp_path / "r", limit=12, progress=False), FeatureStore(tmp_path / "f"), scorers())
    assert events[0] == "inputs failed" and "extract" in events
    assert "setting bad (text x vision pairs): inputs cannot be built" in capsys.readouterr().err
    assert set(summary.failed) == {f"good: {LANG.name} x {VIS.name}", f"bad: {LANG.name} x {VIS.name}"}
    assert "no-such-templates" in summary.failed[f"bad: {LANG.name} x {VIS.name}"]


def test_a_missing_caption_index_fails_before_extraction(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "extract", forbidden)
    setting = Setting(id="cap9", dataset="openclipart-1024", metric="cka", caption_index=9, n_perm=0, n_ci=0)
    summary = execute([Job(setting, LANG, VIS)], RunOptions(out=tmp_path / "r", limit=12, progress=False),
                      FeatureStore(tmp_path / "f"), scorers())
    assert "caption index 9 does not exist" in summary.failed[f"cap9: {LANG.name} x {VIS.name}"]


def test_the_inputs_memo_is_keyed_by_the_limit():
    """One memo serves runs of several --limit values (check rebuilds a record's inputs at its own limit):
    a dataset built at one limit is never handed out for another."""
    from platobench.bench.runner import job_inputs
    from platobench.bench.settings import Catalog

    setting, memo = Catalog().settings["demo-mknn"], {}
    sizes = [len(job_inputs(setting, limit, memo).dataset) for limit in (24, 32, 24)]  # limits it can score
    assert sizes == [24, 32, 24] and len(memo) == 2


def test_a_record_drawn_under_an_older_interval_scheme_is_recomputed(tmp_path, monkeypatch):
    """Same inputs and setting, but the record's interval states a scheme this version no longer draws for
    its metric (mutual kNN's half-subsets, before the rate scheme): the run recomputes it."""
    home = tmp_path / "home"
    monkeypatch.setenv("PLATOBENCH_HOME", str(home))
    seed_features(home, LANG.name, 24, seed=1)
    seed_features(home, VIS.name, 24, seed=2)
    monkeypatch.setattr("platobench.data.get_dataset", lambda name, limit=None: get_dataset(name, limit=24))
    setting = Setting(id="tiny-mknn", dataset="openclipart-1024", metric="mutual_knn", params={"k": 3}, n_perm=5,
                      n_ci=4)
    store, out = FeatureStore(home / "features"), tmp_path / "r"
    first = execute([Job(setting, LANG, VIS)], RunOptions(out=out, progress=False), store, scorers())
    record = load_record(first.written[0])
    assert record.ci.scheme == "arcsine_rate"
    assert execute([Job(setting, LANG, VIS)], RunOptions(out=out, progress=False), store, scorers()).up_to_date
    older = record.model_copy(update={"ci": record.ci.model_copy(update={"scheme": "subsample", "rate": None,
                                                                          "draws": record.ci.draws[:4]})})
    write_record(out, older)
    again = execute([Job(setting, LANG, VIS)], RunOptions(out=out, progress=False), store, scorers())
    assert again.written and not again.up_to_date
    assert load_record(again.written[0]).ci.scheme == "arcsine_rate"
