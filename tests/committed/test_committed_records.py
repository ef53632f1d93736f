"""Checks of the committed data: every record under results/ loads, is written back byte for byte, is
schema 2 and equal to its schema-1 original upgraded, and stores its built-in setting verbatim.
(tests/committed/test_demo_regression.py recomputes a subset of them from re-extracted features.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from platobench.bench.settings import Catalog
from platobench.metrics.resampling import subset_se, t_quantile
from platobench.results import load_record, load_records, load_records_checked, record_files, write_record

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results" / "offline"
V1 = ROOT / "tests" / "bench" / "records_v1"  # schema-1 records as `make board` and `stitch` wrote them
V2 = ROOT / "tests" / "bench" / "records_v2"  # schema-2 records as they were committed before schema 3


def test_every_committed_record_loads():
    records, problems = load_records_checked(RESULTS)
    assert problems == [] and len(records) == len(list(RESULTS.rglob("*.json")))
    assert len(load_records(RESULTS)) == len(records)
    behind_reports = ROOT / "reports" / "jepa-compare" / "records"  # the records a report is rebuilt from
    records, problems = load_records_checked(behind_reports)
    assert problems == [] and len(records) == len(list(behind_reports.rglob("*.json"))) >= 18
    assert all(r.schema_version == 3 for r in records)


def test_rewriting_committed_records_is_byte_identical(tmp_path):
    paths = sorted(RESULTS.rglob("*.json"))
    assert len(paths) > 100
    for src in paths:
        written = write_record(tmp_path, load_record(src))
        assert written.read_bytes() == src.read_bytes(), src


def test_committed_records_store_the_builtin_settings_verbatim():
    catalog = Catalog()
    records = load_records(RESULTS)
    assert len(records) > 50
    for record in records:
        assert catalog.settings[record.setting].model_dump(mode="json") == record.provenance.setting_config, record.setting


def test_every_committed_record_is_schema_3_and_equals_its_older_originals_upgraded():
    """Each record was rewritten once by the upgrader (schema 1 -> 2 -> 3): the originals kept under
    tests/bench/records_v1 and records_v2 load to the same record, and to the committed one where it was not
    recomputed since (a recomputed one keeps their measurement)."""
    files = record_files(ROOT / "results")
    assert len(files) >= 298 and all(json.loads(p.read_text())["schema_version"] == 3 for p in files)
    offline = ROOT / "results" / "offline"
    assert load_record(V1 / "paired.json") == load_record(V2 / "paired.json")
    assert load_record(ROOT / "results" / "stitch" / "stitch-tuxpaint" / "demo--minilm-l6__demo--dinov2-s-imgfocus.json") \
        == load_record(V2 / "stitch.json")
    # the paired records were recomputed after the rewrite (2026-12-06) to state their subset and permutation
    # draws; the zero-shot ones with 39 seeds (their v2 original is checked for its upgrade alone, in
    # tests/bench/test_any_modality.py). A recomputed record keeps its original's measurement (its sides now
    # restate their loader and disclosures too):
    def side(ref):
        return (ref.name, ref.revision, ref.params_m, ref.kind, ref.modality, ref.input)

    now, then = load_record(offline / "demo-mknn" / "demo--minilm-l6__demo--dinov2-s-imgfocus.json"), load_record(V2 / "paired.json")
    assert (now.setting, side(now.x), side(now.y), now.dataset, now.layers) == (
        then.setting, side(then.x), side(then.y), then.dataset, then.layers)
    assert now.score == pytest.approx(then.score, abs=1e-7) and now.null.p_value == then.null.p_value
    # mutual kNN records were recomputed again for the rate scheme (2026-12-07): its first B subsets are
    # the half-subsets of the original's interval, which they give back under the subsample rule
    half = now.ci.draws[: len(now.ci.draws) // 2] if now.ci.scheme in ("rate", "arcsine_rate") else now.ci.draws
    spread = t_quantile(now.ci.level, len(half) - 1) * subset_se(half, "subsample", now.dataset.n, now.ci.subset_size)
    bounds = (max(now.score - spread, 0.0), min(now.score + spread, 1.0))
    assert bounds == pytest.approx((then.ci.lo, then.ci.hi), abs=1e-4)
    assert then.ci.draws is None and now.ci.draws is not None and now.null.draws is not None
    # a control whose lists tie (captions of equal length) was measured anew when ties began to count by their
    # expected overlap (2026-12-07): the lower-index rule gave .041, the expectation .0305 (reports/offline-board.md)
    now = load_record(offline / "demo-mknn" / "baseline--caption-length__baseline--colour-histogram.json")
    then = load_record(V2 / "paired_tolerance.json")
    assert then.metric.params.get("ties") is None and now.metric.params["ties"] == "expected"
    assert then.score == pytest.approx(0.041, abs=5e-4) and now.score == pytest.approx(0.0305, abs=5e-4)
    assert now.details["tie_share"]["x"] == [pytest.approx(0.8727, abs=1e-4)]
