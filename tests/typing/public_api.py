"""A notebook's use of every name in minigpt.__all__, for mypy to check strictly (pyproject.toml's
[tool.mypy]): a call to a public function with a parameter left unannotated is an error here, and so is
a call that passes what its signature does not take. Type-checked only, never run: it would train."""

from __future__ import annotations

from pathlib import Path

import torch

import minigpt
from minigpt import (
    GPT,
    Config,
    GPTConfig,
    Interrupted,
    MiniGPTError,
    Reporter,
    RunError,
    TensorBoard,
    Tokenizer,
    UsageError,
    ablate,
    attention_grid,
    attention_report,
    compare,
    evaluate_names,
    explore,
    generate,
    load_checkpoint,
    load_config,
    logit_lens,
    name_losses,
    read_names,
    read_snapshots,
    run_sweep,
    sample,
    sample_batches,
    train,
    validation_names,
)


def a_notebook(run: Path) -> None:
    version: str = minigpt.__version__
    recipe: Config = load_config("tiny", ["train.steps=10"])
    result = train(recipe, out_dir=run, quiet=True, report=TensorBoard(run / "tb"), overwrite=True)
    checkpoint = load_checkpoint(result.run_dir, device="cpu")
    model: GPT = checkpoint.model
    tokenizer: Tokenizer = checkpoint.tokenizer
    names: list[str] = sample(checkpoint, num=5, seed=1, temperature=0.8)
    for batch in sample_batches(checkpoint, num=5, top_k=3):
        names += batch
    names += generate(model, tokenizer, 3, temperature=1.0)
    held: list[str] | None = validation_names(checkpoint)
    scored = evaluate_names(model, tokenizer, read_names(run / "names.txt"))
    losses: list[tuple[str, int, float]] = name_losses(model, tokenizer, names, batch_size=8)
    report = attention_report(model, tokenizer, "emma")
    costs = ablate(model, tokenizer, held or names, mode="mean")
    lens = logit_lens(model, tokenizer, tokenizer.encode("emma"))
    snapshots = read_snapshots(result.run_dir)
    page = explore(checkpoint, "emma", progress=lambda done, total: None)
    grid = attention_grid(result.run_dir, "emma")
    study = run_sweep("study.toml", run / "study", jobs=1, say=print)
    table = compare([run, run.parent / "other"], baseline=run)
    fresh = GPT(GPTConfig(n_layer=1, n_head=1, n_embd=8, vocab_size=tokenizer.vocab_size))
    logits, loss = fresh(torch.zeros(1, 4, dtype=torch.long))
    print(version, scored, losses, report, costs, lens, snapshots, page, grid, study, table, logits, loss)


class Silent(Reporter):
    """A Reporter of one's own: the interface training reports through."""


def errors() -> None:
    try:
        a_notebook(Path("runs/try"))
    except UsageError as e:
        print(e)
    except RunError as e:
        print(e)
    except Interrupted as e:
        print(e.exit_code)
    except MiniGPTError as e:
        print(e)
