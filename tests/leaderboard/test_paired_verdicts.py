"""Paired verdicts and ranks (platobench/leaderboard/paired.py, verdicts.py) from the subset scores and null
draws records state, the resampling helpers they use (platobench/metrics/resampling.py), and the rules
that keep a record's draws honest (consistency, check)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from platobench.bench.check import judge_again
from platobench.bench.check_fields import Outcome, compare
from platobench.bench.scoring import score_paired
from platobench.bench.settings import Setting
from platobench.leaderboard import verdicts as vd
from platobench.leaderboard.consistency import inconsistencies
from platobench.leaderboard.paired import calibrated_difference, raw_difference, record_ranks, unpaired_reason
from platobench.leaderboard.ranks import tie_ranks
from platobench.metrics.resampling import (
    linearised,
    paired_difference,
    rate_exponent,
    subset_se,
    t_quantile,
)
from platobench.metrics.stats import permutation_null, subsample_ci, subset_draws
from platobench.results import DatasetRef, IntervalRef, MetricRef, NullRef, Provenance, ResultRecord, SideRef
from platobench.zoo import load_zoo

V = "demo/dinov2-s-imgfocus"
N, B, SIZE = 644, 20, 322
CONFIG = {"id": "demo-mknn", "kind": "paired", "seed": 0, "n_ci": B, "ci_fraction": 0.5, "description": "d"}
SHARED = np.random.default_rng(0).standard_normal(B)  # what every record's subsets share (the samples)
NULL = np.random.default_rng(1).standard_normal(100)


def drawn(x: str, y: str, score: float, *, shared: float = 0.02, own: float = 0.002, seed: int = 0,
          config: dict | None = None) -> ResultRecord:
    """A mutual kNN record of demo-mknn whose interval and null follow from the draws it states: subset
    scores score + shared * SHARED + own * (its own noise), null draws 0.016 + 0.002 * NULL."""
    subsets = score + shared * SHARED + own * np.random.default_rng(100 + seed).standard_normal(B)
    half = t_quantile(0.95, B - 1) * subset_se(subsets, "subsample", N, SIZE)
    null = 0.016 + 0.002 * NULL
    mean = float(null.mean())
    return ResultRecord(
        setting="demo-mknn",
        metric=MetricRef(id="mutual_knn", params={"k": 10}, preprocess="prh", selection="best", higher_is_better=True),
        x=SideRef(name=x, modality="text", input="caption:0"),
        y=SideRef(name=y, modality="vision", input="image"),
        dataset=DatasetRef(name="tuxpaint", revision="r", n=N, fingerprint="f" * 64),
        score=score, chance=10 / (N - 1),
        null=NullRef(mean=mean, std=float(null.std(ddof=1)), p_value=(1 + int((null >= score).sum())) / 101, n_perm=100,
                     seed=0, draws=null.tolist()),
        calibrated=(score - mean) / (1 - mean),
        ci=IntervalRef(lo=max(0.0, score - half), hi=min(1.0, score + half), level=0.95, method="test",
                       estimand="expected_at_n", scheme="subsample", subset_size=SIZE, draws=subsets.tolist()),
        provenance=Provenance(setting_config=config or CONFIG), runtime_s=0.1,
    )


# -- resampling helpers ------------------------------------------------------------------------------------

def test_subset_se_follows_each_scheme_closed_form():
    s = np.array([0.1, 0.3, 0.2, 0.4])
    dev = ((s - s.mean()) ** 2).sum()
    assert subset_se(s, "jackknife", 100, 75) == pytest.approx(math.sqrt(3 / 4 * dev))
    assert subset_se(s, "subsample", 100, 25) == pytest.approx(math.sqrt(dev / 3) * math.sqrt(25 / 75))
    with pytest.raises(ValueError, match="scheme"):
        subset_se(s, "bootstrap", 100, 50)


def test_a_paired_difference_cancels_what_both_scores_share():
    g = np.random.default_rng(0)
    shared, own = g.standard_normal(B), g.standard_normal(B)
    a, b = 0.30 + 0.05 * shared + 0.001 * own, 0.28 + 0.05 * shared
    d = paired_difference((0.30, 0.28), (a, b), "subsample", N, SIZE)
    assert d.diff == pytest.approx(0.02)
    assert d.se == pytest.approx(subset_se(0.001 * own, "subsample", N, SIZE))  # the shared part is gone
    assert d.se < 0.1 * subset_se(a, "subsample", N, SIZE)
    assert d.p_greater < 1e-6 and d.p_less > 1 - 1e-6 and d.df == B - 1


def test_rate_subset_se_follows_its_closed_form():
    large, small = np.array([0.1, 0.4, 0.2, 0.3]), np.array([0.0, 0.5, 0.1, 0.6])
    s = np.concatenate([large, small])
    vl, vs = float(large.var(ddof=1)), float(small.var(ddof=1))
    assert subset_se(s, "rate", 100, 50, 1.0) == pytest.approx(math.sqrt((vl / 1 + vs / 3) / 2))
    assert subset_se(s, "rate", 100, 50, 2.0) == pytest.approx(math.sqrt((vl / 3 + vs / 15) / 2))
    assert subset_se(s, "rate", 100, 40, 1.5) == pytest.approx(math.sqrt((vl / (2.5**1.5 - 1) + vs / (5**1.5 - 1)) / 2))
    with pytest.raises(ValueError, match="got 3 scores"):
        subset_se(s[:3], "rate", 100, 50, 1.0)
    with pytest.raises(ValueError, match="only they"):
        subset_se(s, "rate", 100, 50)
    with pytest.raises(ValueError, match="only they"):
        subset_se(s, "subsample", 100, 50, 1.0)
    with pytest.raises(ValueError, match="outside"):
        subset_se(s, "rate", 100, 50, 0.5)


def test_rate_exponent_inverts_the_variance_ratio_and_keeps_its_bounds():
    for a in (1.0, 1.3, 1.585, 2.0):  # half- and quarter-subsets: the ratio is 2^a + 1
        assert rate_exponent(2**a + 1, 644, 322, 161) == pytest.approx(a, abs=1e-9)
    n, m, small = 1000, 300, 150  # other sizes: ((N/m')^a - 1) / ((N/m)^a - 1)
    assert rate_exponent(((n / small) ** 1.4 - 1) / ((n / m) ** 1.4 - 1), n, m, small) == pytest.approx(1.4, abs=1e-9)
    assert rate_exponent(2.0, 644, 322, 161) == 1.0 and rate_exponent(9.0, 644, 322, 161) == 2.0
    assert rate_exponent(math.nan, 644, 322, 161) == 1.0  # unknown: the wider interval
    with pytest.raises(ValueError):
        rate_exponent(3.0, 644, 161, 322)


def test_rate_exponent_of_a_sample_mean_is_one():
    """Known answer: the mean of m of N iid values has subset variance sigma^2 (1/m - 1/N), a = 1 exactly."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(400)
    var = [np.var([x[rng.choice(400, m, replace=False)].mean() for _ in range(16000)], ddof=1) for m in (200, 100)]
    assert rate_exponent(var[1] / var[0], 400, 200, 100) == pytest.approx(1.0, abs=0.1)


def test_a_rate_difference_scales_each_score_by_its_own_rate():
    a, b = 0.3 + 0.01 * SHARED, 0.28 + 0.01 * SHARED[::-1]
    same = paired_difference((0.30, 0.28), (a, b), "rate", N, SIZE, rates=(1.5, 1.5))
    assert same.se == pytest.approx(subset_se(a - b, "rate", N, SIZE, 1.5)) and same.df == B // 2 - 1
    # against a constant score, the difference's standard error is the other score's own, at its own rate
    const = np.full(B, 0.1)
    assert paired_difference((0.3, 0.1), (a, const), "rate", N, SIZE, rates=(1.2, 1.8)).se == pytest.approx(
        subset_se(a, "rate", N, SIZE, 1.2))
    f = lambda r, m: math.sqrt((N / m) ** r - 1)  # noqa: E731
    half = B // 2
    scaled = np.concatenate([a[:half] / f(1.2, SIZE) - b[:half] / f(1.8, SIZE),
                             a[half:] / f(1.2, SIZE // 2) - b[half:] / f(1.8, SIZE // 2)])
    mixed = paired_difference((0.30, 0.28), (a, b), "rate", N, SIZE, rates=(1.2, 1.8))
    assert mixed.se == pytest.approx(math.sqrt((scaled[:half].var(ddof=1) + scaled[half:].var(ddof=1)) / 2))
    with pytest.raises(ValueError, match="two exponents"):
        paired_difference((0.30, 0.28), (a, b), "rate", N, SIZE)


def test_arcsine_rate_se_is_the_rate_se_on_phi_times_the_delta_slope():
    s = 0.6 + 0.05 * np.concatenate([SHARED, 1.4 * SHARED[::-1]])
    phi, obs = np.arcsin(np.sqrt(s)), 0.62
    slope = math.sin(2 * math.asin(math.sqrt(obs)))  # d score / d phi at the observed score
    assert subset_se(s, "arcsine_rate", N, SIZE, 1.3, observed=obs) == pytest.approx(
        subset_se(phi, "rate", N, SIZE, 1.3) * slope, rel=1e-12)
    lin, scheme = linearised(s, "arcsine_rate", obs)
    assert scheme == "rate" and subset_se(lin, "rate", N, SIZE, 1.3) == pytest.approx(
        subset_se(s, "arcsine_rate", N, SIZE, 1.3, observed=obs), rel=1e-12)
    assert linearised(s, "rate", obs)[1] == "rate" and np.array_equal(linearised(s, "rate", obs)[0], s)
    for bound in (0.0, 1.0):  # the slope vanishes there: the raw draws, never a zero-width interval
        raw = subset_se(s, "rate", N, SIZE, 1.3)
        assert raw > 0 and subset_se(s, "arcsine_rate", N, SIZE, 1.3, observed=bound) == pytest.approx(raw, rel=1e-12)
    with pytest.raises(ValueError, match="takes the observed score"):
        subset_se(s, "arcsine_rate", N, SIZE, 1.3)
    with pytest.raises(ValueError, match="takes the observed score"):
        subset_se(s, "rate", N, SIZE, 1.3, observed=obs)
    with pytest.raises(ValueError, match="only they"):
        subset_se(s, "arcsine_rate", N, SIZE, observed=obs)


def test_arcsine_rate_gives_the_binomial_standard_error_of_a_proportion():
    """Known answer: the share of N iid Bernoulli(p) hits has standard error sqrt(p (1 - p) / N); its
    subsets' arcsin(sqrt) variances fall like 1 / m (a = 1), and the scheme returns that standard error."""
    rng = np.random.default_rng(0)
    n = 400
    hits = (rng.random(n) < 0.9).astype(np.float64)
    draws = np.concatenate([[hits[rng.choice(n, m, replace=False)].mean() for _ in range(8000)] for m in (200, 100)])
    phi = np.arcsin(np.sqrt(draws))
    a = rate_exponent(float(phi[8000:].var(ddof=1) / phi[:8000].var(ddof=1)), n, 200, 100)
    assert a == pytest.approx(1.0, abs=0.1)
    p = hits.mean()
    assert subset_se(draws, "arcsine_rate", n, 200, a, observed=p) == pytest.approx(math.sqrt(p * (1 - p) / n),
                                                                                     rel=0.05)


def test_an_arcsine_rate_difference_linearises_each_score_at_its_own():
    a = 0.6 + 0.03 * np.concatenate([SHARED, SHARED[::-1]])
    b = 0.4 + 0.02 * np.concatenate([SHARED[::-1], SHARED])
    got = paired_difference((0.61, 0.41), (a, b), "arcsine_rate", N, SIZE, rates=(1.2, 1.6))
    want = paired_difference((0.61, 0.41), (linearised(a, "arcsine_rate", 0.61)[0], linearised(b, "arcsine_rate", 0.41)[0]),
                             "rate", N, SIZE, rates=(1.2, 1.6))
    assert got.se == pytest.approx(want.se, rel=1e-12) and got.df == B - 1
    const = np.full(2 * B, 0.4)  # against a constant score: the other score's own standard error
    assert paired_difference((0.61, 0.4), (a, const), "arcsine_rate", N, SIZE, rates=(1.2, 1.6)).se == pytest.approx(
        subset_se(a, "arcsine_rate", N, SIZE, 1.2, observed=0.61), rel=1e-12)


def test_equal_and_shifted_draws_give_the_exact_p_values():
    a = np.arange(B) / 64  # binary fractions: a + 0.25 - a is exactly 0.25
    same = paired_difference((0.25, 0.25), (a, a), "jackknife", N, 600)
    assert same.se == 0 and same.p_greater == 1 and same.p_less == 1
    shifted = paired_difference((0.5, 0.25), (a + 0.25, a), "jackknife", N, 600)
    assert shifted.p_greater == 0 and shifted.p_less == 1


# -- verdicts ----------------------------------------------------------------------------------------------

def board() -> list[ResultRecord]:
    """One control (bag-of-words x V) and three real rows. Every interval is about +-.04 wide (the shared
    subset noise) and the rows lie within .02 of the control: overlapping intervals, but the paired
    differences tell them apart."""
    return [
        drawn("baseline/bag-of-words", V, 0.100, seed=0),
        drawn("demo/minilm-l6", V, 0.120, seed=1),  # +.02 on shared noise: beats
        drawn("demo/mpnet-base", V, 0.1002, seed=2),  # the control's score: no evidence
        drawn("demo/smollm2-135m", V, 0.080, seed=3),  # -.02: below
    ]


def texts(records, pool=None) -> dict[str, str]:
    return {k: v.text for k, v in vd.verdicts(records, pool).items()}


def test_paired_verdicts_separate_rows_whose_intervals_overlap():
    records = board()
    control, beats, same, below = records
    assert beats.ci.lo < control.ci.hi and below.ci.hi > control.ci.lo  # the overlap rule would say "within"
    got = vd.verdicts(records)
    assert got[beats.pair_id].text == vd.BEATS
    assert got[same.pair_id].text == vd.NO_DIFFERENCE
    assert got[below.pair_id].text == vd.BELOW
    assert got[control.pair_id].text == vd.BASELINE
    assert got[beats.pair_id].controls == (control.pair_id,) and got[beats.pair_id].binding == control.pair_id
    assert got[beats.pair_id].rule == vd.PAIRED and got[beats.pair_id].p <= 0.05 < got[same.pair_id].p
    sentence = vd.board_sentence(records)
    assert sentence.startswith("1 of 3 real pairs beat every matched baseline, 1 are below one and 1 show no evidence")
    assert "each pair against its own matched controls at alpha = 0.05, not adjusted across the board" in sentence


def test_a_row_must_beat_every_matched_control():
    records = board()
    stronger = drawn("demo/minilm-l6", "baseline/colour-histogram", 0.125, seed=4)  # shares minilm-l6's x side
    got = vd.verdicts([*records, stronger])
    assert got[records[1].pair_id].text == vd.NO_DIFFERENCE
    assert set(got[records[1].pair_id].controls) == {records[0].pair_id, stronger.pair_id}


def test_a_verdict_belongs_to_its_pair_whoever_else_joins_the_board():
    """A row that beats its control at p ~ .02 keeps its verdict and its p-value among 40 rows as close as
    itself (a board-wide Holm adjustment would have taken it away), and records of other boards (another
    setting, another sample set) are never its controls."""
    control = drawn("baseline/bag-of-words", V, 0.100, own=0.004, seed=0)
    alone = [control, drawn("demo/minilm-l6", V, 0.114, own=0.004, seed=1)]
    mine = vd.judge(alone[1], alone)
    assert 0.002 < mine.p < 0.05 and mine.text == vd.BEATS
    crowd = [*alone, *(drawn(f"demo/m{i}", V, 0.100, own=0.004, seed=10 + i) for i in range(40))]
    assert vd.judge(alone[1], crowd) == mine
    elsewhere = [c.model_copy(update={"setting": "demo-cka"}) for c in alone[:1]] + [
        control.model_copy(update={"dataset": control.dataset.model_copy(update={"fingerprint": "e" * 64})})]
    assert vd.judge(alone[1], [alone[1], *elsewhere]).text == vd.NO_MATCH


def test_a_row_without_a_matched_control_is_named_and_unpaired_records_keep_the_overlap_rule():
    records = board()
    lone = drawn("demo/minilm-l3", "demo/efficientnet-lite0", 0.2, seed=5)
    assert texts([*records, lone])[lone.pair_id] == vd.NO_MATCH
    old = records[1].model_copy(update={"ci": records[1].ci.model_copy(
        update={"draws": None, "scheme": None, "subset_size": None})})
    assert unpaired_reason(old, records[0]) == f"{old.pair_id} states no subset scores"
    assert texts([records[0], old])[old.pair_id] == vd.WITHIN  # the intervals overlap
    assert vd.judge(old, [records[0], old]).rule == vd.OVERLAP
    assert "1 real pairs judged by interval overlap" in vd.board_sentence([records[0], old, *records[2:]])


def test_records_drawn_differently_do_not_pair():
    a = drawn("baseline/bag-of-words", V, 0.1)
    b = drawn("demo/minilm-l6", V, 0.12, config={**CONFIG, "seed": 1})
    assert unpaired_reason(a, b) == "scored under different setting configurations"
    assert calibrated_difference(a, b) is None and raw_difference(a, b) is None
    described = drawn("demo/minilm-l6", V, 0.12, config={**CONFIG, "description": "another"})
    assert unpaired_reason(a, described) is None  # the description is not part of the protocol


def test_ranks_tie_unless_the_paired_difference_separates():
    control, beats, same, below = board()
    ordered = [beats, same, control, below]
    assert record_ranks(ordered) == [1, 2, 2, 4]
    assert tie_ranks([0.3, 0.29], [(0.2, 0.4), (0.2, 0.4)], True, separated=lambda i, j: True) == [1, 2]
    assert tie_ranks([0.3, 0.29], [(0.2, 0.4), (0.2, 0.4)], True, separated=lambda i, j: None) == [1, 1]


# -- a scored record's draws, and what keeps them honest ----------------------------------------------------

@pytest.fixture(scope="module")
def scored() -> tuple[ResultRecord, list[torch.Tensor], list[torch.Tensor], Setting]:
    zoo = load_zoo()
    g = torch.Generator().manual_seed(0)
    z = torch.randn(96, 8, generator=g)
    xs = [z @ torch.randn(8, 12, generator=g) + 0.5 * torch.randn(96, 12, generator=g) for _ in range(2)]
    ys = [z @ torch.randn(8, 10, generator=g) + 0.5 * torch.randn(96, 10, generator=g)]
    setting = Setting(id="t", dataset="x", metric="mutual_knn", params={"k": 5}, preprocess="prh", n_perm=30, n_ci=8)
    ds = DatasetRef(name="synthetic", revision="r", n=96, fingerprint="f" * 64)
    record = score_paired(setting, zoo.get("demo/minilm-l6"), zoo.get("demo/efficientnet-lite0"), xs, ys, ds, inputs={})
    return record, xs, ys, setting


def test_a_scored_record_states_the_draws_its_interval_and_null_come_from(scored):
    record, xs, ys, setting = scored
    assert record.ci.scheme == "arcsine_rate" and record.ci.subset_size == 48 and len(record.ci.draws) == 16
    assert 1 <= record.ci.rate <= 2
    lo, hi = subsample_ci("mutual_knn", xs, ys, n_sub=8, frac=0.5, seed=0, preprocess="prh", k=5)
    assert (record.ci.lo, record.ci.hi) == (lo, hi)
    # the rate schemes' first B draws are the half-subsets of the subsample scheme, then B quarter-subsets
    half = subset_draws("mutual_knn", xs, ys, n_sub=8, frac=0.5, seed=0, preprocess="prh", scheme="subsample", k=5)
    assert record.ci.draws[:8] == half.scores.tolist()
    a, phi = record.ci.rate, np.arcsin(np.sqrt(record.ci.draws))  # read on the arcsine scale, back by the delta
    se = math.sqrt((phi[:8].var(ddof=1) / (2**a - 1) + phi[8:].var(ddof=1) / (4**a - 1)) / 2)
    se *= math.sin(2 * math.asin(math.sqrt(record.score)))
    assert se == pytest.approx((record.ci.hi - record.ci.lo) / 2 / t_quantile(0.95, 7), rel=1e-12)
    null = permutation_null("mutual_knn", xs, ys, n_perm=30, seed=0, preprocess="prh", k=5)
    assert record.null.draws == null.values.tolist()
    assert inconsistencies(record) == []


def test_edited_draws_contradict_the_record(scored):
    record = scored[0]
    ci_draws = list(record.ci.draws)
    ci_draws[0] += 0.05
    edited = record.model_copy(update={"ci": record.ci.model_copy(update={"draws": ci_draws})})
    assert any("subset scores" in p for p in inconsistencies(edited))
    narrower = record.model_copy(update={"ci": record.ci.model_copy(update={"rate": 2.0 if record.ci.rate < 1.9 else 1.0})})
    assert any("subset scores" in p for p in inconsistencies(narrower))
    null_draws = list(record.null.draws)
    null_draws[0] += 0.05
    edited = record.model_copy(update={"null": record.null.model_copy(update={"draws": null_draws})})
    assert any("stated draws" in p for p in inconsistencies(edited))


def test_a_record_cannot_choose_its_interval_scheme(scored):
    """Another scheme on the same draws, its interval restated to match, would pass the draws rule: the
    scheme itself must be the one this version draws for the metric and selection."""
    record = scored[0]
    assert record.ci.scheme == "arcsine_rate"
    se = subset_se(record.ci.draws, "rate", 96, record.ci.subset_size, record.ci.rate)
    half = t_quantile(0.95, 7) * se
    switched = record.model_copy(update={"ci": record.ci.model_copy(update={
        "scheme": "rate", "lo": max(0.0, record.score - half), "hi": min(1.0, record.score + half)})})
    assert any("scheme 'rate'" in p and "arcsine_rate or subsample" in p for p in inconsistencies(switched))
    svcca = record.model_copy(update={"metric": record.metric.model_copy(update={"id": "svcca", "params": {}})})
    assert any("resampled by jackknife" in p for p in inconsistencies(svcca))
    heldout = svcca.model_copy(update={"metric": svcca.metric.model_copy(update={"selection": "heldout"})})
    assert any("resampled by subsample" in p for p in inconsistencies(heldout))
    knn_heldout = record.model_copy(update={"metric": record.metric.model_copy(update={"selection": "heldout"})})
    assert not any("resampled by" in p for p in inconsistencies(knn_heldout))  # a rate scheme stays one held out


def test_check_compares_what_the_draws_assert_not_each_draw(scored):
    """One draw that moves while the interval, null and verdict stay (a near tie re-selected inside one
    permutation) is not a move: check compares no draw one by one."""
    record = scored[0]
    null_draws = list(record.null.draws)
    null_draws[0] += 0.004
    one_draw = record.model_copy(update={"null": record.null.model_copy(update={"draws": null_draws})})
    assert not any(d.field.startswith(("ci.draws", "null.draws")) for d in compare(one_draw, record))
    assert not any(d.moved(0.001) for d in compare(one_draw, record))


def test_check_fails_a_verdict_that_the_recomputed_draws_do_not_give():
    """Reordering a record's subset scores keeps its interval (it contradicts nothing) but changes every paired
    difference: its verdict against its control moves, and check's verdict comparison sees it."""
    control, beats, *_ = board()
    b = len(beats.ci.draws)
    shuffled = beats.model_copy(update={"ci": beats.ci.model_copy(update={"draws": beats.ci.draws[::-1]})})
    assert inconsistencies(shuffled) == [] and len(shuffled.ci.draws) == b
    outcomes = [Outcome(r.setting, r.x.name, r.y.name, status="ok") for r in (control, shuffled)]
    judge_again([control, shuffled], {id(control): control, id(shuffled): beats}, outcomes)
    assert outcomes[1].verdict == (vd.NO_DIFFERENCE, vd.BEATS) and outcomes[1].status == "moved"
    assert outcomes[0].verdict == (vd.BASELINE, vd.BASELINE) and outcomes[0].status == "ok"


def test_an_interval_states_its_draws_whole():
    with pytest.raises(ValueError, match="together"):
        IntervalRef(lo=0, hi=1, level=0.95, method="m", draws=[0.1, 0.2])
    whole = {"lo": 0, "hi": 1, "level": 0.95, "method": "m", "subset_size": 5, "draws": [0.1, 0.2, 0.3, 0.4]}
    with pytest.raises(ValueError, match="rate exponent with a rate scheme"):
        IntervalRef(**whole, scheme="rate")
    with pytest.raises(ValueError, match="rate exponent with a rate scheme"):
        IntervalRef(**whole, scheme="subsample", rate=1.5)
    with pytest.raises(ValueError, match="outside"):
        IntervalRef(**whole, scheme="rate", rate=2.5)  # a user's edit cannot narrow it past a = 2
    assert IntervalRef(**whole, scheme="rate", rate=1.5).rate == 1.5
    assert IntervalRef(**whole, scheme="arcsine_rate", rate=1.5).scheme == "arcsine_rate"
    with pytest.raises(ValueError, match="rate exponent with a rate scheme"):
        IntervalRef(**whole, scheme="arcsine_rate")
    with pytest.raises(ValueError, match="two sizes"):
        IntervalRef(**{**whole, "draws": [0.1, 0.2, 0.3]}, scheme="rate", rate=1.5)
