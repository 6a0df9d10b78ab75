"""minigpt's microgpt recipe computes microgpt's numbers, and weights move both ways."""

import json
import re

import pytest
import torch
from microgpt_reference import name_logits_and_loss

from minigpt.attention import KVCache
from minigpt.data import BatchOrder, TokenizedNames, Tokenizer
from minigpt.errors import UsageError
from minigpt.formats.checkpoint import load_checkpoint
from minigpt.formats.microgpt_json import export_microgpt, import_microgpt
from minigpt.formats.recipes import load_config
from minigpt.model import GPT, microgpt_weights
from minigpt.runs.run import train
from minigpt.training import Trainer

pytestmark = pytest.mark.xdist_group("microgpt")  # one worker makes the module's shared fixture once

NAMES = ["emma", "olivia", "ava", "x", "maximilianalexander"]  # the last is longer than block_size


def microgpt_model(std=0.08, n_layer=1, seed=0):
    cfg = load_config("microgpt", [f"model.n_layer={n_layer}", f"model.init_std={std}"]).model
    tokenizer = Tokenizer([chr(c) for c in range(ord("a"), ord("z") + 1)])
    cfg.vocab_size = tokenizer.vocab_size
    torch.manual_seed(seed)
    return GPT(cfg).eval(), tokenizer


@pytest.mark.parametrize("std, n_layer", [(0.08, 1), (0.2, 2)])
def test_logits_and_loss_match_the_plain_python_reference(std, n_layer):
    model, tok = microgpt_model(std, n_layer)
    sd = {k: v.tolist() for k, v in microgpt_weights(model).items()}
    data = TokenizedNames(NAMES, tok, model.config.block_size)
    x, y = data.padded(torch.arange(len(NAMES)), model.config.block_size)
    full_logits, _ = model(x)  # every name at once, padded
    for i, name in enumerate(NAMES):
        ids = [tok.bos] + tok.encode(name) + [tok.bos]
        ref_logits, ref_loss = name_logits_and_loss(ids, sd, n_layer, model.config.n_head, model.config.block_size)
        n = len(ref_logits)
        reference = torch.tensor(ref_logits, dtype=torch.float64)
        torch.testing.assert_close(full_logits[i, :n].double(), reference, atol=1e-5, rtol=0)
        cache = KVCache(model, 1)  # one token at a time, as microgpt runs
        stepped = torch.cat(
            [
                model(x[i : i + 1, t : t + 1], positions=cache.next_positions(1), attend=cache.layers)[0]
                for t in range(n)
            ],
            dim=1,
        )
        torch.testing.assert_close(stepped[0].double(), reference, atol=1e-5, rtol=0)
        _, loss = model(x[i : i + 1, :n], y[i : i + 1, :n])
        assert loss.item() == pytest.approx(ref_loss, abs=1e-5)


def test_microgpt_config_switches_off_every_extra():
    model, _ = microgpt_model()
    cfg = model.config
    assert (cfg.activation, cfg.final_norm, cfg.norm_scale, cfg.norm_eps) == ("relu", False, False, 1e-5)
    assert all(p.dim() == 2 for p in model.parameters())  # no gains, no biases
    assert set(microgpt_weights(model)) == {"wte", "wpe", "lm_head"} | {
        f"layer0.{k}" for k in ("attn_wq", "attn_wk", "attn_wv", "attn_wo", "mlp_fc1", "mlp_fc2")
    }


def test_training_follows_microgpts_loop_and_adam():
    """Step k trains on name k of one shuffle, with Adam(0.85, 0.99, 1e-8) at lr 0.01 * (1 - k / steps)."""
    steps = 6
    config = load_config("microgpt", [f"train.steps={steps}"])
    names = ["anna", "bob", "clementine", "dave", "eve", "fay", "gus", "hal"]
    tok = Tokenizer.from_names(names)
    config.model.vocab_size = tok.vocab_size
    trainer = Trainer.from_names(config, names, [], tok)
    params = {k: v.clone().double() for k, v in trainer.model.state_dict().items()}
    m = {k: torch.zeros_like(v) for k, v in params.items()}
    v2 = {k: torch.zeros_like(v) for k, v in params.items()}
    order = BatchOrder(len(names), 1, config.train.seed, reshuffle=False).permutation(0).tolist()
    reference = GPT(config.model).double()
    for k in range(steps):
        assert trainer.order.indices(k).tolist() == [order[k]]  # name k of the one shuffle
        reference.load_state_dict(params)
        reference.zero_grad()
        x, y = trainer.train_data.batch(torch.tensor([order[k]]))
        _, loss = reference(x, y)
        loss.backward()
        grads = {key: p.grad for key, p in reference.state_dict(keep_vars=True).items()}
        lr = 0.01 * (1 - k / steps)
        for key in params:  # microgpt's Adam, bias-corrected
            m[key] = 0.85 * m[key] + 0.15 * grads[key]
            v2[key] = 0.99 * v2[key] + 0.01 * grads[key] ** 2
            m_hat, v_hat = m[key] / (1 - 0.85 ** (k + 1)), v2[key] / (1 - 0.99 ** (k + 1))
            params[key] = params[key] - lr * m_hat / (v_hat.sqrt() + 1e-8)
        trainer.train_step()
    for key, value in trainer.model.state_dict().items():
        torch.testing.assert_close(value.double(), params[key], atol=1e-5, rtol=0)


@pytest.fixture(scope="module")
def micro_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("micro")
    data = tmp / "names.txt"
    data.write_text("\n".join(NAMES[:4] * 5))
    result = train(load_config("microgpt", ["train.steps=20"]), data, out_dir=tmp / "run", quiet=True)
    return result.run_dir


def test_export_import_round_trip_is_bit_identical(micro_run, tmp_path):
    exported = tmp_path / "model.json"
    export_microgpt(micro_run / "last.pt", exported)
    data = json.loads(exported.read_text())
    original = load_checkpoint(micro_run / "last.pt")
    assert list(data["state_dict"]) == ["wte", "wpe", "lm_head"] + [
        f"layer0.{k}" for k in ("attn_wq", "attn_wk", "attn_wv", "attn_wo", "mlp_fc1", "mlp_fc2")
    ]
    assert data["uchars"] == sorted(set("".join(NAMES[:4]))) and data["bos"] == len(data["uchars"])
    assert data["hyperparameters"] == {
        "n_layer": 1,
        "n_embd": 16,
        "n_head": 4,
        "block_size": 16,
        "vocab_size": len(data["uchars"]) + 1,
    }
    imported = tmp_path / "imported.pt"
    import_microgpt(exported, imported)
    back = load_checkpoint(imported)
    for key, tensor in original.model.state_dict().items():
        assert torch.equal(back.model.state_dict()[key], tensor), key
    assert back.tokenizer.chars == original.tokenizer.chars


def test_import_rejects_shapes_that_disagree_with_hyperparameters(micro_run, tmp_path):
    exported = tmp_path / "model.json"
    export_microgpt(micro_run, exported)
    data = json.loads(exported.read_text())
    data["hyperparameters"]["n_embd"] = 8
    exported.write_text(json.dumps(data))
    with pytest.raises(UsageError, match=r"wte has shape \[\d+, 16\]; the hyperparameters need \[\d+, 8\]"):
        import_microgpt(exported, tmp_path / "out.pt")
    assert not (tmp_path / "out.pt").exists()


@pytest.mark.parametrize("tensor", ["wte", "layer0.attn_wq"])
def test_import_refuses_non_finite_weights_naming_the_tensor(micro_run, tmp_path, tensor):
    exported = tmp_path / "model.json"
    export_microgpt(micro_run, exported)
    data = json.loads(exported.read_text())
    data["state_dict"][tensor][1][2] = float("nan")  # json writes NaN, as a hand-edited file would hold it
    exported.write_text(json.dumps(data))
    with pytest.raises(UsageError, match=f"weight {tensor} holds 1 non-finite value"):
        import_microgpt(exported, tmp_path / "out.pt")
    assert not (tmp_path / "out.pt").exists()


def test_only_microgpt_architectures_export(trained_run, tmp_path):
    run_dir, _ = trained_run  # the tiny recipe has a final norm
    with pytest.raises(UsageError, match="microgpt cannot run this architecture \\(final_norm True\\)") as refused:
        export_microgpt(run_dir, tmp_path / "x.json")
    # the advice works when followed: the command it names exports the same model
    command = (
        re.search(r"minigpt (export .* --format safetensors)", str(refused.value))
        .group(1)
        .replace("OUT_DIR", str(tmp_path / "st"))
    )
    from typer.testing import CliRunner

    from minigpt.cli.main import app

    assert CliRunner().invoke(app, command.split()).exit_code == 0 and (tmp_path / "st" / "model.safetensors").is_file()


def test_cli_export_and_import_then_sample(micro_run, tmp_path):
    from typer.testing import CliRunner

    from minigpt.cli.main import app

    runner = CliRunner()
    out = tmp_path / "m.json"
    assert runner.invoke(app, ["export", str(micro_run), str(out), "--format", "microgpt"]).exit_code == 0
    again = runner.invoke(app, ["export", str(micro_run), str(out)])
    assert again.exit_code == 2 and "already exists" in again.stderr
    ckpt = tmp_path / "m.pt"
    assert runner.invoke(app, ["import", str(out), str(ckpt)]).exit_code == 0
    result = runner.invoke(app, ["sample", str(ckpt), "-n", "3", "--seed", "0"])
    assert result.exit_code == 0 and len(result.stdout.splitlines()) == 3
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    result = runner.invoke(app, ["import", str(bad), str(tmp_path / "b.pt")])
    assert result.exit_code == 2 and "not valid JSON" in result.stderr


def test_export_never_writes_over_a_checkpoint(micro_run, tmp_path):
    target = tmp_path / "best.pt"
    target.write_bytes((micro_run / "best.pt").read_bytes())
    with pytest.raises(UsageError, match="is a checkpoint"):
        export_microgpt(micro_run, target, overwrite=True)
    assert target.read_bytes() == (micro_run / "best.pt").read_bytes()
