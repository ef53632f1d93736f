"""Cheats that a board must flag (platobench/leaderboard/flags.py, platobench/bench/copies.py): a "text
encoder" that looks its caption up and returns the vision model's own features, and a `loader: features` file
holding a vision model's layers declared `modality: text`. Both score 1.000; both are flagged `copy` (the
file `precomputed` too), their rank is withheld, and `submit` names the cached model the encoder copies even
when it is scored against another one. Vision features are synthetic cache entries (wiring, not results)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from bench_fixtures import TINY_SETTINGS, seed_features

from platobench.cli import main
from platobench.data import get_dataset
from platobench.features.extract import feature_key
from platobench.features.store import FeatureStore
from platobench.leaderboard import build_boards
from platobench.leaderboard.flags import COPY, PRECOMPUTED, record_flags
from platobench.leaderboard.notes import WITHHELD
from platobench.results import load_records
from platobench.zoo import load_zoo

N = 24
VISION = "demo/dinov2-s-imgfocus"
OTHER = "demo/efficientnet-lite0"

LOOKUP = '''
import numpy as np
from pathlib import Path

HERE = Path(__file__).resolve().parent


class Lookup:
    """Looks each caption up among the dataset's and returns the vision model's features of that sample."""

    def __init__(self):
        self.features = np.load(HERE / "vision.npy")  # [L, N, D]
        self.row = {c: i for i, c in enumerate((HERE / "captions.txt").read_text().split("\\n"))}

    def encode(self, texts):
        return self.features[:, [self.row.get(t, 0) for t in texts]].transpose(1, 0, 2)
'''


def _zoo(layers: int) -> str:
    entry = ("  - name: {name}\n    modality: text\n    kind: text_encoder\n    loader: {loader}\n    source: {source}\n"
             "    pooling: avg\n    num_layers: {layers}\n    trained_on: []\n    fitted_on_eval: false\n")
    return ("version: 1\nmodels:\n"
            + entry.format(name="cheat/lookup", loader="python", source="lookup:Lookup", layers=layers - 1)
            + entry.format(name="cheat/vision-file", loader="features", source="./vision.npy", layers=layers - 1))


@pytest.fixture(scope="module")
def cheats(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cheat")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PLATOBENCH_HOME", str(tmp / "home"))
        for seed, model in enumerate((VISION, OTHER)):
            seed_features(tmp / "home", model, N, seed=seed)
        ds = get_dataset("openclipart-1024", limit=N)
        key = feature_key(load_zoo().get(VISION), ds, prompt="image", device=torch.device("cpu"))
        entry = FeatureStore(tmp / "home" / "features").get(key)
        stack = np.stack([entry.layer(i).numpy() for i in range(len(entry.layer_ids))])
        np.save(tmp / "vision.npy", stack)
        (tmp / "vision.npy.ids.txt").write_text("\n".join(ds.ids) + "\n")
        (tmp / "captions.txt").write_text("\n".join(ds.captions(0)))
        (tmp / "lookup.py").write_text(LOOKUP)
        (tmp / "zoo.yaml").write_text(_zoo(len(stack)))
        (tmp / "tiny.yaml").write_text(TINY_SETTINGS)
        mp.syspath_prepend(str(tmp))
        pairs = f"cheat/lookup:{VISION},cheat/vision-file:{VISION},demo/minilm-l6:{VISION}"
        seed_features(tmp / "home", "demo/minilm-l6", N, seed=7)
        assert main(["run", "--pairs", pairs, "--settings", "tiny", "--settings-file", str(tmp / "tiny.yaml"),
                     "--zoo", str(tmp / "zoo.yaml"), "--trust-code", "cheat/lookup", "--limit", str(N),
                     "--out", str(tmp / "r"), "--json"]) == 0
    return tmp


def test_both_cheats_score_one_and_are_flagged_and_unranked(cheats):
    records = load_records(cheats / "r")
    by = {(r.setting, r.x.name): r for r in records}
    for setting in ("tiny-mknn", "tiny-cka"):
        for cheat in ("cheat/lookup", "cheat/vision-file"):
            r = by[(setting, cheat)]
            assert r.score == pytest.approx(1.0) and r.details["copy_cka"] == 1.0
            assert COPY in record_flags(r)
        assert PRECOMPUTED in record_flags(by[(setting, "cheat/vision-file")])
        assert PRECOMPUTED not in record_flags(by[(setting, "cheat/lookup")])
        assert record_flags(by[(setting, "demo/minilm-l6")]) == [] and by[(setting, "demo/minilm-l6")].details["copy_cka"] < 0.9
    for board in build_boards(records):
        rows = {row.record.x.name: row for row in board.rows}
        assert rows["demo/minilm-l6"].rank == 1
        assert rows["cheat/lookup"].rank is None and rows["cheat/lookup"].label == WITHHELD


def test_submit_names_the_cached_model_a_submission_copies(cheats, monkeypatch, capsys):
    """Scored against another vision model only, the lookup's records are no copy of their other side;
    submit still finds the cached model whose features it returns."""
    monkeypatch.setenv("PLATOBENCH_HOME", str(cheats / "home"))
    monkeypatch.syspath_prepend(str(cheats))
    sub = cheats / "sub.yaml"
    layers = np.load(cheats / "vision.npy").shape[0]
    sub.write_text(_zoo(layers).split("  - name: cheat/vision-file")[0].replace("cheat/lookup", "cheat/lookup-again"))
    assert main(["submit", str(sub), "--settings", "tiny-mknn", "--settings-file", str(cheats / "tiny.yaml"),
                 "--pairs", f"demo/minilm-l6:{OTHER}", "--limit", str(N), "--out", str(cheats / "s"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    copied = dict(report["copies"]["cheat/lookup-again"])
    assert copied[VISION] == 1.0 and OTHER not in copied and "demo/minilm-l6" not in copied
    assert any("copies" in w and VISION in w for w in report["warnings"])
