import pytest
import torch

from minigpt.attention import KVCache
from minigpt.config import GPTConfig
from minigpt.data import IGNORE
from minigpt.model import GPT, load_microgpt_weights, microgpt_weights


def make_model(**kw):
    torch.manual_seed(0)
    cfg = GPTConfig(
        **{"vocab_size": 27, "n_layer": 2, "n_head": 4, "n_embd": 32, "block_size": 16, "dropout": 0.0, **kw}
    )
    return GPT(cfg).eval()


def test_weights_are_saved_under_microgpt_names_and_shapes():
    c = 32
    expected = {"wte": (27, c), "wpe": (16, c), "lm_head": (27, c)}
    for i in range(2):
        expected |= {f"layer{i}.attn_w{x}": (c, c) for x in "qkvo"}
        expected |= {f"layer{i}.mlp_fc1": (4 * c, c), f"layer{i}.mlp_fc2": (c, 4 * c)}
    sd = microgpt_weights(make_model())
    assert {k: tuple(v.shape) for k, v in sd.items()} == expected
    assert list(sd)[:2] == ["wte", "wpe"] and list(sd)[-1] == "lm_head"  # microgpt's order


def test_each_parameter_has_one_name_in_code():
    model = make_model()
    assert [name for name, _ in model.named_parameters()] == list(model.state_dict())
    assert "layers.0.attn.attn_wq.weight" in model.state_dict()


def test_learned_norm_gains_follow_the_same_style():
    keys = set(microgpt_weights(make_model(norm_scale=True, final_norm=True)))
    assert {"layer0.attn_norm", "layer0.mlp_norm", "layer1.attn_norm", "final_norm"} <= keys


def test_microgpt_named_weights_round_trip_and_misfits_are_named():
    a, b = make_model(), GPT(make_model().config)
    torch.nn.init.zeros_(b.wte.weight)
    load_microgpt_weights(b, microgpt_weights(a))
    assert all(torch.equal(a.state_dict()[k], v) for k, v in b.state_dict().items())
    weights = microgpt_weights(a)
    with pytest.raises(ValueError, match=r"missing \['layer1.mlp_fc2'\]"):
        load_microgpt_weights(b, {k: v for k, v in weights.items() if k != "layer1.mlp_fc2"})
    with pytest.raises(ValueError, match=r"size mismatch for wte: \[3, 32\] in the file, \[27, 32\]"):
        load_microgpt_weights(b, {**weights, "wte": torch.zeros(3, 32)})


def test_init_draws_every_matrix_from_init_std():
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=27, n_embd=64, init_std=0.08))
    weights = torch.cat([p.flatten() for p in model.parameters() if p.dim() == 2])
    assert weights.std().item() == pytest.approx(0.08, rel=0.02)


@pytest.mark.parametrize("kw", [{}, {"final_norm": True, "norm_scale": True, "activation": "gelu"}])
def test_kv_cached_decoding_matches_full_forward(kw):
    model = make_model(**kw)
    idx = torch.randint(0, 27, (3, 16))
    full, _ = model(idx)
    cache = KVCache(model, 3)
    steps = [model(idx[:, :5], attend=cache.layers)[0]]  # a prefix in one pass, then one token at a time
    steps += [model(idx[:, t : t + 1], positions=cache.next_positions(1), attend=cache.layers)[0] for t in range(5, 16)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=0)


def test_future_tokens_do_not_change_past_logits():
    model = make_model()
    idx = torch.randint(0, 27, (1, 10))
    changed = idx.clone()
    changed[0, 6:] = (changed[0, 6:] + 1) % 27
    torch.testing.assert_close(model(idx)[0][:, :6], model(changed)[0][:, :6])


def test_loss_ignores_padding():
    model = make_model()
    x = torch.randint(0, 27, (2, 8))
    y = torch.randint(0, 27, (2, 8))
    y_padded = y.clone()
    y_padded[1, 5:] = IGNORE
    logits, loss = model(x, y_padded)
    manual = torch.nn.functional.cross_entropy(torch.cat([logits[0], logits[1, :5]]), torch.cat([y[0], y[1, :5]]))
    torch.testing.assert_close(loss, manual)


def test_the_models_dropout_drops_p_and_keeps_the_mean():
    from minigpt.model import Dropout

    drop = Dropout(0.1)
    x = torch.ones(400_000)
    y = drop(x)
    dropped = (y == 0).float().mean().item()
    assert abs(dropped - 26 / 256) < 0.003  # p rounded to 26/256
    kept = y.unique().tolist()
    assert abs(y.mean().item() - 1.0) < 0.01 and kept[0] == 0.0 and kept[1:] == [pytest.approx(256 / 230)]
    assert torch.equal(drop.eval()(x), x)
    torch.manual_seed(3)
    a = Dropout(0.1)(x)
    torch.manual_seed(3)
    assert torch.equal(a, Dropout(0.1)(x))  # seeded like everything else


def test_zero_init_out_starts_each_block_as_the_identity():
    model = make_model(zero_init_out=True)
    weights = microgpt_weights(model)
    for i in range(model.config.n_layer):
        assert not weights[f"layer{i}.attn_wo"].any() and not weights[f"layer{i}.mlp_fc2"].any()
        assert weights[f"layer{i}.attn_wq"].std() > 0 and weights[f"layer{i}.mlp_fc1"].std() > 0
    assert make_model().layers[0].attn.attn_wo.weight.std() > 0


def test_training_forward_compiles_to_one_graph_for_every_name_length():
    """A graph break would split torch.compile's work into pieces and cost most of its gain."""
    model = make_model(dropout=0.1, attn_dropout=0.1).train()
    idx = torch.randint(0, 27, (4, 7))
    torch._dynamo.mark_dynamic(idx, 1)  # as compiled for training: any length up to block_size
    explained = torch._dynamo.explain(model)(idx, idx)
    assert explained.graph_break_count == 0, explained.break_reasons


def test_the_model_attends_in_bfloat16_on_a_cpu_by_the_formula_with_the_fused_kernels_numbers():
    """The one place the model picks how to compute: the same numbers as torch's fused kernel."""
    attn = make_model().layers[0].attn
    q, k, v = (torch.randn(1, 2, 5, 8, dtype=torch.bfloat16) for _ in range(3))
    fused = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(attn.attend(q, k, v), fused, atol=1e-2, rtol=1e-2)  # bfloat16's rounding
