"""A GPT in microgpt's shape: embeddings, RMSNorm, pre-norm blocks of attention and MLP.

    x = rmsnorm(wte[token] + wpe[position])
    for each layer:
        x = x + attn_wo(attention(attn_wq, attn_wk, attn_wv of rmsnorm(x)))
        x = x + mlp_fc2(relu(mlp_fc1(rmsnorm(x))))
    logits = lm_head(x)           (after one more rmsnorm if final_norm)

Attention, for queries Q, keys K and values V with head size d:

    attention(Q, K, V) = softmax(Q K^T / sqrt(d) + M) V

M is the causal mask: 0 where a position may look (itself and everything before it), -inf
where it may not, so no position sees the future (`model.causal = false` drops it).
causal_attention below writes it out step by step, and attention.py in the forms tutorials
teach; the tests hold them equal to this one. The parameters keep microgpt's names
(`layers[0].attn.attn_wq`; `layer0.attn_wq` in checkpoints: `microgpt_weights` below).

Shapes: B batch, T positions, C = n_embd, H heads, hd = C / H per head."""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Callable, Iterator, Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F

from .config import GPTConfig, check_tokens, checked_shape

# attend(q, k, v) -> y, each [B, H, T, hd]: a layer's attention step done otherwise (a
# cache, ...)
Attend = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


def causal_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, dropout: float = 0.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """The formula, step by step. q: [..., Tq, d]; k, v: [..., Tk, d] -> the output [...,
    Tq, d] and the weights [..., Tq, Tk] (before dropout). With Tq < Tk the queries are the
    last Tq."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # [..., Tq, Tk]
    t_q, t_k = scores.shape[-2:]
    allowed = torch.ones(t_q, t_k, dtype=torch.bool, device=q.device).tril(t_k - t_q)
    # each row sums to 1
    weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
    mixed = F.dropout(weights, dropout) if dropout else weights
    return mixed @ v, weights  # [..., Tq, d]


def RMSNorm(dim: int, eps: float, learned: bool) -> nn.RMSNorm:
    """x / sqrt(mean(x^2) + eps), times a learned gain only if `learned` (microgpt has
    none)."""
    return nn.RMSNorm(dim, eps=eps, elementwise_affine=learned)


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention: heads by reshaping one projection of size n_embd
    into n_head slices of head_dim, and torch's fused kernel for the formula above."""

    def __init__(self, n_embd: int, n_head: int, attn_dropout: float = 0.0, causal: bool = True):
        super().__init__()
        self.n_head, self.causal, self.attn_dropout = n_head, causal, attn_dropout
        self.attn_wq = nn.Linear(n_embd, n_embd, bias=False)
        self.attn_wk = nn.Linear(n_embd, n_embd, bias=False)
        self.attn_wv = nn.Linear(n_embd, n_embd, bias=False)
        self.attn_wo = nn.Linear(n_embd, n_embd, bias=False)

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq_len, n_embd = x.shape  # -> [B, H, T, hd]
        return x.view(batch, seq_len, self.n_head, n_embd // self.n_head).transpose(1, 2)

    @staticmethod
    def merge_heads(y: torch.Tensor) -> torch.Tensor:
        batch, n_head, seq_len, head_dim = y.shape
        return y.transpose(1, 2).reshape(batch, seq_len, n_head * head_dim)  # [B, T, C]

    def forward(self, x: torch.Tensor, attend: Attend | None = None) -> torch.Tensor:
        """x: [B, T, C] -> [B, T, C]. `attend`, when given, takes the place of
        `self.attend`."""
        n_embd = x.size(-1)
        # q = x Wq^T, k = x Wk^T, v = x Wv^T as one matrix multiply (faster than three small
        # ones)
        wqkv = torch.cat([self.attn_wq.weight, self.attn_wk.weight, self.attn_wv.weight])
        # [B, H, T, hd] each
        q, k, v = map(self.split_heads, F.linear(x, wqkv).split(n_embd, dim=-1))
        y = (attend or self.attend)(q, k, v)  # [B, H, T, hd]
        return self.attn_wo(self.merge_heads(y))

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """Every position reads itself and the positions before it (causal): [B, H, T, hd]
        each."""
        dropout = self.attn_dropout if self.training else 0.0
        if q.dtype == torch.bfloat16 and q.device.type == "cpu" and self.causal:
            # in bfloat16 on a CPU, torch's fused kernel is slower than the formula (docs/speed.md)
            return causal_attention(q, k, v, dropout)[0]
        return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout, is_causal=self.causal)


class Dropout(nn.Module):
    """nn.Dropout: zero each element with probability p (rounded to a multiple of 1/256), scale
    the rest by 1 / (1 - p). On a CPU one 64-bit draw gives the mask bytes of eight elements:
    torch's dropout draws a number an element, which costs this small model a tenth of its step
    (docs/speed.md). Elsewhere it is torch's own."""

    def __init__(self, p: float):
        super().__init__()
        self.p = p
        self.threshold = round(p * 256)  # drop where a random byte is below this

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.threshold == 0:
            return x
        if x.device.type != "cpu":
            return F.dropout(x, self.p, training=True)
        n = x.numel()
        draws = torch.randint(-(2**63), 2**63 - 1, ((n + 7) // 8,), dtype=torch.int64)
        keep = draws.view(torch.uint8)[:n].view_as(x) >= self.threshold
        return x * keep * (256 / (256 - self.threshold))


class MLP(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.mlp_fc1 = nn.Linear(config.n_embd, 4 * config.n_embd, bias=False)
        self.mlp_fc2 = nn.Linear(4 * config.n_embd, config.n_embd, bias=False)
        self.relu = config.activation == "relu"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.mlp_fc1(x)  # [B, T, 4 * n_embd]
        # in place: the hidden layer is the largest activation, and one copy fewer is faster
        h = F.relu(h, inplace=True) if self.relu else F.gelu(h)
        return self.mlp_fc2(h)


class Block(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.attn_norm = RMSNorm(config.n_embd, config.norm_eps, config.norm_scale)
        self.attn = CausalSelfAttention(
            config.n_embd, config.n_head, config.attn_dropout, config.causal
        )
        self.mlp_norm = RMSNorm(config.n_embd, config.norm_eps, config.norm_scale)
        self.mlp = MLP(config)
        self.dropout = Dropout(config.dropout)  # on each branch, before it joins the stream

    def forward(self, x: torch.Tensor, attend: Attend | None = None) -> torch.Tensor:
        x = x + self.dropout(self.attn(self.attn_norm(x), attend))
        return x + self.dropout(self.mlp(self.mlp_norm(x)))


class GPT(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.config = config = checked_shape(config)
        c, eps = config.n_embd, config.norm_eps
        self.wte = nn.Embedding(config.vocab_size, c)
        self.wpe = nn.Embedding(config.block_size, c)
        self.emb_norm = RMSNorm(c, eps, learned=False)
        self.layers = nn.ModuleList(Block(config) for _ in range(config.n_layer))
        self.final_norm = RMSNorm(c, eps, config.norm_scale) if config.final_norm else None
        self.lm_head = nn.Linear(c, config.vocab_size, bias=False)
        for name, p in self.named_parameters():
            if p.dim() == 2:  # every matrix from N(0, init_std); norm gains stay at 1
                nn.init.normal_(p, mean=0.0, std=config.init_std)
                out = name.endswith(("attn_wo.weight", "mlp_fc2.weight"))
                if config.zero_init_out and out:
                    nn.init.zeros_(p)

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def forward(
        self,
        idx: torch.Tensor,
        targets: torch.Tensor | None = None,
        positions: torch.Tensor | None = None,
        attend: Sequence[Attend] | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """idx: [B, T] token ids -> logits [B, T, vocab] and the mean loss over the targets
        (None without them); a target of -100 (padding) is skipped, as cross_entropy does by
        default. `positions` [T]: the tokens' positions, 0..T-1 unless given (after a
        cache's). `attend`, one function per layer, replaces each layer's attention step (a
        cache is read this way)."""
        if not torch.compiler.is_compiling():  # a compiled step reads a batch it built
            check_tokens(idx, self.config)
        if positions is None:
            positions = torch.arange(idx.size(1), device=idx.device)
        x = self.emb_norm(self.wte(idx) + self.wpe(positions))  # [B, T, n_embd]
        for i, layer in enumerate(self.layers):
            x = layer(x, attend[i] if attend is not None else None)
        if self.final_norm is not None:
            x = self.final_norm(x)
        logits = self.lm_head(x)  # [B, T, vocab]
        if targets is None:
            return logits, None
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
        return logits, loss


# ---- microgpt's names: every file minigpt writes holds the weights under them


def microgpt_name(module_name: str) -> str:
    """A parameter's name in the model -> microgpt's: "layers.0.attn.attn_wq.weight" ->
    "layer0.attn_wq"."""
    name = re.sub(r"^layers\.(\d+)\.(?:attn\.|mlp\.)?", r"layer\1.", module_name)
    return name.removesuffix(".weight")


def microgpt_weights(model: nn.Module) -> dict[str, torch.Tensor]:
    """The model's weights under microgpt's names, as every file minigpt writes holds them."""
    return {microgpt_name(name): tensor for name, tensor in model.state_dict().items()}


def load_microgpt_weights(model: nn.Module, weights: dict[str, torch.Tensor]) -> None:
    """Load weights named as microgpt names them; a ValueError names a missing, extra or
    misshapen one."""
    state = model.state_dict()
    module_name = {microgpt_name(name): name for name in state}
    own = {name: state[module] for name, module in module_name.items()}
    missing, extra = sorted(own.keys() - weights.keys()), sorted(weights.keys() - own.keys())
    if missing or extra:
        raise ValueError(f"the weights do not fit the model: missing {missing}, unexpected {extra}")
    for name, tensor in weights.items():
        if not isinstance(tensor, torch.Tensor) or tensor.shape != own[name].shape:
            shape = (
                list(tensor.shape) if isinstance(tensor, torch.Tensor) else type(tensor).__name__
            )
            raise ValueError(
                f"size mismatch for {name}: {shape} in the file, "
                f"{list(own[name].shape)} in the model"
            )
    model.load_state_dict({module_name[name]: tensor for name, tensor in weights.items()})


@contextlib.contextmanager  # measuring a model mid-training leaves it training
def eval_mode(model: nn.Module) -> Iterator[nn.Module]:
    """Within: the model in eval mode (no dropout); after: back in the mode it was in."""
    was_training = model.training
    model.eval()
    try:
        yield model
    finally:
        model.train(was_training)
