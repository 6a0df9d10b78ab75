"""A run's names as the Trainer takes them: read from their files and split (`load_data`), then
as tensors on the run's device, with one fingerprint a name (repeated names counted; a Bloom
filter for "is this a training name?" past a size), and the digests a resumed run checks its
names against (`tokenize_corpus`)."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import torch

from minigpt.data import TokenizedNames, Tokenizer, split_names
from minigpt.files.membership import NameSet, fingerprints
from minigpt.files.names_file import digest, read_names, refuse_unseen_names


def load_data(
    data_path, val_path, val_fraction: float, val_max: int, seed: int
) -> tuple[list[str], list[str], Tokenizer]:
    """Training and validation names, and the vocabulary of the training file."""
    names = read_names(data_path)
    tokenizer = Tokenizer.from_names(names)
    if val_path is None:
        train_names, val_names = split_names(names, val_fraction, val_max, seed)
        return train_names, val_names, tokenizer
    val_names = read_names(val_path)
    refuse_unseen_names(val_names, tokenizer.unseen, f"validation file {val_path}")
    return names, val_names, tokenizer


def token_ids(names: list[str], tokenizer, chunk: int = 1 << 20) -> torch.Tensor:
    """data.py's token_ids, [BOS] name0 [BOS] name1 ... [BOS] as one tensor of ids, made without a Python
    list per name: for a file of millions of names, where a list a name costs seconds and gigabytes.

    The names are joined with a separator that no name holds, read as UTF-32 code points, and
    mapped through a lookup table (the separator to the boundary token), a million at a time.
    """
    separator = next(c for c in "\n\x00\uffff" if c not in tokenizer.stoi)
    codes = [ord(c) for c in tokenizer.chars] + [ord(separator)]
    table = torch.full((max(codes) + 1,), -1, dtype=torch.int32)
    # the separator gets id len(chars), the boundary token's
    table[torch.tensor(codes)] = torch.arange(len(codes), dtype=torch.int32)
    dtype = torch.int16 if tokenizer.vocab_size < 2**15 else torch.int32
    parts = []
    for start in range(0, len(names), chunk):
        text = separator + separator.join(names[start : start + chunk])
        points = torch.frombuffer(bytearray(text.encode("utf-32-le")), dtype=torch.int32).long()
        ids = table[points.clamp(max=len(table) - 1)].masked_fill_(points >= len(table), -1)
        if bool((ids < 0).any()):  # a character the vocabulary lacks: encode says which
            for name in names[start : start + chunk]:
                tokenizer.encode(name)
        parts.append(ids.to(dtype))
    parts.append(torch.tensor([tokenizer.bos], dtype=dtype))
    return torch.cat(parts)


def tokenized(names: list[str], tokenizer, block_size: int) -> TokenizedNames:
    """The core's TokenizedNames of `names`, their ids made by `token_ids` above."""
    return TokenizedNames(names, tokenizer, block_size, ids=token_ids(names, tokenizer))


class Corpus(NamedTuple):
    """The names of a run as tensors, the check for "is this a training name?", and what checkpoints record."""

    train: TokenizedNames
    val: TokenizedNames | None
    membership: NameSet
    info: dict


def tokenize_corpus(train_names, val_names, tokenizer, block_size: int, device, data_path, val_path) -> Corpus:
    """The training and validation names on `device`, with their membership check and summary."""
    tokens = tokenized(train_names, tokenizer, block_size)
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
        val=tokenized(val_names, tokenizer, block_size).to(device) if val_names else None,
        membership=NameSet.for_corpus(train_names, characters, prints, tokenizer),
        info=info,
    )
