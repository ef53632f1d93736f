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
from platobench.results import load_record

N = 24
VISION = "demo/dinov2-s-imgfocus"
PAIR = f"demo/minilm-l6:{VISION}"

TOY_MODULE = '''
import torch
from platobench.encoders.base import TextEncoder


class Toy(TextEncoder):
    """Character-bigram counts (layer 0) followed by fixed tanh maps (layers 1..num_layers)."""

    def __init__(self, spec, noise=0.0, nan=False, collapsed=False, declared=32):
        self.spec, self.device = spec, torch.device("cpu")
        self.layer_ids = spec.layer_ids(spec.num_layers)
        self.widths = [declared] * len(self.layer_ids)
        g = torch.Generator().manual_seed(0)
        self.maps = [torch.randn(32, 32, generator=g) / 32 ** 0.5 for _ in self.layer_ids[1:]]
        self.noise, self.nan, self.collapsed = noise, nan, collapsed

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
        x.scatter_add_(1, (ids * 31 + ids.roll(-1, 1)) % 32, mask.float())
        outs = [x]
        for m in self.maps:
            outs.append(torch.tanh(outs[-1] @ m))
        if self.noise:
            outs = [o + self.noise * torch.randn_like(o) for o in outs]
        if self.nan:
            outs[1] = outs[1] * float("nan")
        if self.collapsed:
            outs = [torch.ones_like(o) for o in outs]
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
        mine = load_record(tmp_path / "results" / row["setting"] / f"toy--hashing__{VISION.replace('/', '--')}.json")
        other = load_record(tmp_path / "results" / row["setting"] / f"demo--minilm-l6__{VISION.replace('/', '--')}.json")
        assert row["reference"] == VISION and row["of"] == 2 and row["score"] == mine.score
        assert row["rank"] == (1 if mine.score >= other.score else 2)


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
    ("wide", "expected (4, 64)"),
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
