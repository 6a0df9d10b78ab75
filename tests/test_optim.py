"""Muon: the orthogonalization it relies on, and the optimizer pairing with AdamW."""

import pytest
import torch
from conftest import tiny_config

from minigpt.model import GPT
from minigpt.optimizer import Optimizers, make_optimizer, orthogonalize


@pytest.mark.parametrize("shape", [(3, 64, 16), (1, 16, 64), (1, 32, 32)])
def test_orthogonalize_is_close_to_u_v_transposed(shape):
    torch.manual_seed(0)
    m = torch.randn(shape) * torch.logspace(-1, 0.5, shape[-1])  # singular values 6x to 300x apart
    u, _, vh = torch.linalg.svd(m, full_matrices=False)
    result = orthogonalize(m)
    singular = torch.linalg.svdvals(result)
    assert singular.min() > 0.5 and singular.max() < 1.3  # all near 1
    cosine = (result * (u @ vh)).sum((-2, -1)) / (result.norm(dim=(-2, -1)) * (u @ vh).norm(dim=(-2, -1)))
    assert cosine.min() > 0.95  # and it points the way U V^T does


def test_muon_takes_the_hidden_matrices_and_adamw_the_rest():
    config = tiny_config(
        'train.optimizer="muon"', "train.lr=0.002", "train.muon_lr=0.02", "train.embedding_lr_scale=0.1"
    )
    config.model.vocab_size = 27
    model = GPT(config.model)
    optimizer = make_optimizer(model, config.train)
    assert isinstance(optimizer, Optimizers)
    hidden = {id(p) for g in optimizer.named["muon"].param_groups for p in g["params"]}
    names = {n for n, p in model.named_parameters() if id(p) in hidden}
    assert names == {
        f"layers.0.{m}.weight"
        for m in ("attn.attn_wq", "attn.attn_wk", "attn.attn_wv", "attn.attn_wo", "mlp.mlp_fc1", "mlp.mlp_fc2")
    }
    adam = {id(p) for g in optimizer.named["adamw"].param_groups for p in g["params"]}
    assert adam | hidden == {id(p) for p in model.parameters()} and not adam & hidden
    assert [g["lr_scale"] for g in optimizer.param_groups] == [0.1, 1.0, 1.0, 10.0]  # embeddings, ..., muon_lr / lr
    embeddings = {n for n, p in model.named_parameters() if any(p is q for q in optimizer.param_groups[0]["params"])}
    assert embeddings == {"wte.weight", "wpe.weight"}


def test_muon_updates_each_matrix_as_if_alone_with_a_tall_one_stacked_as_its_transpose(monkeypatch):
    """Muon orthogonalizes matrices of one shape together, a tall one beside the wide ones of its transposed
    shape; each still moves by its own orthogonalized direction, a tall one by sqrt(rows / cols) of it."""
    import minigpt.optimizer as optimizer

    torch.manual_seed(0)
    shapes = [(8, 8), (32, 8), (8, 32), (8, 8)]
    params = [torch.nn.Parameter(torch.randn(shape)) for shape in shapes]
    for p in params:
        p.grad = torch.randn_like(p)
    expected = [
        p.detach() - 0.1 * max(1.0, p.size(0) / p.size(1)) ** 0.5 * orthogonalize(p.grad[None] * 1.95)[0]
        for p in params
    ]  # the first step's direction: the gradient plus momentum times the gradient
    stacks = []
    monkeypatch.setattr(optimizer, "orthogonalize", lambda m: stacks.append(m.shape) or orthogonalize(m))
    optimizer.Muon([{"params": params}], lr=0.1, momentum=0.95).step()
    assert sorted(stacks) == [(2, 8, 8), (2, 8, 32)]  # two stacks for four matrices of three shapes
    for p, want in zip(params, expected):
        torch.testing.assert_close(p.detach(), want, atol=1e-5, rtol=1e-4)


def test_muon_lowers_the_loss_on_a_batch():
    config = tiny_config('train.optimizer="muon"')
    config.model.vocab_size = 5
    torch.manual_seed(0)
    model = GPT(config.model)
    optimizer = make_optimizer(model, config.train)
    x, y = torch.randint(0, 5, (8, 6)), torch.randint(0, 5, (8, 6))
    losses = []
    for _ in range(20):
        _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    assert losses[-1] < losses[0] - 0.3
