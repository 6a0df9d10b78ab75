"""minigpt: a tiny character-level GPT that learns names and invents new ones.

    from minigpt import GPT, GPTConfig, Tokenizer, load_checkpoint, load_config, train, sample

    result = train(load_config("tiny"), out_dir="runs/try")   # trains, writes checkpoints
    train(load_config("tiny"), quiet=True, report=my_reporter)  # a Reporter hears every log and evaluation
    names = sample(load_checkpoint(result.run_dir), num=5)   # a checkpoint alone is enough

torch is imported on first use of one of these, so `minigpt --help` stays fast.
"""

__version__ = "0.2.0"  # CHANGELOG.md's newest, and pyproject.toml's (a test holds the three equal)

_EXPORTS = {
    "GPT": "minigpt.model",
    "GPTConfig": "minigpt.config",
    "Config": "minigpt.config",
    "load_config": "minigpt.formats.recipes",
    "Tokenizer": "minigpt.data",
    "read_names": "minigpt.files.names_file",
    "load_checkpoint": "minigpt.formats.checkpoint",
    "train": "minigpt.runs.run",
    "Reporter": "minigpt.training",
    "TensorBoard": "minigpt.runs.tensorboard_log",
    "evaluate_names": "minigpt.measurements.name_losses",
    "name_losses": "minigpt.measurements.name_losses",
    "validation_names": "minigpt.formats.checkpoint",
    "compare": "minigpt.runs.compare",
    "run_sweep": "minigpt.runs.sweep",
    "sample": "minigpt.runs.new_names",
    "sample_batches": "minigpt.runs.new_names",
    "generate": "minigpt.runs.new_names",
    "attention_report": "minigpt.views.attention_maps",
    "ablate": "minigpt.measurements.ablation",
    "logit_lens": "minigpt.measurements.logit_lens",
    "read_snapshots": "minigpt.formats.snapshots",
    "explore": "minigpt.views.notebook",
    "attention_grid": "minigpt.views.notebook",
    "MiniGPTError": "minigpt.errors",
    "UsageError": "minigpt.errors",
    "RunError": "minigpt.errors",
    "Interrupted": "minigpt.errors",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'minigpt' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value
