"""The statistics of a run are estimated before any model runs: above 2 hours `run` asks for --yes,
above 7 days it refuses; long nulls and intervals show a progress bar (only when asked: a terminal, not
--json). No model is loaded: the refusals come before any extraction."""

from __future__ import annotations

import pytest
import torch

from platobench.bench import runner
from platobench.bench.cost import CONFIRM_S, MAX_S, JobCost, check_cost, paired_cost, zeroshot_cost
from platobench.cli import main
from platobench.errors import UserError
from platobench.metrics import stats

PAIR = "demo/minilm-l6:demo/dinov2-s-imgfocus"


def forbidden(*a, **k):
    raise AssertionError("no model may be loaded")


def run(tmp_path, monkeypatch, capsys, setting: str, *extra: str) -> tuple[int, str]:
    monkeypatch.setenv("PLATOBENCH_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(runner, "extract", forbidden)
    path = tmp_path / "mine.yaml"
    path.write_text(f"settings:\n  mine: {setting}\n")
    code = main(["run", "--pairs", PAIR, "--settings", "mine", "--settings-file", str(path), "--limit", "24",
                 "--out", str(tmp_path / "out"), "--json", *extra])
    return code, capsys.readouterr().err


@pytest.mark.parametrize("counts", ["n_perm: 10000000", "n_ci: 10000000"])
def test_ten_million_draws_on_24_samples_ask_for_yes_with_an_estimate(tmp_path, monkeypatch, capsys, counts):
    code, err = run(tmp_path, monkeypatch, capsys, f"{{dataset: openclipart-1024, metric: cka, {counts}}}")
    assert code == 2 and "estimated at ~" in err and "pass --yes" in err
    assert f"mine: {PAIR.replace(':', ' x ')}" in err and not (tmp_path / "out").exists()


def test_over_the_hard_cap_even_yes_is_refused(tmp_path, monkeypatch, capsys):
    code, err = run(tmp_path, monkeypatch, capsys, "{dataset: openclipart-1024, metric: cka, n_ci: 1000000000}", "--yes")
    assert code == 2 and "over the limit of 7 days" in err


def test_zeroshot_restarts_are_counted(tmp_path, monkeypatch, capsys):
    setting = ("{kind: zeroshot, dataset: fashion-mnist, metric: zeroshot_matching, selection: last, "
               "options: {templates: fashion-mnist, restarts: 10000000, per_class: 2}}")
    code, err = run(tmp_path, monkeypatch, capsys, setting)
    assert code == 2 and "pass --yes" in err and "restarts" in err


def test_dry_run_states_the_estimate(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PLATOBENCH_HOME", str(tmp_path / "home"))
    path = tmp_path / "mine.yaml"
    path.write_text("settings:\n  mine: {dataset: openclipart-1024, metric: cka, n_perm: 10000000}\n")
    assert main(["run", "--pairs", PAIR, "--settings", "mine", "--settings-file", str(path), "--limit", "24",
                 "--dry-run"]) == 0
    assert "statistics (nulls, intervals, restarts) of the records to compute: ~" in capsys.readouterr().out


def test_the_gate_and_the_cost_model():
    cheap = paired_cost("a", "cka", 1024, 91, 20, 768, 100, 50, 0.5)
    assert 0 < cheap.seconds < CONFIRM_S and cheap.evaluations == 91 * 151
    assert check_cost([cheap], confirmed=False) == cheap.seconds
    costly = JobCost("b", 1e9, 2 * CONFIRM_S)
    with pytest.raises(UserError, match="pass --yes"):
        check_cost([cheap, costly], confirmed=False)
    assert check_cost([costly], confirmed=True) == 2 * CONFIRM_S
    with pytest.raises(UserError, match="over the limit"):
        check_cost([JobCost("c", 1e12, 2 * MAX_S)], confirmed=True)
    slow = paired_cost("d", "rotation_residual_heldout", 1024, 1, 2, 768, 100, 0, 0.5)
    assert slow.seconds > paired_cost("e", "cka", 1024, 1, 2, 768, 100, 0, 0.5).seconds
    assert zeroshot_cost("f", "faq", 10, 1, 5, 10**7).seconds > CONFIRM_S
    half = paired_cost("g", "mutual_knn", 1024, 91, 20, 768, 100, 50, 0.5, "subsample")
    rate = paired_cost("g", "mutual_knn", 1024, 91, 20, 768, 100, 50, 0.5, "rate")  # and 50 quarter-subsets
    assert rate.evaluations == half.evaluations + 91 * 50 and half.seconds < rate.seconds < 1.5 * half.seconds


def test_long_nulls_and_intervals_show_a_bar_when_asked(monkeypatch):
    shown = []

    def bar(iterable, **kwargs):
        shown.append((kwargs["desc"], kwargs["disable"]))
        return iterable

    monkeypatch.setattr(stats, "tqdm", bar)
    gen = torch.Generator().manual_seed(0)
    xs, ys = [torch.randn(12, 4, generator=gen)], [torch.randn(12, 5, generator=gen)]
    stats.permutation_null("cka", xs, ys, n_perm=3)
    stats.subsample_ci("cka", xs, ys, n_sub=3)
    with stats.draw_bars(True):
        stats.permutation_null("cka", xs, ys, n_perm=3)
        stats.subsample_ci("cka", xs, ys, n_sub=3)
    stats.permutation_null("cka", xs, ys, n_perm=3, progress=True)
    assert shown == [("null cka", True), ("interval cka", True), ("null cka", False), ("interval cka", False),
                     ("null cka", False)]


def test_the_committed_offline_board_runs_without_yes_and_is_estimated_within_a_factor_of_two():
    from pathlib import Path

    from platobench.bench.pairs import resolve_pairs
    from platobench.bench.settings import Catalog
    from platobench.results import load_records
    from platobench.zoo import load_zoo

    catalog, zoo = Catalog(), load_zoo()
    jobs = [runner.Job(s, a, b) for s in catalog.resolve_settings("offline") for a, b in resolve_pairs("offline", catalog, zoo)]
    estimate = check_cost(runner.plan_costs(jobs, runner.RunOptions(out=Path("unused"))), confirmed=False)
    offline = {s.id for s in catalog.resolve_settings("offline")}  # the folder holds other groups' records too
    measured = sum(r.runtime_s for r in load_records(Path(__file__).resolve().parents[2] / "results" / "offline")
                   if r.setting in offline)
    assert measured / 2 < estimate < 2 * measured
