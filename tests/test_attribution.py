"""Direct logit attribution: a logit split into what each part writes toward it, equal to torch's own
activations read with forward hooks, on three recipes."""

import json

import pytest
import torch
from typer.testing import CliRunner

from minigpt.cli.main import app
from minigpt.data import Tokenizer
from minigpt.formats.recipes import load_config
from minigpt.measurements.attribution import attribution, logit_attribution, part_names
from minigpt.model import GPT

runner = CliRunner()


def model_of(recipe: str) -> tuple[GPT, Tokenizer]:
    """A model of the recipe's shape with weights at a scale where every part matters, in float64."""
    config = load_config(recipe).model
    tokenizer = Tokenizer(list("abcdefghij"))
    config.vocab_size = tokenizer.vocab_size
    torch.manual_seed(0)
    model = GPT(config).double().eval()
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn_like(p) * (0.3 if p.dim() == 2 else 1.0) + (1.0 if p.dim() == 1 else 0.0))
    return model, tokenizer


def hooked_terms(model: GPT, idx: torch.Tensor) -> torch.Tensor:
    """The same terms from what the model's own modules compute, caught with forward hooks."""
    c, seen, hooks = model.config, {}, []
    hooks.append(model.emb_norm.register_forward_hook(lambda m, i, o: seen.__setitem__("embeddings", o)))
    for l, layer in enumerate(model.layers):
        hooks.append(
            layer.attn.attn_wo.register_forward_hook(lambda m, i, o, l=l: seen.__setitem__(f"heads {l}", i[0]))
        )
        hooks.append(layer.mlp.register_forward_hook(lambda m, i, o, l=l: seen.__setitem__(f"mlp {l}", o)))
    if model.final_norm is not None:
        hooks.append(model.final_norm.register_forward_hook(lambda m, i, o: seen.__setitem__("stream", i[0])))
    logits, _ = model(idx)
    for hook in hooks:
        hook.remove()
    parts = [seen["embeddings"]]
    for l, layer in enumerate(model.layers):
        merged, w = seen[f"heads {l}"], layer.attn.attn_wo.weight
        d = c.head_dim
        parts += [merged[..., h * d : (h + 1) * d] @ w[:, h * d : (h + 1) * d].T for h in range(c.n_head)]
        parts.append(seen[f"mlp {l}"])
    rows = model.lm_head.weight
    if model.final_norm is None:
        scale = torch.ones(idx.shape, dtype=torch.float64)
    else:
        stream = seen["stream"]
        scale = 1 / torch.sqrt(stream.pow(2).mean(-1) + model.final_norm.eps)
        if model.final_norm.weight is not None:
            rows = rows * model.final_norm.weight
    terms = torch.stack([(part * scale[..., None]) @ rows.T for part in parts])
    torch.testing.assert_close(terms.sum(0), logits, rtol=0, atol=1e-9)  # the terms add up to the logits
    return terms


@pytest.mark.parametrize("recipe", ["default", "makemore", "microgpt"])
def test_each_parts_term_equals_what_torchs_own_modules_compute(recipe):
    model, tokenizer = model_of(recipe)
    idx = torch.tensor([[tokenizer.bos] + tokenizer.encode("abcadj")])
    terms, _ = attribution(model, idx)
    assert terms.shape[0] == len(part_names(model))
    torch.testing.assert_close(terms, hooked_terms(model, idx), rtol=0, atol=1e-9)


def test_the_json_splits_the_logit_of_the_token_that_comes_next():
    model, tokenizer = model_of("default")
    ids = [tokenizer.bos] + tokenizer.encode("abba")
    found = logit_attribution(model, tokenizer, ids)
    c = model.config
    assert found["parts"][:2] == ["embeddings", "layer 0 head 0"] and found["parts"][c.n_head + 1] == "layer 0 MLP"
    assert [p["target"] for p in found["positions"]] == ["a", "b", "b", "a", "·"]
    with torch.no_grad():
        logits, _ = model(torch.tensor([ids]))
    for t, position in enumerate(found["positions"]):
        target = (ids[1:] + [tokenizer.bos])[t]
        assert position["logit"] == pytest.approx(logits[0, t, target].item(), abs=1e-9)
        assert sum(position["parts"]) == pytest.approx(position["logit"], abs=1e-9)


def test_inspect_attention_gives_the_attribution_as_json_and_in_the_terminal(trained_run, tmp_path):
    run_dir, _ = trained_run
    written = tmp_path / "anna.json"
    assert runner.invoke(app, ["inspect-attention", str(run_dir), "anna", "--json-file", str(written)]).exit_code == 0
    found = json.loads(written.read_text())["attribution"]
    assert found["parts"][0] == "embeddings" and len(found["positions"]) == 5
    assert [p["target"] for p in found["positions"]] == ["a", "n", "n", "a", "·"]
    bars = runner.invoke(
        app, ["inspect-attention", str(run_dir), "anna", "--position", "2", "--layer", "0", "--head", "0"]
    )
    assert bars.exit_code == 0, bars.output
    assert "why 'n' after '·an'" in bars.stdout and "embeddings" in bars.stdout and "layer 0 MLP" in bars.stdout
