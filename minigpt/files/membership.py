"""Is a generated name one of the training names? The check a checkpoint carries.

A small corpus carries its names, and the check is exact. A large one carries a Bloom
filter instead: a bit array in which each name sets `hashes` bits chosen by its
fingerprint. A name whose bits are all set is reported as a training name; one with any
bit clear is certainly new. So there are no false negatives, and false positives (a new
name reported as known) happen at about FALSE_POSITIVE_RATE, with the filter sized for
that: 9.6 bits per name, 1.2 MB per million names.

A name's fingerprint is 64-bit FNV-1a over its token ids; positions of the filter come
from its two 32-bit halves (double hashing). The explorer page computes the same in
JavaScript. Fingerprints also count repeated names in a corpus without a set of strings.
"""

from __future__ import annotations

import math

import torch

from minigpt.common.text import plural

FALSE_POSITIVE_RATE = 0.01
EXACT_CHARACTERS = 2_000_000  # corpora up to this many characters of names keep the exact check
FNV_OFFSET, FNV_PRIME = 0xCBF29CE484222325, 0x100000001B3
MASK64 = (1 << 64) - 1


def fingerprint(ids: list[int]) -> int:
    """64-bit FNV-1a over token ids (each id taken as one value, not as bytes)."""
    h = FNV_OFFSET
    for i in ids:
        h = ((h ^ i) * FNV_PRIME) & MASK64
    return h


def as_signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def fingerprints(flat: torch.Tensor, starts: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """`fingerprint` of every name at once: flat ids, each name's first id and length -> int64 [N].

    The names are taken longest first, so that at each position the ones still going are a
    prefix of them: one round per position updates that prefix in place, reading one id of
    each. int64 multiplication wraps around, as the 64-bit arithmetic needs.
    """
    order = torch.argsort(lengths, descending=True, stable=True)
    longest = int(lengths[order[0]]) if len(order) else 0
    going = len(order) - torch.bincount(lengths, minlength=longest + 1).cumsum(0)  # names longer than each position
    position = starts[order]  # the next id of each name, in the order of `order`
    h = torch.full(starts.shape, as_signed(FNV_OFFSET), dtype=torch.int64)
    ids = torch.empty(len(order), dtype=flat.dtype)
    prime = torch.tensor(FNV_PRIME, dtype=torch.int64)
    for n in going[:longest].tolist():
        torch.index_select(flat, 0, position[:n], out=ids[:n])
        h[:n].bitwise_xor_(ids[:n]).mul_(prime)
        position[:n] += 1
    fingerprints_in_order = torch.empty_like(h)
    fingerprints_in_order[order] = h
    return fingerprints_in_order


def bloom_positions(prints: torch.Tensor, hashes: int, size: int) -> torch.Tensor:
    """The filter's bits for each fingerprint [N] -> [N, hashes]: (h1 + i * h2) mod size, h1 and h2 its halves."""
    low = prints & 0xFFFFFFFF
    high = ((prints >> 32) & 0xFFFFFFFF) | 1  # odd, so the positions differ whatever the size
    steps = torch.arange(hashes, dtype=torch.int64)
    return (low[:, None] + steps[None] * high[:, None]) % size


class NameSet:
    """Membership of names in a training set: exact (a set of names) or a Bloom filter."""

    def __init__(
        self,
        names: set[str] | None = None,
        bits: torch.Tensor | None = None,
        hashes: int = 0,
        count: int = 0,
        tokenizer=None,
    ):
        self.names = names  # the exact check, or None
        self.bits, self.hashes, self.count = bits, hashes, count  # the Bloom filter, or None
        self.tokenizer = tokenizer  # turns a name into the ids its fingerprint is made of
        self._text: str | None = None  # the exact names as one text, made once, saved at every evaluation

    @classmethod
    def exact(cls, names) -> NameSet:
        distinct = set(names)
        return cls(names=distinct, count=len(distinct))

    @classmethod
    def for_corpus(cls, names: list[str], characters: int, prints: torch.Tensor, tokenizer) -> NameSet:
        """The exact check for a corpus of up to EXACT_CHARACTERS characters, else a Bloom filter of its
        distinct fingerprints `prints`."""
        return cls.exact(names) if characters <= EXACT_CHARACTERS else cls.bloom(prints, tokenizer)

    @classmethod
    def bloom(cls, prints: torch.Tensor, tokenizer, rate: float = FALSE_POSITIVE_RATE) -> NameSet:
        """A filter for these distinct fingerprints, sized so that new names pass it at about `rate`."""
        n = max(1, len(prints))
        size = 8 * math.ceil(-n * math.log(rate) / math.log(2) ** 2 / 8)  # bits, a whole number of bytes
        hashes = max(1, round(size / n * math.log(2)))
        on = torch.zeros(size, dtype=torch.bool)
        for chunk in prints.split(1 << 20):
            on[bloom_positions(chunk, hashes, size).flatten()] = True
        weights = torch.tensor([1, 2, 4, 8, 16, 32, 64, 128], dtype=torch.uint8)
        bits = (on.view(-1, 8).to(torch.uint8) * weights).sum(1, dtype=torch.uint8)
        return cls(bits=bits, hashes=hashes, count=len(prints), tokenizer=tokenizer)

    @property
    def kind(self) -> str:
        return "exact" if self.names is not None else "bloom" if self.bits is not None else "none"

    @property
    def false_positive_rate(self) -> float:
        """The chance that a new name is reported as a training name (0 for the exact check)."""
        if self.kind != "bloom" or self.bits is None:
            return 0.0
        size = 8 * len(self.bits)
        return (1 - math.exp(-self.hashes * self.count / size)) ** self.hashes

    def __contains__(self, name: str) -> bool:
        if self.names is not None:
            return name in self.names
        if self.bits is None or self.tokenizer.unseen(name):
            return False  # a character the training names never had: certainly new
        h = torch.tensor([as_signed(fingerprint(self.tokenizer.encode(name)))], dtype=torch.int64)
        positions = bloom_positions(h, self.hashes, 8 * len(self.bits))[0]
        return all(int(self.bits[p // 8]) >> (p % 8) & 1 for p in positions.tolist())

    def describe(self) -> str:
        if self.kind == "exact":
            return f"the {plural(self.count, 'training name')} (exact)"
        if self.kind == "bloom" and self.bits is not None:
            return (
                f"a Bloom filter of the {plural(self.count, 'training name')} ({len(self.bits) / 1e6:.1f} MB; a new "
                f"name is taken for a training name {100 * self.false_positive_rate:.1f}% of the time)"
            )
        return "no training names"

    def to_payload(self) -> dict:
        if self.kind == "exact" and self.names is not None:
            if self._text is None:
                self._text = "\n".join(sorted(self.names))
            return {"kind": "exact", "names": self._text}
        if self.kind == "bloom":
            return {"kind": "bloom", "bits": self.bits, "hashes": self.hashes, "count": self.count}
        return {"kind": "none"}

    @classmethod
    def from_payload(cls, payload: dict | None, legacy_names: str = "", tokenizer=None) -> NameSet:
        """What a checkpoint holds; checkpoints of earlier versions hold the names as one text."""
        if payload is None:
            return cls.exact(legacy_names.split("\n")) if legacy_names else cls()
        if payload["kind"] == "exact":
            return cls.exact(payload["names"].split("\n") if payload["names"] else [])
        if payload["kind"] == "bloom":
            return cls(bits=payload["bits"], hashes=payload["hashes"], count=payload["count"], tokenizer=tokenizer)
        return cls()
