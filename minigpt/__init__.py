"""minigpt: a tiny character-level GPT that learns names and invents new ones.

    from minigpt import GPT, GPTConfig, Tokenizer, load_checkpoint, train, sample

torch is imported on first use of one of these, so `minigpt --help` stays fast.
"""

__version__ = "0.1.0"

_EXPORTS = {
    "GPT": "minigpt.model",
    "GPTConfig": "minigpt.config",
    "Config": "minigpt.config",
    "load_config": "minigpt.config",
    "Tokenizer": "minigpt.data",
    "read_names": "minigpt.data",
    "load_checkpoint": "minigpt.checkpoint",
    "train": "minigpt.train",
    "evaluate_names": "minigpt.train",
    "sample": "minigpt.sample",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'minigpt' has no attribute {name!r}")
    import importlib

    module = importlib.import_module(_EXPORTS[name])
    return getattr(module, "generate" if name == "sample" else name)
