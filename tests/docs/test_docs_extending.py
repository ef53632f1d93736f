"""The worked examples of docs/extending/ performed as written, in a temporary copy of the package: each
one's code blocks are applied to the files its headings name, the files touched are counted against what
the page promises, and the extension is then used (and, for a metric, held to the metric contracts). Slow:
each runs platobench in subprocesses (10-30 s)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STEP = re.compile(r"^## \d+\. .*`(?P<path>[^`]+)`\s*$", re.M)
BLOCK = re.compile(r"```python\n(?P<code>.*?)```", re.S)


def apply_steps(page: Path, root: Path) -> None:
    """For each "## N. ... `path`" heading, the first python block under it is: the whole new file; or, when
    `path` exists, one `NAME = ...` line that replaces that assignment; or else lines appended to the file."""
    text = page.read_text(encoding="utf-8")
    for step in STEP.finditer(text):
        code = BLOCK.search(text, step.end()).group("code")
        target = root / step.group("path")
        if not target.exists():
            target.write_text(code, encoding="utf-8")
            continue
        old = target.read_text(encoding="utf-8")
        assignment = re.match(r"([A-Z_]+) = ", code)
        if assignment is None:
            target.write_text(old + "\n" + code, encoding="utf-8")
            continue
        new, count = re.subn(rf"^{assignment.group(1)} = .*$", code.strip(), old, count=1, flags=re.M)
        assert count == 1, f"{page.name}: no assignment {assignment.group(1)} in {step.group('path')}"
        target.write_text(new, encoding="utf-8")


def yaml_block(page: Path) -> str:
    return re.search(r"```yaml\n(?P<y>.*?)```", page.read_text(encoding="utf-8"), re.S).group("y")


def digests(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted((root / "platobench").rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def copy(tmp_path: Path) -> Path:
    root = tmp_path / "copy"
    shutil.copytree(ROOT / "platobench", root / "platobench", ignore=shutil.ignore_patterns("__pycache__"))
    return root


def run(root: Path, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=root, env=env, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


CHECK_METRIC = """
import numpy as np, platobench
from platobench.metrics import list_metrics, score
assert platobench.__file__.startswith({root!r}), platobench.__file__
assert "rsa_cosine" in [m.id for m in list_metrics()]
rng = np.random.default_rng(0)
x, y = rng.standard_normal((40, 6)), rng.standard_normal((40, 5))
q, _ = np.linalg.qr(rng.standard_normal((6, 6)))
assert abs(score("rsa_cosine", x, x) - 1) < 1e-12 and abs(score("rsa_cosine", x, 3 * x @ q) - 1) < 1e-9
assert abs(score("rsa_cosine", x, y)) < 0.2
print("ok")
"""


@pytest.mark.slow
def test_adding_a_metric_touches_two_files_and_meets_the_contracts(tmp_path):
    root = copy(tmp_path)
    before = digests(root)
    apply_steps(ROOT / "docs" / "extending" / "metric.md", root)
    after = digests(root)
    touched = sorted(p for p in after if before.get(p) != after[p])
    assert touched == ["platobench/metrics/registry.py", "platobench/metrics/rsa.py"]
    assert run(root, "-c", CHECK_METRIC.format(root=str(root))).strip() == "ok"
    out = run(root, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "rsa_cosine", "--rootdir", str(ROOT),
              str(ROOT / "tests" / "metrics" / "test_metric_contracts.py"))
    assert re.search(r"\b\d+ passed", out) and "failed" not in out, out


TINY_CNN = """
import sys, torch
class TinyCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.stage1 = torch.nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.stage2 = torch.nn.Conv2d(16, 32, 3, stride=2, padding=1)
    def forward(self, x):
        a = torch.relu(self.stem(x))
        b = torch.relu(self.stage1(a))
        return [a, b, torch.relu(self.stage2(b))]
torch.manual_seed(0)
torch.jit.script(TinyCNN()).save(sys.argv[1])
"""


@pytest.mark.slow
def test_adding_a_loader_touches_two_files_and_extracts_features(tmp_path):
    page = ROOT / "docs" / "extending" / "model.md"
    root = copy(tmp_path)
    before = digests(root)
    apply_steps(page, root)
    after = digests(root)
    touched = sorted(p for p in after if before.get(p) != after[p])
    assert touched == ["platobench/encoders/torchscript_cnn.py", "platobench/zoo/support.py"]
    (tmp_path / "make_cnn.py").write_text(TINY_CNN, encoding="utf-8")  # torch.jit.script reads the source
    run(root, str(tmp_path / "make_cnn.py"), str(root / "tiny_cnn.pt"))  # random weights: wiring, not a result
    (root / "zoo.yaml").write_text(yaml_block(page), encoding="utf-8")
    out = run(root, "-m", "platobench", "extract", "--zoo", "zoo.yaml", "--model", "mine/tiny-cnn", "--dataset",
              "tuxpaint", "--limit", "8", "--workers", "0", "--home", str(tmp_path / "home"), "--json")
    entry = json.loads(out)
    assert (entry["model"], entry["n"], entry["layers"], entry["widths"]) == ("mine/tiny-cnn", 8, [0, 1, 2], [8, 16, 32])


def test_adding_a_dataset_is_one_file_of_data(tmp_path, capsys):
    """The page's datasets file, beside eight images and their manifest, is a dataset `data show` reads."""
    from platobench.cli import main
    from platobench.data import get_dataset

    stamps, photos = get_dataset("tuxpaint", limit=8), tmp_path / "photos"
    photos.mkdir()
    lines = []
    for i, (sample_id, caption) in enumerate(zip(stamps.ids, stamps.captions(0))):
        stamps.image(i).save(photos / f"{i}.png")
        lines.append(json.dumps({"id": sample_id, "file": f"{i}.png", "caption": caption}) + "\n")
    (photos / "manifest.jsonl").write_text("".join(lines), encoding="utf-8")
    (tmp_path / "datasets.yaml").write_text(yaml_block(ROOT / "docs" / "extending" / "dataset.md"), encoding="utf-8")
    assert main(["data", "show", "my-stamps", "--datasets-file", str(tmp_path / "datasets.yaml"), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["n"] == 8 and shown["licence"] == "GPL-2 (Tux Paint stamps)", shown


CHECK_SPECTRUM = """
import torch, platobench
from platobench.bench.spectrum_protocol import spectrum
assert platobench.__file__.startswith({root!r}), platobench.__file__
g = torch.Generator().manual_seed(0)
x = torch.randn(50, 8, generator=g, dtype=torch.float64) * 2.0 ** torch.arange(8, 0, -1)  # a steeply decaying spectrum
q, _ = torch.linalg.qr(torch.randn(8, 8, generator=g, dtype=torch.float64))
same = spectrum(x, 6), spectrum(3 * x[torch.randperm(50, generator=g)] @ q, 6)
assert abs(float(torch.minimum(*same).sum()) - 1) < 1e-9  # pair-free: shuffled, rotated and scaled, still 1
flat = spectrum(torch.randn(50, 8, generator=g), 6)
assert float(torch.minimum(same[0], flat).sum()) < 0.5  # against a flat one: far below 1
print("ok")
"""


@pytest.mark.slow
def test_adding_a_setting_kind_touches_two_files_then_runs_checks_and_ranks(tmp_path):
    """The page's `spectrum` kind: two files; its records are written by `run`, recomputed by `check` and
    ranked by `leaderboard`; a setting that breaks its rules is refused when the file loads."""
    from platobench.results import load_records

    page = ROOT / "docs" / "extending" / "protocol.md"
    root = copy(tmp_path)
    before = digests(root)
    apply_steps(page, root)
    after = digests(root)
    touched = sorted(p for p in after if before.get(p) != after[p])
    assert touched == ["platobench/bench/protocols.py", "platobench/bench/spectrum_protocol.py"]
    assert run(root, "-c", CHECK_SPECTRUM.format(root=str(root))).strip() == "ok"
    (root / "spectrum.yaml").write_text(yaml_block(page), encoding="utf-8")
    out = tmp_path / "results"
    pairs = "baseline/caption-length:baseline/colour-histogram,baseline/bag-of-words:baseline/colour-histogram"
    run(root, "-m", "platobench", "run", "--settings-file", "spectrum.yaml", "--settings", "tux-spectrum",
        "--pairs", pairs, "--limit", "64", "--out", str(out))
    records = load_records(out)
    assert len(records) == 2 and {r.kind for r in records} == {"spectrum"}
    assert all(0 < r.score <= 1 and r.null is None and r.dataset.n == 64 for r in records)
    checked = json.loads(run(root, "-m", "platobench", "check", "--results", str(out), "--settings-file",
                             "spectrum.yaml", "--json"))
    assert checked["counts"]["ok"] == 2, checked["counts"]
    run(root, "-m", "platobench", "leaderboard", "--results", str(out), "--out", str(tmp_path / "board"))
    assert "## tux-spectrum — spectrum_overlap on tuxpaint" in (tmp_path / "board" / "README.md").read_text()
    (root / "bad.yaml").write_text("settings:\n  bad: {kind: spectrum, dataset: tuxpaint, metric: spectrum_overlap, "
                                   "params: {k: 16}}\n", encoding="utf-8")
    refused = subprocess.run([sys.executable, "-m", "platobench", "settings", "show", "bad", "--settings-file",
                              "bad.yaml"], capture_output=True, text=True, cwd=root,
                             env={**os.environ, "PYTHONPATH": str(root)}, timeout=120)
    assert refused.returncode == 2 and "a spectrum setting has n_perm: 0 and n_ci: 0" in refused.stderr
