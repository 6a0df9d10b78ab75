"""What makes an MLP unit fire: the prefixes where each unit's activation is largest, equal to the model's
own activations for each prefix read alone."""

import torch

from minigpt.data import Tokenizer
from minigpt.formats.recipes import load_config
from minigpt.measurements.units import distinct_prefixes, firing_prefixes
from minigpt.model import GPT


def test_each_unit_lists_the_prefixes_where_it_fires_most():
    config = load_config("tiny").model
    tokenizer = Tokenizer(list("abcde"))
    config.vocab_size = tokenizer.vocab_size
    torch.manual_seed(0)
    model = GPT(config).eval()
    names = ["abba", "abc", "cab", "deed", "ace", "bead", "a"]
    found = firing_prefixes(model, tokenizer, names, top=4)
    prefixes = distinct_prefixes(names, tokenizer, config.block_size)
    assert len(found["prefixes"]) == len(prefixes) == len(set(found["prefixes"]))
    assert found["prefixes"][0] == "·" and "·abb" in found["prefixes"]
    every = []  # each prefix read alone, its last position's activations, layer by layer
    for prefix in prefixes:
        seen = []
        hooks = [
            layer.mlp.mlp_fc2.register_forward_hook(lambda m, i, o, seen=seen: seen.append(i[0][0, -1]))
            for layer in model.layers
        ]
        with torch.no_grad():
            model(torch.tensor([list(prefix)]))
        for hook in hooks:
            hook.remove()
        every.append(seen)
    for l in range(config.n_layer):
        acts = torch.stack([a[l] for a in every])  # [prefixes, units]
        for unit in range(acts.size(1)):
            expected = torch.topk(acts[:, unit], 4).values
            got = torch.tensor(found["values"][l][unit])
            torch.testing.assert_close(got, expected, atol=1e-3, rtol=0)  # rounded to three decimals
            for index, value in zip(found["layers"][l][unit], found["values"][l][unit]):
                assert abs(acts[index, unit].item() - value) < 1e-3
