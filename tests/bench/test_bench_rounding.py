"""kNN records measure their own sensitivity to float rounding (bench/scoring.py `rounding_sensitivity`),
and `check --perturb` / a record's stated tolerance behave as documented (bench/check.py)."""

from __future__ import annotations

import torch
from bench_fixtures import make_record

from platobench.bench.check import record_tolerance
from platobench.bench.scoring import MAX_ROUNDING_TOLERANCE, score_paired
from platobench.bench.settings import Setting
from platobench.results import DatasetRef, Reproducibility
from platobench.zoo import load_zoo

ZOO = load_zoo()
LANG, VIS = ZOO.get("demo/minilm-l6"), ZOO.get("demo/efficientnet-lite0")


def _score(setting: Setting, xs: list[torch.Tensor], ys: list[torch.Tensor]):
    ds = DatasetRef(name="synthetic", revision="r", n=len(xs[0]), fingerprint="f" * 64)
    return score_paired(setting, LANG, VIS, xs, ys, ds, inputs={})


def _setting(metric: str = "mutual_knn", **kw) -> Setting:
    params = {"k": 5} if metric == "mutual_knn" else {}
    return Setting(id="t", dataset="x", metric=metric, params=params, preprocess="l2", **{"n_perm": 0, "n_ci": 0, **kw})


def test_distinct_samples_are_insensitive_to_rounding():
    g = torch.Generator().manual_seed(0)
    z = torch.randn(200, 6, generator=g)
    xs = [z @ torch.randn(6, 32, generator=g) + 0.3 * torch.randn(200, 32, generator=g) for _ in range(2)]
    ys = [z @ torch.randn(6, 24, generator=g) + 0.3 * torch.randn(200, 24, generator=g) for _ in range(2)]
    record = _score(_setting(), xs, ys)
    assert record.reproducibility.rounding.max_change < 5e-4
    assert record.reproducibility is not None and record.reproducibility.check_tolerance is None


def test_exact_duplicates_make_knn_depend_on_rounding_and_the_record_says_so():
    # 40 distinct captions, each repeated 5 times: the text side ties exactly within each group, so which
    # of the tied samples are neighbours is decided by the noise.
    g = torch.Generator().manual_seed(1)
    base = torch.randn(40, 16, generator=g)
    xs = [base.repeat_interleave(5, dim=0)]
    ys = [torch.randn(200, 16, generator=g)]
    record = _score(_setting(), xs, ys)
    moved = record.reproducibility.rounding.max_change
    assert moved > 5e-4
    assert record.reproducibility.check_tolerance >= 2 * moved * 0.95
    assert "near ties" in record.reproducibility.check_tolerance_why


def test_continuous_metrics_are_not_perturbed():
    g = torch.Generator().manual_seed(2)
    record = _score(_setting("cka"), [torch.randn(50, 8, generator=g)], [torch.randn(50, 8, generator=g)])
    assert record.reproducibility is None


def test_record_tolerance_comes_from_the_recomputation_never_the_record():
    plain = make_record("demo-mknn", "demo/minilm-l6", "demo/efficientnet-lite0", 0.2)
    assert record_tolerance(plain, plain, 1e-3) == (1e-3, None)
    measured = make_record("demo-mknn", "demo/minilm-l6", "demo/efficientnet-lite0", 0.2,
                           reproducibility=Reproducibility(check_tolerance=0.004, check_tolerance_why="ties"))
    tol, note = record_tolerance(measured, measured, 1e-3)
    assert tol == 0.004 and "near ties" in note and "not used" not in note
    # a record that states a wide tolerance gets the one measured on the recomputation
    cheat = make_record("demo-mknn", "demo/minilm-l6", "demo/efficientnet-lite0", 0.2,
                        reproducibility=Reproducibility(check_tolerance=1.0))
    tol, note = record_tolerance(cheat, plain, 1e-3)
    assert tol == 1e-3 and "states check_tolerance 1.0; not used" in note
    # a measured tolerance is capped by the bound
    wild = make_record("demo-mknn", "demo/minilm-l6", "demo/efficientnet-lite0", 0.2,
                       reproducibility=Reproducibility(check_tolerance=0.5))
    tol, note = record_tolerance(wild, wild, 1e-3)
    assert tol == MAX_ROUNDING_TOLERANCE and "capped" in note


def test_record_says_how_its_interval_was_made_and_what_it_is_for():
    """ci.method names the scheme the metric declares; ci.estimand what the interval covers."""
    g = torch.Generator().manual_seed(2)
    z = torch.randn(80, 4, generator=g)
    xs = [z @ torch.randn(4, 8, generator=g) + torch.randn(80, 8, generator=g)]
    ys = [z @ torch.randn(4, 6, generator=g) + torch.randn(80, 6, generator=g)]
    knn = _score(_setting(n_ci=6), xs, ys).ci
    assert knn.estimand == "expected_at_n" and knn.method.startswith(
        "rate-corrected subsampling without replacement: 6 subsets of 0.5 N and 6 of 0.25 N")
    assert knn.scheme == "arcsine_rate" and len(knn.draws) == 12 and 1 <= knn.rate <= 2
    cka = _score(_setting("cka", n_ci=6), xs, ys).ci
    assert cka.estimand == "population" and cka.method.startswith("subsampling without replacement: 6 subsets of 0.5 N")
    biased = _score(Setting(id="t", dataset="x", metric="cka", params={"estimator": "biased"}, preprocess="l2",
                            n_perm=0, n_ci=6), xs, ys).ci
    assert biased.estimand == "expected_at_n"
    assert cka.lo < _score(_setting("cka", n_ci=6), xs, ys).score < cka.hi


def test_the_metric_declares_whether_its_records_measure_rounding(monkeypatch):
    """A plugin metric gets the rounding measurement from its own `neighbour_sets` declaration, not from a
    list of names elsewhere: the same kNN combiner registered under a new id is measured only when it says
    it is built on neighbour sets."""
    import dataclasses

    from platobench.metrics import registry

    mutual = registry.get_metric("mutual_knn")
    for flag in (True, False):
        plugin = dataclasses.replace(mutual, id=f"plugin_knn_{flag}", neighbour_sets=flag)
        monkeypatch.setitem(registry.METRICS._entries, plugin.id, plugin)
    g = torch.Generator().manual_seed(1)
    z = torch.randn(60, 4, generator=g)
    xs, ys = [z @ torch.randn(4, 8, generator=g)], [z @ torch.randn(4, 6, generator=g)]
    measured = _score(_setting().model_copy(update={"metric": "plugin_knn_True"}), xs, ys)
    silent = _score(_setting().model_copy(update={"metric": "plugin_knn_False"}), xs, ys)
    assert measured.reproducibility is not None and silent.reproducibility is None
    assert measured.score == silent.score == _score(_setting(), xs, ys).score
