"""Benchmark: text-JEPA training throughput (pairs/s), and what the anti-collapse term and fused AdamW cost.

One run, one model, the same real caption pairs (openclipart titles vs descriptions, good views; a
synthetic caption set with --synthetic). Timed variants of one training step (tokenise, forward both views,
loss, backward, optimiser step), interleaved round by round so machine noise hits all of them alike:
- vicreg+fused: what `platobench jepa train` does (VICReg loss, fused AdamW);
- invariance-only: the same step without VICReg's variance/covariance terms (baseline: their overhead);
- vicreg+for-loop AdamW: the same step with the unfused optimiser (baseline: what fusing saves).
Then the end-to-end `train()` loop (accelerate, held-out evaluation excluded). On a GPU the model runs
under bf16 autocast, as in training. Prints a markdown table; ratio = variant pairs/s / vicreg+fused.

    .venv/bin/python benchmarks/jepa_train.py [--size tiny] [--steps 20] [--rounds 3] [--batch-size 64]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time

import torch
import torch.nn.functional as F

from platobench.jepa.checkpoint import load_tokenizer
from platobench.jepa.losses import jepa_loss
from platobench.jepa.model import SIZES, TextJEPA, bert_config
from platobench.jepa.train import CaptionCorpus, TrainConfig, split, train
from platobench.jepa.views import ViewSampler, parse_views


def corpus(synthetic: bool) -> CaptionCorpus:
    if not synthetic:
        from platobench.data import get_dataset

        return CaptionCorpus.from_dataset(get_dataset("openclipart"))
    scenes = itertools.product(
        ["red", "blue", "green", "black"],
        ["cat", "dog", "bird", "fish"],
        ["kitchen", "beach", "forest", "street"],
    )
    views = [[f"a {c} {a} in the {p}", f"picture of a {p} with a {c} {a}"] for c, a, p in scenes] * 8
    return CaptionCorpus("synthetic", "v1", "", [str(i) for i in range(len(views))], views)


def invariance_only(z_a, z_b, p_a, p_b):
    return F.mse_loss(z_a.float(), z_b.float())


def vicreg(z_a, z_b, p_a, p_b):
    return jepa_loss(z_a, z_b, p_a, p_b).total


def time_steps(model, optimizer, loss_fn, batches, tokenizer, max_tokens, device, steps) -> float:
    """Pairs per second over `steps` training steps."""
    use_bf16 = device.type == "cuda"
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    pairs = 0
    for _ in range(steps):
        batch = next(batches)
        tokens = tokenizer(
            [p.a for p in batch] + [p.b for p in batch],
            padding=True,
            truncation=True,
            max_length=max_tokens,
            return_tensors="pt",
        ).to(device)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=use_bf16):
            loss = loss_fn(*model(tokens["input_ids"], tokens["attention_mask"]))
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
    parser.add_argument("--synthetic", action="store_true", help="synthetic captions instead of openclipart")
    args = parser.parse_args()

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    data = corpus(args.synthetic)
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
    variants = {
        "vicreg+fused (platobench)": (vicreg, fused),
        "invariance-only (no anti-collapse)": (invariance_only, fused),
        "vicreg+for-loop AdamW": (vicreg, looped),
    }
    batches = ViewSampler([data.views[i] for i in train_idx], parse_views("good"), seed=0).batches(
        args.batch_size
    )
    time_steps(model, fused, vicreg, batches, tokenizer, max_tokens, device, 3)  # warm-up
    rates: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.rounds):
        for name, (loss_fn, optimizer) in variants.items():
            rates[name].append(
                time_steps(model, optimizer, loss_fn, batches, tokenizer, max_tokens, device, args.steps)
            )
    end_to_end = train(
        data,
        TrainConfig(
            size=args.size,
            views=parse_views("good"),
            steps=args.steps * args.rounds,
            batch_size=args.batch_size,
            log_every=args.steps * args.rounds,
        ),
    )

    reference = statistics.median(rates["vicreg+fused (platobench)"])
    threads = torch.get_num_threads()
    print(
        f"\nText-JEPA `{args.size}` training, {device.type}"
        f"{' bf16 autocast' if device.type == 'cuda' else f' ({threads} threads)'}, batch {args.batch_size} pairs, "
        f"{'synthetic' if args.synthetic else 'openclipart'} good views, median of {args.rounds} rounds x {args.steps} steps\n"
    )
    print("| variant | pairs/s | ratio to platobench step |")
    print("|---|---:|---:|")
    for name, values in rates.items():
        median = statistics.median(values)
        print(f"| {name} | {median:.1f} | {median / reference:.2f} |")
    print(
        f"| end-to-end `train()` (accelerate, tokenisation, {args.steps * args.rounds} steps) | "
        f"{end_to_end.samples_per_s:.1f} | {end_to_end.samples_per_s / reference:.2f} |"
    )


if __name__ == "__main__":
    main()
