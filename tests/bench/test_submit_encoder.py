"""`platobench submit`: validation, the mock pass, scoring against references and the printed rank.

The submitted encoders are tiny deterministic "module:function" encoders written next to the submission
file (character-bigram counts and fixed random maps: wiring only); the vision reference's features are
synthetic cache entries, so no weights are loaded.
"""

from __future__ import annotations

import json
import shutil

import pytest
from bench_fixtures import TINY_SETTINGS, seed_features

from platobench.cli import main
from platobench.leaderboard.paired import separated
from platobench.results import load_record, record_path, write_record

N = 24
VISION = "demo/dinov2-s-imgfocus"
PAIR = f"demo/minilm-l6:{VISION}"

TOY_MODULE = '''
import torch
from platobench.encoders.base import TextEncoder


class Toy(TextEncoder):
    """Character-bigram counts (layer 0) followed by fixed tanh maps (layers 1..num_layers)."""

    def __init__(self, spec, noise=0.0, nan=False, collapsed=False, declared=32, degenerate=False):
        self.spec, self.device = spec, torch.device("cpu")
        self.layer_ids = spec.layer_ids(spec.num_layers)
        self.widths = [declared] * len(self.layer_ids)
        g = torch.Generator().manual_seed(0)
        self.maps = [torch.randn(32, 32, generator=g) / 32 ** 0.5 for _ in self.layer_ids[1:]]
        self.noise, self.nan, self.collapsed, self.degenerate = noise, nan, collapsed, degenerate
        self.marked = None  # degenerate: the texts made zero and repeated, chosen in the first batch

    def token_lengths(self, texts):
        return [max(1, len(t)) for t in texts]

    def tokenize(self, texts):
        width = max(self.token_lengths(texts))
        ids = torch.zeros(len(texts), width, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for i, t in enumerate(texts):
            codes = [ord(c) % 997 + 1 for c in t.lower()] or [1]
            ids[i, : len(codes)] = torch.tensor(codes)
            mask[i, : len(codes)] = 1
        return {"input_ids": ids, "attention_mask": mask}

    def encode(self, batch):
        ids, mask = batch["input_ids"], batch["attention_mask"]
        x = torch.zeros(ids.shape[0], 32)
        following = torch.cat([ids[:, 1:], torch.zeros_like(ids[:, :1])], 1)  # the last token's is padding alone
        x.scatter_add_(1, (ids * 31 + following) % 32, mask.float())
        outs = [x]
        for m in self.maps:
            outs.append(torch.tanh(outs[-1] @ m))
        if self.noise:
            outs = [o + self.noise * torch.randn_like(o) for o in outs]
        if self.nan:
            outs[1] = outs[1] * float("nan")
        if self.collapsed:
            outs = [torch.ones_like(o) for o in outs]
        if self.degenerate:  # layer 0: the texts of the first batch's rows 0-2 zero, of rows 4-5 those of row 3
            keys = [tuple(row[m.bool()].tolist()) for row, m in zip(ids, mask)]  # by text, in any batch
            if self.marked is None:
                self.marked = set(keys[:3]), set(keys[4:6]), outs[0][3].clone()
            zero, repeat, source = self.marked
            outs[0] = outs[0].clone()
            for i, key in enumerate(keys):
                outs[0][i] = 0 if key in zero else source if key in repeat else outs[0][i]
            outs[1] = torch.ones_like(outs[1])  # layer 1 the same for every sample
        return outs


def hashing(spec, device, dtype, home):
    return Toy(spec)


def noisy(spec, device, dtype, home):
    return Toy(spec, noise=0.1)


def nan(spec, device, dtype, home):
    return Toy(spec, nan=True)


def collapsed(spec, device, dtype, home):
    return Toy(spec, collapsed=True)


def wide(spec, device, dtype, home):
    return Toy(spec, declared=64)


def degenerate(spec, device, dtype, home):
    return Toy(spec, degenerate=True)
'''


def entry(name="toy/hashing", function="hashing", **fields):
    lines = [f"  - name: {name}", "    modality: text", "    kind: text_encoder", "    loader: python",
             f"    source: pb_toy_encoders:{function}", "    pooling: avg", "    params_m: 0.01"]
    fields.setdefault("num_layers", 2)
    lines += [f"    {k}: {v}" for k, v in fields.items() if v is not None]
    return "version: 1\nmodels:\n" + "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    """Reference features plus a minilm record to rank against (built once)."""
    tmp = tmp_path_factory.mktemp("submit")
    home = tmp / "home"
    seed_features(home, "demo/minilm-l6", N, seed=1)
    seed_features(home, VISION, N, seed=2)
    (tmp / "tiny.yaml").write_text(TINY_SETTINGS)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PLATOBENCH_HOME", str(home))
        assert main(["run", "--pairs", PAIR, "--settings", "tiny", "--settings-file", str(tmp / "tiny.yaml"),
                     "--limit", str(N), "--out", str(tmp / "results"), "--json"]) == 0
    return home, tmp / "tiny.yaml", tmp / "results"


@pytest.fixture
def env(seeded, tmp_path, monkeypatch):
    home, settings, results = seeded
    monkeypatch.setenv("PLATOBENCH_HOME", str(home))
    shutil.copytree(results, tmp_path / "results")
    (tmp_path / "pb_toy_encoders.py").write_text(TOY_MODULE)
    return tmp_path, settings


def submit(tmp_path, settings, text, *extra):
    (tmp_path / "sub.yaml").write_text(text)
    return main(["submit", str(tmp_path / "sub.yaml"), "--settings", "tiny", "--settings-file", str(settings),
                 "--pairs", PAIR, "--limit", str(N), "--out", str(tmp_path / "results"), *extra])


def test_submission_is_scored_and_ranked(env, capsys):
    tmp_path, settings = env
    assert submit(tmp_path, settings, entry(), "--json") == 0
    report = json.loads(capsys.readouterr().out)
    (mock,) = report["mock"]
    assert mock["layers"] == [0, 1, 2] and mock["widths"] == [32, 32, 32] and mock["max_repeat_diff"] == 0.0
    assert report["run"]["failed"] == {} and len(report["run"]["written"]) == 2
    rows = report["ranks"]["toy/hashing"]
    assert sorted(r["setting"] for r in rows) == ["tiny-cka", "tiny-mknn"]
    for row in rows:
        mine = load_record(record_path(tmp_path / "results", row["setting"], "toy/hashing", VISION, N))
        other = load_record(record_path(tmp_path / "results", row["setting"], "demo/minilm-l6", VISION, N))
        assert row["reference"] == VISION and row["of"] == 2 and row["score"] == mine.score
        tied = not separated(mine, other)  # what their paired difference cannot separate shares a rank
        assert row["rank"] == (1 if mine.score >= other.score or tied else 2)


def test_rank_is_printed(env, capsys):
    tmp_path, settings = env
    assert submit(tmp_path, settings, entry()) == 0
    out = capsys.readouterr().out
    assert f"toy/hashing — tiny-mknn vs {VISION} (n={N}): score" in out and "of 2" in out


def test_mock_only_writes_no_record(env, capsys):
    tmp_path, settings = env
    assert submit(tmp_path, settings, entry(), "--mock-only") == 0
    assert "mock pass of toy/hashing: ok" in capsys.readouterr().out
    assert not list((tmp_path / "results").rglob("toy--hashing*"))


@pytest.mark.parametrize("function, message", [
    ("noisy", "not deterministic"),
    ("nan", "NaN"),
    ("collapsed", "the same vector for every sample"),
    ("wide", "expected (16, 64)"),
])
def test_mock_pass_catches_broken_encoders(env, capsys, function, message):
    tmp_path, settings = env
    assert submit(tmp_path, settings, entry(name=f"toy/{function}", function=function)) == 2
    err = capsys.readouterr().err
    assert f"mock pass of toy/{function} failed" in err and message in err
    assert not list((tmp_path / "results").rglob(f"toy--{function}*"))


@pytest.mark.parametrize("text, message", [
    (entry(name="demo/minilm-l6"), "'demo/minilm-l6' is already a model of the zoo"),
    (entry(num_layers=None), "needs 'num_layers'"),
    (entry(poolng="avg"), "unknown key 'poolng' (did you mean 'pooling'?)"),
    ("version: 1\nmodels: []\n", "holds no model entry"),
])
def test_invalid_submissions_are_user_errors(env, capsys, text, message):
    tmp_path, settings = env
    assert submit(tmp_path, settings, text) == 2
    assert message in capsys.readouterr().err


DEGENERATE_WARNINGS = [
    "mock pass of toy/degenerate: layer 0: 3 of 16 rows are exactly zero; 2 duplicate rows (equal to an earlier "
    "nonzero row)",
    "mock pass of toy/degenerate: layer 1: near-constant across the 16 samples (relative spread <= 1e-05); "
    "scoring leaves it out",
]


def test_mock_pass_flags_zero_and_duplicate_rows_and_constant_layers(env, capsys):
    tmp_path, settings = env
    assert submit(tmp_path, settings, entry(name="toy/degenerate", function="degenerate"), "--mock-only") == 0
    out = capsys.readouterr().out
    assert "mock pass of toy/degenerate: ok" in out
    assert [line.removeprefix("warning: ") for line in out.splitlines() if line.startswith("warning:")] == DEGENERATE_WARNINGS


def test_mock_pass_flags_are_in_the_json(env, capsys):
    tmp_path, settings = env
    assert submit(tmp_path, settings, entry(name="toy/degenerate", function="degenerate"), "--mock-only", "--json") == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    (mock,) = report["mock"]
    assert [(f["layer"], f["rows"], f["zero_rows"], f["duplicate_rows"], f["near_constant"]) for f in mock["flags"]] == [
        (0, 16, 3, 2, False), (1, 16, 0, 15, True)]
    assert mock["warnings"] == report["warnings"] == DEGENERATE_WARNINGS
    assert "layer 0: 3 of 16 rows are exactly zero" in captured.err


def test_a_healthy_encoder_has_no_flags(env, capsys):
    tmp_path, settings = env
    assert submit(tmp_path, settings, entry(), "--mock-only", "--json") == 0
    report = json.loads(capsys.readouterr().out)
    assert report["mock"][0]["flags"] == [] and report["warnings"] == []


def copied(record, language=None, vision=None, **dataset):
    """`record` as measured for another model (same numbers, so still consistent); `dataset`: other samples."""
    models = {side: getattr(record, side).model_copy(update={"name": name})
              for side, name in (("x", language), ("y", vision)) if name}
    update = {**models, "dataset": record.dataset.model_copy(update=dataset)}
    if "n" in dataset and record.ci is not None:  # its subset scores would give another interval at another N
        update["ci"] = record.ci.model_copy(update={"draws": None, "scheme": None, "subset_size": None, "rate": None})
    return record.model_copy(update=update)


def test_an_empty_out_says_there_is_nothing_to_rank_against(env, capsys):
    tmp_path, settings = env
    empty = tmp_path / "empty"
    assert submit(tmp_path, settings, entry(), "--out", str(empty)) == 0
    out = capsys.readouterr().out
    assert "rank 1 of 1" not in out and "-- toy/hashing" not in out  # no board of the submission alone
    assert out.count(f"no rank: nothing to rank against ({empty} holds no record of another model against {VISION}") == 2
    assert "--out results/offline" in out and "without --limit" in out
    assert (f"platobench run --pairs {PAIR} --settings tiny --settings-file {settings} --limit {N} --out {empty}"
            in out)
    assert submit(tmp_path, settings, entry(), "--out", str(empty), "--json") == 0
    captured = capsys.readouterr()
    rows = json.loads(captured.out)["ranks"]["toy/hashing"]
    assert [(r["rank"], r["of"], r["peers"]) for r in rows] == [(None, 1, 0)] * 2
    assert "nothing to rank" not in captured.out and f"warning: {empty} holds no peers" in captured.err


@pytest.fixture
def peers(env):
    """Next to the demo/minilm-l6 record of each setting: two peers (another text model and a text
    baseline against the same reference on the same samples) and two records that are not peers (another
    reference; other samples, as from another --limit)."""
    tmp_path, _ = env
    results = tmp_path / "results"
    for setting in ("tiny-mknn", "tiny-cka"):
        mine = load_record(record_path(results, setting, "demo/minilm-l6", VISION, N))
        for record in (copied(mine, "demo/minilm-l3"), copied(mine, "baseline/bag-of-words"),
                       copied(mine, "demo/minilm-l3", "demo/efficientnet-lite0"),
                       copied(mine, "baseline/caption-length", n=2 * N, fingerprint="0" * 64)):
            write_record(results, record)
    return env


BOARD = {"toy/hashing", "demo/minilm-l6", "demo/minilm-l3", "baseline/bag-of-words"}


def test_rank_counts_the_peers_and_the_board_shows_them(peers, capsys):
    tmp_path, settings = peers
    assert submit(tmp_path, settings, entry(), "--json") == 0
    rows = json.loads(capsys.readouterr().out)["ranks"]["toy/hashing"]
    for row in rows:
        assert (row["of"], row["peers"]) == (4, 3) and row["rank"] in (1, 4)  # three equal peers: 1, 1, 1, 4 or all 1
        assert {b["x"] for b in row["board"]} == BOARD and {b["y"] for b in row["board"]} == {VISION}
        (me,) = [b for b in row["board"] if b["x"] == "toy/hashing"]
        assert me["rank"] == row["rank"] and me["verdict"]  # judged against the text baseline of the board
    assert submit(tmp_path, settings, entry()) == 0
    out = capsys.readouterr().out
    assert out.count(f"-- toy/hashing vs {VISION}: 3 peers on the same samples") == 2
    assert f"bag-of-words* x {VISION}" in out and f"demo/minilm-l3 x {VISION}" in out  # baselines marked *
    assert "efficientnet-lite0" not in out and "caption-length" not in out
    assert out.count("of 4 (3 peers on the same samples)") == 2 and "warning" not in out
