"""Training snapshots of a run: how many, how large, and how far 8 bits (the file) and 6 bits
(the explorer page) move the model's logits on the run's validation names.

    python benchmarks/snapshots.py --run runs/names

The difference is measured at the checkpoint's own step, where the exact weights are at hand:
its snapshot, dequantized, against the checkpoint.
"""

from __future__ import annotations

import argparse
import copy
from pathlib import Path

import torch

from minigpt.corpus.tokenized import IGNORE, TokenizedNames
from minigpt.formats.checkpoint import load_checkpoint, load_microgpt_weights, validation_names
from minigpt.formats.snapshots import FILE, dequantize, read_snapshots, run_identity, six_bit


@torch.no_grad()
def largest_logit_gap(exact, approx, data: TokenizedNames) -> float:
    gap = 0.0
    for x, y in data.in_order(256):
        real = y != IGNORE
        gap = max(gap, (exact(x)[0] - approx(x)[0]).abs()[real].max().item())
    return gap


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--run", type=Path, required=True, help="a run directory with snapshots.pt")
    args = p.parse_args()
    ckpt = load_checkpoint(args.run)
    snapshots = read_snapshots(args.run, run_identity(ckpt.data, ckpt.config))
    names = validation_names(ckpt)
    if not names:
        raise SystemExit("the run's validation names cannot be read again")
    data = TokenizedNames(names, ckpt.tokenizer, ckpt.config.model.block_size)
    index = snapshots.steps.index(ckpt.step)
    eight, six = copy.deepcopy(ckpt.model), copy.deepcopy(ckpt.model)
    snapshots.load_into(eight, index)
    load_microgpt_weights(six, {name: dequantize(*six_bit(kept["q"][index], kept["scale"][index]), snapshots.shapes[name])
                                for name, kept in snapshots.weights.items()})
    print(f"{'snapshots':>28}  {len(snapshots.steps)}: steps {snapshots.steps}")
    print(f"{'file':>28}  {(args.run / FILE).stat().st_size / 1e6:.2f} MB for {ckpt.model.num_params():,} parameters each")
    print(f"{'largest logit gap, 8 bits':>28}  {largest_logit_gap(ckpt.model, eight, data):.4f} "
          f"(step {ckpt.step}, {len(names)} validation names)")
    print(f"{'largest logit gap, 6 bits':>28}  {largest_logit_gap(ckpt.model, six, data):.4f} (as the explorer page carries them)")
    # what keeping them costs a run: every snapshot taken once, and the file written at each evaluation
    import tempfile
    import time

    from minigpt.formats.snapshots import Snapshots

    kept = Snapshots(snapshots.run)
    started = time.perf_counter()
    for step in snapshots.steps:
        kept.take(step, ckpt.model)
    taking = time.perf_counter() - started
    evaluations = ckpt.step // ckpt.config.train.eval_interval + 1
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        kept.write(Path(folder))
        writing = time.perf_counter() - started
    print(f"{'cost to a run':>28}  {taking:.3f} s to take them, {writing:.3f} s a write of the file "
          f"(about {evaluations} writes in this run: {taking + evaluations * writing:.2f} s in all)")


if __name__ == "__main__":
    main()
