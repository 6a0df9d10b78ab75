"""Muon: the orthogonalization it relies on, and the optimizer pairing with AdamW."""

import subprocess
import sys
from pathlib import Path

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
    config = tiny_config("train.optimizer=\"muon\"", "train.lr=0.002", "train.muon_lr=0.02",
                         "train.embedding_lr_scale=0.1")
    config.model.vocab_size = 27
    model = GPT(config.model)
    optimizer = make_optimizer(model, config.train)
    assert isinstance(optimizer, Optimizers)
    hidden = {id(p) for g in optimizer.named["muon"].param_groups for p in g["params"]}
    names = {n for n, p in model.named_parameters() if id(p) in hidden}
    assert names == {f"layers.0.{m}.weight" for m in ("attn.attn_wq", "attn.attn_wk", "attn.attn_wv", "attn.attn_wo",
                                                      "mlp.mlp_fc1", "mlp.mlp_fc2")}
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
    expected = [p.detach() - 0.1 * max(1.0, p.size(0) / p.size(1)) ** 0.5 * orthogonalize(p.grad[None] * 1.95)[0]
                for p in params]  # the first step's direction: the gradient plus momentum times the gradient
    stacks = []
    monkeypatch.setattr(optimizer, "orthogonalize", lambda m: stacks.append(m.shape) or orthogonalize(m))
    optimizer.Muon([{"params": params}], lr=0.1, momentum=0.95).step()
    assert sorted(stacks) == [(2, 8, 8), (2, 8, 32)]  # two stacks for four matrices of three shapes
    for p, want in zip(params, expected):
        torch.testing.assert_close(p.detach(), want, atol=1e-5, rtol=1e-4)


def test_muon_lowers_the_loss_on_a_batch():
    config = tiny_config("train.optimizer=\"muon\"")
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


@pytest.mark.parametrize("kind", ["adamw", "adam"])
def test_fused_adamw_is_torchs_number_for_number_and_their_states_load_in_each_other(kind):
    """minigpt's AdamW runs the kernel torch.optim's fused AdamW runs: the same weights after every step, the same
    state_dict, and a state saved by either loads in the other (checkpoints from before it still resume)."""
    import copy

    from minigpt.machine.fast_optimizer import FusedAdam, FusedAdamW

    torch.manual_seed(0)
    ours = [torch.nn.Parameter(torch.randn(shape)) for shape in ((5, 3), (4,), (2, 2))]
    theirs = [torch.nn.Parameter(p.detach().clone()) for p in ours]
    groups = lambda ps: [dict(params=ps[:2], weight_decay=0.1, lr_scale=0.5), dict(params=ps[2:], weight_decay=0.0)]  # noqa: E731
    torch_kind = torch.optim.AdamW if kind == "adamw" else torch.optim.Adam
    fused = FusedAdamW if kind == "adamw" else FusedAdam
    mine = fused(groups(ours), 0.01, (0.9, 0.99), 1e-8)
    torchs = torch_kind(groups(theirs), lr=0.01, betas=(0.9, 0.99), eps=1e-8, fused=True)
    for step in range(4):
        for p, q in zip(ours, theirs):
            p.grad = torch.randn_like(p)
            q.grad = p.grad.clone()
        for optimizer in (mine, torchs):
            optimizer.param_groups[0]["lr"] = 0.002 * (step + 1)
            optimizer.step()
        assert all(torch.equal(p, q) for p, q in zip(ours, theirs))
    saved, torch_saved = mine.state_dict(), torchs.state_dict()
    assert saved["param_groups"] == torch_saved["param_groups"]
    assert {i: sorted(s) for i, s in saved["state"].items()} == {i: sorted(s) for i, s in torch_saved["state"].items()}
    again = fused(groups(ours), 0.01, (0.9, 0.99), 1e-8)
    again.load_state_dict(copy.deepcopy(torch_saved))
    torchs.load_state_dict(copy.deepcopy(saved))
    for p, q in zip(ours, theirs):
        p.grad = torch.ones_like(p)
        q.grad = torch.ones_like(q)
    again.step(), torchs.step()
    assert all(torch.equal(p, q) for p, q in zip(ours, theirs))


def test_training_imports_no_torch_compiler():
    """torch.optim's first use imports torch._dynamo, seconds of every training process: minigpt's optimizers build,
    step, save and load their state without it."""
    code = ("import sys\n"
            "from conftest import tiny_config\n"
            "from minigpt.model import GPT\n"
            "from minigpt.machine.fast_optimizer import fast_optimizer as make_optimizer\n"
            "for name in ('muon', 'adamw', 'adam'):\n"
            "    config = tiny_config(f'train.optimizer=\"{name}\"')\n"
            "    config.model.vocab_size = 5\n"
            "    model = GPT(config.model)\n"
            "    optimizer = make_optimizer(model, config.train)\n"
            "    model(*[__import__('torch').randint(0, 5, (2, 4))] * 2)[1].backward()\n"
            "    optimizer.step(); optimizer.zero_grad()\n"
            "    make_optimizer(model, config.train).state_dict()\n"
            "print('torch._dynamo' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).parent)
    assert done.returncode == 0 and done.stdout.strip() == "False", done.stdout + done.stderr


@pytest.mark.parametrize("name", ["muon", "adamw", "adam"])
def test_the_fast_build_is_the_lessons_optimizer_number_for_number(name):
    """A run builds its optimizers without torch.optim (machine/fast_optimizer.py); optimizer.py builds them
    on torch.optim: the same weights after every step, and the state of either loads in the other."""
    from minigpt.machine.fast_optimizer import fast_optimizer

    config = tiny_config(f'train.optimizer="{name}"')
    config.model.vocab_size = 5
    torch.manual_seed(0)
    lesson_model = GPT(config.model)
    fast_model = GPT(config.model)
    fast_model.load_state_dict(lesson_model.state_dict())
    lesson, fast = make_optimizer(lesson_model, config.train), fast_optimizer(fast_model, config.train)
    x, y = torch.randint(0, 5, (8, 6)), torch.randint(0, 5, (8, 6))
    for _ in range(3):
        for model, optimizer in ((lesson_model, lesson), (fast_model, fast)):
            model(x, y)[1].backward()
            optimizer.step()
            optimizer.zero_grad()
        assert all(torch.equal(p, q) for p, q in zip(lesson_model.parameters(), fast_model.parameters()))
    load = (lambda o, s: [o.named[k].load_state_dict(s[k]) for k in s]) if name == "muon" else \
        (lambda o, s: o.load_state_dict(s))
    load(make_optimizer(lesson_model, config.train), fast.state_dict())
    load(fast_optimizer(fast_model, config.train), lesson.state_dict())
