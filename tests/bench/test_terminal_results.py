"""Results where the user looks: CI-aware ranks, the terminal board (plain and rich), score/submit/compare output."""

from __future__ import annotations

import io
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from bench_fixtures import TINY_SETTINGS, make_record, seed_features
from board_checks import assert_board_matches
from test_submit_encoder import PAIR, TOY_MODULE, VISION, N, entry

from platobench.bench import terminal_board
from platobench.cli import main
from platobench.leaderboard.ranks import tie_ranks
from platobench.metrics.stats import permutation_null
from platobench.results import IntervalRef, NullRef, SideRef, load_records

# --- tie_ranks -------------------------------------------------------------------------------------


def test_tie_ranks_overlapping_cis_share_rank_one_then_next_group():
    scores = [0.50, 0.48, 0.30, 0.29, 0.10]
    cis = [(0.45, 0.55), (0.44, 0.52), (0.25, 0.35), (0.20, 0.31), (0.05, 0.15)]
    assert tie_ranks(scores, cis, higher_is_better=True) == [1, 1, 3, 3, 5]


def test_tie_ranks_inputs_in_any_order():
    scores = [0.10, 0.50, 0.29, 0.48, 0.30]
    cis = [(0.05, 0.15), (0.45, 0.55), (0.20, 0.31), (0.44, 0.52), (0.25, 0.35)]
    assert tie_ranks(scores, cis, higher_is_better=True) == [5, 1, 3, 1, 3]


def test_tie_ranks_compares_with_group_leader_not_previous_entry():
    # b overlaps a (leader), c overlaps b but not a: c starts a new group.
    scores = [0.9, 0.8, 0.7]
    cis = [(0.85, 0.95), (0.75, 0.86), (0.65, 0.8)]
    assert tie_ranks(scores, cis, higher_is_better=True) == [1, 1, 3]


def test_tie_ranks_without_ci_never_tie():
    assert tie_ranks([0.5, 0.5, 0.4], [None, None, (0.0, 1.0)], True) == [1, 2, 3]
    assert tie_ranks([0.5, 0.4], [(0.0, 1.0), None], True) == [1, 2]


def test_tie_ranks_lower_is_better_and_touching_intervals():
    # lower is better: 0.1 leads; 0.2's CI touches the leader's at 0.15 (closed intervals overlap).
    assert tie_ranks([0.3, 0.1, 0.2], [(0.28, 0.32), (0.05, 0.15), (0.15, 0.25)], False) == [3, 1, 1]


def test_tie_ranks_nan_last_and_length_mismatch():
    assert tie_ranks([math.nan, 0.2, 0.3], [(0.0, 1.0), (0.0, 1.0), (0.0, 1.0)], True) == [3, 1, 1]
    assert tie_ranks([], [], True) == []
    with pytest.raises(ValueError, match="2 scores but 1"):
        tie_ranks([0.1, 0.2], [None], True)


# --- the board: plain and rich ---------------------------------------------------------------------

V = "demo/v"


def board_records() -> list:
    """Setting x: two overlapping leaders, a third entry, a baseline; setting lo: lower is better."""
    return [
        *[make_record("x", f"demo/l{i}", V, s) for i, s in enumerate([0.5, 0.49, 0.3, 0.1])],
        make_record("x", "baseline/bag-of-words", V, 0.2),
        make_record("lo", "demo/a", V, 0.3, higher=False),
        make_record("lo", "demo/b", V, 0.1, higher=False),
    ]


def test_board_rows_carry_ci_aware_ranks():
    rows = terminal_board.board_rows(board_records())
    assert [(r["x"], r["rank"]) for r in rows["x"]] == [
        ("demo/l0", 1), ("demo/l1", 1), ("demo/l2", 3), ("baseline/bag-of-words", 4), ("demo/l3", 5)]
    assert [(r["x"], r["rank"]) for r in rows["lo"]] == [("demo/b", 1), ("demo/a", 2)]


def test_plain_board_has_a_rank_column_and_is_what_a_pipe_gets():
    records = board_records()
    text = terminal_board.render(records)
    lines = text.split("== x:")[1].splitlines()
    header = next(line for line in lines if line.startswith("rank"))
    assert header.split() == [c for c in terminal_board.COLUMNS if c not in ("p", "flags")]  # every p is 0.010; no flag
    assert "p column left out: every p is 0.010." in text
    ranked = [line.split()[:2] for line in lines if line.split()[:1] in (["1"], ["3"], ["4"], ["5"])]
    assert ranked[:3] == [["1", "demo/l0"], ["1", "demo/l1"], ["3", "demo/l2"]]
    piped = io.StringIO()  # not a terminal: plain text, exactly `render` plus the final newline
    terminal_board.print_board(records, file=piped)
    assert piped.getvalue() == text + "\n"
    forced = io.StringIO()
    terminal_board.print_board(records, file=forced, tty=False)
    assert forced.getvalue() == text + "\n"


def test_rich_board_draws_boxes_with_the_same_numbers():
    records = board_records()
    out = io.StringIO()
    terminal_board.print_board(records, file=out, tty=True)
    text = out.getvalue()
    assert "────" in text and "----" not in text  # rich's rule under the header, not the plain dashes
    assert "rank" in text and "calib" in text
    plain_cells = {c.strip() for line in terminal_board.render(records).splitlines() for c in line.split("  ")}
    for cell in ["0.500", "[0.480, 0.520]", "0.490", "beats", "baseline"]:
        assert cell in plain_cells and cell in text, cell
    assert "p column left out: every p is 0.010." in text
    assert text.index("== x:") < text.index("== lo:")  # the mutual kNN (headline) setting first, as in the plain text


def test_rich_board_in_a_narrow_terminal_keeps_every_column_and_digit():
    out = io.StringIO()
    terminal_board.render_rich(board_records(), out, width=50)
    text = out.getvalue()
    for cell in ["rank", "pair", "verdict", "[0.480, 0.520]", "0.010", "demo/l0 x", "bag-of-words*"]:
        assert cell in text, cell


def test_rich_board_in_120_columns_keeps_pairs_on_one_line():
    out = io.StringIO()
    terminal_board.render_rich(board_records(), out, width=120)
    assert "bag-of-words* x demo/v" in out.getvalue() and "demo/l0 x demo/v" in out.getvalue()


def test_rich_board_prints_record_text_literally():
    hostile = make_record("x", "demo/l0", V, 0.5).model_copy(update={
        "x": SideRef.model_construct(name="[red]evil[/red]\x1b[31m", params_m=1.0, kind="x", modality="text", input="caption:0")})
    out = io.StringIO()
    terminal_board.print_board([hostile, make_record("x", "demo/l1", V, 0.1)], file=out, tty=True)
    text = out.getvalue()
    assert "[red]evil[/red]" in text  # markup is shown, not interpreted
    assert "\x1b" not in text


# --- run, submit and jepa compare end with the board -------------------------------------------------


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    """Synthetic reference features (no weights) and tiny settings, as in the submit tests."""
    tmp = tmp_path_factory.mktemp("terminal")
    home = tmp / "home"
    seed_features(home, "demo/minilm-l6", N, seed=1)
    seed_features(home, VISION, N, seed=2)
    (tmp / "tiny.yaml").write_text(TINY_SETTINGS)
    return home, tmp / "tiny.yaml"


def run_argv(settings: Path, out: Path, *extra: str) -> list[str]:
    return ["run", "--pairs", PAIR, "--settings", "tiny", "--settings-file", str(settings), "--limit", str(N),
            "--out", str(out), *extra]


def test_run_board_json_and_text_equal_the_records(seeded, tmp_path, monkeypatch, capsys):
    home, settings = seeded
    monkeypatch.setenv("PLATOBENCH_HOME", str(home))
    assert main(run_argv(settings, tmp_path / "r", "--json")) == 0
    board = json.loads(capsys.readouterr().out)["board"]
    assert main(run_argv(settings, tmp_path / "r")) == 0  # reuses the records: same numbers in the text
    text = capsys.readouterr().out
    records = load_records(tmp_path / "r")
    assert {r.setting for r in records} == {"tiny-mknn", "tiny-cka"}
    assert_board_matches(board, text, records)
    assert text.index("== tiny-cka") < text.index("written: ")  # the board, then the run summary


def test_submit_ends_with_the_board_of_its_records(seeded, tmp_path, monkeypatch, capsys):
    home, settings = seeded
    monkeypatch.setenv("PLATOBENCH_HOME", str(home))
    (tmp_path / "pb_toy_encoders.py").write_text(TOY_MODULE)
    (tmp_path / "sub.yaml").write_text(entry())
    out = tmp_path / "results"
    # peers first: the same settings, reference and samples, so submit has a board to rank against
    assert main(["run", "--pairs", PAIR, "--settings", "tiny", "--settings-file", str(settings), "--limit", str(N),
                 "--out", str(out), "--json"]) == 0
    capsys.readouterr()
    argv = ["submit", str(tmp_path / "sub.yaml"), "--settings", "tiny", "--settings-file", str(settings),
            "--pairs", PAIR, "--limit", str(N), "--out", str(out)]
    assert main([*argv, "--json"]) == 0
    ranks = json.loads(capsys.readouterr().out)["ranks"]["toy/hashing"]
    board = {row["setting"]: row["board"] for row in ranks}
    records = load_records(out)
    assert {r.x.name for r in records} == {"toy/hashing", PAIR.split(":")[0]}
    assert_board_matches(board, None, records)
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert_board_matches(board, text, records)
    assert text.index("== tiny-cka") < text.index("toy/hashing — ")  # the peers' boards, then one rank line each


# --- platobench score: chance level and permutation null -----------------------------------------------


@pytest.fixture
def feature_files(tmp_path):
    """Two related feature files: 40 samples, x with 2 layers, y with 1."""
    gen = np.random.default_rng(0)
    z = gen.normal(size=(40, 6))
    x = np.stack([z @ gen.normal(size=(6, 12)) + gen.normal(size=(40, 12)) for _ in range(2)]).astype("float32")
    y = (z @ gen.normal(size=(6, 9)) + gen.normal(size=(40, 9))).astype("float32")
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    return tmp_path / "x.npy", tmp_path / "y.npy", x, y


def score(paths, *extra: str) -> list[str]:
    return ["score", "--x", str(paths[0]), "--y", str(paths[1]), *extra]


def test_score_prints_chance_level_and_keeps_its_first_line(feature_files, capsys):
    assert main(score(feature_files, "--metric", "mutual_knn")) == 0
    lines = capsys.readouterr().out.splitlines()
    assert re.fullmatch(r"mutual_knn = \d\.\d{6} \(layers \d, 0; best; n=40\)", lines[0])
    assert lines[1] == f"chance level: {10 / 39:.6f} (k/(N-1) = 10/39)"
    assert len(lines) == 2  # a closed-form chance level: no null unless asked
    assert main(score(feature_files, "--metric", "cycle_knn", "--null", "0", "--json")) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["chance"] is None and out["null"] is None and out["warnings"] == []


def test_score_gives_the_null_unasked_when_chance_has_no_closed_form_and_warns_when_n_is_not_above_d(tmp_path, capsys):
    gen = np.random.default_rng(0)
    paths = tmp_path / "x.npy", tmp_path / "y.npy"
    np.save(paths[0], gen.normal(size=(30, 8)).astype("float32"))  # independent noise, y wider than N
    np.save(paths[1], gen.normal(size=(30, 40)).astype("float32"))
    assert main(score(paths, "--metric", "svcca")) == 0
    out, err = capsys.readouterr()
    assert "permutation null (B=20, seed 0, by default: --null 0 skips it): mean" in out
    assert "warning: N = 30 samples is not above the width 40 of the y features" in err and "x features" not in err
    assert main(score(paths, "--metric", "svcca", "--json")) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["null"]["n_perm"] == 20 and got["null_by_default"] is True and len(got["warnings"]) == 1
    assert main(score(paths, "--metric", "mutual_knn", "--param", "k=3", "--json")) == 0  # chance 3/29 is known
    got = json.loads(capsys.readouterr().out)
    assert got["null"] is None and got["null_by_default"] is False


def test_score_null_gives_mean_std_and_floored_p_value(feature_files, capsys):
    assert main(score(feature_files, "--metric", "mutual_knn", "--null", "19", "--seed", "3", "--json")) == 0
    out = json.loads(capsys.readouterr().out)
    x, y = feature_files[2], feature_files[3]
    ref = permutation_null("mutual_knn", list(torch.from_numpy(x)), [torch.from_numpy(y)], n_perm=19, seed=3)
    assert out["chance"] == pytest.approx(10 / 39)
    assert out["null"] == {"mean": ref.mean, "std": ref.std, "p_value": ref.p_value, "p_floor": 1 / 20,
                           "calibrated": ref.calibrated, "n_perm": 19, "seed": 3}
    assert out["null"]["p_value"] >= out["null"]["p_floor"] and out["score"] == ref.observed
    assert main(score(feature_files, "--metric", "mutual_knn", "--null", "19", "--seed", "3")) == 0
    text = capsys.readouterr().out
    assert (f"permutation null (B=19, seed 3): mean {ref.mean:.6f} ± {ref.std:.6f}; p = {ref.p_value:.4g} "
            "(floor 1/(B+1) = 0.05)") in text


@pytest.mark.parametrize("extra, message", [(["--null", "-1"], "--null must be"), (["--seed", "-2"], "--seed must be")])
def test_score_rejects_bad_null_options(feature_files, capsys, extra, message):
    assert main(score(feature_files, "--metric", "cka", *extra)) == 2
    assert message in capsys.readouterr().err


# --- end to end on the real demo models ------------------------------------------------------------------


@pytest.mark.slow
def test_demo_run_board_equals_its_records(tmp_path, capsys, demo_features):
    """Real models through the feature cache: the demo pair set (two ladder rungs per modality and every
    baseline) under every demo setting (paired and zero-shot), 24 samples (per class on class datasets). At 24
    the first layer of random-init EfficientNet-Lite0 varies over the samples but is constant on some of the
    interval's subsets: its records leave that layer out and say why, instead of failing."""
    argv = ["run", "--pairs", "demo", "--settings", "demo", "--limit", "24", "--out", str(tmp_path / "out")]
    assert main([*argv, "--json"]) == 0
    board = json.loads(capsys.readouterr().out)["board"]
    assert main(argv) == 0  # inputs unchanged: the records are reused and the board printed again
    text = capsys.readouterr().out
    records = load_records(tmp_path / "out")
    assert len(records) == 100 and set(board) == {r.setting for r in records}
    assert_board_matches(board, text, records)
    subset_excluded = [r for r in records if "interval's" in r.details.get("excluded_layers", {}).get("why", "")]
    assert subset_excluded and all("random-init-efficientnet-lite0" in r.y.name for r in subset_excluded)


def _floor_record(language: str, vision: str, score: float, p: float = 1 / 101):
    return make_record("s", language, vision, score).model_copy(update={
        "null": NullRef(mean=0.1, std=0.01, p_value=p, n_perm=100, seed=0)})


def test_plain_board_fits_120_columns_with_long_baseline_names():
    records = [_floor_record("baseline/random-init-minilm-l6", "baseline/random-init-efficientnet-lite0", 0.2),
               _floor_record("demo/smollm2-135m", "demo/efficientnet-lite1", 0.3),
               _floor_record("demo/minilm-l3", "baseline/colour-histogram", 0.25, p=0.3)]
    text = terminal_board.render(records)
    assert max(len(line) for line in text.splitlines()) <= terminal_board.WIDTH
    assert "random-init-minilm-l6* x random-init-efficientnet-lite0*" in text
    assert "≤0.010" in text and "0.300" in text  # the p column stays: its cells differ


def test_constant_p_at_the_floor_drops_the_column_and_says_so():
    records = [_floor_record(f"demo/l{i}", V, 0.3 - 0.1 * i) for i in range(3)]
    text = terminal_board.render(records)
    header = next(line for line in text.splitlines() if line.startswith("rank"))
    assert " p " not in f"{header} " and "0.0099" not in header
    assert "p column left out: every p is at its floor 1/(B+1) = 0.0099 (B = 100 permutations" in text
    assert terminal_board.board_rows(records)["s"][0]["p_value"] == 1 / 101  # --json keeps the value


def test_zero_shot_zero_rows_are_explained_on_the_terminal_board():
    zero = make_record("zs", "demo/l0", V, 0.0).model_copy(update={
        "kind": "zeroshot", "ci": IntervalRef(lo=0.0, hi=0.0, level=2 / 3, method="seeds")})
    text = terminal_board.render([zero, make_record("zs", "demo/l1", V, 0.2).model_copy(update={"kind": "zeroshot"})])
    assert "1 row(s) read 0.000 [0.000, 0.000]: a measured zero" in " ".join(text.split())
