"""Benchmark: text-JEPA training throughput (pairs/s), what the anti-collapse term and fused AdamW cost, and
next-token prediction (NTP) with the same backbone (documents/s).

One run, one model, the same real caption pairs (--corpus: openclipart titles vs descriptions by default, or
a text corpus such as wordnet; good views; a synthetic caption set with --synthetic). Timed variants of one training step (tokenise, forward both views,
loss, backward, optimiser step), interleaved round by round so machine noise hits all of them alike:
- vicreg+fused: what `platobench jepa train` does (VICReg loss, fused AdamW);
- invariance-only: the same step without VICReg's variance/covariance terms (baseline: their overhead);
- vicreg+for-loop AdamW: the same step with the unfused optimiser (baseline: what fusing saves);
- ntp: the causal twin (`platobench.experiments.jepa.ntp`: the same geometry with causal attention and an LM head) on
  documents of each sample's captions, 2 x max_tokens tokens (a pair's token budget), fused AdamW;
- ntp through transformers' `labels=` path (baseline: the LM head on every position, padding included,
  where `lm_loss` runs it on the predicted tokens only).
Then the end-to-end `train()` loop of both objectives (accelerate, held-out evaluation excluded). On a GPU
the models run under bf16 autocast, as in training. Prints a markdown table; ratio = variant examples/s
(pairs or documents) / vicreg+fused pairs/s.

    .venv/bin/python benchmarks/jepa_train.py [--size tiny] [--steps 20] [--rounds 3] [--batch-size 64]
    .venv/bin/python benchmarks/jepa_train.py --tiny   # synthetic captions, batches of 4, one round of 2 steps
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time

import torch
import torch.nn.functional as F
from tiny import parse_tiny

from platobench.experiments.jepa.checkpoint import load_tokenizer
from platobench.experiments.jepa.losses import jepa_loss
from platobench.experiments.jepa.model import SIZES, TextJEPA, bert_config
from platobench.experiments.jepa.ntp import DocumentSampler, causal_lm, document_tokens, lm_loss
from platobench.experiments.jepa.train import CaptionCorpus, TrainConfig, split, train
from platobench.experiments.jepa.views import ViewSampler, parse_views


def corpus(name: str, synthetic: bool) -> CaptionCorpus:
    if not synthetic:
        from platobench.data import get_dataset

        return CaptionCorpus.from_dataset(get_dataset(name))
    scenes = itertools.product(
        ["red", "blue", "green", "black"],
        ["cat", "dog", "bird", "fish"],
        ["kitchen", "beach", "forest", "street"],
    )
    views = [[f"a {c} {a} in the {p}", f"picture of a {p} with a {c} {a}"] for c, a, p in scenes] * 8
    return CaptionCorpus("synthetic", "v1", "", [str(i) for i in range(len(views))], views)


def invariance_only(model, tokens):
    z_a, z_b, _, _ = model(tokens["input_ids"], tokens["attention_mask"])
    return F.mse_loss(z_a.float(), z_b.float())


def vicreg(model, tokens):
    return jepa_loss(*model(tokens["input_ids"], tokens["attention_mask"])).total


def next_token(model, tokens):
    return lm_loss(model, tokens["input_ids"], tokens["attention_mask"])


def next_token_all_positions(model, tokens):
    """The same loss through transformers' `labels=` path: the LM head runs on every position, pads too."""
    ids, mask = tokens["input_ids"], tokens["attention_mask"]
    return model(input_ids=ids, attention_mask=mask, labels=ids.masked_fill(mask == 0, -100), use_cache=False).loss


def pair_texts(batch):
    return [p.a for p in batch] + [p.b for p in batch]


def time_steps(model, optimizer, loss_fn, batches, texts_of, tokenizer, max_tokens, device, steps) -> float:
    """Examples (pairs or documents) per second over `steps` training steps."""
    use_bf16 = device.type == "cuda"
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    pairs = 0
    for _ in range(steps):
        batch = next(batches)
        tokens = tokenizer(
            texts_of(batch),
            padding=True,
            truncation=True,
            max_length=max_tokens,
            return_tensors="pt",
        ).to(device)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=use_bf16):
            loss = loss_fn(model, tokens)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        pairs += len(batch)
    if device.type == "cuda":
        torch.cuda.synchronize()
    return pairs / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=list(SIZES), default="tiny")
    parser.add_argument("--steps", type=int, default=20, help="timed steps per variant per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--corpus", default="openclipart", help="training texts (default openclipart; e.g. wordnet)")
    parser.add_argument("--synthetic", action="store_true", help="synthetic captions instead of --corpus")
    args = parse_tiny(parser, steps=2, rounds=1, batch_size=4, synthetic=True)

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    data = corpus(args.corpus, args.synthetic)
    train_idx, _ = split(data, 0.2)
    tokenizer = load_tokenizer()
    max_tokens = SIZES[args.size].max_tokens
    torch.manual_seed(0)
    model = TextJEPA(
        bert_config(args.size, len(tokenizer), tokenizer.pad_token_id), SIZES[args.size].projection, False
    )
    model = model.to(device).train()
    params = [p for p in model.parameters() if p.requires_grad]
    fused, looped = (
        torch.optim.AdamW(params, lr=1e-4, fused=True),
        torch.optim.AdamW(params, lr=1e-4, foreach=False),
    )
    lm = causal_lm(args.size, tokenizer, max_tokens).to(device).train()
    lm_optimizer = torch.optim.AdamW(lm.parameters(), lr=1e-4, fused=True)
    captions = [data.views[i] for i in train_idx]
    pairs = ViewSampler(captions, parse_views("good"), seed=0).batches(args.batch_size)
    documents = DocumentSampler(captions, seed=0).batches(args.batch_size)
    pair_step = (pairs, pair_texts, max_tokens)
    variants = {
        "vicreg+fused (platobench)": (model, vicreg, fused, pair_step),
        "invariance-only (no anti-collapse)": (model, invariance_only, fused, pair_step),
        "vicreg+for-loop AdamW": (model, vicreg, looped, pair_step),
        "ntp (causal LM, documents)": (lm, next_token, lm_optimizer, (documents, list, document_tokens(max_tokens))),
        "ntp, LM head on every position (labels=)": (
            lm, next_token_all_positions, lm_optimizer, (documents, list, document_tokens(max_tokens))),
    }
    for net, loss_fn, optimizer, (batches, texts_of, length) in variants.values():  # warm-up
        time_steps(net, optimizer, loss_fn, batches, texts_of, tokenizer, length, device, 3)
    rates: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.rounds):
        for name, (net, loss_fn, optimizer, (batches, texts_of, length)) in variants.items():
            rates[name].append(
                time_steps(net, optimizer, loss_fn, batches, texts_of, tokenizer, length, device, args.steps)
            )
    end_to_end = {
        objective: train(
            data,
            TrainConfig(
                size=args.size,
                objective=objective,
                steps=args.steps * args.rounds,
                batch_size=args.batch_size,
                log_every=args.steps * args.rounds,
            ),
        )
        for objective in ("jepa", "ntp")
    }

    reference = statistics.median(rates["vicreg+fused (platobench)"])
    threads = torch.get_num_threads()
    print(
        f"\nText-JEPA `{args.size}` training, {device.type}"
        f"{' bf16 autocast' if device.type == 'cuda' else f' ({threads} threads)'}, batch {args.batch_size} pairs, "
        f"{'synthetic' if args.synthetic else args.corpus} good views, median of {args.rounds} rounds x {args.steps} steps\n"
    )
    print("| variant | examples/s | ratio to platobench step |")
    print("|---|---:|---:|")
    for name, values in rates.items():
        median = statistics.median(values)
        print(f"| {name} | {median:.1f} | {median / reference:.2f} |")
    for objective, result in end_to_end.items():
        print(
            f"| end-to-end `train()` {objective} (accelerate, tokenisation, {args.steps * args.rounds} steps) | "
            f"{result.samples_per_s:.1f} | {result.samples_per_s / reference:.2f} |"
        )


if __name__ == "__main__":
    main()
