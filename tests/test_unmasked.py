"""model.causal = false: a model trained without the causal mask, to see what the mask is for. Its
positions read the whole name; sampling recomputes every position (no cache can hold keys that change);
every view names it; what is measured by prefixes, and export to microgpt, refuse it in one line."""

import torch
import torch.nn.functional as F
from conftest import tiny_config
from typer.testing import CliRunner

from minigpt.cli.main import app
from minigpt.config import GPTConfig
from minigpt.data import Tokenizer
from minigpt.model import GPT
from minigpt.runs.run import train
from minigpt.sampling import generate
from minigpt.views.attention_maps import forward_with_weights

runner = CliRunner()


def unmasked_model(n_layer=2):
    torch.manual_seed(0)
    return GPT(GPTConfig(n_layer=n_layer, n_head=2, n_embd=16, block_size=8, vocab_size=5, causal=False)).eval()


def test_every_position_reads_the_whole_name_and_the_views_weights_are_the_models():
    model = unmasked_model()
    tokens = torch.tensor([[4, 0, 1, 2, 3]])
    changed = torch.tensor([[4, 0, 1, 2, 0]])  # only the last token differs
    with torch.no_grad():
        first, second = model(tokens)[0], model(changed)[0]
    assert not torch.allclose(first[0, 0], second[0, 0])  # position 0 read the last token
    logits, weights = forward_with_weights(model, tokens)  # the formula written out, as the views read it
    torch.testing.assert_close(logits, first)
    assert weights.triu(1).sum() > 0 and torch.allclose(weights.sum(-1), torch.ones(weights.shape[:-1]))


def test_sampling_an_unmasked_model_reads_every_position_again():
    model, tokenizer = unmasked_model(), Tokenizer(list("abcd"))
    cached = generate(model, tokenizer, 20, seed=3, use_cache=True)
    assert cached == generate(model, tokenizer, 20, seed=3, use_cache=False)


def test_bfloat16_on_a_cpu_keeps_the_model_unmasked():
    attn = unmasked_model(1).layers[0].attn
    q, k, v = (torch.randn(1, 2, 5, 8, dtype=torch.bfloat16) for _ in range(3))
    torch.testing.assert_close(attn.attend(q, k, v), F.scaled_dot_product_attention(q, k, v))


def test_an_unmasked_run_is_named_everywhere_and_refused_where_it_cannot_be_read(names_file, tmp_path):
    run_dir = train(
        tiny_config("train.steps=20", "model.causal=false"), names_file, out_dir=tmp_path / "run", quiet=True
    ).run_dir
    info = runner.invoke(app, ["info", str(run_dir)])
    assert info.exit_code == 0 and "trained without the causal mask" in " ".join(info.output.split())
    for command in (
        ["eval", str(run_dir)],
        ["sample", str(run_dir), "--num", "3"],
        ["inspect-attention", str(run_dir), "emma"],
    ):
        result = runner.invoke(app, command)
        assert result.exit_code == 0 and "trained without the causal mask" in result.output, command
    sampled = " ".join(runner.invoke(app, ["sample", str(run_dir), "--num", "3"]).stderr.split())
    assert "which is not there yet when it generates" in sampled  # why its names are what they are
    assert "3 names of a model trained without the mask, not counted as new" in sampled
    assert "not in the training data" not in sampled  # its names are no invention
    heatmap = runner.invoke(app, ["inspect-attention", str(run_dir), "emma", "--layer", "0", "--head", "0"]).output
    assert (
        "masked (a later position)"
        not in runner.invoke(app, ["inspect-attention", str(run_dir), "emma", "--position", "1"]).output
    )
    assert heatmap.count("0.") > 5 * 3  # every row has all five weights
    refused = {
        "ablate": ["ablate", str(run_dir)],
        "the explorer page": ["inspect-attention", str(run_dir), "--html", str(tmp_path / "page.html")],
        "microgpt": ["export", str(run_dir), str(tmp_path / "m.json"), "--format", "microgpt"],
    }
    for what, command in refused.items():
        result = runner.invoke(app, command)
        assert result.exit_code == 2 and len(result.output.strip().splitlines()) <= 2, (what, result.output)
        assert "causal" in result.output, what
    assert "inspect-attention MASKED_RUN" in runner.invoke(app, refused["the explorer page"]).output
    assert not (tmp_path / "page.html").exists()


def test_snapshots_written_before_the_key_existed_are_still_the_runs_own(trained_run, tmp_path):
    import shutil

    from minigpt.formats.checkpoint import load_checkpoint
    from minigpt.formats.snapshots import FILE, checkpoint_snapshots

    run_dir = tmp_path / "old"
    shutil.copytree(trained_run[0], run_dir)
    raw = torch.load(run_dir / FILE, weights_only=True)
    del raw["run"]["model"]["causal"]  # as a run of an earlier version wrote it
    torch.save(raw, run_dir / FILE)
    assert checkpoint_snapshots(load_checkpoint(run_dir)).steps
