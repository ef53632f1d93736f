"""`platobench run` started by a launcher with 2 CPU processes (torchrun: WORLD_SIZE=2, gloo) on a tiny
plan (2 pairs x 2 settings, 3 models, 300 openclipart samples = two chunks of 256 and 44 rows): every
model is extracted once, its chunks split over the processes and merged into one verified entry; only the
main process reports; the records equal a single-process run of the same plan. Baselines and a logging
`loader: python` encoder: no weights (about 20 s, most of it starting the processes)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from bench_fixtures import TINY_SETTINGS

from platobench.features.store import FeatureStore
from platobench.paths import ENV_VAR
from platobench.results import load_record

pytestmark = pytest.mark.slow

N = 300  # > the extractor's 256-row chunk: two chunks, one per process
LOGGED = "test/logged-bigrams"
PAIRS = f"{LOGGED}:baseline/colour-histogram,baseline/caption-length:baseline/colour-histogram"

# A text encoder that appends the size of each batch it encodes to <log dir>/<RANK>.
LOGGED_MODULE = '''
import os
from pathlib import Path

import torch

from platobench.encoders.base import TextEncoder


class Logged(TextEncoder):
    """Character-bigram counts [B, 32] (layer 0) and their tanh (layer 1)."""

    def __init__(self, spec):
        self.spec, self.device = spec, torch.device("cpu")
        self.layer_ids = spec.layer_ids(spec.num_layers)
        self.widths = [32] * len(self.layer_ids)

    def token_lengths(self, texts):
        return [max(1, len(t)) for t in texts]

    def tokenize(self, texts):
        ids = torch.zeros(len(texts), max(self.token_lengths(texts)), dtype=torch.long)
        mask = torch.zeros_like(ids)
        for i, t in enumerate(texts):
            codes = [ord(c) % 997 + 1 for c in t.lower()] or [1]
            ids[i, : len(codes)], mask[i, : len(codes)] = torch.tensor(codes), 1
        return {"input_ids": ids, "attention_mask": mask}

    def encode(self, batch):
        ids, mask = batch["input_ids"], batch["attention_mask"]
        with open(Path(os.environ["PB_ENCODE_LOG"]) / os.environ.get("RANK", "single"), "a") as log:
            log.write(f"{ids.shape[0]}\\n")
        x = torch.zeros(ids.shape[0], 32).scatter_add_(1, (ids * 31 + ids.roll(-1, 1)) % 32, mask.float())
        return [x, torch.tanh(x / 4)]


def logged(spec, device, dtype, home):
    return Logged(spec)
'''

LOGGED_ZOO = f"""version: 1
models:
  - name: {LOGGED}
    modality: text
    kind: text_encoder
    loader: python
    source: pb_logged_encoder:logged
    pooling: avg
    num_layers: 1
"""


def run(tmp: Path, name: str, launcher: list[str]) -> tuple[subprocess.CompletedProcess, Path, Path]:
    """`platobench run` of the plan under `launcher`, with its own home, results and encode log."""
    home, out, log = tmp / name / "home", tmp / name / "results", tmp / name / "log"
    log.mkdir(parents=True)
    ambient = Path(os.environ.get(ENV_VAR) or Path.home() / ".cache" / "platobench") / "data"
    for cached in ambient.glob("openclipart-catalogue-*.json"):  # only spares the 20 s catalogue scan
        (home / "data").mkdir(parents=True, exist_ok=True)
        shutil.copy(cached, home / "data")
    env = {**os.environ, ENV_VAR: str(home), "OMP_NUM_THREADS": "1", "PB_ENCODE_LOG": str(log),
           "PYTHONPATH": os.pathsep.join(p for p in [str(tmp), os.environ.get("PYTHONPATH")] if p)}
    cmd = [*launcher, "-m", "platobench", "run", "--pairs", PAIRS, "--settings", "tiny", "--settings-file",
           str(tmp / "tiny.yaml"), "--zoo", str(tmp / "zoo.yaml"), "--trust-code", LOGGED, "--limit", str(N), "--workers", "0",
           "--out", str(out), "--json"]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done, home, out


def logged_rows(name: str, tmp: Path) -> dict[str, int]:
    """Rows the logged encoder encoded, per RANK."""
    return {f.name: sum(int(x) for x in f.read_text().split()) for f in (tmp / name / "log").iterdir()}


def test_two_processes_extract_once_and_write_the_single_process_records(tmp_path):
    (tmp_path / "tiny.yaml").write_text(TINY_SETTINGS)
    (tmp_path / "zoo.yaml").write_text(LOGGED_ZOO)
    (tmp_path / "pb_logged_encoder.py").write_text(LOGGED_MODULE)
    single, single_home, single_out = run(tmp_path, "single", [sys.executable])
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    dp, dp_home, dp_out = run(tmp_path, "dp", torchrun)

    # The main process alone reports (one JSON document) and writes the 4 records.
    report = json.loads(dp.stdout)
    assert report["failed"] == {} and len(report["written"]) == len(set(report["written"])) == 4
    # Chunk [0, 256) was encoded by rank 0 and [256, 300) by rank 1, each once (2 jobs share the entry).
    assert logged_rows("single", tmp_path) == {"single": N}
    assert logged_rows("dp", tmp_path) == {"0": 256, "1": N - 256}

    # One complete, verified entry per model, under the same keys as the single-process run.
    entries = {}
    for home in (single_home, dp_home):
        store = FeatureStore(home / "features")
        listed = store.entries()
        assert [e.state for e in listed] == ["complete"] * 3
        assert sorted(e.key["model"] for e in listed) == sorted(
            [LOGGED, "baseline/caption-length", "baseline/colour-histogram"])
        assert all(store.verify(e.digest) == [] for e in listed)
        assert not list((home / "features").rglob("partial"))
        entries[home] = {e.digest for e in listed}
    assert entries[single_home] == entries[dp_home]

    # The records equal the single-process run's, number for number.
    assert json.loads(single.stdout)["failed"] == {}
    paths = sorted(p.relative_to(single_out) for p in single_out.rglob("*.json"))
    assert len(paths) == 4 and paths == sorted(p.relative_to(dp_out) for p in dp_out.rglob("*.json"))
    for rel in paths:
        a, b = (load_record(d / rel).model_dump(mode="json", exclude={"runtime_s", "created"})
                for d in (single_out, dp_out))
        assert same(a, b), rel


def same(a: object, b: object) -> bool:
    """Equal JSON values, floats to 1e-9."""
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and a == pytest.approx(b, abs=1e-9)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


WRAPPER = '''
import os
import sys

from platobench.cli import main

# rank 1 starts with another argument than rank 0: the plan the processes must agree on differs
args = [os.environ["PB_RANK1_ARG"] if a == "RANK_ARG" and os.environ.get("RANK") == "1" else
        os.environ["PB_RANK0_ARG"] if a == "RANK_ARG" else a for a in sys.argv[1:]]
sys.exit(main(args))
'''


@pytest.mark.parametrize(("flag", "rank0", "rank1", "said"), [
    ("--limit", "300", "280", "rank 1's limit is 280, rank 0's 300"),
    ("--zoo", "zoo.yaml", "zoo-other.yaml", "rank 1's feature key has layers = [1], rank 0's [0, 1]"),
])
def test_processes_that_disagree_on_the_plan_stop_before_encoding(tmp_path, flag, rank0, rank1, said):
    """Ranks started with another --limit, or with another zoo entry of the same model, are refused before any
    of them encodes, with the rank and the field named (they used to merge chunks of two encoders, or hang)."""
    (tmp_path / "tiny.yaml").write_text(TINY_SETTINGS)
    (tmp_path / "zoo.yaml").write_text(LOGGED_ZOO)
    (tmp_path / "zoo-other.yaml").write_text(LOGGED_ZOO.replace("num_layers: 1", "num_layers: 1\n    layers: [1]"))
    (tmp_path / "pb_logged_encoder.py").write_text(LOGGED_MODULE)
    (tmp_path / "wrapper.py").write_text(WRAPPER)
    home, log = tmp_path / "home", tmp_path / "log"
    log.mkdir()
    ambient = Path(os.environ.get(ENV_VAR) or Path.home() / ".cache" / "platobench") / "data"
    for cached in ambient.glob("openclipart-catalogue-*.json"):  # only spares the 20 s catalogue scan
        (home / "data").mkdir(parents=True, exist_ok=True)
        shutil.copy(cached, home / "data")
    env = {**os.environ, ENV_VAR: str(home), "OMP_NUM_THREADS": "1", "PB_ENCODE_LOG": str(log),
           "PB_RANK0_ARG": str(tmp_path / rank0) if flag == "--zoo" else rank0,
           "PB_RANK1_ARG": str(tmp_path / rank1) if flag == "--zoo" else rank1,
           "PYTHONPATH": os.pathsep.join(p for p in [str(tmp_path), os.environ.get("PYTHONPATH")] if p)}
    zoo = ["--zoo", "RANK_ARG"] if flag == "--zoo" else ["--zoo", str(tmp_path / "zoo.yaml")]
    limit = ["--limit", "RANK_ARG"] if flag == "--limit" else ["--limit", str(N)]
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
           str(tmp_path / "wrapper.py"), "run", "--pairs", PAIRS, "--settings", "tiny", "--settings-file",
           str(tmp_path / "tiny.yaml"), *zoo, "--trust-code", LOGGED, *limit, "--workers", "0",
           "--out", str(tmp_path / "out")]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode != 0
    assert "disagree on the plan" in done.stderr and said in done.stderr, done.stderr[-3000:]
    assert not any(log.iterdir())  # no process encoded anything
    assert not list((tmp_path / "out").rglob("*.json"))
