"""Attention as the tutorials teach it, each form short and on its own; the key/value cache.

    attention(Q, K, V) = softmax(Q K^T / sqrt(d) + M) V    M: 0 to the diagonal, -inf after

    causal_attention       the formula, step by step, returning the weights too (model.py's)
    SingleHeadAttention    one head over the whole embedding: d = n_embd
    AttentionHead          one of several heads: the embedding projected down to head_dim
    MultiHeadAttention     a list of AttentionHeads, concatenated, then an output projection
    IncrementalAttention   decoding: one new query against a cache of earlier keys and values
    LayerKV, KVCache       that cache, as sampling uses it: each LayerKV is a layer's `attend`

The model runs none of the next four (model.py reshapes into heads and calls torch's fused
kernel, or causal_attention in bfloat16 on a CPU); given its weights, each computes the same
numbers. B batch, T positions, C =
n_embd, H heads, hd = C / H per head."""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

# causal_attention is the model's own (model.py), and the first form here
from .model import GPT, CausalSelfAttention, causal_attention  # noqa: F401


class SingleHeadAttention(nn.Module):
    """One head that sees the whole embedding: d = n_embd."""

    def __init__(self, n_embd: int, causal: bool = True):
        super().__init__()
        self.causal = causal
        self.query = nn.Linear(n_embd, n_embd, bias=False)
        self.key = nn.Linear(n_embd, n_embd, bias=False)
        self.value = nn.Linear(n_embd, n_embd, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.query(x), self.key(x), self.value(x)  # each [B, T, C]
        scores = q @ k.transpose(-2, -1) / math.sqrt(k.size(-1))  # [B, T, T]
        if self.causal:
            T = x.size(1)
            future = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
            scores = scores.masked_fill(future, float("-inf"))
        weights = torch.softmax(scores, dim=-1)  # [B, T, T]
        return weights @ v  # [B, T, C]


class AttentionHead(nn.Module):
    """One of several heads: projects the embedding down to head_dim, then attends causally."""

    def __init__(self, n_embd: int, head_dim: int, block_size: int, dropout: float = 0.0):
        super().__init__()
        self.query = nn.Linear(n_embd, head_dim, bias=False)
        self.key = nn.Linear(n_embd, head_dim, bias=False)
        self.value = nn.Linear(n_embd, head_dim, bias=False)
        self.tril: torch.Tensor  # 1 where a position may look: a buffer, moved with the module
        self.register_buffer("tril", torch.ones(block_size, block_size).tril(), persistent=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.query(x), self.key(x), self.value(x)  # each [B, T, hd]
        scores = q @ k.transpose(-2, -1) / math.sqrt(k.size(-1))  # [B, T, T]
        past = self.tril[: x.size(1), : x.size(1)]  # 1 where a position may look
        scores = scores.masked_fill(past == 0, float("-inf"))
        weights = self.dropout(torch.softmax(scores, dim=-1))  # [B, T, T]
        return weights @ v  # [B, T, hd]


class MultiHeadAttention(nn.Module):
    """n_head AttentionHeads side by side, their outputs concatenated and mixed by `proj`."""

    def __init__(self, n_embd: int, n_head: int, block_size: int, dropout: float = 0.0):
        super().__init__()
        head_dim = n_embd // n_head
        self.heads: list[AttentionHead] = nn.ModuleList(  # type: ignore[assignment]  # (as a list)
            AttentionHead(n_embd, head_dim, block_size, dropout) for _ in range(n_head)
        )
        self.proj = nn.Linear(n_embd, n_embd, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.cat([head(x) for head in self.heads], dim=-1)  # [B, T, H * hd] = [B, T, C]
        return self.dropout(self.proj(y))  # [B, T, C]

    @torch.no_grad()
    def load_from(self, fused: CausalSelfAttention) -> MultiHeadAttention:
        """Take the fused module's weights: head h owns rows h*hd:(h+1)*hd of attn_wq, _wk,
        _wv."""
        head_dim = fused.attn_wq.weight.size(0) // len(self.heads)
        for h, head in enumerate(self.heads):
            rows = slice(h * head_dim, (h + 1) * head_dim)
            head.query.weight.copy_(fused.attn_wq.weight[rows])
            head.key.weight.copy_(fused.attn_wk.weight[rows])
            head.value.weight.copy_(fused.attn_wv.weight[rows])
        self.proj.weight.copy_(fused.attn_wo.weight)
        return self


class IncrementalAttention(nn.Module):
    """Decoding one position at a time with a CausalSelfAttention's weights: the new token's
    query meets the keys and values of every position so far, which the cache holds. No mask
    is needed: positions after this one are not in the cache yet."""

    def __init__(self, fused: CausalSelfAttention):
        super().__init__()
        self.fused = fused

    def forward(self, x_t: torch.Tensor, cache: LayerKV) -> torch.Tensor:
        """x_t: [B, 1, C], the newest position only -> [B, 1, C]."""
        f = self.fused
        q = f.split_heads(f.attn_wq(x_t))  # [B, H, 1, hd]
        k_t, v_t = f.split_heads(f.attn_wk(x_t)), f.split_heads(f.attn_wv(x_t))
        k, v = cache.append(k_t, v_t)  # [B, H, t, hd]
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # [B, H, 1, t]
        weights = torch.softmax(scores, dim=-1)  # [B, H, 1, t]
        y = (weights @ v).transpose(1, 2).flatten(2)  # [B, 1, H * hd]
        return f.attn_wo(y)  # [B, 1, C]


class LayerKV:
    """One layer's cached keys and values, filled up to `length` positions; called as the
    layer's `attend`. Stored position-major, [max_len, B, H, hd]: decoding writes one
    position for the whole batch in one block, and reads the cache as a stack of [B, H, hd]
    slabs."""

    def __init__(
        self,
        batch: int,
        n_head: int,
        max_len: int,
        head_dim: int,
        device: torch.device,
        dtype: torch.dtype,
    ) -> None:
        self.k = torch.empty(max_len, batch, n_head, head_dim, device=device, dtype=dtype)
        self.v = torch.empty_like(self.k)  # both read only once written
        self.length = 0

    def append(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Store the new positions' keys and values [B, H, T, hd]; return all so far [B, H,
        t, hd]. A batch of one fills every row: a prompt that every sequence shares is
        computed once."""
        end = self.length + k.size(2)
        self.k[self.length : end] = k.permute(2, 0, 1, 3)
        self.v[self.length : end] = v.permute(2, 0, 1, 3)
        self.length = end
        return self.k[:end].permute(1, 2, 0, 3), self.v[:end].permute(1, 2, 0, 3)

    def __call__(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """A layer's attention step over the cache: into an empty cache, a prompt's
        positions each read themselves and the ones before them; then one new position at a
        time reads all."""
        if not self.length:
            return F.scaled_dot_product_attention(q, *self.append(k, v), is_causal=True)
        if q.size(2) != 1:
            raise ValueError("several new tokens can only be decoded into an empty cache")
        self.append(k, v)
        keys, values = self.k[: self.length], self.v[: self.length]  # [t, B, H, hd]
        # IncrementalAttention's formula as elementwise products over the position-major cache:
        # faster at these sizes than batches of tiny matrix products (benchmarks/sampling.py)
        scores = (keys * q[:, :, 0]).sum(-1) / math.sqrt(q.size(-1))  # [t, B, H]
        weights = torch.softmax(scores, dim=0)  # over the positions
        return (weights[..., None] * values).sum(0)[:, :, None]  # [B, H, 1, hd]

    def keep(self, rows: torch.Tensor) -> None:
        """Keep only these batch rows (their indices): the sequences still being decoded."""
        self.k, self.v = self.k[:, rows], self.v[:, rows]


class KVCache:
    """The keys and values of every layer for the positions decoded so far.

    cache = KVCache(model, batch)
    logits, _ = model(prompt, attend=cache.layers)        # then one token at a time:
    logits, _ = model(token, positions=cache.next_positions(1), attend=cache.layers)
    """

    def __init__(self, model: GPT, batch: int):
        c, w = model.config, model.lm_head.weight
        self.layers = [
            LayerKV(batch, c.n_head, c.block_size, c.head_dim, w.device, w.dtype)
            for _ in range(c.n_layer)
        ]

    def next_positions(self, n: int) -> torch.Tensor:
        """The positions of the next n tokens: after the cached ones."""
        cached = self.layers[0]
        return torch.arange(cached.length, cached.length + n, device=cached.k.device)

    def keep(self, rows: torch.Tensor) -> None:
        for layer in self.layers:  # as LayerKV.keep
            layer.keep(rows)
