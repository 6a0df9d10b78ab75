"""Attention as the tutorials teach it: each form short, on its own, and equal to the model's.

    attention(Q, K, V) = softmax(Q K^T / sqrt(d) + M) V        (M: 0 on and before the diagonal, -inf after)

    SingleHeadAttention    one head over the whole embedding: d = n_embd
    AttentionHead          one of several heads: the embedding projected down to head_dim
    MultiHeadAttention     a list of AttentionHeads, concatenated, then an output projection
    IncrementalAttention   decoding: one new query against a cache of earlier keys and values

The model does not run these: it runs `attention.CausalSelfAttention`, which makes its heads
by reshaping and calls torch's fused kernel. `load_from` and the tests show that, given the
same weights, every form here computes the same numbers as it does.

Shapes: B batch, T positions, C = n_embd, H heads, hd = C / H per head.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn

from minigpt.attention import CausalSelfAttention, LayerKV


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
            seq_len = x.size(1)
            future = torch.ones(seq_len, seq_len, dtype=torch.bool, device=x.device).triu(1)
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
        self.register_buffer("tril", torch.tril(torch.ones(block_size, block_size)), persistent=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        seq_len = x.size(1)
        q, k, v = self.query(x), self.key(x), self.value(x)  # each [B, T, hd]
        scores = q @ k.transpose(-2, -1) / math.sqrt(k.size(-1))  # [B, T, T]
        scores = scores.masked_fill(self.tril[:seq_len, :seq_len] == 0, float("-inf"))
        weights = self.dropout(torch.softmax(scores, dim=-1))  # [B, T, T]
        return weights @ v  # [B, T, hd]


class MultiHeadAttention(nn.Module):
    """n_head AttentionHeads side by side, their outputs concatenated and mixed by `proj`."""

    def __init__(self, n_embd: int, n_head: int, block_size: int, dropout: float = 0.0):
        super().__init__()
        head_dim = n_embd // n_head
        self.heads = nn.ModuleList(AttentionHead(n_embd, head_dim, block_size, dropout) for _ in range(n_head))
        self.proj = nn.Linear(n_embd, n_embd, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.cat([head(x) for head in self.heads], dim=-1)  # [B, T, H * hd] = [B, T, C]
        return self.dropout(self.proj(y))  # [B, T, C]

    @torch.no_grad()
    def load_from(self, fused: CausalSelfAttention) -> MultiHeadAttention:
        """Take the fused module's weights: head h owns rows h*hd:(h+1)*hd of attn_wq, attn_wk, attn_wv."""
        head_dim = fused.attn_wq.weight.size(0) // len(self.heads)
        for h, head in enumerate(self.heads):
            rows = slice(h * head_dim, (h + 1) * head_dim)
            head.query.weight.copy_(fused.attn_wq.weight[rows])
            head.key.weight.copy_(fused.attn_wk.weight[rows])
            head.value.weight.copy_(fused.attn_wv.weight[rows])
        self.proj.weight.copy_(fused.attn_wo.weight)
        return self


class IncrementalAttention(nn.Module):
    """Decoding one position at a time with the weights of a CausalSelfAttention.

    The new token's query meets the keys and values of every position so far, which the
    cache holds. No mask is needed: positions after this one are not in the cache yet.
    """

    def __init__(self, fused: CausalSelfAttention):
        super().__init__()
        self.fused = fused

    def forward(self, x_t: torch.Tensor, cache: LayerKV) -> torch.Tensor:
        """x_t: [B, 1, C], the newest position only -> [B, 1, C]."""
        f = self.fused
        q = f.split_heads(f.attn_wq(x_t))  # [B, H, 1, hd]
        k, v = cache.append(f.split_heads(f.attn_wk(x_t)), f.split_heads(f.attn_wv(x_t)))  # [B, H, t, hd]
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # [B, H, 1, t]
        weights = torch.softmax(scores, dim=-1)  # [B, H, 1, t]
        y = (weights @ v).transpose(1, 2).flatten(2)  # [B, 1, H * hd]
        return f.attn_wo(y)  # [B, 1, C]
