"""Training throughput and FLOP efficiency: predicted tokens per second at several batch sizes.

    python benchmarks/throughput.py [--data FILE] [--config makemore] [--batch-sizes 32,64,128,256]

Each batch size runs the real training step (minigpt.training.Trainer: length-grouped
batches, forward, backward, clipping, AdamW) for a few seconds after a warm-up, and
counts only predicted tokens (each name's characters and its end), never padding.

FLOPs per predicted token, stated the usual way:
    6 * N                              N = parameters in matrix multiplies (all but wte and wpe)
  + 12 * n_layer * n_embd * context    attention scores and weighted sums, forward and backward,
                                       context = positions the token attends to (its position + 1)
The efficiency is that rate over the float32 matmul peak this script measures first; when
the steps run in bfloat16 (train.precision), over the bfloat16 matmul peak too. "of shaped" is the
same rate over the peak of the step's own products (a batch's positions by n_embd, into n_embd and
4 n_embd): how close a step comes to what the machine does at this model's shapes; in bfloat16, "of bf16
shaped" is the same over those products in bfloat16.
"""

from __future__ import annotations

import time

import torch
from common import finish, matmul_peak, median, parser, setup, shaped_peak, table

from minigpt.data import Tokenizer
from minigpt.files.names_file import read_names
from minigpt.formats.recipes import load_config
from minigpt.machine.processes import resolve_device
from minigpt.machine.threads import keep_freed_memory
from minigpt.training import Trainer


def flops_per_token(trainer: Trainer) -> float:
    m = trainer.config.model
    n = sum(p.numel() for name, p in trainer.model.named_parameters() if not name.startswith(("wte.", "wpe.")))
    lengths = trainer.train_data.lengths.double()
    mean_context = float((lengths * (lengths + 1) / 2).sum() / lengths.sum())  # sum over positions of (p + 1)
    return 6 * n + 12 * m.n_layer * m.n_embd * mean_context


def measure(config, names, device, seconds: float) -> dict:
    keep_freed_memory()
    tokenizer = Tokenizer.from_names(names)
    config.model.vocab_size = tokenizer.vocab_size
    config.train.device = str(device)
    trainer = Trainer.from_names(config, names, [], tokenizer)
    for _ in range(60):  # past the first steps, while the allocator's heap is still growing
        trainer.train_step()
    rates, padded, real, rows_seen = [], 0, 0, 0
    for _ in range(3):  # three timed stretches; the median is reported
        tokens, start = trainer.tokens, time.perf_counter()
        steps = 0
        while time.perf_counter() - start < seconds / 3 or steps < 3:
            indices = trainer.order.indices(trainer.step)
            padded += len(indices) * int(trainer.train_data.lengths[indices].max())
            rows_seen += len(indices)
            loss, _ = trainer.train_step()
            steps += 1
        loss.item()
        elapsed = time.perf_counter() - start
        real += trainer.tokens - tokens
        rates.append(((trainer.tokens - tokens) / elapsed, elapsed / steps))
    tokens_per_sec, step_time = median(r[0] for r in rates), median(r[1] for r in rates)
    return {
        "tokens_per_sec": round(tokens_per_sec),
        "ms_per_step": round(step_time * 1000, 2),
        "padding": round(1 - real / padded, 3),
        "flops_per_token": round(flops_per_token(trainer)),
        "gflops": float(
            f"{tokens_per_sec * flops_per_token(trainer) / 1e9:.3g}"
        ),  # 3 digits: a slow machine's is not 0.0
        "bfloat16": trainer.bfloat16,
        "positions": round(padded / rows_seen),  # a batch's padded width, on average: the products' rows a name
    }


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--config", default="makemore", help="recipe whose model is measured [default: makemore]")
    p.add_argument("--batch-sizes", default="32,64,128,256,512")
    p.add_argument("--seconds", type=float, default=6.0, help="timed seconds per batch size")
    p.add_argument("--device", default="cpu")
    p.add_argument("--set", dest="overrides", action="append", default=[], help="config override, as in minigpt train")
    p.add_argument("--no-peak", action="store_true", help="skip measuring the matmul peak (no efficiency columns)")
    args = p.parse_args()
    results = setup(args)
    device = resolve_device(args.device)
    peak = None if args.no_peak else matmul_peak(str(device))
    results["matmul_peak"] = peak
    if peak:
        print(f"float32 matmul peak: {peak['gflops']} GFLOP/s (n={peak['size']}); by size {peak['by_size']}")
    names = read_names(args.data)
    rows, columns = (
        [],
        [
            ("batch_size", "batch"),
            ("tokens_per_sec", "tokens/s"),
            ("ms_per_step", "ms/step"),
            ("padding", "padding"),
            ("gflops", "GFLOP/s"),
            ("efficiency", "of peak"),
            ("shaped", "shaped peak"),
            ("shaped_share", "of shaped"),
        ],
    )
    for batch_size in map(int, args.batch_sizes.split(",")):
        config = load_config(
            args.config, [*args.overrides, f"train.batch_size={batch_size}", f"train.device='{device}'"]
        )
        row = {"batch_size": batch_size, **measure(config, names, device, args.seconds)}
        row["efficiency"] = f"{row['gflops'] / peak['gflops']:.0%}" if peak else "-"
        if peak:  # the peak of this step's own products: a batch's positions by n_embd
            shaped = shaped_peak(batch_size * row["positions"], config.model.n_embd, str(device))
            row["shaped"], row["shaped_share"] = shaped["gflops"], f"{row['gflops'] / shaped['gflops']:.0%}"
        else:
            row["shaped"] = row["shaped_share"] = "-"
        if row["bfloat16"] and peak:
            if "matmul_peak_bfloat16" not in results:
                results["matmul_peak_bfloat16"] = matmul_peak(str(device), dtype=torch.bfloat16)
                print(f"bfloat16 matmul peak: {results['matmul_peak_bfloat16']['gflops']} GFLOP/s")
                columns += [("bf16_efficiency", "of bf16 peak"), ("bf16_shaped_share", "of bf16 shaped")]
            row["bf16_efficiency"] = f"{row['gflops'] / results['matmul_peak_bfloat16']['gflops']:.0%}"
            # the same step's products in bfloat16: the ceiling where the hardware multiplies bfloat16 itself
            shaped16 = shaped_peak(
                batch_size * row["positions"], config.model.n_embd, str(device), dtype=torch.bfloat16
            )
            row["bf16_shaped"] = shaped16["gflops"]
            row["bf16_shaped_share"] = f"{row['gflops'] / shaped16['gflops']:.0%} ({shaped16['gflops']})"
        rows.append(row)
        print(table([row], columns).splitlines()[-1])
    results["config"] = args.config
    results["overrides"] = args.overrides
    results["rows"] = rows
    print()
    print(table(rows, columns))
    finish(results, args.out)


if __name__ == "__main__":
    main()
