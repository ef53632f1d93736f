"""The text-only prefix captioner (ClipCap mapper, CapDec noise): a tiny random-init Llama overfits planted
captions and reads them back greedily; the loss covers exactly the caption tokens and EOS; generation is
batch-size invariant and returns only new tokens; training is deterministic; a frozen LM stays untouched;
bad input is refused. The slow test wires the real demo/smollm2-135m through the zoo."""

from __future__ import annotations

import json
import math
import random

import pytest
import torch

from platobench.errors import UserError
from platobench.experiments.stitch.decoder import (
    PrefixCaptioner,
    Recipe,
    load_captioner,
    tiny_captioner,
    word_tokenizer,
)
from platobench.experiments.stitch.decoder_train import train_captioner

D = 24
COLOURS = ["red", "blue", "green", "yellow", "black", "white", "pink"]
THINGS = ["car", "dog", "house", "tree", "boat", "cat", "star"]
PLACES = ["grass", "road", "sea", "hill"]


def planted_captions(n: int = 20) -> list[str]:
    rng = random.Random(0)
    captions: set[str] = {"A Red car, on the road."}
    while len(captions) < n:
        captions.add(f"a {rng.choice(COLOURS)} {rng.choice(THINGS)} on the {rng.choice(PLACES)}")
    return sorted(captions)


def planted_embeddings(n: int, d: int = D, seed: int = 0) -> torch.Tensor:
    """One random unit vector per caption."""
    return torch.nn.functional.normalize(torch.randn(n, d, generator=torch.Generator().manual_seed(seed)), dim=1)


def small(captions: list[str], seed: int = 0) -> PrefixCaptioner:
    return tiny_captioner(captions, D, width=64, layers=2, heads=4, seed=seed)


def test_tiny_captioner_overfits_planted_captions_and_reads_them_back():
    captions = planted_captions()
    z = planted_embeddings(len(captions))
    captioner = small(captions)
    history = train_captioner(captioner, z, captions, epochs=60, batch_size=8, noise=0.0, progress=False)
    assert history["loss_per_epoch"][-1] < 0.1 * history["loss_per_epoch"][0]
    out = captioner.generate(z)
    exact = sum(got == want.lower() for got, want in zip(out, captions))
    assert exact >= 0.9 * len(captions), list(zip(out, captions))
    assert "a red car, on the road." in out  # lower-cased words, punctuation re-attached


def test_loss_is_the_mean_cross_entropy_over_caption_tokens_and_eos():
    captions = ["a red car on the road", "a dog", "the blue boat on the sea today"]
    captioner = small(captions)
    z = planted_embeddings(len(captions), seed=1)
    tok, p, eos = captioner.tokenizer, captioner.prefix_len, captioner.tokenizer.eos_token_id
    terms: list[torch.Tensor] = []
    with torch.no_grad():
        batched = captioner.loss(z, captions)
        for i, caption in enumerate(captions):  # one caption at a time: no padding at all
            ids = tok(caption, add_special_tokens=False)["input_ids"] + [eos]
            embeds = captioner.lm.get_input_embeddings()(torch.tensor([ids]))
            logits = captioner.lm(inputs_embeds=torch.cat([captioner.prefix(z[i: i + 1]), embeds], 1)).logits[0]
            for k, target in enumerate(ids):  # token k is predicted at position p - 1 + k
                terms.append(-torch.log_softmax(logits[p - 1 + k], -1)[target])
    assert len(terms) == sum(len(c.split()) + 1 for c in captions)
    assert batched.item() == pytest.approx(torch.stack(terms).mean().item(), rel=1e-5)


def test_generate_is_batch_size_invariant_and_returns_only_new_tokens():
    captions = planted_captions()
    z = planted_embeddings(len(captions))
    captioner = small(captions)
    train_captioner(captioner, z, captions, epochs=3, batch_size=8, progress=False)
    out = captioner.generate(z, batch_size=64)
    assert len(out) == len(captions) and all(isinstance(s, str) and s == s.strip() for s in out)
    assert captioner.generate(z, batch_size=1) == out
    short = captioner.generate(z, max_new_tokens=2, batch_size=7)
    assert len(short) == len(captions)
    assert all(len(captioner.tokenizer(s, add_special_tokens=False)["input_ids"]) <= 2 for s in short)


def test_a_generated_caption_ends_at_its_first_line_break(monkeypatch):
    captions = planted_captions(4)
    captioner = small(captions)
    monkeypatch.setattr(captioner.tokenizer, "decode", lambda ids, **kw: " a pie\n\nThe answer is a pie.")
    assert captioner.generate(planted_embeddings(3), max_new_tokens=3) == ["a pie"] * 3


def test_training_is_deterministic_given_the_seed():
    captions = planted_captions()
    z = planted_embeddings(len(captions))

    def run(seed: int) -> tuple[dict[str, torch.Tensor], list[str], dict]:
        captioner = small(captions, seed=seed)
        history = train_captioner(captioner, z, captions, epochs=2.5, batch_size=6, noise=0.5, seed=seed,
                                  progress=False)
        return captioner.state_dict(), captioner.generate(z), history

    (a, gen_a, hist_a), (b, gen_b, _), (c, _, _) = run(0), run(0), run(1)
    assert all(torch.equal(a[k], b[k]) for k in a) and gen_a == gen_b
    assert not torch.equal(a["mapper.0.weight"], c["mapper.0.weight"])
    assert hist_a["steps"] == math.ceil(2.5 * math.ceil(len(captions) / 6)) == 10
    assert len(hist_a["loss_per_epoch"]) == 3 and hist_a["examples"] == 2 * len(captions) + 2 * 6


def test_frozen_lm_keeps_its_weights_and_eval_mode():
    from transformers import LlamaConfig, LlamaForCausalLM

    captions = planted_captions()
    tokenizer = word_tokenizer(captions)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=2, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id, bos_token_id=None)
    lm = LlamaForCausalLM(config)
    captioner = PrefixCaptioner(lm, tokenizer, D, prefix_len=3, tune_lm=False, name="frozen", revision=None,
                                recipe=Recipe(epochs=1.0, lr=1e-2, noise=1.0))
    before = {k: v.clone() for k, v in lm.state_dict().items()}
    mapper = captioner.mapper[0].weight.clone()
    captioner.train()
    assert captioner.mapper.training and not captioner.lm.training
    history = train_captioner(captioner, planted_embeddings(len(captions)), captions, progress=False)
    assert history["epochs"] == 1.0 and history["lr"] == 1e-2  # the recipe's defaults
    assert all(torch.equal(before[k], v) for k, v in lm.state_dict().items())
    assert not torch.equal(mapper, captioner.mapper[0].weight)
    assert captioner.trainable_parameters() == sum(p.numel() for p in captioner.mapper.parameters())
    info = json.loads(json.dumps(captioner.describe()))
    assert info["tune_lm"] is False and info["trained_params"] == captioner.trainable_parameters()
    assert info["tokenizer"].startswith("WordLevel") and info["prefix_len"] == 3


def test_time_budget_stops_training_early():
    captions = planted_captions()
    history = train_captioner(small(captions), planted_embeddings(len(captions)), captions, epochs=5,
                              batch_size=4, max_seconds=0.0, progress=False)
    assert history["stopped_early"] and history["steps"] == 1 and history["examples"] == 4


def test_refusals():
    captions = planted_captions()
    z = planted_embeddings(len(captions))
    captioner = small(captions)
    with pytest.raises(UserError, match="train_captions is empty"):
        tiny_captioner([], D)
    with pytest.raises(UserError, match="captions is empty"):
        train_captioner(captioner, z[:0], [], progress=False)
    with pytest.raises(UserError, match=r"Z: expected shape \[19, 24\]"):
        train_captioner(captioner, z, captions[:-1], progress=False)
    with pytest.raises(UserError, match="caption 2 is blank"):
        train_captioner(captioner, z[:3], ["a dog", "a cat", "  "], progress=False)
    with pytest.raises(UserError, match=r"shape \[n, 24\]"):
        captioner.generate(torch.zeros(2, D + 1))
    with pytest.raises(UserError, match="demo/minilm-l6.*kind text_encoder"):
        load_captioner("demo/minilm-l6", D)


@pytest.mark.slow
def test_smollm2_prefix_captioner_through_the_zoo(monkeypatch):
    from platobench.encoders import packaged

    if not packaged.is_prepared("smollm2-135m"):
        pytest.skip("demo/smollm2-135m is not prepared under the platobench home (run: platobench prepare "
                    "smollm2-135m)")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    captions = planted_captions(16)
    z = planted_embeddings(len(captions))
    captioner = load_captioner("demo/smollm2-135m", D, prefix_len=2)
    assert captioner.leading_space and captioner.describe()["tokenizer"].startswith("BPE")
    before = {k: v.clone() for k, v in captioner.lm.state_dict().items()}
    history = train_captioner(captioner, z, captions, epochs=1, batch_size=8, progress=False)
    assert history["steps"] == 2 and math.isfinite(history["last_loss"])
    assert all(torch.equal(before[k], v) for k, v in captioner.lm.state_dict().items())
    out = captioner.generate(z[:3], max_new_tokens=6, batch_size=2)
    assert len(out) == 3 and all(isinstance(s, str) for s in out)
