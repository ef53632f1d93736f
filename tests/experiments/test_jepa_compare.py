"""`platobench jepa compare`: held-out subset, training of good and bad JEPAs per seed, records and the
good-minus-bad summary. Wiring tests: a synthetic caption corpus, the 1-layer "micro" JEPA trained for a
few steps, and vision / LLM features seeded into the cache under the exact keys compare computes (so no
real weights load). They assert that the pipeline works, never the size of the effect; the slow test
runs the real thing (openclipart-desc, EfficientNet-Lite0, MiniLM) at reduced size."""

from __future__ import annotations

import itertools
import json
import math
import statistics
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from board_checks import assert_board_matches
from PIL import Image

from platobench import cli
from platobench.bench.settings import Catalog, Setting
from platobench.data.base import PairedDataset
from platobench.data.heldout import is_heldout
from platobench.data.subset import paired_subset
from platobench.errors import UserError
from platobench.experiments.jepa import commands
from platobench.experiments.jepa.compare import (
    CompareConfig,
    compare_setting,
    format_summary,
    heldout_subset,
    run_compare,
)
from platobench.experiments.jepa.model import SIZES, SizeConfig
from platobench.experiments.jepa.train import CaptionCorpus, TrainConfig, split
from platobench.features.extract import feature_key
from platobench.features.store import FeatureStore
from platobench.results import load_record, load_records
from platobench.zoo import load_zoo

MICRO = SizeConfig(layers=1, hidden=32, heads=2, intermediate=64, max_tokens=32, projection=32, lr=3e-3)
VISION, LLM = "demo/dinov2-s-imgfocus", "demo/minilm-l6"
REAL_VISION = "demo/efficientnet-lite0"  # the slow real run: real weights, a fifth of DINOv2-S's CPU time


@pytest.fixture(autouse=True)
def micro_size(monkeypatch):
    monkeypatch.setitem(SIZES, "micro", MICRO)


class _Swatches:
    """Sample i -> a small image of one colour (never opened when the vision features are cached)."""

    def __call__(self, i: int) -> Image.Image:
        return Image.new("RGB", (8, 8), (i % 256, 0, 0))


def scenes() -> PairedDataset:
    """180 scenes (colour x animal x place), two differently worded captions each."""
    ids, views = [], []
    for k, (c, a, p) in enumerate(
        itertools.product(
            ["red", "blue", "green", "black", "white", "yellow"],
            ["cat", "dog", "horse", "bird", "cow", "fish"],
            ["kitchen", "garden", "beach", "forest", "street"],
        )
    ):
        ids.append(f"scene-{k}")
        views.append([f"a {c} {a} in the {p}", f"picture of a {p} with a {c} {a}"])
    return PairedDataset("synthetic-scenes", "v1", ids, views, _Swatches())


def seed_cache(
    store: FeatureStore, dataset: PairedDataset, names: list[str], prompt: str = "caption:0"
) -> None:
    """Synthetic per-layer features of zoo models `names` on `dataset`, under their real cache keys."""
    zoo = load_zoo()
    latent = torch.randn(len(dataset), 6, generator=torch.Generator().manual_seed(0))
    for m, name in enumerate(names):
        spec = zoo.get(name)
        key = feature_key(
            spec, dataset, prompt="image" if spec.modality == "vision" else prompt, device=torch.device("cpu")
        )
        g = torch.Generator().manual_seed(m + 1)
        layers = [
            latent @ torch.randn(6, 16, generator=g) + 0.3 * torch.randn(len(dataset), 16, generator=g)
            for _ in key.layers
        ]
        with store.writer(key, dataset.ids, key.layers, [16] * len(key.layers)) as w:
            w.write_chunk(0, layers)
            w.finalize()


def settings() -> list[Setting]:
    return [
        Setting(
            id="demo-mknn",
            dataset="synthetic-scenes",
            metric="mutual_knn",
            params={"k": 5},
            preprocess="prh",
            n_perm=4,
            n_ci=3,
        ),
        Setting(
            id="demo-rotation",
            dataset="synthetic-scenes",
            metric="rotation_residual_heldout",
            n_perm=0,
            n_ci=0,
        ),
    ]


def test_paired_subset_is_a_dataset_of_its_own():
    parent = scenes()
    sub = paired_subset(parent, [5, 2, 9], tag="pick3")
    assert (sub.name, sub.revision) == ("synthetic-scenes:pick3", "v1;subset=pick3")
    assert sub.ids == ["scene-5", "scene-2", "scene-9"]
    assert sub.caption_views(1) == parent.caption_views(2) and sub.captions(1)[2] == parent.captions(1)[9]
    assert sub.image(0).getpixel((0, 0)) == (5, 0, 0)
    assert sub.fingerprint != parent.fingerprint
    assert sub.fingerprint != paired_subset(parent, [5, 2, 9], tag="other").fingerprint
    with pytest.raises(ValueError, match="empty"):
        paired_subset(parent, [], tag="none")
    with pytest.raises(IndexError, match="out of range"):
        paired_subset(parent, [180], tag="past")


def test_heldout_subset_is_exactly_the_training_split_heldout_part():
    parent = scenes()
    sub = heldout_subset(parent, 0.2)
    train_idx, heldout_idx = split(CaptionCorpus.from_dataset(parent), 0.2)
    assert sub.ids == [parent.ids[i] for i in heldout_idx]
    assert all(is_heldout(i, 0.2) for i in sub.ids)
    assert not set(sub.ids) & {parent.ids[i] for i in train_idx}
    assert sub.name == "synthetic-scenes:heldout0.2"
    with pytest.raises(UserError, match="only .* held-out samples"):
        heldout_subset(paired_subset(parent, list(range(20)), tag="few"), 0.2)


def test_compare_setting_renames_and_refuses_zeroshot():
    catalog = Catalog()
    assert compare_setting(catalog.settings["demo-mknn"]).id == "jepa-compare-mknn"
    assert compare_setting(catalog.settings["cka"]).id == "jepa-compare-cka"
    copy = compare_setting(catalog.settings["demo-cka"])
    assert copy.model_dump(exclude={"id"}) == catalog.settings["demo-cka"].model_dump(exclude={"id"})
    with pytest.raises(UserError, match="paired settings"):
        compare_setting(catalog.settings["zs-fmnist"])


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    SIZES["micro"] = MICRO  # module-scoped: the autouse fixture is function-scoped
    try:
        root = tmp_path_factory.mktemp("compare")
        dataset = scenes()
        store = FeatureStore(root / "features")
        seed_cache(store, heldout_subset(dataset, 0.2), [VISION, LLM])
        zoo = load_zoo()
        config = CompareConfig(
            train=TrainConfig(size="micro", steps=6, batch_size=32, eval_pairs=32, log_every=3),
            seeds=[0, 1],
            vision=zoo.get(VISION),
            llms=[zoo.get(LLM)],
            settings=settings(),
            out=root / "results",
        )
        return root, dataset, config, run_compare(dataset, config, store=store, home=root)
    finally:
        del SIZES["micro"]


def test_compare_writes_one_finite_record_per_model_and_setting(compared):
    root, dataset, _config, result = compared
    names = [f"text-jepa/micro-{v}.synthetic-scenes-s{s}-n192" for s in (0, 1) for v in ("good", "bad")] + [LLM]
    assert len(result.paths) == len(names) * 2 and all(Path(p).is_file() for p in result.paths)
    records = load_records(root / "results")
    assert {(r.setting, r.x.name) for r in records} == {
        (s, n) for s in ("jepa-compare-mknn", "jepa-compare-rotation") for n in names
    }
    heldout = result.heldout
    for r in records:
        assert r.y.name == VISION and math.isfinite(r.score)
        assert (r.dataset.name, r.dataset.n, r.dataset.fingerprint) == (
            heldout.name,
            len(heldout),
            heldout.fingerprint,
        )
        # grid: [embeddings + blocks of the text model] x [embeddings + 12 blocks of the ViT]
        lang_layers = 2 if r.x.kind == "text_jepa" else 7
        assert len(r.grid) == lang_layers and all(len(row) == 13 for row in r.grid)
        assert r.provenance.setting_config["id"] == r.setting
    jepa = [r for r in records if r.x.kind == "text_jepa"]
    assert {(r.details["jepa_compare"]["views"], r.details["jepa_compare"]["seed"]) for r in jepa} == {
        (v, s) for v in ("good", "bad") for s in (0, 1)
    }
    assert all(r.details["jepa_compare"]["parent_dataset"]["fingerprint"] == dataset.fingerprint for r in jepa)
    mknn = next(r for r in records if r.setting == "jepa-compare-mknn")
    assert mknn.null is not None and mknn.null.n_perm == 4 and mknn.ci is not None


def test_good_and_bad_runs_share_steps_seeds_and_split(compared):
    root, _, _config, result = compared
    assert [(r["views"], r["seed"]) for r in result.runs] == [
        ("good", 0),
        ("bad", 0),
        ("good", 1),
        ("bad", 1),
    ]
    assert {(r["steps"], r["train_samples"], r["heldout_samples"]) for r in result.runs} == {
        (6, result.runs[0]["train_samples"], len(result.heldout))
    }
    for run in result.runs:
        assert Path(run["checkpoint"]).parent == root / "jepa" / "compare"
        assert math.isfinite(run["final_loss"]) and run["effective_rank"] > 1.0


def test_summary_is_good_minus_bad_over_seeds_next_to_the_llm(compared):
    _, _, _, result = compared
    for setting, s in result.summary.items():
        rs = [r for r in result.records if r.setting == setting]
        score = {
            (r.details["jepa_compare"]["views"], r.details["jepa_compare"]["seed"]): r.score
            for r in rs
            if r.x.kind == "text_jepa"
        }
        diffs = [score[("good", k)] - score[("bad", k)] for k in (0, 1)]
        assert s["seeds"] == [0, 1]
        assert s["good_minus_bad"]["per_seed"] == pytest.approx(diffs, abs=1e-12)
        assert s["good_minus_bad"]["mean"] == pytest.approx(statistics.fmean(diffs))
        assert s["good_minus_bad"]["std"] == pytest.approx(statistics.stdev(diffs))
        assert s["good"]["mean"] == pytest.approx((score[("good", 0)] + score[("good", 1)]) / 2)
        assert s["others"] == {LLM: next(r.score for r in rs if r.x.name == LLM)}
    table = format_summary(result.summary)
    assert table.splitlines()[0].startswith("| setting | metric | good | bad | good - bad")
    assert (
        "| jepa-compare-mknn | mutual_knn ↑ |" in table
        and "| jepa-compare-rotation | rotation_residual_heldout ↓ |" in table
    )


def test_llm_and_vision_features_come_from_the_cache(compared):
    root, _, _config, result = compared
    store = FeatureStore(root / "features")
    zoo = load_zoo()
    llm = store.get(feature_key(zoo.get(LLM), result.heldout, prompt="caption:0", device=torch.device("cpu")))
    vision = store.get(
        feature_key(zoo.get(VISION), result.heldout, prompt="image", device=torch.device("cpu"))
    )
    record = next(r for r in result.records if r.x.name == LLM)
    assert record.provenance.inputs == {"x": llm.digest, "y": vision.digest}


def test_one_seed_has_no_spread(compared, tmp_path):
    root, dataset, config, _ = compared
    one = replace(config, seeds=[3], settings=settings()[:1], llms=[], out=tmp_path / "results")
    result = run_compare(dataset, one, store=FeatureStore(root / "features"), home=tmp_path)
    s = result.summary["jepa-compare-mknn"]
    assert s["good_minus_bad"]["std"] is None and len(s["good_minus_bad"]["per_seed"]) == 1
    assert s["others"] == {}
    assert "±" not in format_summary(result.summary).splitlines()[2]


def _cli(tmp_path, monkeypatch, *extra: str) -> list[str]:
    monkeypatch.setenv("PLATOBENCH_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(commands, "_load_dataset", lambda name, limit: scenes())
    return [
        "jepa",
        "compare",
        "--data",
        "synthetic-scenes",
        "--vision",
        VISION,
        "--size",
        "micro",
        "--steps",
        "2",
        "--batch-size",
        "16",
        "--out",
        str(tmp_path / "results"),
        *extra,
    ]


def test_cli_compare_prints_json(tmp_path, monkeypatch, capsys):
    argv = _cli(tmp_path, monkeypatch, "--seeds", "1", "--llm", LLM, "--settings", "demo-cka", "--json")
    seed_cache(FeatureStore(tmp_path / "home" / "features"), heldout_subset(scenes(), 0.2), [VISION, LLM])
    assert cli.main(argv) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert "text-jepa/micro-bad.synthetic-scenes-s0-n32 step 2: loss" in captured.err  # progress goes to stderr
    assert out["dataset"]["name"] == "synthetic-scenes:heldout0.2"
    assert [(r["views"], r["seed"]) for r in out["runs"]] == [("good", 0), ("bad", 0)]
    assert len(out["records"]) == 3 and all(
        load_record(Path(p)).setting == "jepa-compare-cka" for p in out["records"]
    )
    summary = out["summary"]["jepa-compare-cka"]
    assert summary["metric"] == "cka" and list(summary["others"]) == [LLM]
    assert math.isfinite(summary["good_minus_bad"]["mean"])


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--vision", LLM], "expected a vision model"),
        (["--seeds", "0"], "--seeds 0: expected at least 1"),
        (["--settings", "zs-fmnist"], "compare needs paired settings"),
        (["--llm", VISION], "are not text models"),
        (["--steps", "0"], "--steps 0"),
    ],
)
def test_cli_compare_errors_name_the_argument(tmp_path, monkeypatch, capsys, extra, message):
    assert cli.main(_cli(tmp_path, monkeypatch, *extra)) == 2
    assert message in capsys.readouterr().err


def test_cli_compare_defaults_to_paired_settings(tmp_path, monkeypatch):
    """The README's `jepa compare --dataset openclipart-desc --vision demo/dinov2-s-imgfocus --seeds 3`
    passes validation: its default settings are all paired."""
    import platobench.experiments.jepa.compare as compare_module

    seen = {}

    def stop(dataset, config, **kwargs):
        seen["settings"] = [compare_setting(s).id for s in config.settings]
        raise UserError("stopped before training")

    monkeypatch.setattr(compare_module, "run_compare", stop)
    assert cli.main(_cli(tmp_path, monkeypatch, "--seeds", "3")) == 2
    assert seen["settings"] == ["jepa-compare-mknn", "jepa-compare-cka", "jepa-compare-rotation"]


def test_cli_compare_help_describes_the_protocol(capsys):
    with pytest.raises(SystemExit):
        cli.main(["jepa", "compare", "--help"])
    text = capsys.readouterr().out
    assert "good-view and a bad-view" in text and "--seeds" in text and "--llm" in text


@pytest.mark.slow
def test_real_compare_on_openclipart_at_reduced_size(tmp_path, monkeypatch, capsys):
    """Real data and weights (Debian openclipart, pip EfficientNet-Lite0 and MiniLM): 2 seeds, 20 steps, 300 of the 388
    images with a distinct clean title and description."""
    monkeypatch.setenv("PLATOBENCH_HOME", str(tmp_path / "home"))
    argv = [
        "jepa",
        "compare",
        "--data",
        "openclipart-desc",
        "--vision",
        REAL_VISION,
        "--seeds",
        "2",
        "--steps",
        "20",
        "--limit",
        "300",
        "--llm",
        LLM,
        "--settings",
        "demo-mknn",
        "--out",
        str(tmp_path / "results"),
        "--json",
    ]
    assert cli.main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["records"]) == 5
    s = out["summary"]["jepa-compare-mknn"]
    assert len(s["good_minus_bad"]["per_seed"]) == 2 and math.isfinite(s["good_minus_bad"]["std"])
    assert all(0.0 <= v <= 1.0 for v in s["good"]["per_seed"] + s["bad"]["per_seed"] + [s["others"][LLM]])


def test_jepa_compare_ends_with_the_board_of_its_records(tmp_path, monkeypatch, capsys):
    import platobench.experiments.jepa.compare as compare_module

    monkeypatch.setitem(SIZES, "micro", MICRO)
    argv = _cli(tmp_path, monkeypatch, "--seeds", "1", "--llm", LLM, "--settings", "demo-cka")
    seed_cache(FeatureStore(tmp_path / "home" / "features"),
                          heldout_subset(scenes(), 0.2), [VISION, LLM])
    results = []

    def once(*args, **kwargs):  # train and score once; the second call prints the same result
        if not results:
            results.append(run_compare(*args, **kwargs))
        return results[0]

    monkeypatch.setattr(compare_module, "run_compare", once)
    assert cli.main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    records = [load_record(Path(p)) for p in out["records"]]
    assert_board_matches(out["board"], None, records)
    assert cli.main(argv) == 0
    text = capsys.readouterr().out
    assert_board_matches(out["board"], text, records)
    assert text.index("| setting |") < text.index("== jepa-compare-cka") < text.index(" records under ")
