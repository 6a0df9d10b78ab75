"""minigpt: a tiny character-level GPT that learns names and invents new ones.

    from minigpt import GPT, GPTConfig, Tokenizer, load_checkpoint, load_config, train, sample

    result = train(load_config("tiny"), out_dir="runs/try")   # trains, writes checkpoints
    train(load_config("tiny"), quiet=True, report=my_reporter)  # a Reporter hears every log and evaluation
    names = sample(load_checkpoint(result.run_dir), num=5)   # a checkpoint alone is enough

torch is imported on first use of one of these, so `minigpt --help` stays fast.
"""

from typing import TYPE_CHECKING

__version__ = "0.3.0"  # CHANGELOG.md's newest, and pyproject.toml's (a test holds the three equal)

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

__all__ = [  # _EXPORTS's names, written out for the tools that read them (tests/test_api.py holds the two equal)
    "__version__",
    "GPT",
    "GPTConfig",
    "Config",
    "load_config",
    "Tokenizer",
    "read_names",
    "load_checkpoint",
    "train",
    "Reporter",
    "TensorBoard",
    "evaluate_names",
    "name_losses",
    "validation_names",
    "compare",
    "run_sweep",
    "sample",
    "sample_batches",
    "generate",
    "attention_report",
    "ablate",
    "logit_lens",
    "read_snapshots",
    "explore",
    "attention_grid",
    "MiniGPTError",
    "UsageError",
    "RunError",
    "Interrupted",
]

if TYPE_CHECKING:  # what a type checker and an editor see: each name's own type (imported on first use at run time)
    from minigpt.config import Config, GPTConfig
    from minigpt.data import Tokenizer
    from minigpt.errors import Interrupted, MiniGPTError, RunError, UsageError
    from minigpt.files.names_file import read_names
    from minigpt.formats.checkpoint import load_checkpoint, validation_names
    from minigpt.formats.recipes import load_config
    from minigpt.formats.snapshots import read_snapshots
    from minigpt.measurements.ablation import ablate
    from minigpt.measurements.logit_lens import logit_lens
    from minigpt.measurements.name_losses import evaluate_names, name_losses
    from minigpt.model import GPT
    from minigpt.runs.compare import compare
    from minigpt.runs.new_names import generate, sample, sample_batches
    from minigpt.runs.run import train
    from minigpt.runs.sweep import run_sweep
    from minigpt.runs.tensorboard_log import TensorBoard
    from minigpt.training import Reporter
    from minigpt.views.attention_maps import attention_report
    from minigpt.views.notebook import attention_grid, explore


def __getattr__(name: str) -> object:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'minigpt' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value
