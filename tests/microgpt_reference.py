"""microgpt's forward pass in plain Python lists and `math`, token by token, with its KV cache.

Written from the description of microgpt's architecture, independently of minigpt's code,
to check that minigpt computes the same numbers.
"""

import math


def linear(x, w):  # w is [out][in]
    return [sum(wi * xi for wi, xi in zip(row, x)) for row in w]


def softmax(logits):
    top = max(logits)
    exps = [math.exp(v - top) for v in logits]
    total = sum(exps)
    return [e / total for e in exps]


def rmsnorm(x):
    mean_square = sum(xi * xi for xi in x) / len(x)
    return [xi * (mean_square + 1e-5) ** -0.5 for xi in x]


def gpt(token, pos, keys, values, sd, n_layer, n_head):
    """Logits for `token` at position `pos`; appends this position's keys and values to the cache."""
    x = [t + p for t, p in zip(sd["wte"][token], sd["wpe"][pos])]
    x = rmsnorm(x)
    head_dim = len(x) // n_head
    for li in range(n_layer):
        residual = x
        x = rmsnorm(x)
        q = linear(x, sd[f"layer{li}.attn_wq"])
        keys[li].append(linear(x, sd[f"layer{li}.attn_wk"]))
        values[li].append(linear(x, sd[f"layer{li}.attn_wv"]))
        heads = []
        for h in range(n_head):
            s = slice(h * head_dim, (h + 1) * head_dim)
            scores = [sum(a * b for a, b in zip(q[s], k[s])) / math.sqrt(head_dim) for k in keys[li]]
            weights = softmax(scores)
            heads += [sum(w * v[s][j] for w, v in zip(weights, values[li])) for j in range(head_dim)]
        x = [a + b for a, b in zip(linear(heads, sd[f"layer{li}.attn_wo"]), residual)]
        residual = x
        x = rmsnorm(x)
        x = [max(0.0, xi) for xi in linear(x, sd[f"layer{li}.mlp_fc1"])]
        x = [a + b for a, b in zip(linear(x, sd[f"layer{li}.mlp_fc2"]), residual)]
    return linear(x, sd["lm_head"])


def name_logits_and_loss(token_ids, sd, n_layer, n_head, block_size):
    """microgpt's per-name loss: the mean of -log p(next) over min(block_size, len - 1) positions."""
    n = min(block_size, len(token_ids) - 1)
    keys, values = [[] for _ in range(n_layer)], [[] for _ in range(n_layer)]
    all_logits, losses = [], []
    for pos in range(n):
        logits = gpt(token_ids[pos], pos, keys, values, sd, n_layer, n_head)
        all_logits.append(logits)
        losses.append(-math.log(softmax(logits)[token_ids[pos + 1]]))
    return all_logits, sum(losses) / n
