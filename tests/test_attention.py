import math

import torch
import torch.nn.functional as F

from minigpt.attention import AttentionHead, IncrementalAttention, LayerKV, MultiHeadAttention, SingleHeadAttention
from minigpt.model import CausalSelfAttention
from minigpt.model import causal_attention as attention

B, T, C, H = 2, 7, 16, 4


def fused(n_head=H, attn_dropout=0.0):
    torch.manual_seed(0)
    return CausalSelfAttention(C, n_head, attn_dropout).eval()


def inputs():
    torch.manual_seed(1)
    return torch.randn(B, T, C, requires_grad=True)


def grads(module, x):
    x.grad = None
    module.zero_grad()
    (module(x) ** 2).sum().backward()
    return x.grad.clone()


def test_list_of_heads_matches_fused_in_output_and_gradients():
    attn = fused()
    heads = MultiHeadAttention(C, H, block_size=T).eval().load_from(attn)
    x = inputs()
    torch.testing.assert_close(heads(x), attn(x), atol=1e-5, rtol=0)
    torch.testing.assert_close(grads(heads, x), grads(attn, x), atol=1e-5, rtol=0)
    # the weight gradients agree too, head h's rows of attn_wq being head h's query
    hd = C // H
    for h, head in enumerate(heads.heads):
        torch.testing.assert_close(
            head.query.weight.grad, attn.attn_wq.weight.grad[h * hd : (h + 1) * hd], atol=1e-5, rtol=0
        )
    torch.testing.assert_close(heads.proj.weight.grad, attn.attn_wo.weight.grad, atol=1e-5, rtol=0)


def test_single_head_matches_fused_with_one_head():
    attn = fused(n_head=1)
    with torch.no_grad():
        attn.attn_wo.weight.copy_(torch.eye(C))  # the single head has no output projection
    single = SingleHeadAttention(C)
    single.load_state_dict(
        {"query.weight": attn.attn_wq.weight, "key.weight": attn.attn_wk.weight, "value.weight": attn.attn_wv.weight}
    )
    x = inputs()
    torch.testing.assert_close(single(x), attn(x), atol=1e-5, rtol=0)
    torch.testing.assert_close(grads(single, x), grads(attn, x), atol=1e-5, rtol=0)


def test_one_head_is_causal():
    head = AttentionHead(C, 4, block_size=T)
    x = inputs().detach()
    changed = x.clone()
    changed[:, 4:] += 1.0
    torch.testing.assert_close(head(x)[:, :4], head(changed)[:, :4])
    noncausal = SingleHeadAttention(C, causal=False)
    assert not torch.allclose(noncausal(x)[:, :4], noncausal(changed)[:, :4])


def test_incremental_decoding_matches_fused():
    attn = fused()
    x = inputs().detach()
    step = IncrementalAttention(attn)
    cache = LayerKV(B, H, T, C // H, x.device, x.dtype)
    decoded = torch.cat([step(x[:, t : t + 1], cache) for t in range(T)], dim=1)
    torch.testing.assert_close(decoded, attn(x), atol=1e-5, rtol=0)
    assert cache.length == T


def test_an_attend_function_that_records_the_weights_matches_the_fused_kernel():
    attn = fused()
    x = inputs().detach()
    maps = []

    def record(q, k, v):
        y, weights = attention(q, k, v)
        maps.append(weights)
        return y

    torch.testing.assert_close(attn(x, attend=record), attn(x), atol=1e-5, rtol=0)
    weights = maps[0]
    assert weights.shape == (B, H, T, T)
    torch.testing.assert_close(weights.sum(-1), torch.ones(B, H, T))
    assert torch.all(weights.triu(1) == 0)


def test_worked_example():
    keys = torch.eye(4)[:3]  # the first three basis vectors of R^4
    values = torch.tensor([[10.0, 0, 0, 0], [0, 20.0, 0, 0], [0, 0, 30.0, 0]])
    query = torch.tensor([[0.0, 5, 0, 0]])
    out, weights = attention(query, keys, values)  # one new query reads three cached positions
    assert [round(w, 4) for w in weights[0].tolist()] == [0.0705, 0.8590, 0.0705]
    assert [round(o, 3) for o in out[0].tolist()] == [0.705, 17.180, 2.115, 0.0]
    # by hand: scores [0, 5/2, 0], so weights are e^0, e^2.5, e^0 over their sum
    assert weights[0, 1].item() == torch.tensor(math.exp(2.5) / (math.exp(2.5) + 2)).item()


def test_gradcheck_float64():
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, 5, 4, dtype=torch.float64, requires_grad=True) for _ in range(3))
    assert torch.autograd.gradcheck(lambda q, k, v: attention(q, k, v)[0], (q, k, v))
    attn = CausalSelfAttention(8, 2).double()
    x = torch.randn(2, 5, 8, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(attn, (x,))


def test_written_out_attention_matches_torchs_fused_kernel():
    # the CPU runs `attention`; a GPU runs torch's kernel instead: the two must agree
    torch.manual_seed(0)
    q, k, v = (torch.randn(B, H, T, C // H, requires_grad=True) for _ in range(3))
    ours, weights = attention(q, k, v)
    theirs = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(ours, theirs, atol=1e-6, rtol=0)
    torch.testing.assert_close(weights.sum(-1), torch.ones(B, H, T))
    grad = torch.randn_like(ours)
    for a, b in zip(torch.autograd.grad(ours, (q, k, v), grad), torch.autograd.grad(theirs, (q, k, v), grad)):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=0)


def test_attention_dropout_only_in_training():
    attn = fused(attn_dropout=0.5)
    x = inputs().detach()
    torch.testing.assert_close(attn(x), attn(x))  # eval: deterministic
    attn.train()
    assert not torch.allclose(attn(x), attn(x))
