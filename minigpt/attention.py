"""Attention as the model runs it: multi-head, causal, over an optional key/value cache.

Scaled dot-product attention of queries Q, keys K and values V with head size d:

    attention(Q, K, V) = softmax(Q K^T / sqrt(d) + M) V

M is the causal mask: 0 where a position may look (itself and everything before it),
-inf where it may not (everything after it), so no position sees the future.

    attention()            the formula, step by step, returning the weights too
    CausalSelfAttention    the model's layer: heads by reshaping, torch's fused kernel
    LayerKV, KVCache       keys and values kept while decoding one position at a time

The forms tutorials teach (one head, a list of heads, one-token decoding) are in
textbook_attention.py, each on its own; the tests hold them equal to this one.

Shapes: B batch, T positions, C = n_embd, H heads, hd = C / H per head.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = True, dropout: float = 0.0):
    """The formula above, step by step. q: [..., Tq, d]; k, v: [..., Tk, d].

    Returns the output [..., Tq, d] and the weights [..., Tq, Tk] (before any dropout, which
    zeroes weights at random while training). When Tq < Tk the queries are the last Tq
    positions (new tokens reading a cache of earlier ones).
    """
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # [..., Tq, Tk]
    if causal:
        t_q, t_k = scores.shape[-2:]
        allowed = torch.ones(t_q, t_k, dtype=torch.bool, device=q.device).tril(t_k - t_q)
        scores = scores.masked_fill(~allowed, float("-inf"))
    weights = torch.softmax(scores, dim=-1)  # [..., Tq, Tk], each row sums to 1
    mixed = F.dropout(weights, dropout) if dropout else weights
    return mixed @ v, weights  # [..., Tq, d]


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention as the model runs it.

    Heads are made by reshaping one projection of size n_embd into n_head slices of
    head_dim, and torch's fused scaled_dot_product_attention does the math above.
    """

    def __init__(self, n_embd: int, n_head: int, attn_dropout: float = 0.0):
        super().__init__()
        self.n_head = n_head
        self.attn_dropout = attn_dropout  # on the weights; on a CPU it costs torch's fused kernel
        self.attn_wq = nn.Linear(n_embd, n_embd, bias=False)
        self.attn_wk = nn.Linear(n_embd, n_embd, bias=False)
        self.attn_wv = nn.Linear(n_embd, n_embd, bias=False)
        self.attn_wo = nn.Linear(n_embd, n_embd, bias=False)

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq_len, n_embd = x.shape
        return x.view(batch, seq_len, self.n_head, n_embd // self.n_head).transpose(1, 2)

    def forward(self, x: torch.Tensor, kv_cache: LayerKV | None = None, weights_out: list | None = None):
        """x: [B, T, n_embd] -> [B, T, n_embd].

        With a kv_cache that already holds positions, x is one new position that reads them all;
        an empty cache is filled with x's keys and values. With a weights_out list, the attention
        weights [B, n_head, T, T] are appended to it.
        """
        batch, seq_len, n_embd = x.shape
        # q = x Wq^T, k = x Wk^T, v = x Wv^T, as one matrix multiply (faster than three small ones)
        qkv = F.linear(x, torch.cat([self.attn_wq.weight, self.attn_wk.weight, self.attn_wv.weight]))
        q, k, v = map(self.split_heads, qkv.split(n_embd, dim=-1))  # each [B, H, T, hd]
        if kv_cache is not None and kv_cache.length:
            y = kv_cache.decode(q, k, v, weights_out)  # one new position reading the cached ones
        else:
            if kv_cache is not None:
                kv_cache.append(k, v)  # a prompt fills the empty cache, and attends only to itself
            y = self.attend(q, k, v, weights_out)
        y = y.transpose(1, 2).reshape(batch, seq_len, n_embd)  # heads side by side again
        return self.attn_wo(y)

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, weights_out: list | None) -> torch.Tensor:
        """Causal attention over positions that all arrive at once: [B, H, T, hd] -> [B, H, T, hd]."""
        dropout = self.attn_dropout if self.training else 0.0
        # CPU speed-up: torch's fused kernel is the fastest way but in bfloat16 on a CPU, where
        # the formula written out is faster (benchmarks/attention.py measures both)
        written_out = q.dtype == torch.bfloat16 and q.device.type == "cpu"
        if weights_out is None and not written_out:
            return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout, is_causal=True)
        y, weights = attention(q, k, v, dropout=dropout)
        if weights_out is not None:
            weights_out.append(weights)
        return y


class LayerKV:
    """One layer's cached keys and values, filled up to `length` positions.

    Stored position-major, [max_len, batch, n_head, head_dim]: decoding writes one position
    for the whole batch in one contiguous block, and reads every cached position as a stack
    of [batch, n_head, head_dim] slabs (`keys()`/`values()` give the usual [B, H, t, hd] view).
    """

    def __init__(self, batch: int, n_head: int, max_len: int, head_dim: int, device, dtype):
        self.k = torch.empty(max_len, batch, n_head, head_dim, device=device, dtype=dtype)  # read only once written
        self.v = torch.empty_like(self.k)
        self.length = 0

    def keys(self) -> torch.Tensor:
        return self.k[: self.length].permute(1, 2, 0, 3)  # [B, H, t, hd]

    def values(self) -> torch.Tensor:
        return self.v[: self.length].permute(1, 2, 0, 3)

    def append(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Store the new positions' keys and values [B, H, T, hd]; return all of them so far.

        A batch of one fills every row: a prompt that every sequence shares is computed once.
        """
        end = self.length + k.size(2)
        self.k[self.length : end] = k.permute(2, 0, 1, 3)
        self.v[self.length : end] = v.permute(2, 0, 1, 3)
        self.length = end
        return self.keys(), self.values()

    def decode(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, weights_out: list | None = None):
        """Attention for one new position: q, k, v [B, H, 1, hd] -> [B, H, 1, hd].

        textbook_attention.IncrementalAttention's math. A speed-up: written as elementwise
        products over the position-major cache, which at these sizes is faster than batches
        of tiny [1, hd] x [hd, t] matrix products (benchmarks/sampling.py).
        """
        if q.size(2) != 1:
            raise ValueError("several new tokens can only be decoded into an empty cache")
        self.append(k, v)
        keys, values = self.k[: self.length], self.v[: self.length]  # [t, B, H, hd]
        scores = (keys * q[:, :, 0]).sum(-1) / math.sqrt(q.size(-1))  # [t, B, H]: q . k for each position
        weights = torch.softmax(scores, dim=0)  # over the positions
        if weights_out is not None:
            weights_out.append(weights.permute(1, 2, 0)[:, :, None])  # [B, H, 1, t]
        return (weights[..., None] * values).sum(0)[:, :, None]  # [B, H, 1, hd]

    def keep(self, rows: torch.Tensor) -> None:
        """Keep only these batch rows (their indices): the sequences still being decoded."""
        self.k, self.v = self._rows(self.k, rows), self._rows(self.v, rows)

    def _rows(self, cache: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        kept = cache.new_empty(cache.size(0), len(rows), *cache.shape[2:])
        kept[: self.length] = cache[: self.length, rows]  # only the positions written so far
        return kept


class KVCache:
    """The keys and values of every layer for the positions decoded so far."""

    def __init__(self, n_layer: int, batch: int, n_head: int, max_len: int, head_dim: int, device, dtype):
        self.layers = [LayerKV(batch, n_head, max_len, head_dim, device, dtype) for _ in range(n_layer)]

    @property
    def length(self) -> int:
        return self.layers[0].length

    def keep(self, rows: torch.Tensor) -> None:
        """Keep only these batch rows (their indices): the sequences still being decoded."""
        for layer in self.layers:
            layer.keep(rows)
