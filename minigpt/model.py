"""A GPT in microgpt's shape: embeddings, RMSNorm, pre-norm blocks of attention and MLP.

    x = rmsnorm(wte[token] + wpe[position])
    for each layer:
        x = x + attn_wo(attention(attn_wq, attn_wk, attn_wv of rmsnorm(x)))
        x = x + mlp_fc2(relu(mlp_fc1(rmsnorm(x))))
    logits = lm_head(x)           (after one more rmsnorm if final_norm)

Attention, for queries Q, keys K and values V with head size d:

    attention(Q, K, V) = softmax(Q K^T / sqrt(d) + M) V

M is the causal mask: 0 where a position may look (itself and everything before it), -inf
where it may not (everything after it), so no position sees the future. Training packs
several short names into one row (data.py): each name then has its positions from 0 and a
mask that keeps its attention inside itself (`within_names`), so it is computed as if alone. attention.py has
the forms tutorials teach (one head, a list of heads, one-token decoding over a cache);
the tests hold them equal to this one.

The parameters keep microgpt's names inside their modules (`layers[0].attn.attn_wq`);
checkpoints store them under microgpt's flat names (`layer0.attn_wq`, formats/checkpoint.py).

Shapes: B batch, T positions, C = n_embd, H heads, hd = C / H per head.
"""

from __future__ import annotations

import contextlib
import math
from typing import Callable, Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F

from minigpt.config import GPTConfig

# attend(q, k, v) -> y, each [B, H, T, hd]: a layer's attention step, when something other
# than the fused kernel should do it (record the weights, read a key/value cache, ...)
Attend = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


def causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, dropout: float = 0.0,
                     allowed: torch.Tensor | None = None):
    """The formula above, step by step. q: [..., Tq, d]; k, v: [..., Tk, d].

    Returns the output [..., Tq, d] and the weights [..., Tq, Tk] (before any dropout, which
    zeroes weights at random while training). When Tq < Tk the queries are the last Tq
    positions (new tokens reading a cache of earlier ones). `allowed` [Tq, Tk], when given,
    is the mask (`within_names`'s for packed rows).
    """
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # [..., Tq, Tk]
    t_q, t_k = scores.shape[-2:]
    if allowed is None:
        allowed = torch.ones(t_q, t_k, dtype=torch.bool, device=q.device).tril(t_k - t_q)
    scores = scores.masked_fill(~allowed, float("-inf"))
    weights = torch.softmax(scores, dim=-1)  # [..., Tq, Tk], each row sums to 1
    mixed = F.dropout(weights, dropout) if dropout else weights
    return mixed @ v, weights  # [..., Tq, d]


def within_names(width: int, name_length: int, device) -> torch.Tensor:
    """The mask of a packed row [width, width]: True where a position may look, which is itself
    and the positions before it in its own name (each name `name_length` positions long)."""
    position = torch.arange(width, device=device)
    same_name = position[:, None] // name_length == position[None, :] // name_length
    return same_name & (position[:, None] >= position[None, :])


class RMSNorm(nn.Module):
    """x / sqrt(mean(x^2) + eps), optionally times a learned gain (microgpt has none)."""

    def __init__(self, dim: int, eps: float, learned: bool):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim)) if learned else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.rms_norm(x, (x.size(-1),), self.weight, self.eps)


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention: heads by reshaping one projection of size n_embd
    into n_head slices of head_dim, and torch's fused kernel for the formula above."""

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
        return x.view(batch, seq_len, self.n_head, n_embd // self.n_head).transpose(1, 2)  # [B, H, T, hd]

    @staticmethod
    def merge_heads(y: torch.Tensor) -> torch.Tensor:
        batch, n_head, seq_len, head_dim = y.shape
        return y.transpose(1, 2).reshape(batch, seq_len, n_head * head_dim)  # [B, T, C]: heads side by side again

    def forward(self, x: torch.Tensor, attend: Attend | None = None, allowed: torch.Tensor | None = None) -> torch.Tensor:
        """x: [B, T, C] -> [B, T, C]. `attend`, when given, takes the place of `self.attend`;
        `allowed`, when given, is the mask of packed rows."""
        n_embd = x.size(-1)
        # q = x Wq^T, k = x Wk^T, v = x Wv^T, as one matrix multiply (faster than three small ones)
        qkv = F.linear(x, torch.cat([self.attn_wq.weight, self.attn_wk.weight, self.attn_wv.weight]))
        q, k, v = map(self.split_heads, qkv.split(n_embd, dim=-1))  # each [B, H, T, hd]
        y = attend(q, k, v) if attend else self.attend(q, k, v, allowed)  # [B, H, T, hd]
        return self.attn_wo(self.merge_heads(y))

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, allowed: torch.Tensor | None = None):
        """Every position reads itself and the positions before it (in its own name, with `allowed`):
        [B, H, T, hd] -> [B, H, T, hd]."""
        dropout = self.attn_dropout if self.training else 0.0
        # CPU speed-up: torch's fused kernel is the fastest way but in bfloat16 on a CPU, where
        # the formula written out is faster (benchmarks/attention.py measures both)
        if q.dtype == torch.bfloat16 and q.device.type == "cpu":
            return causal_attention(q, k, v, dropout, allowed)[0]
        if allowed is None:
            return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout, is_causal=True)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, dropout_p=dropout)


class MLP(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.mlp_fc1 = nn.Linear(config.n_embd, 4 * config.n_embd, bias=False)
        self.mlp_fc2 = nn.Linear(4 * config.n_embd, config.n_embd, bias=False)
        self.relu = config.activation == "relu"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.mlp_fc1(x)  # [B, T, 4 * n_embd]
        # in place: the hidden layer is the largest activation, and one fewer copy of it is faster
        h = F.relu(h, inplace=True) if self.relu else F.gelu(h)
        return self.mlp_fc2(h)


class Block(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.attn_norm = RMSNorm(config.n_embd, config.norm_eps, config.norm_scale)
        self.attn = CausalSelfAttention(config.n_embd, config.n_head, config.attn_dropout)
        self.mlp_norm = RMSNorm(config.n_embd, config.norm_eps, config.norm_scale)
        self.mlp = MLP(config)
        self.dropout = nn.Dropout(config.dropout)  # on each branch, before it joins the residual stream

    def forward(self, x: torch.Tensor, attend: Attend | None = None, allowed: torch.Tensor | None = None):
        x = x + self.dropout(self.attn(self.attn_norm(x), attend, allowed))
        return x + self.dropout(self.mlp(self.mlp_norm(x)))


class GPT(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        if config.vocab_size < 2:
            raise ValueError("GPTConfig.vocab_size must be set from the tokenizer")
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.emb_norm = RMSNorm(config.n_embd, config.norm_eps, learned=False)
        self.layers = nn.ModuleList(Block(config) for _ in range(config.n_layer))
        self.final_norm = RMSNorm(config.n_embd, config.norm_eps, config.norm_scale) if config.final_norm else None
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        for p in self.parameters():
            if p.dim() == 2:  # every matrix from N(0, init_std); norm gains stay at 1
                nn.init.normal_(p, mean=0.0, std=config.init_std)
        if config.zero_init_out:
            for block in self.layers:
                nn.init.zeros_(block.attn.attn_wo.weight)
                nn.init.zeros_(block.mlp.mlp_fc2.weight)

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None, start: int = 0,
                attend: Sequence[Attend] | None = None, name_length: int | None = None):
        """idx: [B, T] token ids at positions start.. -> logits [B, T, vocab] and the mean loss over
        the targets (None without targets); a target of -100 (data.py's IGNORE, a padding position) is
        skipped, as cross_entropy skips it by default.

        `attend`, one function per layer, replaces each layer's attention step: sampling reads
        its key/value cache this way (idx then holds only the positions after the cached ones).
        `name_length`, when given, says each row is packed with names of that many positions
        (data.py's `packed`): each name's positions start from 0, and it attends only to itself.
        """
        positions = torch.arange(start, start + idx.size(1), device=idx.device)
        allowed = None
        if name_length is not None:
            positions = positions % name_length
            allowed = within_names(idx.size(1), name_length, idx.device)
        x = self.emb_norm(self.wte(idx) + self.wpe(positions))  # [B, T, n_embd]
        for i, layer in enumerate(self.layers):
            x = layer(x, attend[i] if attend is not None else None, allowed)
        if self.final_norm is not None:
            x = self.final_norm(x)
        logits = self.lm_head(x)  # [B, T, vocab]
        if targets is None:
            return logits, None
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
        return logits, loss


@contextlib.contextmanager
def eval_mode(model: nn.Module):
    """Within: the model in eval mode (no dropout). After: back in the mode it was in, so that
    measuring a model in the middle of training leaves it training."""
    was_training = model.training
    model.eval()
    try:
        yield model
    finally:
        model.train(was_training)
