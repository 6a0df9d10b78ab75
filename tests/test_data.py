import random

import pytest
import torch

from minigpt.data import IGNORE, BatchOrder, TokenizedNames, Tokenizer, split_names
from minigpt.errors import UsageError
from minigpt.files.names_file import read_names


def write(tmp_path, content: bytes):
    path = tmp_path / "names.txt"
    path.write_bytes(content)
    return path


def test_read_names_strips_whitespace_and_skips_blank_lines(tmp_path):
    path = write(tmp_path, b"  emma \n\n\t\nolivia\n   \nava")
    assert read_names(path) == ["emma", "olivia", "ava"]


def test_read_names_handles_bom_and_crlf(tmp_path):
    path = write(tmp_path, "\ufeffzoë\r\nnoël\r\n".encode("utf-8"))
    assert read_names(path) == ["zoë", "noël"]


@pytest.mark.parametrize(
    "content, message",
    [(b"", "no names"), (b"\n  \n\n", "no names"), (b"emma\n\xff\xfe\n", "line 2 is not valid UTF-8")],
)
def test_read_names_rejects_unusable_files(tmp_path, content, message):
    with pytest.raises(UsageError, match=message):
        read_names(write(tmp_path, content))


def test_read_names_rejects_missing_file_and_directory(tmp_path):
    with pytest.raises(UsageError, match="not found"):
        read_names(tmp_path / "nope.txt")
    with pytest.raises(UsageError, match="is a directory"):
        read_names(tmp_path)


def test_tokenizer_follows_microgpt_scheme_and_round_trips():
    tok = Tokenizer.from_names(["emma", "zoë", "jean-luc", "o'neil"])
    assert tok.chars == sorted(set("emmazoëjean-luco'neil"))
    assert tok.bos == len(tok.chars) and tok.vocab_size == len(tok.chars) + 1
    for name in ["emma", "zoë", "jean-luc", "o'neil"]:
        assert tok.decode(tok.encode(name)) == name
    assert tok.decode([tok.bos] + tok.encode("emma") + [tok.bos]) == "emma"


def test_tokenizer_names_unseen_characters():
    tok = Tokenizer.from_names(["abc"])
    with pytest.raises(UsageError, match="'x', 'é'"):
        tok.encode("aéx")


def test_tokenized_names_predict_every_character_and_the_end():
    tok = Tokenizer.from_names(["ab", "abcd"])
    data = TokenizedNames(["ab", "abcd"], tok, block_size=4)
    a, b, c, d, bos = 0, 1, 2, 3, 4
    x, y = data.padded(torch.arange(2), 4)
    assert x[0].tolist() == [bos, a, b, bos] and y[0].tolist() == [a, b, bos, IGNORE]
    # "abcd" needs 5 positions; with block_size 4 the end is cut off, and that is counted
    assert x[1].tolist() == [bos, a, b, c] and y[1].tolist() == [a, b, c, d]
    assert data.lengths.tolist() == [3, 4] and data.truncated == 1


def test_batch_is_cut_to_its_longest_name():
    names = ["a", "bb", "cccccc"]
    data = TokenizedNames(names, Tokenizer.from_names(names), block_size=16)
    x, y = data.batch(torch.tensor([0, 1]))
    assert x.shape == (2, 3) and y.shape == (2, 3)


def test_batch_order_visits_every_name_once_per_pass_and_is_reproducible():
    order = BatchOrder(n=10, batch_size=4, seed=3)
    stream = torch.cat([order.indices(step) for step in range(5)]).tolist()  # 20 = two passes
    assert sorted(stream[:10]) == list(range(10)) and sorted(stream[10:]) == list(range(10))
    assert stream[:10] != stream[10:]  # a new order each pass
    again = BatchOrder(n=10, batch_size=4, seed=3)
    assert again.indices(3).tolist() == order.indices(3).tolist()  # any step, without replaying
    once = BatchOrder(n=10, batch_size=5, seed=3, reshuffle=False)
    assert once.indices(0).tolist() + once.indices(1).tolist() == once.indices(2).tolist() + once.indices(3).tolist()


def test_split_is_seeded_and_disjoint():
    names = [f"n{i}" for i in range(100)]
    train, val = split_names(names, 0.1, 1000, seed=1)
    assert len(val) == 10 and len(train) == 90 and not set(train) & set(val)
    assert split_names(names, 0.1, 1000, seed=1) == (train, val)
    assert len(split_names(names, 0.5, 7, seed=1)[1]) == 7


def test_length_windows_keep_every_name_and_cut_padding():
    lengths = torch.tensor([random.Random(i).randint(1, 15) for i in range(400)])
    plain = BatchOrder(n=400, batch_size=20, seed=5)
    grouped = BatchOrder(n=400, batch_size=20, seed=5, lengths=lengths, window=10)
    batches = [grouped.indices(step) for step in range(20)]  # two windows = one pass
    assert sorted(torch.cat(batches).tolist()) == list(range(400))
    width = lambda order: sum(int(lengths[order.indices(s)].max()) for s in range(20))
    assert width(grouped) < 0.75 * width(plain)
    fresh = BatchOrder(n=400, batch_size=20, seed=5, lengths=lengths, window=10)
    assert fresh.indices(13).tolist() == batches[13].tolist()  # still a pure function of the step


@pytest.mark.parametrize("names", [["zoë", "😀ab", "ñ", "a" * 20], ["a\nb", "ab"]])
def test_tokenized_names_agree_with_encoding_each_name(names):
    tok = Tokenizer.from_names(names)  # the second case holds "\n", the usual separator
    data = TokenizedNames(names, tok, block_size=8)
    for i, name in enumerate(names):
        row = [tok.bos] + tok.encode(name) + [tok.bos]
        n = min(len(row) - 1, 8)
        assert data.lengths[i] == n and data.characters[i] == len(name)
        x, y = data.padded(torch.tensor([i]), 8)
        assert x[0, :n].tolist() == row[:n] and y[0, :n].tolist() == row[1 : n + 1]
    assert data.truncated == 1 if len(names) == 4 else data.truncated == 0


def test_a_file_too_large_for_memory_is_refused_before_it_is_read(tmp_path, monkeypatch):
    import minigpt.files.names_file as data_module

    path = write(tmp_path, b"emma\n" * 1000)
    monkeypatch.setattr(data_module, "available_memory", lambda: 50_000)
    with pytest.raises(UsageError, match=r"needs about 0 GB of memory, and 0.0 GB is available"):
        read_names(path)


def test_a_file_of_very_short_names_is_measured_by_its_names_not_its_bytes(tmp_path, monkeypatch):
    """A 50 MB file of one 4-letter name repeated peaked at 1.83 GB where the bound by bytes (25 a byte) said
    1.25: short names cost memory by the name. Counted before the text is split, and refused in one line."""
    import minigpt.files.names_file as data_module

    path = write(tmp_path, b"a\n" * 10_000)  # 20 kB: 0.5 MB by the bytes, 1.3 MB by the names
    monkeypatch.setattr(data_module, "available_memory", lambda: 1_000_000)
    with pytest.raises(
        UsageError,
        match=r"holds 10,001 lines: training on that many names needs about 1.3 MB of memory \(130 bytes a name\), "
        r"and 1.0 MB is available",
    ):
        read_names(path)
    monkeypatch.setattr(data_module, "available_memory", lambda: 2_000_000)
    assert len(read_names(path)) == 10_000


def test_a_line_of_a_million_characters_is_not_a_name(tmp_path):
    path = write(tmp_path, b"emma\n" + b"a" * 1_000_000 + b"\nava\n")
    with pytest.raises(UsageError, match="a line holds 1,000,000 characters; a name has at most 10,000"):
        read_names(path)


def test_the_split_of_a_very_large_file_is_seeded_and_disjoint(monkeypatch):
    from minigpt import data

    monkeypatch.setattr(data, "PYTHON_SHUFFLE_UP_TO", 100)  # the fast path, on a small list
    names = [f"n{i}" for i in range(1000)]
    train, val = split_names(names, 0.1, 50, seed=3)
    assert len(val) == 50 and len(train) == 950 and not set(train) & set(val)
    assert (train, val) == split_names(names, 0.1, 50, seed=3)


def test_names_are_split_at_line_ends_only(tmp_path):
    """A line separator, a paragraph separator, NEL or a form feed inside a name is one of its characters:
    only \\n, \\r\\n and a lone \\r end a line (a 4-line file is 4 names, not 7)."""
    from minigpt.files.names_file import read_names

    path = tmp_path / "names.txt"
    path.write_bytes("gal\u2028la\nmar\u2029ia\r\nan\x85na\rjo\x0cse\n".encode("utf-8"))
    assert read_names(path) == ["gal\u2028la", "mar\u2029ia", "an\x85na", "jo\x0cse"]


def test_the_cores_plain_ids_are_the_fast_ids_the_corpus_hands_it():
    """data.py's token_ids, a list a name as the lesson reads, and files/corpus.py's, made without one for
    millions of names, give the same tensor, the boundary token between names and at both ends."""
    from minigpt.data import token_ids
    from minigpt.files import corpus

    names = ["emma", "zoë", "a", "jean-luc", "o'neil", "x" * 40]
    tokenizer = Tokenizer.from_names(names)
    plain = token_ids(names, tokenizer)
    assert torch.equal(plain, corpus.token_ids(names, tokenizer, chunk=2)) and plain.dtype == torch.int16
    assert plain[0] == plain[-1] == tokenizer.bos and int((plain == tokenizer.bos).sum()) == len(names) + 1
