"""Attention kernels side by side: torch's fused scaled_dot_product_attention against the formula
written out (minigpt.model.causal_attention), forward and backward, in float32 and bfloat16.

    python benchmarks/attention.py [--batch 512] [--length 10] [--heads 4] [--head-dim 16]

q, k and v are views of one [B, T, 3 * H * hd] projection, as in the model. The two
kernels take turns for several rounds; each row is the median round.
"""

from __future__ import annotations

import time

import torch
import torch.nn.functional as F
from common import finish, median, parser, setup, table
from minigpt.attention import causal_attention

KERNELS = {
    "fused": lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
    "written out": lambda q, k, v: causal_attention(q, k, v)[0],
}


def milliseconds(kernel, qkv: torch.Tensor, heads: int, grad: torch.Tensor, reps: int = 20) -> float:
    batch, length, width = qkv.shape
    q, k, v = (t.view(batch, length, heads, -1).transpose(1, 2) for t in qkv.split(width // 3, dim=-1))
    start = time.perf_counter()
    for _ in range(reps):
        torch.autograd.grad(kernel(q, k, v), qkv, grad)
    return (time.perf_counter() - start) / reps * 1000


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=512)
    p.add_argument("--length", type=int, default=10, help="positions per name [default: 10]")
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--head-dim", type=int, default=16)
    p.add_argument("--rounds", type=int, default=7)
    args = p.parse_args()
    results = setup(args)
    torch.manual_seed(0)
    rows = []
    for dtype in (torch.float32, torch.bfloat16):
        qkv = torch.randn(args.batch, args.length, 3 * args.heads * args.head_dim, dtype=dtype, requires_grad=True)
        grad = torch.randn(args.batch, args.heads, args.length, args.head_dim, dtype=dtype)
        times = {name: [] for name in KERNELS}
        for _ in range(args.rounds):
            for name, kernel in KERNELS.items():
                milliseconds(kernel, qkv, args.heads, grad, reps=2)  # warm-up
                times[name].append(milliseconds(kernel, qkv, args.heads, grad))
        for name in KERNELS:
            rows.append({"dtype": str(dtype).removeprefix("torch."), "kernel": name, "ms": round(median(times[name]), 2)})
    results.update(batch=args.batch, length=args.length, heads=args.heads, head_dim=args.head_dim, rows=rows)
    print(f"batch {args.batch}, {args.length} positions, {args.heads} heads of {args.head_dim}: "
          "forward and backward, ms")
    print(table(rows, [("dtype", "dtype"), ("kernel", "kernel"), ("ms", "ms")]))
    finish(results, args.out)


if __name__ == "__main__":
    main()
