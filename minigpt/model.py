"""A GPT in microgpt's shape: embeddings, RMSNorm, pre-norm blocks of attention and MLP.

    x = rmsnorm(wte[token] + wpe[position])
    for each layer:
        x = x + attn_wo(attention(attn_wq, attn_wk, attn_wv of rmsnorm(x)))
        x = x + mlp_fc2(relu(mlp_fc1(rmsnorm(x))))
    logits = lm_head(x)           (after one more rmsnorm if final_norm)

`state_dict()` uses microgpt's names (`wte`, `layer0.attn_wq`, ...; weights [out, in]);
`load_state_dict()` takes them back.
"""

from __future__ import annotations

import re

import torch
import torch.nn as nn
import torch.nn.functional as F

from minigpt.attention import CausalSelfAttention, KVCache
from minigpt.config import GPTConfig
from minigpt.cpu_speedups import Dropout
from minigpt.data import IGNORE


class RMSNorm(nn.Module):
    """x / sqrt(mean(x^2) + eps), optionally times a learned gain (microgpt has none)."""

    def __init__(self, dim: int, eps: float, learned: bool):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim)) if learned else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.rms_norm(x, (x.size(-1),), self.weight, self.eps)


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
        self.dropout = Dropout(config.dropout)  # on each branch, before it joins the residual stream

    def forward(self, x, kv_cache=None, weights_out=None):
        x = x + self.dropout(self.attn(self.attn_norm(x), kv_cache, weights_out))
        return x + self.dropout(self.mlp(self.mlp_norm(x)))


def microgpt_key(name: str) -> str:
    """Module path -> microgpt's name: "layers.0.attn.attn_wq.weight" -> "layer0.attn_wq"."""
    name = re.sub(r"^layers\.(\d+)\.(?:attn\.|mlp\.)?", r"layer\1.", name)
    return name.removesuffix(".weight")


def _rename_to_microgpt(module, state_dict, prefix, local_metadata):
    for key in [k for k in state_dict if k.startswith(prefix)]:
        state_dict[prefix + microgpt_key(key[len(prefix) :])] = state_dict.pop(key)


def _rename_from_microgpt(module, state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
    for key in [k for k in state_dict if k.startswith(prefix)]:
        name = module._to_module_key.get(key[len(prefix) :])
        if name is not None:
            state_dict[prefix + name] = state_dict.pop(key)


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
        self._to_module_key = {microgpt_key(n): n for n, _ in self.named_parameters()}
        self.register_state_dict_post_hook(_rename_to_microgpt)
        self.register_load_state_dict_pre_hook(_rename_from_microgpt)

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def forward(self, idx, targets=None, kv_cache: KVCache | None = None, weights_out: list | None = None):
        """idx: [B, T] token ids -> logits [B, T, vocab] and the mean loss over non-IGNORE targets.

        With a kv_cache, idx holds only the new positions; they follow the cached ones.
        With a weights_out list, each layer appends its attention weights [B, H, T, T].
        """
        batch, seq_len = idx.shape
        start = kv_cache.length if kv_cache is not None else 0
        positions = torch.arange(start, start + seq_len, device=idx.device)
        x = self.emb_norm(self.wte(idx) + self.wpe(positions))  # [B, T, n_embd]
        for i, layer in enumerate(self.layers):
            x = layer(x, kv_cache.layers[i] if kv_cache is not None else None, weights_out)
        if self.final_norm is not None:
            x = self.final_norm(x)
        logits = self.lm_head(x)  # [B, T, vocab]
        if targets is None:
            return logits, None
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=IGNORE)
        return logits, loss

    def new_kv_cache(self, batch: int) -> KVCache:
        c = self.config
        p = self.lm_head.weight
        return KVCache(c.n_layer, batch, c.n_head, c.block_size, c.head_dim, p.device, p.dtype)


