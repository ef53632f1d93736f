"""Training works (loss falls, no collapse, seeds reproduce) and the checkpoint reloads with identical
features through transformers and through the zoo + encoder loader. Uses a 1-layer "micro" size and a
synthetic caption corpus so the whole file runs in seconds; `--size tiny` on openclipart is the slow test."""

from __future__ import annotations

import itertools
import json

import pytest
import torch

from platobench import cli
from platobench.data.heldout import is_heldout
from platobench.encoders import load_encoder
from platobench.experiments.jepa import commands
from platobench.experiments.jepa.checkpoint import METADATA_FILE, encode_checkpoint, read_metadata
from platobench.experiments.jepa.export import export_run
from platobench.experiments.jepa.model import SIZES, SizeConfig
from platobench.experiments.jepa.train import CaptionCorpus, TrainConfig, split, train
from platobench.experiments.jepa.views import parse_views
from platobench.zoo import read_zoo_file

MICRO = SizeConfig(layers=1, hidden=32, heads=2, intermediate=64, max_tokens=32, projection=32, lr=3e-3)
COLOURS = ["red", "blue", "green", "yellow", "black", "white"]
ANIMALS = ["cat", "dog", "horse", "bird", "fish", "cow"]
PLACES = ["kitchen", "garden", "beach", "forest", "street"]


@pytest.fixture(autouse=True)
def micro_size(monkeypatch):
    monkeypatch.setitem(SIZES, "micro", MICRO)


def scene_corpus() -> CaptionCorpus:
    """180 scenes (colour x animal x place), each with three differently worded captions."""
    ids, views = [], []
    for k, (c, a, p) in enumerate(itertools.product(COLOURS, ANIMALS, PLACES)):
        ids.append(f"scene-{k}")
        views.append(
            [
                f"a {c} {a} in the {p}",
                f"picture of a {p} with a {c} {a}",
                f"the {a} is {c} and stands in a {p}",
            ]
        )
    return CaptionCorpus("synthetic-scenes", "v1", "0" * 64, ids, views)


def config(**changes) -> TrainConfig:
    base = {
        "size": "micro",
        "views": parse_views("good"),
        "steps": 40,
        "batch_size": 32,
        "eval_pairs": 64,
        "log_every": 20,
    }
    return TrainConfig(**{**base, **changes})


@pytest.fixture(scope="module")
def trained():
    SIZES["micro"] = MICRO  # module-scoped: the autouse fixture is function-scoped
    try:
        corpus = scene_corpus()
        return corpus, config(), train(corpus, config())
    finally:
        del SIZES["micro"]


def test_split_is_by_id_hash_and_keeps_only_samples_with_two_captions():
    corpus = scene_corpus()
    train_idx, heldout_idx = split(corpus, 0.2)
    assert sorted(train_idx + heldout_idx) == list(range(len(corpus.ids)))
    assert 0.1 < len(heldout_idx) / len(corpus.ids) < 0.3
    assert all(is_heldout(corpus.ids[i], 0.2) for i in heldout_idx)
    assert not is_heldout("x", 0.0) and is_heldout("x", 1.0)
    corpus.views[0] = ["only one caption"]
    assert 0 not in split(corpus, 0.2)[0] + split(corpus, 0.2)[1]


def test_loss_decreases_and_features_do_not_collapse(trained):
    _, _, result = trained
    assert result.final_loss < 0.8 * result.initial_loss
    # Floor: a collapsed encoder has effective rank ~1; the micro encoder's 32-d features stay above 4.
    assert result.effective_rank > 4.0
    assert [line["step"] for line in result.history] == [20, 40]
    assert result.train_samples + result.heldout_samples == 180
    assert result.samples_per_s > 0


def test_seed_reproduces_training_on_cpu(trained):
    corpus, cfg, result = trained
    again = train(corpus, cfg)
    assert again.history == result.history
    for p, q in zip(result.model.state_dict().values(), again.model.state_dict().values(), strict=True):
        assert torch.equal(p, q)
    other = train(corpus, config(seed=1, steps=2, log_every=1))
    assert other.history[0]["loss"] != result.history[0]["loss"]


def test_bad_views_and_predictor_train_too(trained):
    corpus, _, _ = trained
    result = train(corpus, config(views=parse_views("bad"), predictor=True, steps=20))
    assert result.final_loss < result.initial_loss
    assert result.model.predictor is not None


def test_too_few_samples_is_a_clear_error():
    corpus = scene_corpus()
    with pytest.raises(ValueError, match="need at least 500"):
        train(corpus, config(batch_size=500))


def test_checkpoint_reloads_with_identical_features(trained, tmp_path):
    corpus, cfg, result = trained
    summary = export_run(
        result, corpus, cfg, name="text-jepa/micro-good.test-s0", out_dir=tmp_path / "ckpt", home=tmp_path
    )
    folder = tmp_path / "ckpt"
    assert {"config.json", "model.safetensors", "tokenizer_config.json", METADATA_FILE} <= {
        p.name for p in folder.iterdir()
    }
    meta = read_metadata(folder)
    assert meta["pooling"] == "avg" and meta["views"] == "good" and meta["objective"] == "vicreg"
    assert meta["final_loss"] == summary["final_loss"] == result.final_loss
    assert meta["data"]["train_samples"] == result.train_samples

    texts = ["a red cat in the garden", "picture of a beach", "the horse is white and stands in a street"]
    tokens = result.tokenizer(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        expected = result.model.eval().embed(tokens["input_ids"], tokens["attention_mask"])
    torch.testing.assert_close(
        encode_checkpoint(folder, texts, MICRO.max_tokens), expected, rtol=0, atol=1e-6
    )

    zoo = read_zoo_file(summary["zoo_entry"])
    (spec,) = zoo.models
    assert (spec.name, spec.kind, spec.loader, spec.pooling) == (
        "text-jepa/micro-good.test-s0",
        "text_jepa",
        "hf_text",
        "avg",
    )
    assert spec.num_layers == 1 and spec.width == 32
    encoder = load_encoder(spec, device="cpu", dtype="float32")
    last = encoder.encode(encoder.tokenize(texts))[encoder.layer_ids.index(1)]
    torch.testing.assert_close(last, expected, rtol=0, atol=1e-6)


def test_cli_train_prints_the_json_summary(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(commands, "load_corpus", lambda name, limit, flag: scene_corpus())
    code = cli.main(
        [
            "jepa",
            "train",
            "--views",
            "mix:0.5",
            "--data",
            "synthetic",
            "--size",
            "micro",
            "--steps",
            "4",
            "--batch-size",
            "16",
            "--out",
            str(tmp_path / "run"),
            "--json",
        ]
    )
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert {"initial_loss", "final_loss", "effective_rank", "checkpoint", "zoo_entry"} <= set(out)
    assert out["views"] == "mix:0.5" and out["checkpoint"] == str((tmp_path / "run").resolve())
    assert read_zoo_file(out["zoo_entry"])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--views", "half"], "--views: expected good, bad or mix:P"),
        (["--views", "good", "--steps", "0"], "--steps 0: expected a positive"),
        (["--views", "good", "--heldout", "1"], "--heldout 1.0: expected a share"),
        (["--views", "good", "--name", "Not A Name"], "--name 'Not A Name'"),
    ],
)
def test_cli_errors_name_the_argument(monkeypatch, tmp_path, capsys, argv, message):
    monkeypatch.setattr(commands, "load_corpus", lambda name, limit, flag: scene_corpus())
    base = [
        "jepa",
        "train",
        "--data",
        "synthetic",
        "--size",
        "micro",
        "--steps",
        "2",
        "--batch-size",
        "8",
        "--out",
        str(tmp_path / "run"),
    ]
    assert cli.main(base + argv) == 2
    assert message in capsys.readouterr().err


@pytest.mark.slow
def test_tiny_trains_on_openclipart_without_collapse(tmp_path):
    """The real offline run: tiny, good views, openclipart titles vs descriptions (needs Debian's
    openclipart-png and openclipart-svg)."""
    corpus = commands.load_corpus("openclipart", None)
    result = train(corpus, TrainConfig(size="tiny", views=parse_views("good"), steps=100, batch_size=32))
    assert result.final_loss < 0.8 * result.initial_loss
    assert result.effective_rank > 10.0  # tiny features are 128-d; a collapsed encoder sits near 1



def _no_training(*args, **kwargs):
    raise AssertionError("training started before the batch check")


def test_cli_train_limit_below_the_global_batch_fails_before_loading(monkeypatch, capsys):
    monkeypatch.setattr(commands, "load_corpus", _no_training)
    argv = ["jepa", "train", "--dataset", "synthetic", "--limit", "8", "--batch-size", "16"]
    assert cli.main(argv) == 2
    assert "--limit 8: fewer samples than one step's global batch (16" in capsys.readouterr().err


def test_cli_train_checks_the_training_split_before_any_work(monkeypatch, capsys):
    """--limit 64 with --batch-size 64 leaves ~51 training samples outside the held-out share."""
    import platobench.experiments.jepa.train as train_module

    small = scene_corpus()
    small.ids[:], small.views[:] = small.ids[:64], small.views[:64]
    monkeypatch.setattr(commands, "load_corpus", lambda name, limit, flag: small)
    monkeypatch.setattr(train_module, "train", _no_training)
    argv = ["jepa", "train", "--dataset", "synthetic", "--limit", "64", "--batch-size", "64", "--size", "micro"]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "--dataset synthetic --limit 64:" in err and "need at least 64 (the global batch" in err


def test_default_names_tell_runs_of_different_lengths_apart(trained, tmp_path):
    corpus, cfg, result = trained
    short = config(steps=2, log_every=1)
    names = [
        export_run(r, corpus, c, name=None, out_dir=None, home=tmp_path)["name"]
        for r, c in ((result, cfg), (train(corpus, short), short))
    ]
    assert names == ["text-jepa/micro-good.synthetic-scenes-s0-n1280", "text-jepa/micro-good.synthetic-scenes-s0-n64"]
    assert {p.name for p in (tmp_path / "jepa").iterdir()} == {n.split("/")[1] for n in names}
