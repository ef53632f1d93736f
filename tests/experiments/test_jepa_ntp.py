"""Next-token prediction with the JEPA's backbone, the shared training loop's schedules and checkpoint
snapshots. A 1-layer "micro" size and a small synthetic caption corpus keep each test to seconds."""

from __future__ import annotations

import itertools
import json

import pytest
import torch
from transformers import AutoModel, AutoModelForCausalLM

from platobench import cli
from platobench.encoders import load_encoder
from platobench.experiments.jepa import commands
from platobench.experiments.jepa.checkpoint import METADATA_FILE, model_name, read_metadata
from platobench.experiments.jepa.export import export_run
from platobench.experiments.jepa.model import SIZES, SizeConfig
from platobench.experiments.jepa.ntp import SEPARATOR, DocumentSampler, causal_lm, features, lm_loss
from platobench.experiments.jepa.train import CaptionCorpus, TrainConfig, checkpoint_steps, train
from platobench.zoo import read_zoo_file

MICRO = SizeConfig(layers=1, hidden=32, heads=2, intermediate=64, max_tokens=16, projection=32, lr=3e-3)
TEXTS = ["a red cat in the garden", "picture of a beach ; the dog is blue", "a cow"]


@pytest.fixture(autouse=True)
def micro_size(monkeypatch):
    monkeypatch.setitem(SIZES, "micro", MICRO)


def corpus() -> CaptionCorpus:
    """60 scenes (colour x animal x place), each with two differently worded captions."""
    ids, views = [], []
    scenes = itertools.product(["red", "blue", "green", "white"], ["cat", "dog", "cow"], ["beach", "garden", "street", "farm", "road"])
    for k, (c, a, p) in enumerate(scenes):
        ids.append(f"scene-{k}")
        views.append([f"a {c} {a} in the {p}", f"picture of a {p} with a {c} {a}"])
    return CaptionCorpus("synthetic", "v1", "0" * 64, ids, views)


def config(**changes) -> TrainConfig:
    base = {"size": "micro", "objective": "ntp", "steps": 30, "batch_size": 16, "eval_pairs": 32, "log_every": 10}
    return TrainConfig(**{**base, **changes})


def state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in model.state_dict().items()}


def assert_same_state(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)


@pytest.fixture(scope="module")
def ntp_run():
    SIZES["micro"] = MICRO  # module-scoped: the autouse fixture is function-scoped
    try:
        data, cfg = corpus(), config(lr=1e-2)
        return data, cfg, train(data, cfg)
    finally:
        del SIZES["micro"]


def test_causal_mask_hides_the_future():
    from platobench.experiments.jepa.checkpoint import load_tokenizer

    torch.manual_seed(0)
    model = causal_lm("micro", load_tokenizer(), MICRO.max_tokens).eval()
    ids = torch.tensor([[101, 1037, 2417, 4937, 1999, 1996, 3871, 102]])
    changed = ids.clone()
    changed[0, 4:] = torch.tensor([2665, 3899, 2006, 102])
    mask = torch.ones_like(ids)
    with torch.no_grad():
        before = model.bert(input_ids=ids, attention_mask=mask, use_cache=False).last_hidden_state
        after = model.bert(input_ids=changed, attention_mask=mask, use_cache=False).last_hidden_state
    assert torch.equal(before[0, :4], after[0, :4])  # positions <= 3 never see tokens 4..
    assert not torch.allclose(before[0, 4:], after[0, 4:])


def test_lm_loss_is_transformers_causal_lm_loss_on_non_pad_tokens():
    from platobench.experiments.jepa.checkpoint import load_tokenizer

    torch.manual_seed(0)
    tokenizer = load_tokenizer()
    model = causal_lm("micro", tokenizer, MICRO.max_tokens).eval()
    tokens = tokenizer(TEXTS, padding=True, return_tensors="pt")
    ids, mask = tokens["input_ids"], tokens["attention_mask"]
    assert (mask == 0).any()  # the batch is padded
    with torch.no_grad():
        ours = lm_loss(model, ids, mask)
        reference = model(input_ids=ids, attention_mask=mask, labels=ids.masked_fill(mask == 0, -100)).loss
    torch.testing.assert_close(ours, reference)


def test_documents_join_a_samples_captions_in_seeded_orders():
    captions = [["one", "two", "three"], ["four", "five", " five "]]
    first = list(itertools.islice(DocumentSampler(captions, seed=1).batches(2), 6))
    again = list(itertools.islice(DocumentSampler(captions, seed=1).batches(2), 6))
    assert first == again
    docs = [d for batch in first for d in batch]
    assert {tuple(sorted(d.split(SEPARATOR))) for d in docs} == {("one", "three", "two"), ("five", "four")}
    assert len({d for d in docs if "one" in d}) > 1  # the order is drawn anew


def test_ntp_loss_decreases_and_runs_reproduce(ntp_run):
    data, cfg, result = ntp_run
    assert result.objective == "ntp" and result.examples_seen == 30 * 16
    assert result.final_loss < 0.4 * result.initial_loss  # from ln(30522) ~ 10.3 to ~2.4
    assert [line["step"] for line in result.history] == [10, 20, 30]
    assert set(result.history[0]) == {"step", "loss", "heldout_loss", "effective_rank"}
    assert result.history[-1]["loss"] < result.history[0]["loss"]
    assert result.effective_rank > 1.5
    again = train(data, cfg)
    assert again.history == result.history
    assert_same_state(state(result.model), state(again.model))
    other = train(data, config(seed=1, steps=2, log_every=1))
    assert other.history[0]["loss"] != result.history[0]["loss"]


def test_jepa_runs_reproduce_with_the_shared_loop():
    data = corpus()
    cfg = config(objective="jepa", steps=4, log_every=2)
    a, b = train(data, cfg), train(data, cfg)
    assert a.objective == "jepa" and a.examples_seen == 64
    assert a.history == b.history and {"invariance", "projection_effective_rank"} <= set(a.history[0])
    assert_same_state(state(a.model), state(b.model))


def test_ntp_export_loads_through_the_zoo_with_the_training_features(ntp_run, tmp_path):
    data, cfg, result = ntp_run
    summary = export_run(result, data, cfg, name=None, out_dir=tmp_path / "ckpt", home=tmp_path)
    assert summary["name"] == "text-ntp/micro.synthetic-s0-n480" == model_name(
        "micro", "good", "synthetic", 0, objective="ntp", examples=480
    )
    assert summary["objective"] == "ntp" and summary["examples_seen"] == 480 and summary["views"] is None
    meta = read_metadata(tmp_path / "ckpt")
    assert meta["objective"] == "ntp" and meta["examples_seen"] == 480 and meta["final_loss"] == result.final_loss
    (spec,) = read_zoo_file(summary["zoo_entry"]).models
    assert (spec.kind, spec.loader, spec.pooling, spec.num_layers, spec.width) == ("causal_lm", "hf_causal", "avg", 1, 32)

    model = result.model.lm.eval()
    tokens = result.tokenizer(TEXTS, padding=True, return_tensors="pt")
    with torch.no_grad():
        expected = features(model, tokens["input_ids"], tokens["attention_mask"])
        logits = model(**tokens, use_cache=False).logits
    encoder = load_encoder(spec, device="cpu", dtype="float32")
    assert encoder.tokenizer.padding_side == "left" and encoder.max_length == 2 * MICRO.max_tokens
    last = encoder.encode(encoder.tokenize(TEXTS))[encoder.layer_ids.index(1)]
    torch.testing.assert_close(last, expected, rtol=0, atol=1e-5)

    base = AutoModel.from_pretrained(tmp_path / "ckpt")
    assert type(base).__name__ == "BertModel" and base.config.is_decoder
    lm = AutoModelForCausalLM.from_pretrained(tmp_path / "ckpt").eval()
    assert type(lm).__name__ == "BertLMHeadModel"
    with torch.no_grad():
        torch.testing.assert_close(lm(**tokens, use_cache=False).logits, logits, rtol=0, atol=0)


def test_snapshots_arrive_at_the_requested_counts_and_do_not_perturb_training(tmp_path):
    data = corpus()
    snapshots: list[tuple[int, float, dict]] = []

    def keep(snapshot):
        assert not snapshot.model.training
        snapshots.append((snapshot.examples_seen, snapshot.final_loss, len(snapshot.history)))
        summary = export_run(snapshot, data, cfg, name=None, out_dir=None, home=tmp_path)
        assert summary["examples_seen"] == snapshot.examples_seen
        torch.rand(3)  # a callback that draws random numbers must not change training
        snapshot.model.train()

    cfg = config(steps=6, log_every=3, checkpoints=(0, 16, 40, 41, 96))
    with_snapshots = train(data, cfg, on_checkpoint=keep)
    plain = train(data, config(steps=6, log_every=3))
    # at initialisation, then after steps 1, 3, 3 and 6 (16 documents a step)
    assert [s[0] for s in snapshots] == [0, 16, 48, 48, 96]
    assert [s[2] for s in snapshots] == [0, 0, 1, 1, 2]
    assert snapshots[0][1] == with_snapshots.initial_loss  # the untrained model's held-out loss
    assert snapshots[2][1] == with_snapshots.history[0]["heldout_loss"]
    assert with_snapshots.history == plain.history and with_snapshots.examples_seen == 96
    assert_same_state(state(with_snapshots.model), state(plain.model))
    assert with_snapshots.model.training
    folders = sorted(p.name for p in (tmp_path / "jepa").iterdir())
    assert folders == ["micro.synthetic-s0-n0", "micro.synthetic-s0-n16", "micro.synthetic-s0-n48",
                       "micro.synthetic-s0-n96"]
    assert read_metadata(tmp_path / "jepa" / folders[1])["examples_seen"] == 16
    assert (tmp_path / "jepa" / folders[0] / METADATA_FILE).exists()


def test_checkpoint_counts_are_checked_up_front():
    assert checkpoint_steps((16, 17, 32), steps=2, global_batch=16) == {1: [16], 2: [17, 32]}
    assert checkpoint_steps((0, 16), steps=2, global_batch=16) == {0: [0], 1: [16]}
    with pytest.raises(ValueError, match="checkpoint at 33 examples: expected 0 to 32"):
        checkpoint_steps((33,), steps=2, global_batch=16)
    with pytest.raises(ValueError, match="checkpoint at -1 examples"):
        checkpoint_steps((-1,), steps=2, global_batch=16)
    with pytest.raises(ValueError, match="checkpoint at 999 examples"):
        train(corpus(), config(steps=2, checkpoints=(999,)))


@pytest.mark.parametrize("objective", ["jepa", "ntp"])
def test_constant_schedule_keeps_the_peak_lr_after_warm_up(monkeypatch, objective):
    seen: list[float] = []
    original = torch.optim.AdamW.step

    def step(self, *args, **kwargs):
        seen.append(self.param_groups[0]["lr"])
        return original(self, *args, **kwargs)

    monkeypatch.setattr(torch.optim.AdamW, "step", step)
    train(corpus(), config(objective=objective, steps=10, lr=1e-3, schedule="constant", warmup_fraction=0.3))
    assert seen[:3] == pytest.approx([0.0, 1e-3 / 3, 2e-3 / 3])
    assert seen[3:] == [1e-3] * 7
    seen.clear()
    train(corpus(), config(objective=objective, steps=10, lr=1e-3, warmup_fraction=0.3))
    assert seen[3] == 1e-3 and seen[-1] < 0.1 * 1e-3  # cosine decays towards 0


def test_model_names_follow_the_zoo_rule():
    assert model_name("tiny", "good", "coco", 0) == "text-jepa/tiny-good.coco-s0"
    assert model_name("tiny", "mix:0.5", "coco", 2, examples=640) == "text-jepa/tiny-mix0.5.coco-s2-n640"
    assert model_name("33m", "bad", "coco", 1, objective="ntp", examples=64) == "text-ntp/33m.coco-s1-n64"


def test_cli_trains_ntp_and_refuses_views(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(commands, "load_corpus", lambda name, limit, flag: corpus())
    base = ["jepa", "train", "--data", "synthetic", "--size", "micro", "--steps", "2", "--batch-size", "8"]
    code = cli.main(base + ["--objective", "ntp", "--schedule", "constant", "--out", str(tmp_path / "r"), "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["objective"] == "ntp" and out["examples_seen"] == 16
    assert read_metadata(tmp_path / "r")["training"]["schedule"] == "constant"
    assert cli.main(base + ["--objective", "ntp", "--views", "bad"]) == 2
    assert "--views applies to --objective jepa only" in capsys.readouterr().err
    assert cli.main(base + ["--objective", "ntp", "--predictor"]) == 2
    assert "--predictor applies to --objective jepa only" in capsys.readouterr().err
