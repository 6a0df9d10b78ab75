"""Weights as safetensors, in the layout Hugging Face tools expect: a directory holding

    model.safetensors   the state dict under microgpt's names (wte, layer0.attn_wq, ...; [out, in])
    config.json         the model's hyperparameters, the vocabulary, and minigpt's whole recipe

Export then import gives back the same tensors, bit for bit. The file is written and read here,
by the format's published layout (an 8-byte little-endian header length, a JSON header naming each
tensor's dtype, shape and byte range, then the bytes), so export works after a plain install; the
tests hold it to the safetensors package's own reading and writing.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TypeGuard

import torch

from minigpt.common.failures import cannot_write
from minigpt.data import Tokenizer
from minigpt.errors import UsageError
from minigpt.files.atomic_file import refuse_existing, write_files_together
from minigpt.files.bounded import read_bytes, read_text
from minigpt.files.fields import entry, expect, tensors, whole_number
from minigpt.files.membership import NameSet
from minigpt.files.sniffing import identify
from minigpt.formats.checkpoint import load_checkpoint, write_checkpoint
from minigpt.formats.checkpoint_checks import check_weights, checked_vocab, known_loss
from minigpt.formats.microgpt_json import MICROGPT_ARCHITECTURE, SHAPE
from minigpt.formats.recipes import config_from_dict
from minigpt.model import GPT, load_microgpt_weights, microgpt_weights
from minigpt.training import checkpoint_dict

WEIGHTS, CONFIG = "model.safetensors", "config.json"
HYPERPARAMETERS = SHAPE + tuple(MICROGPT_ARCHITECTURE)  # the shape, and the switches microgpt fixes


DTYPES = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}
NAMES = {dtype: name for name, dtype in DTYPES.items()}


def safetensors_bytes(tensors: dict[str, torch.Tensor], metadata: dict[str, str]) -> bytes:
    """Tensors as a safetensors file, byte for byte as the package writes it: the header (padded
    with spaces to 8 bytes), then each tensor's bytes, the widest numbers first, then by name."""
    header: dict[str, object] = {"__metadata__": metadata}
    chunks: list[bytes] = []
    offset = 0
    for name in sorted(tensors, key=lambda name: (-tensors[name].element_size(), name)):
        tensor = tensors[name].detach().cpu().contiguous().clone()  # a storage of its own bytes alone
        chunks.append(bytes(tensor.untyped_storage()))
        header[name] = {
            "dtype": NAMES[tensor.dtype],
            "shape": list(tensor.shape),
            "data_offsets": [offset, offset + len(chunks[-1])],
        }
        offset += len(chunks[-1])
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return len(text).to_bytes(8, "little") + text + b"".join(chunks)


def read_safetensors(data: bytes, where) -> dict[str, torch.Tensor]:
    """The tensors of a safetensors file's bytes, every field checked: one line when one does not hold."""

    def damaged(why: str) -> UsageError:
        return UsageError(f"{where}: cannot be read as safetensors: {why}")

    size = int.from_bytes(data[:8], "little") if len(data) >= 8 else -1
    if not 0 < size <= len(data) - 8:
        raise damaged("its header's length does not fit the file")
    try:
        header = json.loads(data[8 : 8 + size])
    except (ValueError, RecursionError) as e:  # not JSON, not UTF-8, or numbers past what JSON reads
        raise damaged(f"its header is not JSON ({e})") from None
    body = memoryview(data)[8 + size :]
    tensors = {}
    for name, info in expect(header, dict, where, "the header").items():
        if name == "__metadata__":
            continue
        info = info if isinstance(info, dict) else {}
        dtype, shape, offsets = DTYPES.get(str(info.get("dtype"))), info.get("shape"), info.get("data_offsets")
        if dtype is None or not is_whole_list(shape) or not is_whole_list(offsets) or len(offsets) != 2:
            raise damaged(f"tensor {name!r}: a dtype of {', '.join(DTYPES)}, a shape and its byte range")
        begin, end = offsets
        count = math.prod(shape)
        if not 0 <= begin <= end <= len(body) or end - begin != count * dtype.itemsize:
            raise damaged(f"tensor {name!r}: its byte range does not hold its shape")
        raw = bytearray(body[begin:end])
        tensors[name] = (torch.frombuffer(raw, dtype=dtype) if count else torch.empty(0, dtype=dtype)).reshape(shape)
    return tensors


def is_whole_list(value: object) -> TypeGuard[list[int]]:
    return isinstance(value, list) and all(type(v) is int and v >= 0 for v in value)


def export_safetensors(checkpoint: str | Path, out: str | Path, overwrite: bool = False) -> None:
    """Write OUT/model.safetensors and OUT/config.json from a checkpoint."""
    ckpt = load_checkpoint(checkpoint)
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out} exists and is not a directory (safetensors export writes a directory)")
    if out.is_dir() and any(out.iterdir()) and not overwrite:
        raise UsageError(f"{out} is not empty; pass --overwrite to replace its files")
    cfg = ckpt.config.model
    config = {
        "model_type": "minigpt",
        **{key: getattr(cfg, key) for key in HYPERPARAMETERS},
        "vocab": ckpt.tokenizer.chars,  # ids 0..n-1; the boundary token is id n
        "bos_token_id": ckpt.tokenizer.bos,
        "step": ckpt.step,
        "val_loss": ckpt.val_loss,
        "minigpt_config": ckpt.config.to_dict(),
    }
    files = {
        WEIGHTS: safetensors_bytes(microgpt_weights(ckpt.model), metadata={"format": "pt"}),
        CONFIG: (json.dumps(config, indent=1) + "\n").encode("utf-8"),
    }
    created = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
        write_files_together(out, files)  # an export it replaces stays whole until the new one is
    except BaseException as e:
        if created and out.is_dir() and not any(out.iterdir()):  # a failed first export leaves no empty directory
            out.rmdir()
        if isinstance(e, OSError):
            raise cannot_write(out, e) from None
        raise


def is_safetensors(path: Path) -> bool:
    return path.is_dir() or path.suffix == ".safetensors" or identify(path) == "a safetensors file"


def import_safetensors(source: str | Path, out: str | Path, overwrite: bool = False) -> None:
    """A directory written by `export_safetensors` (or its model.safetensors) -> a checkpoint."""
    source, out = Path(source), Path(out)
    directory = source if source.is_dir() else source.parent
    weights, config_file = directory / WEIGHTS if source.is_dir() else source, directory / CONFIG
    for path in (weights, config_file):
        if not path.is_file():
            raise UsageError(f"{path} not found (a safetensors export is a directory with {WEIGHTS} and {CONFIG})")
    refuse_existing(out, overwrite, may_replace_checkpoint=True, only_over_checkpoints=True)
    try:
        document = json.loads(read_text(config_file, "JSON file"))
    except (ValueError, RecursionError) as e:  # not JSON, not UTF-8, or numbers past what JSON reads
        raise UsageError(f"{config_file}: not a minigpt safetensors config: not valid JSON: {e}") from None
    expect(document, dict, config_file, "the file")
    recipe = expect(document.get("minigpt_config", {}), dict, config_file, "'minigpt_config'")
    # the top-level keys are what Hugging Face tools read: they win over the recipe's
    sizes = {
        **expect(recipe.get("model", {}), dict, config_file, "'minigpt_config'['model']"),
        **{key: entry(document, key, (int, float, bool, str), config_file) for key in HYPERPARAMETERS},
    }
    tokenizer = Tokenizer(checked_vocab(entry(document, "vocab", list, config_file), config_file))
    step = whole_number(document.get("step", 0), config_file, "'step'")
    config = config_from_dict({**recipe, "model": sizes}, where=str(config_file))  # checked, the size included
    if config.model.vocab_size != tokenizer.vocab_size:
        raise UsageError(
            f"{config_file}: vocab_size {config.model.vocab_size} disagrees with "
            f"{len(tokenizer.chars)} characters and the boundary token"
        )
    state = read_safetensors(read_bytes(weights, "checkpoint"), weights)
    check_weights(tensors(state, weights, "the weights"), weights)
    model = GPT(config.model)
    try:
        load_microgpt_weights(model, state)
    except ValueError as e:
        raise UsageError(f"{weights}: its tensors do not fit {config_file}: {e}") from None
    val_loss = known_loss(document.get("val_loss"), config_file, "val_loss")
    write_checkpoint(
        checkpoint_dict(
            model, config, tokenizer.chars, step, val_loss, val_loss, NameSet(), {"imported_from": str(source)}, code={}
        ),
        out,
    )
