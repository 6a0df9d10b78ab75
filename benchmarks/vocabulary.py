"""Memory and time of `ablate` with a large vocabulary (Chinese characters as names): the page and
`minigpt ablate` score every part this way.

    python benchmarks/vocabulary.py [--vocab 50000] [--names 500]

A default-recipe model with random weights over `vocab` characters, 500 random names of 3 to 10 of
the first 2,000 characters; prints the loss, the first part's cost, the seconds and the process's
peak memory (run it in a fresh process for each measurement: the peak is the process's).
"""

from __future__ import annotations

import argparse
import random
import resource
import time

import torch

from minigpt.recipes.loading import load_config
from minigpt.data import Tokenizer
from minigpt.measurements.ablation import ablate
from minigpt.model import GPT


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--vocab", type=int, default=50_000)
    p.add_argument("--names", type=int, default=500)
    args = p.parse_args()
    chars = [chr(0x4E00 + i) for i in range(args.vocab)]
    tokenizer = Tokenizer(chars)
    config = load_config("default").model
    config.vocab_size = tokenizer.vocab_size
    torch.manual_seed(0)
    model = GPT(config).eval()
    rng = random.Random(0)
    names = ["".join(rng.choice(chars[:2000]) for _ in range(rng.randint(3, 10))) for _ in range(args.names)]
    start = time.perf_counter()
    report = ablate(model, tokenizer, names, "mean")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6  # kilobytes on Linux
    print(f"vocabulary {args.vocab:,}: loss {report.loss:.6f}, first cost {report.costs[0][1]:+.6f}, "
          f"{time.perf_counter() - start:.1f} s, peak memory {peak:.2f} GB")


if __name__ == "__main__":
    main()
