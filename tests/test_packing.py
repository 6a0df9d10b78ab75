"""Packed rows compute what a name a row computes: the same loss and the same gradients."""

import pytest
import torch

from minigpt.config import GPTConfig
from minigpt.files.corpus import IGNORE, TokenizedNames
from minigpt.data import Tokenizer
from minigpt.machine.packing import packed_batch
from minigpt.model import GPT

BLOCK = 16
# names of every length up to the block size and past it (cut to it)
NAMES = ["abcdefghijklmnopqrst"[:n] for n in range(1, 21)] + ["ba", "cab", "dcba", "edcba", "fedcba", "gfedcba"]


def model_and_data(dtype):
    tokenizer = Tokenizer.from_names(NAMES)
    torch.manual_seed(0)
    config = GPTConfig(n_layer=2, n_head=2, n_embd=16, block_size=BLOCK, vocab_size=tokenizer.vocab_size,
                       dropout=0.0, final_norm=True, norm_scale=True)
    return GPT(config).to(dtype), TokenizedNames(NAMES, tokenizer, BLOCK)


def loss_and_grads(model, x, y, positions=None, attend=None):
    model.zero_grad()
    _, loss = model(x, y, positions=positions, attend=attend)
    loss.backward()
    return loss.detach(), {name: p.grad.clone() for name, p in model.named_parameters()}


@pytest.mark.parametrize("dtype, tolerance", [(torch.float64, 1e-9), (torch.float32, 1e-5)])
@pytest.mark.parametrize("batch", [[0, 1, 2, 20, 21], [3, 4, 22, 23, 24, 25, 0], [5, 6, 7, 25, 1], list(range(26))])
def test_a_packed_step_equals_a_padded_one(dtype, tolerance, batch):
    model, data = model_and_data(dtype)
    rows = torch.tensor(batch)
    packed = packed_batch(data, rows, model)
    longest = int(data.lengths[rows].max())
    assert packed.x.size(0) == -(-len(batch) // (BLOCK // longest))  # as many names a row as fit
    padded_loss, padded_grads = loss_and_grads(model, *data.batch(rows))
    packed_loss, packed_grads = loss_and_grads(model, *packed)
    assert abs(float(packed_loss - padded_loss)) <= tolerance
    for name, grad in padded_grads.items():
        assert torch.allclose(packed_grads[name], grad, rtol=0, atol=tolerance), name


def test_a_packed_row_keeps_each_name_to_itself():
    model, data = model_and_data(torch.float64)
    x, y, positions, attend = packed_batch(data, torch.tensor([0, 1, 20]), model)  # "a", "ab", "ba"
    name_length = 3  # one row of five names' places
    assert x.shape == (1, 5 * name_length) and positions.tolist() == [0, 1, 2] * 5
    assert (y[0, 3 * name_length :] == IGNORE).all()  # the two empty places predict nothing
    logits, _ = model(x, positions=positions, attend=attend)
    alone, _ = model(data.batch(torch.tensor([20]))[0])  # "ba" by itself: its logits are the same in the row
    assert torch.allclose(logits[0, 2 * name_length : 3 * name_length], alone[0], atol=1e-12)
