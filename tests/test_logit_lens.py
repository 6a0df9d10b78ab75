"""The logit lens: each sublayer's guess, read off the residual stream; the last is the model's own."""

import json

import torch
from typer.testing import CliRunner

from minigpt.cli.main import app
from minigpt.formats.checkpoint import load_checkpoint
from minigpt.measurements.logit_lens import logit_lens, read_off, residual_streams

runner = CliRunner()


def test_the_last_stage_is_the_models_prediction_and_every_stage_is_named(trained_run):
    run_dir, _ = trained_run
    ckpt = load_checkpoint(run_dir)
    ids = [ckpt.tokenizer.bos] + ckpt.tokenizer.encode("anna")
    idx = torch.tensor([ids])
    streams = residual_streams(ckpt.model, idx)
    n_layer = ckpt.config.model.n_layer
    assert [name for name, _ in streams] == ["embeddings"] + [
        f"layer {l} {part}" for l in range(n_layer) for part in ("attention", "MLP")
    ]
    with torch.no_grad():
        logits, _ = ckpt.model(idx)
    torch.testing.assert_close(read_off(ckpt.model, streams[-1][1]), logits)
    lens = logit_lens(ckpt.model, ckpt.tokenizer, ids)
    last = [p["stages"][-1] for p in lens["positions"]]
    probs = torch.softmax(logits[0], -1)
    targets = ids[1:] + [ckpt.tokenizer.bos]
    assert [s["next_prob"] for s in last] == [probs[t, target].item() for t, target in enumerate(targets)]
    assert [p["next"] for p in lens["positions"]] == ["a", "n", "n", "a", "·"]


def test_inspect_attention_gives_the_lens_as_json_and_in_the_terminal(trained_run):
    run_dir, _ = trained_run
    result = runner.invoke(app, ["inspect-attention", str(run_dir), "anna", "--json"])
    assert result.exit_code == 0, result.output
    lens = json.loads(result.stdout)["lens"]
    assert lens["stages"][0] == "embeddings" and len(lens["positions"]) == 5
    assert all(len(s["top"]) == 3 for p in lens["positions"] for s in p["stages"])
    table = runner.invoke(app, ["inspect-attention", str(run_dir), "anna", "--lens"])
    assert table.exit_code == 0 and "logit lens" in table.stdout and "L0 attn" in table.stdout and "a→·" in table.stdout
