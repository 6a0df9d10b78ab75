"""Ablation: switching heads, attention and MLPs off, against a forward pass written out by hand."""

import json
import math

import pytest
import torch
import torch.nn.functional as F
from typer.testing import CliRunner

from minigpt.cli.main import app
from minigpt.data import TokenizedNames, Tokenizer
from minigpt.formats.recipes import load_config
from minigpt.measurements.ablation import (
    Part,
    ablate,
    all_parts,
    forward_without,
    loss_without,
    mean_outputs,
    whole_pass,
)
from minigpt.measurements.prefix_forest import prefix_forests
from minigpt.model import GPT

runner = CliRunner()
NAMES = ["emma", "olivia", "ava", "isabella", "sophia", "mia", "amelia", "harper", "evelyn", "abigail"]


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    config = load_config("tiny", ["model.n_layer=2"]).model
    tokenizer = Tokenizer.from_names(NAMES)
    config.vocab_size = tokenizer.vocab_size
    model = GPT(config).double().eval()
    for p in model.parameters():  # outputs far from zero, so a wrong ablation shows
        torch.nn.init.normal_(p, std=0.5)
    return model, tokenizer


def by_hand(model, idx, heads_off=(), attention_off=(), mlp_off=(), means=None):
    """The model's forward pass written out, a head at a time, with the named parts replaced."""
    c = model.config
    H, hd = c.n_head, c.n_embd // c.n_head
    T = idx.size(1)
    norm = lambda x: x / torch.sqrt((x * x).mean(-1, keepdim=True) + c.norm_eps)  # noqa: E731 (no norm gains in tiny)
    x = norm(model.wte.weight[idx] + model.wpe.weight[:T])
    for l, layer in enumerate(model.layers):
        a = norm(x)
        q, k, v = (a @ w.weight.T for w in (layer.attn.attn_wq, layer.attn.attn_wk, layer.attn.attn_wv))
        outs = []
        for h in range(H):
            s = slice(h * hd, (h + 1) * hd)
            scores = q[..., s] @ k[..., s].transpose(-1, -2) / math.sqrt(hd)
            scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
            out = torch.softmax(scores, -1) @ v[..., s]
            if (l, h) in heads_off:
                out = torch.zeros_like(out) + (means["head"][l][h] if means else 0)
            outs.append(out)
        attn = torch.cat(outs, -1) @ layer.attn.attn_wo.weight.T
        if l in attention_off:
            attn = torch.zeros_like(attn) + (means["attention"][l] if means else 0)
        x = x + attn
        hidden = F.relu(norm(x) @ layer.mlp.mlp_fc1.weight.T)
        mlp = hidden @ layer.mlp.mlp_fc2.weight.T
        if l in mlp_off:
            mlp = torch.zeros_like(mlp) + (means["mlp"][l] if means else 0)
        x = x + mlp
    return norm(x) @ model.lm_head.weight.T if c.final_norm else x @ model.lm_head.weight.T


def test_zero_ablation_is_the_forward_pass_with_the_part_removed(tiny):
    model, tokenizer = tiny
    idx = torch.tensor([[tokenizer.bos] + tokenizer.encode("isabella")])
    torch.testing.assert_close(forward_without(model, idx), by_hand(model, idx))
    cases = [
        ([Part("head", 0, 1)], {"heads_off": {(0, 1)}}),
        ([Part("head", 1, 0), Part("head", 1, 1)], {"heads_off": {(1, 0), (1, 1)}}),
        ([Part("attention", 0)], {"attention_off": {0}}),
        ([Part("mlp", 1)], {"mlp_off": {1}}),
        ([Part("head", 0, 0), Part("mlp", 0)], {"heads_off": {(0, 0)}, "mlp_off": {0}}),
    ]
    for off, named in cases:
        torch.testing.assert_close(forward_without(model, idx, off), by_hand(model, idx, **named))
        assert not torch.allclose(forward_without(model, idx, off), by_hand(model, idx))  # it changed something


def test_mean_ablation_uses_each_parts_mean_over_every_position(tiny):
    model, tokenizer = tiny
    means = mean_outputs(
        model, [whole_pass(model, f) for f in prefix_forests(NAMES, tokenizer, model.config.block_size)]
    )
    # the mean of head (1, 1)'s output by hand: every position of every name, one name at a time
    outputs = []
    for name in NAMES:
        idx = torch.tensor([[tokenizer.bos] + tokenizer.encode(name)])
        seen = []
        hook = model.layers[1].attn.register_forward_pre_hook(lambda m, args, seen=seen: seen.append(args[0]))
        model(idx)
        hook.remove()
        a = seen[0]  # what layer 1's attention reads, normed
        hd = model.config.n_embd // model.config.n_head
        q, k, v = (
            a @ w.weight.T
            for w in (model.layers[1].attn.attn_wq, model.layers[1].attn.attn_wk, model.layers[1].attn.attn_wv)
        )
        s = slice(hd, 2 * hd)
        T = idx.size(1)
        scores = (q[..., s] @ k[..., s].transpose(-1, -2) / math.sqrt(hd)).masked_fill(
            torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf")
        )
        outputs.append((torch.softmax(scores, -1) @ v[..., s])[0])
    torch.testing.assert_close(means["head"][1][1], torch.cat(outputs).mean(0))
    idx = torch.tensor([[tokenizer.bos] + tokenizer.encode("harper")])
    for off, named in [
        ([Part("head", 1, 1)], {"heads_off": {(1, 1)}}),
        ([Part("attention", 1)], {"attention_off": {1}}),
        ([Part("mlp", 0)], {"mlp_off": {0}}),
    ]:
        torch.testing.assert_close(forward_without(model, idx, off, means), by_hand(model, idx, means=means, **named))


@pytest.mark.parametrize("mode", ["zero", "mean"])
@pytest.mark.parametrize("rows", [1, 10**6])  # one part through the layers above at a time, or all of a layer's
def test_ablate_reports_every_part_sorted_by_cost(tiny, mode, rows, monkeypatch):
    monkeypatch.setattr("minigpt.measurements.ablation.ROWS", rows)
    model, tokenizer = tiny
    report = ablate(model, tokenizer, NAMES, mode)
    assert len(report.costs) == len(all_parts(model)) == 2 * 2 + 2 + 2
    costs = [cost for _, cost in report.costs]
    assert costs == sorted(costs, reverse=True)
    data = TokenizedNames(NAMES, tokenizer, model.config.block_size)
    assert report.tokens == int(data.lengths.sum())
    assert report.loss == pytest.approx(loss_without(model, data), abs=1e-9)
    # ablate computes each distinct prefix once and spares the work that is the same; the losses are
    # loss_without's, name by name (this model is float64: the two orders of adding agree to 1e-9)
    for part, cost in report.costs:
        assert report.loss + cost == pytest.approx(loss_without(model, data, [part], report.means), abs=1e-9)


def test_a_prefix_forest_holds_each_prefix_once_and_every_prediction(tiny):
    """ "ann", "anna" and "annabel" share their beginnings; a name past the block size predicts its next
    character at its last position, not the end (as TokenizedNames reads it)."""
    model, tokenizer = tiny
    long = "a" * (model.config.block_size + 3)
    names = ["ann", "anna", "annabel", "bo", long]
    [forest] = prefix_forests(names, tokenizer, model.config.block_size)
    data = TokenizedNames(names, tokenizer, model.config.block_size)
    assert forest.predicted == int(data.lengths.sum())
    prefixes = {"", *(n[:i] for n in names for i in range(1, min(len(n), model.config.block_size - 1) + 1))}
    assert len(forest.tokens) == len(prefixes)
    assert float(forest.visits[0]) == len(names) and float(forest.visits.sum()) == forest.predicted
    ends = forest.target_counts[forest.target_tokens == tokenizer.bos].sum()
    assert ends == len(names) - 1  # every name ends but the one cut at the block size
    several = prefix_forests(names, tokenizer, model.config.block_size, nodes=8)  # grouped by first character
    assert len(several) == 2 and sum(f.predicted for f in several) == forest.predicted


def test_cli_ablate_prints_the_table_and_json(trained_run):
    run_dir, data = trained_run
    result = runner.invoke(app, ["ablate", str(run_dir), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["mode"] == "zero" and len(report["parts"]) == 2 * 1 + 1 + 1  # the tiny recipe: 1 layer, 2 heads
    assert report["parts"][0]["cost"] >= report["parts"][-1]["cost"]
    table = runner.invoke(app, ["ablate", str(run_dir), "--mode", "mean", "--data", str(data)])
    assert table.exit_code == 0 and "layer 0 head 1" in table.stdout and "(mean)" in table.stdout


def test_cli_ablate_refuses_bad_input_in_one_line(trained_run, tmp_path):
    run_dir, data = trained_run
    moved = tmp_path / "run"
    import shutil

    shutil.copytree(run_dir, moved)
    raw = torch.load(moved / "best.pt", weights_only=True)
    raw["data"] = {"imported_from": "model.safetensors"}  # as an import: no validation names to read again
    torch.save(raw, moved / "best.pt")
    for args, message in [
        ([str(run_dir), "--mode", "half"], "--mode 'half' is not one of zero, mean"),
        ([str(moved)], "pass --data FILE"),
        ([str(run_dir), "--data", str(tmp_path / "missing.txt")], "names file not found"),
    ]:
        result = runner.invoke(app, ["ablate", *args])
        assert result.exit_code == 2, (args, result.output)
        assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_scoring_a_forest_a_few_rows_at_a_time_gives_the_same_losses(trained_run, monkeypatch):
    """The ablation's logits are worked out a few rows at a time (a large vocabulary costs time, not memory):
    any number of rows at once gives the same losses."""
    from minigpt.formats.checkpoint import load_checkpoint
    from minigpt.measurements import prefix_forest

    ckpt = load_checkpoint(trained_run[0])
    model, names = ckpt.model.double(), ckpt.train_names[:60]  # float64: the order of a sum moves nothing seen
    whole = ablate(model, ckpt.tokenizer, names, "mean")
    monkeypatch.setattr(prefix_forest, "LOGITS", 3 * (ckpt.tokenizer.vocab_size))  # three rows at a time
    piecewise = ablate(model, ckpt.tokenizer, names, "mean")
    assert piecewise.loss == pytest.approx(whole.loss, abs=1e-9)
    assert [cost for _, cost in piecewise.costs] == pytest.approx([cost for _, cost in whole.costs], abs=1e-9)
