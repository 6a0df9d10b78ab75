"""The check of generated names against the training names: exact for small corpora, a Bloom filter for large."""

import random

import torch
from conftest import tiny_config
from typer.testing import CliRunner

from minigpt.cli.main import app
from minigpt.data import TokenizedNames, Tokenizer, split_names
from minigpt.files import membership
from minigpt.files.membership import (
    FALSE_POSITIVE_RATE,
    NameSet,
    as_signed,
    fingerprint,
    fingerprints,
)
from minigpt.files.names_file import read_names
from minigpt.formats.checkpoint import load_checkpoint
from minigpt.runs.run import train


def random_names(rng, count, lengths=(1, 12), letters="abcdefghijklmnop"):
    return ["".join(rng.choice(letters) for _ in range(rng.randint(*lengths))) for _ in range(count)]


def corpus_prints(names):
    tokenizer = Tokenizer.from_names(names)
    data = TokenizedNames(names, tokenizer, block_size=8)
    return tokenizer, fingerprints(data.flat, data.starts + 1, data.characters)


def test_fingerprints_of_a_whole_corpus_equal_one_name_at_a_time():
    names = random_names(random.Random(0), 3000, lengths=(1, 45))  # past the block and past 32: not cut
    tokenizer, prints = corpus_prints(names)
    assert prints.tolist() == [as_signed(fingerprint(tokenizer.encode(name))) for name in names]


def test_a_bloom_filter_has_no_false_negatives_and_the_stated_false_positives():
    rng = random.Random(1)
    members = set(random_names(rng, 10_000))
    tokenizer, prints = corpus_prints(sorted(members))
    check = NameSet.bloom(torch.unique(prints), tokenizer)
    assert check.kind == "bloom" and check.count == len(members)
    assert abs(check.false_positive_rate - FALSE_POSITIVE_RATE) < 0.002
    assert all(name in check for name in members)  # no false negatives
    strangers = {name for name in random_names(rng, 20_000, lengths=(5, 12)) if name not in members}
    rate = sum(name in check for name in strangers) / len(strangers)
    assert rate < 1.5 * FALSE_POSITIVE_RATE, rate  # about 1% expected: 1.5% is about seven standard deviations away
    assert "zzzz" not in check  # a character no training name has


def test_checkpoints_that_carry_names_as_text_still_load(trained_run, tmp_path):
    run_dir, _ = trained_run
    raw = torch.load(run_dir / "last.pt", weights_only=True)
    names = raw.pop("membership")["names"]
    raw["train_names"] = names  # as checkpoints of earlier versions hold them
    torch.save(raw, tmp_path / "old.pt")
    old = load_checkpoint(tmp_path / "old.pt")
    assert old.membership.kind == "exact" and names.split("\n")[5] in old.membership
    assert old.train_names == sorted(names.split("\n"))


def test_a_large_corpus_trains_with_a_bloom_filter_and_marks_names(names_file, tmp_path, monkeypatch):
    monkeypatch.setattr(membership, "EXACT_CHARACTERS", 100)  # 300 names are "large" here
    config = tiny_config("train.steps=10")
    train(config, names_file, out_dir=tmp_path / "run", quiet=True)
    ckpt = load_checkpoint(tmp_path / "run")
    assert ckpt.membership.kind == "bloom" and ckpt.train_names == []
    assert torch.load(tmp_path / "run" / "best.pt", weights_only=True)["membership"]["bits"].dtype == torch.uint8
    t = config.train
    train_names, _ = split_names(read_names(names_file), t.val_fraction, t.val_max, t.seed)  # as the run split them
    assert all(name in ckpt.membership for name in train_names)
    result = CliRunner().invoke(app, ["sample", str(tmp_path / "run"), "-n", "20", "--seed", "1", "--json"])
    assert result.exit_code == 0 and len(result.stdout) > 0
