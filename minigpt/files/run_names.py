"""A run's names as tensors on its device, with what a corpus of millions of names needs beside them:
one fingerprint a name (repeated names counted; a Bloom filter for "is this a training name?" past a
size), and the digests a resumed run checks its names against."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import torch

from minigpt.files.tokenized import TokenizedNames
from minigpt.files.membership import NameSet, fingerprints
from minigpt.files.names_file import digest


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
