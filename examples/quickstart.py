"""minigpt from Python: train a small model, invent names, read the attention of one name.

    python examples/quickstart.py [RUN_DIR] [STEPS]

It trains microgpt's recipe (one layer, 4,192 parameters, one name a step) for STEPS steps,
1,000 by default: a few seconds on a laptop CPU, and the same model on any machine, slow or fast.
"""

import sys

from minigpt import attention_report, load_checkpoint, load_config, sample, train

run_dir = sys.argv[1] if len(sys.argv) > 1 else "runs/quickstart"
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 1000

# A recipe is a Config: start from one in configs/ and change any key.
config = load_config("microgpt", [f"train.steps={steps}", f"train.eval_interval={steps}"])
result = train(config, out_dir=run_dir, overwrite=True, quiet=True)
print(f"trained {result.steps} steps in {result.seconds:.1f} s, validation loss {result.val_loss:.3f}")

# A checkpoint alone is enough to sample: it holds the weights, the recipe and the vocabulary.
ckpt = load_checkpoint(result.run_dir)
print("new names:", ", ".join(sample(ckpt, num=8, temperature=0.8, seed=0, new_only=True)))

# What the last layer's first head reads at each position of "emma" (rows sum to 1).
report = attention_report(ckpt.model, ckpt.tokenizer, "emma")
layer, head = report.n_layer - 1, 0
print(f"layer {layer}, head {head}, reading 'emma':")
for position, token in enumerate(report.tokens):
    weights = report.weights[layer, head, position, : position + 1].tolist()
    print(f"  {token:>5} -> " + "  ".join(f"{report.tokens[j]} {w:.2f}" for j, w in enumerate(weights)))
after = ", ".join(f"{t} {p:.2f}" for t, p in report.predictions[-1])  # · the boundary token: the name ends
print(f"after 'emma' the model expects: {after}")
