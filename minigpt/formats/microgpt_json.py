"""Weights that travel between minigpt and microgpt, as JSON.

    {"format": "microgpt",
     "hyperparameters": {"n_layer", "n_embd", "n_head", "block_size", "vocab_size"},
     "uchars": ["a", "b", ...],       sorted characters: ids 0..n-1
     "bos": n,                        the boundary token's id
     "state_dict": {"wte": [[...]], "wpe": ..., "lm_head": ..., "layer0.attn_wq": ..., ...}}

Matrices are nested lists [out][in], exactly as microgpt keeps them. float32 values
survive the trip through JSON unchanged, so export then import is lossless.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from minigpt.common.failures import first_line
from minigpt.common.text import number_text
from minigpt.config import GPTConfig, check_model_size, check_recipe
from minigpt.data import Tokenizer
from minigpt.errors import UsageError
from minigpt.files.atomic_file import refuse_existing, write_text
from minigpt.files.bounded import read_text
from minigpt.files.fields import entry, expect, whole_number
from minigpt.files.membership import NameSet
from minigpt.files.sniffing import KNOWN, identify, wrong_kind
from minigpt.formats.checkpoint import load_checkpoint, write_checkpoint
from minigpt.formats.checkpoint_checks import check_weights, checked_vocab
from minigpt.formats.recipes import load_config
from minigpt.model import GPT, load_microgpt_weights, microgpt_weights
from minigpt.training import checkpoint_dict

MICROGPT_ARCHITECTURE = {"activation": "relu", "final_norm": False, "norm_scale": False, "norm_eps": 1e-5}
LAYER_KEYS = ("attn_wq", "attn_wk", "attn_wv", "attn_wo", "mlp_fc1", "mlp_fc2")
SHAPE = ("n_layer", "n_embd", "n_head", "block_size", "vocab_size")  # what microgpt's hyperparameters hold


def microgpt_shapes(h: dict) -> dict[str, list[int]]:
    """Every tensor microgpt has, in its order, with the shape the hyperparameters give it."""
    c, v = h["n_embd"], h["vocab_size"]
    shapes = {"wte": [v, c], "wpe": [h["block_size"], c], "lm_head": [v, c]}
    for i in range(h["n_layer"]):
        shapes |= {f"layer{i}.attn_w{x}": [c, c] for x in "qkvo"}
        shapes |= {f"layer{i}.mlp_fc1": [4 * c, c], f"layer{i}.mlp_fc2": [c, 4 * c]}
    return shapes


def microgpt_misfits(cfg: GPTConfig) -> list[str]:
    """What of a model's architecture microgpt cannot run ("final_norm True", ...); empty when it can."""
    misfits = [
        f"{key} {getattr(cfg, key)!r}" for key, want in MICROGPT_ARCHITECTURE.items() if getattr(cfg, key) != want
    ]
    return misfits + ([] if cfg.causal else ["causal False: microgpt always masks the future"])


def export_microgpt(checkpoint: str | Path, out: str | Path, overwrite: bool = False) -> None:
    ckpt = load_checkpoint(checkpoint)
    cfg = ckpt.config.model
    differs = microgpt_misfits(cfg)
    if differs:
        raise UsageError(
            f"{ckpt.path}: microgpt cannot run this architecture ({', '.join(differs)}), so its JSON "
            f"cannot hold it; minigpt export {ckpt.path} OUT_DIR --format safetensors exports any model, "
            f"and a model trained with --config microgpt exports to microgpt"
        )
    out = Path(out)
    refuse_existing(out, overwrite)
    hyper = {key: getattr(cfg, key) for key in SHAPE}
    state = microgpt_weights(ckpt.model)
    document = {
        "format": "microgpt",
        "hyperparameters": hyper,
        "uchars": ckpt.tokenizer.chars,
        "bos": ckpt.tokenizer.bos,
        "state_dict": {key: state[key].tolist() for key in microgpt_shapes(hyper)},
    }
    write_text(out, json.dumps(document))


def read_microgpt_json(path: Path) -> dict:
    if not path.exists() or path.is_dir():  # a pipe or a device is read, up to a JSON file's bound
        raise UsageError(f"microgpt JSON file not found: {path}")
    try:
        document = json.loads(read_text(path, "JSON file"))
    except (ValueError, RecursionError) as e:  # not JSON, not UTF-8, or numbers past what JSON reads
        raise UsageError(f"{path}: not valid JSON: {e}") from None
    for key, kind in (("hyperparameters", dict), ("uchars", list), ("state_dict", dict)):
        if not isinstance(document, dict) or key not in document:
            raise UsageError(f"{path}: not a microgpt export (no '{key}')")
        expect(document[key], kind, path, f"'{key}'")
    return document


def shape_of(value) -> list[int] | None:
    """The shape of a rectangular nested list of numbers (true and false are not numbers), else None."""
    if not isinstance(value, list) or not value or not all(isinstance(row, list) for row in value):
        return None
    width = len(value[0])
    if any(len(row) != width or not all(type(x) in (int, float) for x in row) for row in value):
        return None
    return [len(value), width]


def check_document(path: Path, document: dict) -> None:
    """Hyperparameters, vocabulary and every tensor's shape must agree with each other."""
    h, chars, state = document["hyperparameters"], document["uchars"], document["state_dict"]
    for key in SHAPE:
        whole_number(entry(h, key, int, path, f"hyperparameter '{key}'"), path, f"hyperparameter '{key}'", least=1)
    if h["n_embd"] % h["n_head"]:
        raise UsageError(f"{path}: n_embd ({h['n_embd']}) must be divisible by n_head ({h['n_head']})")
    check_model_size(GPTConfig(**{**MICROGPT_ARCHITECTURE, **{key: h[key] for key in SHAPE}}), str(path))
    checked_vocab(chars, f"{path}: 'uchars'")
    if h["vocab_size"] != len(chars) + 1 or document.get("bos", len(chars)) != len(chars):
        raise UsageError(
            f"{path}: vocab_size {number_text(h['vocab_size'])} and bos {number_text(document.get('bos'))} "
            f"disagree with "
            f"{len(chars)} characters (microgpt's boundary token is id len(uchars))"
        )
    expected = microgpt_shapes(h)
    if set(state) != set(expected):
        missing, extra = sorted(set(expected) - set(state)), sorted(set(state) - set(expected))
        raise UsageError(
            f"{path}: state_dict keys disagree with the hyperparameters (missing {missing}, extra {extra})"
        )
    for key, shape in expected.items():
        actual = shape_of(state[key])
        if actual is None:
            raise UsageError(
                f"{path}: {key} is not a table of numbers (a list of rows of numbers, no true, false "
                f"or text); the hyperparameters need {shape}"
            )
        if actual != shape:
            raise UsageError(f"{path}: {key} has shape {actual}; the hyperparameters need {shape}")


def import_microgpt(path: str | Path, out: str | Path, overwrite: bool = False) -> None:
    """A microgpt JSON export -> a minigpt checkpoint that sample, eval and inspect-attention use."""
    path, out = Path(path), Path(out)
    kind = identify(path, "JSON file")
    if kind in KNOWN and kind != "microgpt's JSON":
        raise UsageError(wrong_kind(path, kind, "an export (microgpt's JSON, or a safetensors directory)"))
    document = read_microgpt_json(path)
    check_document(path, document)
    refuse_existing(out, overwrite, may_replace_checkpoint=True, only_over_checkpoints=True)
    h = document["hyperparameters"]
    config = load_config("microgpt")
    config.model = GPTConfig(**{**MICROGPT_ARCHITECTURE, **h, "dropout": 0.0, "init_std": 0.08})
    check_recipe(config)
    tokenizer = Tokenizer(document["uchars"])
    model = GPT(config.model)
    try:
        state = {key: torch.tensor(value, dtype=torch.float32) for key, value in document["state_dict"].items()}
    except (OverflowError, TypeError, ValueError, RuntimeError) as e:  # 10**400, a string among the numbers, ...
        raise UsageError(f"{path}: a weight is not a number a float32 holds ({first_line(e)})") from None
    check_weights(state, path)
    load_microgpt_weights(model, state)
    write_checkpoint(
        checkpoint_dict(model, config, tokenizer.chars, names=NameSet(), data={"imported_from": str(path)}, code={}),
        out,
    )
