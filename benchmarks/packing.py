"""Packed rows against a name a row: training steps of one run alternated between the two layouts.

    python benchmarks/packing.py --data names.txt [--device cuda] [--batch-sizes 72,575]

A packed row holds as many names as fit in block_size positions, each as long as the batch's longest
(train.pack_names: machine/packing.py's packed_batch, which hands the model positions and attention); the other layout is a
name a row, cut to the longest. Both compute the same losses and gradients (tests/test_packing.py); this measures
which is faster, stretch by stretch in one process, so that the machine's drift falls on both alike.
"""

from __future__ import annotations

from common import finish, median, parser, setup, sync, table

from minigpt.recipes.loading import load_config
from minigpt.data import Tokenizer, split_names
from minigpt.files.names_file import read_names
from minigpt.machine.memory import keep_freed_memory
from minigpt.machine.processes import resolve_device
from minigpt.training import Trainer

LAYOUTS = {"packed": True, "a name a row": False}


def measure(config, names, device, stretches: int, steps: int) -> dict:
    tokenizer = Tokenizer.from_names(names)
    config.model.vocab_size = tokenizer.vocab_size
    trainer = Trainer(config, names, [], tokenizer, device, None)
    rates = {layout: [] for layout in LAYOUTS}
    for _ in range(20):
        trainer.train_step()
    for _ in range(stretches):
        for layout, pack in LAYOUTS.items():
            trainer.recipe.pack_names = pack
            for _ in range(3):
                trainer.train_step()
            sync(device)
            tokens, seconds = trainer.tokens, trainer.seconds
            for _ in range(steps):
                trainer.train_step()
            sync(device)  # train_step's clock stops before the device is done: the last wait counts here
            rates[layout].append((trainer.tokens - tokens) / (trainer.seconds - seconds))
    return {layout: round(median(r)) for layout, r in rates.items()}


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--config", action="append", default=None, help="recipes [default: makemore and default]")
    p.add_argument("--batch-sizes", default="72,575", help="names a step [default: 72,575: 512 and 4,096 tokens]")
    p.add_argument("--device", default="cpu")
    p.add_argument("--stretches", type=int, default=5)
    p.add_argument("--steps", type=int, default=30, help="steps a stretch")
    p.add_argument("--set", dest="overrides", action="append", default=[], help="config override, as in minigpt train")
    args = p.parse_args()
    info = setup(args)
    keep_freed_memory()
    device = resolve_device(args.device)
    names, _ = split_names(read_names(args.data), 0.1, 1000, 1337)
    rows = []
    for recipe in args.config or ["makemore", "default"]:
        for batch in map(int, args.batch_sizes.split(",")):
            config = load_config(recipe, [*args.overrides, f"train.batch_size={batch}", "train.auto_scale=false",
                                          f"train.device='{device}'"])
            found = measure(config, names, device, args.stretches, args.steps)
            rows.append({"recipe": recipe, "batch": batch, **found,
                         "ratio": round(found["packed"] / found["a name a row"], 2)})
            print(table(rows[-1:], COLUMNS).splitlines()[-1], flush=True)
    print()
    print(table(rows, COLUMNS))
    finish({**info, "device": str(device), "overrides": args.overrides, "rows": rows}, args.out)


COLUMNS = [("recipe", "recipe"), ("batch", "names a step"), ("a name a row", "a name a row, tok/s"),
           ("packed", "packed, tok/s"), ("ratio", "packed / a name a row")]

if __name__ == "__main__":
    main()
