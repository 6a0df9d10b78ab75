"""A run's names as the Trainer takes them: read from their files and split (`load_data`), then
as tensors on the run's device, with one fingerprint a name (repeated names counted; a Bloom
filter for "is this a training name?" past a size), and the digests a resumed run checks its
names against (`tokenize_corpus`)."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import torch

from minigpt.data import Tokenizer, TokenizedNames, split_names
from minigpt.files.membership import NameSet, fingerprints
from minigpt.files.names_file import digest, read_names, refuse_unseen_names


def load_data(data_path, val_path, val_fraction: float, val_max: int,
              seed: int) -> tuple[list[str], list[str], Tokenizer]:
    """Training and validation names, and the vocabulary of the training file."""
    names = read_names(data_path)
    tokenizer = Tokenizer.from_names(names)
    if val_path is None:
        train_names, val_names = split_names(names, val_fraction, val_max, seed)
        return train_names, val_names, tokenizer
    val_names = read_names(val_path)
    refuse_unseen_names(val_names, tokenizer.unseen, f"validation file {val_path}")
    return names, val_names, tokenizer


class Corpus(NamedTuple):
    """The names of a run as tensors, the check for "is this a training name?", and what checkpoints record."""

    train: TokenizedNames
    val: TokenizedNames | None
    membership: NameSet
    info: dict


def tokenize_corpus(train_names, val_names, tokenizer, block_size: int, device, data_path,
                    val_path) -> Corpus:
    """The training and validation names on `device`, with their membership check and summary."""
    tokens = TokenizedNames(train_names, tokenizer, block_size)
    # one fingerprint per name (on the CPU): repeated names are counted, and large corpora get a Bloom filter
    prints = torch.unique(fingerprints(tokens.flat, tokens.starts + 1, tokens.characters))
    characters = int(tokens.characters.sum())
    info = {
        "path": str(Path(data_path).resolve()) if data_path else None,
        "val_path": str(Path(val_path).resolve()) if val_path else None,
        "train_names": len(train_names),
        "val_names": len(val_names),
        "characters": characters,
        "duplicates": len(train_names) - len(prints),
        "vocab_size": tokenizer.vocab_size,
        "truncated": tokens.truncated,
        "train_digest": digest(train_names),
        "val_digest": digest(val_names),
    }
    return Corpus(
        train=tokens.to(device),
        val=TokenizedNames(val_names, tokenizer, block_size).to(device) if val_names else None,
        membership=NameSet.for_corpus(train_names, characters, prints, tokenizer),
        info=info,
    )
