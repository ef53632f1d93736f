"""`platobench scaling-n` (platobench.experiments.scaling): sizes, the synthetic population, curves with known
answers (identical sides score 1 at every N, broken pairing sits at chance), refusals, the report, and
an end-to-end run on real weights (slow)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from platobench import cli
from platobench.errors import UserError
from platobench.experiments.scaling.curve import Point, doubling_sizes, real_curve, synthetic_curve
from platobench.experiments.scaling.report import markdown, write_report
from platobench.experiments.scaling.synthetic import LatentModel, latent_pair


def test_doubling_sizes():
    assert doubling_sizes(64, 2438) == [64, 128, 256, 512, 1024, 2048, 2438]
    assert doubling_sizes(64, 256) == [64, 128, 256]
    assert doubling_sizes(10, 10) == [10]
    for lo, hi in [(1, 10), (20, 10)]:
        with pytest.raises(UserError, match="sizes"):
            doubling_sizes(lo, hi)


def test_latent_pair_is_one_population_with_fresh_draws():
    model = LatentModel(12, 7, rank=3, noise=0.5, seed=1)
    x0, y0 = latent_pair(model, 50, 0)
    assert x0.shape == (50, 12) and y0.shape == (50, 7)
    assert torch.equal(latent_pair(model, 50, 0)[0], x0)  # seeded
    assert not torch.equal(latent_pair(model, 50, 1)[0], x0)  # a fresh draw
    a, b = model.maps()
    assert torch.equal(a, LatentModel(12, 7, rank=3, noise=2.0, seed=1).maps()[0])  # maps fixed by the seed
    # Without noise both sides are linear images of the same latent: rank r each.
    x, y = latent_pair(LatentModel(12, 7, rank=3, noise=0.0, seed=1), 50, 0)
    assert torch.linalg.matrix_rank(x) == 3 and torch.linalg.matrix_rank(torch.cat([x, y], 1)) == 3
    with pytest.raises(UserError, match="noise"):
        LatentModel(3, 3, noise=-1.0)
    with pytest.raises(UserError, match="n >= 2"):
        latent_pair(model, 1, 0)


def test_real_curve_known_answers():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(300, 16, generator=g)
    same = real_curve(x, x.clone(), [32, 64, 300], ["mutual_knn", "cka"], k=5, draws=3, seed=0)
    assert [(p.metric, p.n, p.draws) for p in same] == [
        ("mutual_knn", 32, 3), ("cka", 32, 3), ("mutual_knn", 64, 3), ("cka", 64, 3),
        ("mutual_knn", 300, 1), ("cka", 300, 1)]
    assert all(p.mean == pytest.approx(1.0) and p.lo == pytest.approx(1.0) for p in same)
    assert same[0].chance == pytest.approx(5 / 31) and same[1].chance == 0.0
    shuffled = real_curve(x, x[torch.randperm(300, generator=g)], [300], ["mutual_knn"], k=5, draws=1, seed=0)
    assert shuffled[0].mean < 3 * shuffled[0].chance
    with pytest.raises(UserError, match="paired set has 300"):
        real_curve(x, x, [400], ["cka"], k=5, draws=1, seed=0)


def test_subsets_differ_between_draws():
    x = torch.randn(200, 8, generator=torch.Generator().manual_seed(2))
    y = x + torch.randn(200, 8, generator=torch.Generator().manual_seed(3))
    (p,) = real_curve(x, y, [50], ["mutual_knn"], k=5, draws=8, seed=0)
    assert p.lo < p.mean < p.hi  # eight different subsets, eight different scores


def test_synthetic_mutual_knn_falls_with_n():
    """The effect the command exists to show: for a fixed population, mutual kNN at fixed k falls as N
    grows (neighbourhoods shrink below the noise scale), while unbiased CKA, an estimate of one
    population value, stays put."""
    model = LatentModel(32, 24, rank=4, noise=1.0, seed=0)
    pts = synthetic_curve(model, [64, 1024], ["mutual_knn", "cka"], k=10, draws=3)
    knn = [p.mean for p in pts if p.metric == "mutual_knn"]
    cka = [p for p in pts if p.metric == "cka"]
    assert knn[1] < 0.8 * knn[0]
    assert abs(cka[1].mean - cka[0].mean) < 0.05


def test_report_files(tmp_path: Path):
    points = [Point("real", "mutual_knn", 64, 3, 0.3, 0.2, 0.4, 0.1, 0.01),
              Point("synthetic", "mutual_knn", 64, 1, 0.5, 0.5, 0.5, 0.1, 0.01),
              Point("real", "cka", 64, 3, 0.6, 0.5, 0.7, 0.0, 0.02)]
    setup = {"real": "toy", "synthetic": "toy-syn", "preprocess": "prh", "k": 10, "metrics": ["mutual_knn", "cka"]}
    files = write_report(tmp_path / "r", setup, points)
    assert [Path(f).name for f in files] == ["scaling-n.json", "scaling-n.md", "scaling-n.png"]
    assert json.loads((tmp_path / "r" / "scaling-n.json").read_text())["points"][0]["mean"] == 0.3
    md = markdown(setup, points)
    assert "| 64 | 0.3000 [0.2000, 0.4000] | 0.5000 (1 draw) | 0.1000 | 0.0 |" in md
    assert "## cka" in md


@pytest.mark.parametrize(("extra", "message"), [
    (["--min-n", "5"], "--min-n must be >= max(4, k + 1) = 11"),
    (["--metrics", "cycle_knn"], "scaling-n measures"),
    (["--draws", "0"], "--draws must be >= 1"),
    (["--synthetic-max", "20", "--min-n", "32"], "below --min-n"),
    (["--text", "demo/dinov2-s-imgfocus"], "expected a text model"),
    (["--dataset", "fashion-mnist"], "not a paired dataset"),
])
def test_refusals(capsys, extra, message):
    assert cli.main(["scaling-n", *extra]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.slow
def test_scaling_n_on_real_weights(tmp_path: Path, capsys, demo_features):
    argv = ["scaling-n", "--dataset", "tuxpaint", "--min-n", "128", "--draws", "2", "--synthetic-max", "256",
            "--synthetic-draws", "2", "--report", str(tmp_path), "--json"]
    assert cli.main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    real = [p for p in out["points"] if p["source"] == "real"]
    assert [p["n"] for p in real if p["metric"] == "mutual_knn"] == [128, 256, 512, 644]
    assert all(p["mean"] > p["chance"] for p in real)  # MiniLM and DINOv2-S align above chance at every N
    assert (tmp_path / "scaling-n.png").stat().st_size > 1000
