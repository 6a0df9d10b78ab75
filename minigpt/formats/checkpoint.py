"""Checkpoints: one file holding everything needed to sample, evaluate or resume.

The core writes the one kind (training.py's `checkpoint_dict`, `save_checkpoint`); this module
writes it atomically (`write_checkpoint`) and reads and checks it for every layer around the core
(`load_checkpoint`, `read_resume_state`). A checkpoint is a dict:

    format          "minigpt"
    version         1
    model           the state dict under microgpt's names (wte, layer0.attn_wq, ...; weights [out, in])
    config          the recipe: {"model": {...}, "train": {...}, "sample": {...}}
    vocab           the characters in id order; the boundary token's id is len(vocab)
    step            optimizer steps taken
    val_loss        the validation loss at that step (None when none was measured)
    best_val_loss   the run's best validation loss so far
    membership      the training names, or a Bloom filter of them (see files/membership.py)
    data            where the names came from: paths, counts, digests (or imported_from)
    code            which code trained it: the core's digest, version, commit ({} for an import)
    optimizer       the optimizer's state (training only)
    progress        tokens, seconds, elapsed, best_step, evals_since_best (training only)
    rng             every rank's random generator states (training only)

Checkpoints written by `minigpt import` carry no training state (the keys marked
"training only"). Earlier versions held the names as text, under "train_names", and the
core's own save once wrote no "format" and "version" (read as version 0, and said so); both
still load. Files are written atomically (temporary file, fsync, rename), and
read with `torch.load(weights_only=True)`, which refuses any pickled code.
"""

from __future__ import annotations

import dataclasses
import io
import pickle
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch

from minigpt.common.arguments import kind_of
from minigpt.common.failures import cannot_write, warn
from minigpt.common.text import as_text, plural
from minigpt.config import Config, parameter_count
from minigpt.data import Tokenizer
from minigpt.errors import Interrupted, RunError, UsageError
from minigpt.files.atomic_file import write_bytes
from minigpt.files.bounded import check_archive
from minigpt.files.corpus import digest, load_data
from minigpt.files.membership import NameSet
from minigpt.files.names_file import read_names, refuse_unseen_names
from minigpt.files.run_paths import NAMES_IN_DIR, RESUME_ORDER, resolve_checkpoint_path
from minigpt.formats.checkpoint_checks import check_layout, check_training_state, checked_vocab, known_loss, stored_loss
from minigpt.formats.recipes import Recipe, config_from_dict, load_config
from minigpt.machine.processes import resolve_device
from minigpt.model import GPT, load_microgpt_weights
from minigpt.training import FORMAT, VERSION


@dataclass
class Checkpoint:
    model: GPT
    config: Config
    tokenizer: Tokenizer
    step: int
    val_loss: float | None
    train_names: list[str]  # when the checkpoint carries them (a small corpus); else empty
    membership: NameSet  # is a name one of the training names?
    path: Path
    best_val_loss: float | None = None
    data: dict = field(default_factory=dict)  # where the names came from (the "data" key)
    version: int = VERSION
    code: dict = field(default_factory=dict)  # which code trained it (runs/code_version.py); {} when unknown


def describe_data(data: dict, where: str | None = None) -> str:
    """What a model was trained on, in one line, from a checkpoint's "data" (or a Trainer's data_info): the
    names file (or `where`), how many names, characters, repeats, names cut to fit and validation names."""
    if "train_names" in data:
        where = where if where is not None else as_text(data.get("path"))
        return (
            f"{where}: {plural(data['train_names'], 'training name')} ({data['characters']:,} characters, "
            f"{data.get('duplicates', 0):,} repeated, {data.get('truncated', 0):,} cut to fit), "
            f"{data['val_names']:,} validation"
        )
    if "imported_from" in data:
        return f"imported from {as_text(data['imported_from'])}"
    return "unknown"


def validation_names(ckpt: Checkpoint) -> list[str] | None:
    """The run's held-out names, read again from the files it trained on, or None where they cannot be
    had (`held_out` says why)."""
    if not isinstance(ckpt, Checkpoint):
        raise UsageError(
            f"validation_names takes a loaded checkpoint (minigpt.load_checkpoint(path)), got {kind_of(ckpt)}"
        )
    return held_out(ckpt)[0]


def held_out(ckpt: Checkpoint) -> tuple[list[str] | None, str]:
    """The run's held-out names (or None) and, when there are none, why: an import, no validation set,
    or a training file gone or changed since (its digest differs)."""
    data, recipe = ckpt.data, ckpt.config.train
    if "imported_from" in data:
        return None, f"it was imported (from {as_text(data['imported_from'])}), and an import carries no names"
    if not data.get("path") or not data.get("val_names") or "val_digest" not in data:
        return None, "its run held out no validation names (train.val_fraction was 0, or it kept no record of them)"
    try:
        _, names, _ = load_data(
            data["path"], data.get("val_path"), recipe.val_fraction, recipe.val_max, recipe.split_seed
        )
    except UsageError as e:  # the file is gone or no longer reads
        return None, f"its training names can no longer be read ({e})"
    if digest(names) != data["val_digest"]:
        files = " and ".join(as_text(p) for p in (data["path"], data.get("val_path")) if p)
        return None, f"{files} changed since the run trained, so its validation names are not the ones held out"
    return names, ""


@dataclass
class ResumeState:
    """What a resumed run takes up again: the counters, the optimizer and the random generators."""

    model: dict
    config: dict
    data: dict
    step: int
    val_loss: float | None
    best_val_loss: float | None
    tokens: int
    seconds: float
    elapsed: float
    best_step: int | None
    evals_since_best: int
    optimizer: dict
    rng: dict  # "ranks": each rank's CPU generator state; "cuda": the CUDA ones, when there were GPUs


def names_to_score(ckpt, data: Path | None) -> tuple[list[str], str]:
    """The names `eval` and `ablate` score, and what they are: a file's, or the run's validation names (held
    out from training, so the loss is not flattered by names the model learned)."""
    if data is not None:
        names = read_names(data)
        refuse_unseen_names(names, ckpt.tokenizer.unseen, f"names file {data}")
        return names, f"names file {data}"
    held, why = held_out(ckpt)
    if not held:
        raise UsageError(
            f"{ckpt.path}: the run's validation names cannot be read again: {why}; pass --data FILE "
            f"to score a names file"
        )
    return held, "the run's validation names"


def write_checkpoint(checkpoint: dict, path: str | Path) -> None:
    """torch.save(checkpoint, path), atomically: a reader sees the old file or the new one, never half.

    torch.save writes into memory first: writing to a full disk, it fails with a message that names
    no cause, where Python's own write says "No space left on device"."""
    buffer = io.BytesIO()
    torch.save(checkpoint, buffer)
    write_bytes(path, buffer.getbuffer(), failed=lambda at, e: cannot_write(f"checkpoint {at}", e, RunError))


def read_checkpoint(path: str | Path, prefer: tuple[str, ...] = NAMES_IN_DIR) -> tuple[Path, dict]:
    """The raw checkpoint dict, after checking that it is one of ours and not too new."""
    path = resolve_checkpoint_path(path, prefer)
    check_archive(path, "checkpoint")
    raw = unpickled(path)
    if isinstance(raw, dict) and "format" not in raw and {"model", "config", "vocab"} <= raw.keys():
        warn(f"{path}: a checkpoint of an earlier core, without its format and version: read as version 0")
        raw = {**raw, "format": FORMAT, "version": 0}
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise UsageError(f"{path}: not a minigpt checkpoint")
    if not isinstance(raw.get("version"), int) or raw["version"] > VERSION:
        raise UsageError(
            f"{path}: written by a newer minigpt (format version {raw.get('version')}; this one reads {VERSION})"
        )
    check_layout(raw, path)
    return path, raw


def load_quietly(path: Path):
    """torch.load of a file minigpt wrote (plain tensors only), without the warnings torch gives about a
    damaged one before it fails on it: the failure is what the caller reports."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.load(path, map_location="cpu", weights_only=True)


def unpickled(path: Path):
    """torch.load's reading of the file, any failure one line: a damaged pickle fails in ways
    without number (KeyError: 101, struct.error, an AssertionError), none of them the user's to read."""
    try:
        return load_quietly(path)
    except pickle.UnpicklingError as e:
        if "GLOBAL" in str(e):  # the pickle names a function or class, which weights_only refuses to load
            raise UsageError(f"{path}: refused: the file holds pickled objects or code, not plain tensors") from None
        raise UsageError(f"{path}: {DAMAGED}") from None
    except (MemoryError, Interrupted):  # not the file's fault: a signal heard while it loaded is the stop
        raise
    except Exception:  # torch's and the OS's words for it ("[Errno 22] Invalid argument") are none of the user's
        raise UsageError(f"{path}: {DAMAGED}") from None


DAMAGED = "cannot be read as a checkpoint: the file is cut short or damaged (a copy that did not finish, or not one)"


def check_weights_fit(weights, config: Config, path) -> None:
    """Before a model is built: the file's weights hold as many numbers as the recipe's model has."""
    if not isinstance(weights, dict) or not all(isinstance(t, torch.Tensor) for t in weights.values()):
        raise UsageError(f"{path}: the weights are not a table of tensors")
    stored, needed = sum(t.numel() for t in weights.values()), parameter_count(config.model)
    if stored != needed:
        raise UsageError(
            f"{path}: the weights hold {stored:,} numbers, and the recipe's model has {needed:,} "
            f"parameters: the file is damaged or inconsistent"
        )


def load_checkpoint(path: str | Path, device: str | torch.device = "cpu") -> Checkpoint:
    """Load a checkpoint (file or run directory) into a ready model, in eval mode on `device` (auto, cpu, cuda,
    cuda:N or mps, as the command line's --device; one this machine lacks is refused in one line)."""
    if not isinstance(device, (str, torch.device)):
        raise UsageError(f"device: expected auto, cpu, cuda, cuda:N or mps, got {kind_of(device)}")
    device = resolve_device(str(device))
    path, raw = read_checkpoint(path)
    try:
        config = config_from_dict(raw["config"], where=str(path))
        tokenizer = Tokenizer(checked_vocab(raw["vocab"], path))
        config.model.vocab_size = tokenizer.vocab_size
        check_weights_fit(raw["model"], config, path)  # so what is built is no larger than the file
        model = GPT(config.model)
        load_microgpt_weights(model, raw["model"])
    except (KeyError, TypeError, ValueError, RuntimeError) as e:
        reason = str(e).splitlines()[0]
        raise UsageError(f"{path}: the checkpoint is damaged or inconsistent: {reason}") from None
    model.to(device).eval()
    membership = NameSet.from_payload(raw.get("membership"), raw.get("train_names", ""), tokenizer)
    return Checkpoint(
        model=model,
        config=config,
        tokenizer=tokenizer,
        step=raw.get("step", 0),
        val_loss=stored_loss(raw.get("val_loss"), path, "val_loss"),
        train_names=sorted(membership.names) if membership.names is not None else [],
        membership=membership,
        path=path,
        best_val_loss=stored_loss(raw.get("best_val_loss"), path, "best_val_loss"),
        data=raw.get("data", {}),
        version=raw["version"],
        code=raw.get("code", {}),
    )


def as_checkpoint(checkpoint: str | Path | Checkpoint) -> Checkpoint:
    """A loaded Checkpoint as it is; a checkpoint file or a run directory loaded (what the API's functions take)."""
    if isinstance(checkpoint, Checkpoint):
        return checkpoint
    if not isinstance(checkpoint, (str, Path)):
        raise UsageError(
            f"expected a checkpoint: a loaded Checkpoint, a checkpoint file or a run directory; "
            f"got {type(checkpoint).__name__}"
        )
    return load_checkpoint(checkpoint)


def read_resume_state(path: str | Path) -> tuple[Path, ResumeState]:
    """The training state of a run (its directory or a checkpoint; last.pt first), to resume it."""
    path, raw = read_checkpoint(path, prefer=RESUME_ORDER)
    check_training_state(raw, path)
    progress, rng = raw["progress"], raw["rng"]
    return path, ResumeState(
        model=raw["model"],
        config=raw["config"],
        data=raw.get("data", {}),
        step=raw.get("step", 0),
        val_loss=known_loss(raw.get("val_loss"), path, "val_loss"),
        best_val_loss=known_loss(raw.get("best_val_loss"), path, "best_val_loss"),
        tokens=progress["tokens"],
        seconds=progress["seconds"],
        elapsed=progress["elapsed"],
        best_step=progress.get("best_step"),  # absent from checkpoints of earlier versions
        evals_since_best=progress.get("evals_since_best", 0),
        optimizer=raw["optimizer"],
        rng={"ranks": rng.get("ranks", [rng["torch"]]), **({"cuda": rng["cuda"]} if "cuda" in rng else {})},
    )


def refuse_to_go_back(resumed_from: Path, step: int) -> None:
    """Resuming from a checkpoint older than its run's last.pt would replace the steps after it."""
    last = resumed_from.parent / "last.pt"
    if resumed_from.name == "last.pt" or not last.is_file():
        return
    try:
        check_archive(last, "checkpoint")
        last_step = load_quietly(last).get("step", 0)
    except Interrupted:
        raise
    except Exception:  # a damaged last.pt holds no steps worth keeping
        return
    if isinstance(last_step, int) and last_step > step:
        raise UsageError(
            f"{resumed_from} is at step {step:,} and {last} at step {last_step:,}: resuming from it "
            f"replaces the steps after {step:,} (last.pt and their records); pass --overwrite-later "
            f"to do so, or resume from {last}"
        )


def read_model_weights(path: str | Path) -> dict:
    """Only the model's weights, under microgpt's names (`load_microgpt_weights` takes them)."""
    return read_checkpoint(path)[1]["model"]


def resume_config(checkpoint: str | Path, overrides: Sequence[str] = ()) -> Recipe:
    """The recipe a checkpoint was trained with, plus `--set` overrides to its [train] and [sample] keys."""
    _, state = read_resume_state(checkpoint)
    config = config_from_dict(state.config, where=str(checkpoint))
    updated = load_config(None, overrides, base=config)
    changed = [
        f"model.{key}"
        for key, value in dataclasses.asdict(updated.model).items()
        if getattr(config.model, key) != value
    ]
    if changed:
        raise UsageError(
            f"{', '.join(changed)} cannot change when resuming: the [model] keys are the run's (its weights "
            f"were trained with them); --set changes [train] and [sample] keys, and a new run takes any "
            f"(minigpt train --set {changed[0]}=...)"
        )
    return updated
