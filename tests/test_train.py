import json
import math
import os
import re
import subprocess
import sys

import pytest
import torch
from conftest import tiny_config

from minigpt.common.bundled import BUNDLED_NAMES
from minigpt.config import GPTConfig, TrainConfig
from minigpt.data import TokenizedNames, Tokenizer
from minigpt.errors import Interrupted, RunError, UsageError
from minigpt.files.names_file import read_names
from minigpt.formats.checkpoint import load_checkpoint, read_model_weights, resume_config
from minigpt.machine.processes import compile_failed
from minigpt.measurements.name_losses import evaluate
from minigpt.model import GPT
from minigpt.optimizer import lr_at
from minigpt.runs.run import train
from minigpt.sampling import generate
from minigpt.training import Trainer


def losses(run_dir):
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def test_same_seed_gives_the_same_run(names_file, tmp_path):
    cfg = lambda: tiny_config("model.dropout=0.1", "train.device=cpu")  # dropout draws random numbers too
    a = train(cfg(), names_file, out_dir=tmp_path / "a", quiet=True)
    b = train(cfg(), names_file, out_dir=tmp_path / "b", quiet=True)
    assert [r.get("train_loss") for r in losses(a.run_dir)] == [r.get("train_loss") for r in losses(b.run_dir)]
    sa, sb = read_model_weights(a.run_dir / "last.pt"), read_model_weights(b.run_dir / "last.pt")
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    c = train(tiny_config("train.seed=2"), names_file, out_dir=tmp_path / "c", quiet=True)
    assert losses(c.run_dir)[1]["train_loss"] != losses(a.run_dir)[1]["train_loss"]  # line 0: torch, threads, ...


def test_run_directory_holds_checkpoints_and_config(trained_run):
    run_dir, data = trained_run
    assert {"best.pt", "last.pt", "config.toml", "metrics.jsonl"} <= {p.name for p in run_dir.iterdir()}
    ckpt = load_checkpoint(run_dir / "last.pt")
    assert ckpt.step == 60 and ckpt.val_loss is not None
    assert ckpt.tokenizer.chars == sorted(set(data.read_text().replace("\n", "")))
    assert len(ckpt.train_names) + ckpt.data["val_names"] == len(read_names(data))
    # learning happened: well below a uniform guess over the vocabulary
    assert ckpt.val_loss < math.log(ckpt.tokenizer.vocab_size) - 0.5


def test_refuses_to_train_into_a_used_run_directory(trained_run, names_file):
    run_dir, _ = trained_run
    before = (run_dir / "last.pt").read_bytes()
    with pytest.raises(UsageError, match="not empty.*--overwrite"):
        train(tiny_config(), names_file, out_dir=run_dir, quiet=True)
    assert (run_dir / "last.pt").read_bytes() == before


def test_validation_file_with_unseen_characters_is_named(names_file, tmp_path):
    val = tmp_path / "val.txt"
    val.write_text("zoë\n", encoding="utf-8")
    with pytest.raises(UsageError, match="validation file .* 'ë'"):
        train(tiny_config(), names_file, val_path=val, out_dir=tmp_path / "r", quiet=True)


def test_a_single_name_trains(tmp_path):
    one = tmp_path / "one.txt"
    one.write_text("anna\n")
    result = train(tiny_config("train.steps=5"), one, out_dir=tmp_path / "r", quiet=True)
    assert result.val_loss is None and (result.run_dir / "best.pt").exists()


def test_bucketed_batches_compute_the_padded_loss():
    names = ["al", "bea", "christopher", "d", "evangeline"]
    tok = Tokenizer.from_names(names)
    data = TokenizedNames(names, tok, block_size=16)
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=tok.vocab_size, n_layer=2, n_embd=32, dropout=0.0)).eval()
    _, reference = model(*data.padded(torch.arange(len(names)), data.block_size))  # every row padded to block_size
    cut = data.batch(torch.arange(len(names)))
    assert cut[0].shape[1] == 12  # the 11 characters of "christopher", then its end
    torch.testing.assert_close(model(*cut)[1], reference, atol=1e-5, rtol=0)
    torch.testing.assert_close(torch.tensor(evaluate(model, data, batch_size=2)), reference, atol=1e-5, rtol=0)


def test_learning_rate_schedules():
    micro = TrainConfig(steps=1000, lr=0.01, lr_schedule="linear", warmup_steps=0)
    assert [lr_at(s, s / 1000, micro) for s in (0, 500, 999)] == pytest.approx([0.01, 0.005, 0.00001])
    cos = TrainConfig(steps=1000, lr=1.0, min_lr=0.1, lr_schedule="cosine", warmup_steps=100)
    assert lr_at(0, 0.0, cos) == pytest.approx(0.01) and lr_at(99, 0.0, cos) == pytest.approx(1.0)
    assert lr_at(550, 0.5, cos) == pytest.approx(0.55) and lr_at(1000, 1.0, cos) == pytest.approx(0.1)


def cpu_trainer(names_file, *overrides) -> Trainer:
    """A Trainer of the tiny recipe on names_file, on the CPU, with no validation names."""
    names = read_names(names_file)
    tokenizer = Tokenizer.from_names(names)
    config = tiny_config(*overrides)
    config.model.vocab_size = tokenizer.vocab_size
    return Trainer.from_names(config, names, [], tokenizer)


@pytest.mark.parametrize("precision, dtype", [("auto", torch.float32), ("bfloat16", torch.bfloat16)])
def test_precision_sets_the_matmul_dtype_and_keeps_float32_weights(names_file, precision, dtype):
    trainer = cpu_trainer(names_file, f"train.precision='{precision}'")  # auto: float32 on a CPU
    seen = []
    trainer.model.lm_head.register_forward_hook(lambda module, args, out: seen.append(out.dtype))
    steps = [trainer.train_step() for _ in range(20)]  # (summed loss, tokens)
    assert seen[0] == dtype
    assert steps[0][0].dtype == torch.float32
    assert steps[-1][0].item() / steps[-1][1] < steps[0][0].item() / steps[0][1]
    assert all(p.dtype == torch.float32 for p in trainer.model.parameters())


def test_auto_precision_is_float32_by_rule_and_recorded_as_such(names_file, tmp_path, monkeypatch):
    """train.precision "auto" is a rule, not a timing: float32 on every device, even one that claims bfloat16
    arithmetic, and the run records what it resolved to, in its checkpoint and its config.toml."""
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: True, raising=False)
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: True, raising=False)
    run = train(
        tiny_config("train.steps=6", "train.precision='auto'"),
        data_path=names_file,
        out_dir=tmp_path / "auto",
        quiet=True,
    )
    assert load_checkpoint(run.run_dir / "last.pt").config.train.precision == "float32"
    assert 'precision = "float32"' in (run.run_dir / "config.toml").read_text()


def test_compile_wraps_the_training_model_and_saves_plain_names(names_file):
    trainer = cpu_trainer(names_file, "train.compile=true")  # compiles lazily, at the first step
    assert trainer.model_for_steps._orig_mod is trainer.model
    assert "layers.0.attn.attn_wq.weight" in trainer.model.state_dict()


def test_a_failed_compile_says_how_to_train_without_it(names_file):
    trainer = cpu_trainer(names_file)

    def no_compiler(graph, example_inputs):
        raise RuntimeError("No working C++ compiler found")

    compiled = torch.compile(trainer.model, backend=no_compiler)  # fails as inductor does without one
    with pytest.raises(torch._dynamo.exc.BackendCompilerFailed) as failed:
        compiled(*trainer.train_data.batch(trainer.order.indices(0)))
    said = compile_failed(failed.value)
    assert isinstance(said, RunError) and re.search(r"C\+\+ compiler.*set train.compile=false", str(said))


def test_a_signal_while_compiling_is_the_signals_stop_not_a_failed_compile(names_file):
    """SIGTERM while torch.compile compiled the first step stopped the run as "torch.compile failed (Interrupted:
    ...); set train.compile=false": the compiler wraps what the signal raised. It is the signal's own stop now."""
    trainer = cpu_trainer(names_file)

    def stopped(graph, example_inputs):
        raise Interrupted("stopped before the first step: nothing was trained", 15)

    compiled = torch.compile(trainer.model, backend=stopped)
    with pytest.raises(torch._dynamo.exc.BackendCompilerFailed) as failed:
        compiled(*trainer.train_data.batch(trainer.order.indices(0)))
    said = compile_failed(failed.value)
    assert isinstance(said, Interrupted) and said.exit_code == 143 and "compile" not in str(said)


def overfitting_config(*extra):
    """A tiny model on a few names, trained hard enough that its validation loss turns up."""
    return tiny_config(
        "train.steps=400",
        "train.eval_interval=10",
        "train.lr=0.03",
        "train.warmup_steps=0",
        "train.lr_schedule='constant'",
        "model.n_embd=32",
        *extra,
    )


@pytest.fixture
def few_names(tmp_path):
    path = tmp_path / "few.txt"
    path.write_text("\n".join(read_names(BUNDLED_NAMES)[:60]) + "\n", encoding="utf-8")
    return path


def test_patience_stops_the_run_and_it_ends_on_its_best_weights(few_names, tmp_path):
    result = train(overfitting_config("train.patience=3"), few_names, out_dir=tmp_path / "run", quiet=True)
    assert result.stopped_early and result.ended_on_best
    assert result.steps == result.best_step + 3 * 10 < 400  # three evaluations after the best, then stop
    best = load_checkpoint(tmp_path / "run" / "best.pt")
    assert best.step == result.best_step and best.val_loss == result.best_val_loss
    # the summary's samples come from the best weights: the same draws as from best.pt
    config = best.config
    from_best = generate(best.model, best.tokenizer, 10, temperature=config.sample.temperature, seed=config.train.seed)
    assert [name for name, _ in result.samples] == from_best
    from typer.testing import CliRunner

    from minigpt.cli.main import app

    resumed = CliRunner().invoke(app, ["train", "--resume", str(tmp_path / "run")])
    assert resumed.exit_code == 2 and "already complete" in resumed.stderr and "train.patience" in resumed.stderr
    # the advice works when followed: the setting it names lets the run go on
    setting = re.search(r"--set (train\.patience=\d+)", resumed.stderr).group(1)
    followed = CliRunner().invoke(app, ["train", "--resume", str(tmp_path / "run"), "--set", setting, "-q"])
    assert followed.exit_code == 0, followed.output
    assert load_checkpoint(tmp_path / "run" / "last.pt").step > result.steps


def test_without_keep_best_the_run_ends_on_its_last_weights(few_names, tmp_path):
    result = train(
        overfitting_config("train.steps=200", "train.keep_best=false"), few_names, out_dir=tmp_path / "r", quiet=True
    )
    assert not result.ended_on_best and not result.stopped_early and result.steps == 200
    assert result.val_loss > result.best_val_loss  # it did overfit, so keep_best would have mattered


def test_patience_survives_a_resume(few_names, tmp_path):
    """Evaluations since the best are part of the saved state: a resumed run stops where the whole one did."""
    whole = train(overfitting_config("train.patience=3"), few_names, out_dir=tmp_path / "whole", quiet=True)
    half = whole.best_step + 20  # two evaluations after the best, one short of stopping
    train(
        overfitting_config("train.patience=3", f"train.steps={half}"), few_names, out_dir=tmp_path / "split", quiet=True
    )
    resumed = train(resume_config(tmp_path / "split", ["train.steps=400"]), quiet=True, resume_from=tmp_path / "split")
    assert resumed.stopped_early and resumed.steps == whole.steps and resumed.best_step == whole.best_step


def test_a_run_resumed_into_a_new_folder_after_its_best_step_ends_on_that_best(few_names, tmp_path):
    """Resumed past its best step into a new --out, a run that finds nothing better there ends on the best
    weights of the run it continued, and their best.pt is in the new folder (it said "checkpoint not found")."""
    whole = train(overfitting_config("train.patience=3"), few_names, out_dir=tmp_path / "whole", quiet=True)
    half = whole.best_step + 20
    train(
        overfitting_config("train.patience=3", f"train.steps={half}"), few_names, out_dir=tmp_path / "split", quiet=True
    )
    resumed = train(
        resume_config(tmp_path / "split", ["train.steps=400"]),
        out_dir=tmp_path / "more",
        quiet=True,
        resume_from=tmp_path / "split",
    )
    assert resumed.stopped_early and resumed.ended_on_best and resumed.best_step == whole.best_step
    assert (tmp_path / "more" / "best.pt").read_bytes() == (tmp_path / "split" / "best.pt").read_bytes()


def test_seeds_are_scored_on_the_same_held_out_names(names_file, tmp_path):
    """train.split_seed, not train.seed, picks the validation names: seeds compare on the same ones."""
    from minigpt.formats.recipes import config_from_dict

    runs = [
        train(tiny_config("train.steps=2", f"train.seed={seed}"), names_file, out_dir=tmp_path / str(seed), quiet=True)
        for seed in (1, 2)
    ]
    digests = [load_checkpoint(r.run_dir).data["val_digest"] for r in runs]
    assert digests[0] == digests[1]
    other = train(
        tiny_config("train.steps=2", "train.split_seed=7"), names_file, out_dir=tmp_path / "split7", quiet=True
    )
    assert load_checkpoint(other.run_dir).data["val_digest"] != digests[0]
    stored = load_checkpoint(runs[0].run_dir).config.to_dict()
    del stored["train"]["split_seed"]  # a recipe stored before split_seed: its seed chose the split
    assert config_from_dict(stored).train.split_seed == 1


def test_a_run_whose_last_step_is_its_best_ended_on_its_best(names_file, tmp_path):
    from conftest import tiny_config

    result = train(
        tiny_config("train.steps=30", "train.eval_interval=10"), names_file, out_dir=tmp_path / "r", quiet=True
    )
    assert result.best_step == result.steps == 30  # three evaluations, each better on a model this young
    assert result.ended_on_best and not result.went_back_to_best and result.to_json()["ended_on_best"] is True


def test_a_step_whose_logits_cannot_fit_is_refused_before_it_starts(names_file, tmp_path, monkeypatch):
    from conftest import tiny_config

    from minigpt.errors import UsageError
    from minigpt.runs import setup

    monkeypatch.setattr(setup, "available_memory", lambda: 100_000)  # 0.1 MB free
    with pytest.raises(
        UsageError,
        match=r"a step of 256 names × \d+ positions × a vocabulary of \d+ needs about .* GB "
        r"for its logits, and 0.0 GB is available: lower train.batch_size",
    ):
        train(tiny_config("train.batch_size=256"), names_file, out_dir=tmp_path / "r", quiet=True)
    assert not (tmp_path / "r").exists()


def test_a_complete_run_says_every_setting_that_holds_it_back_at_once(few_names, tmp_path):
    """A run whose patience ran out on its last step needs both more steps and more patience to go on: the
    refusal names both at once (it named one, then the other), and the run did not stop "early"."""
    from minigpt.errors import UsageError

    whole = train(overfitting_config("train.patience=3"), few_names, out_dir=tmp_path / "whole", quiet=True)
    assert whole.stopped_early
    last = train(
        overfitting_config("train.patience=3", f"train.steps={whole.steps}"),
        few_names,
        out_dir=tmp_path / "last",
        quiet=True,
    )
    assert last.steps == whole.steps and not last.stopped_early  # patience ran out on its last step
    with pytest.raises(UsageError) as refused:
        train(resume_config(tmp_path / "last"), quiet=True, resume_from=tmp_path / "last")
    said = str(refused.value)
    assert f"resume with --set train.patience={3 + 3} --steps {2 * whole.steps} to train on" in said, said
    assert "train.patience" in said and f"it has taken its {whole.steps:,} steps" in said


def test_a_recipe_file_is_trained_as_written_under_a_time_limit(tmp_path):
    """A key written in the --config file is never changed by fitting (the block size stays 12 though the
    longest name would fit it to 17), a time limit that ends the run in place of its steps says so as it
    starts, and config.toml keeps the keys as written and says what ended the run."""
    names = tmp_path / "names.txt"
    names.write_text("\n".join(["maximilianrobert", "anna", "bob", "christopher", "emma", "liam"] * 20) + "\n")
    recipe = tmp_path / "mine.toml"
    recipe.write_text(
        "[model]\nn_layer = 1\nn_head = 1\nn_embd = 8\nblock_size = 12\n"
        '[train]\nsteps = 300\nbatch_size = 8\neval_interval = 5\nprecision = "float32"\n'
    )
    command = [
        sys.executable,
        "-m",
        "minigpt",
        "train",
        "--config",
        str(recipe),
        "--data",
        str(names),
        "--time-limit",
        "1",
        "--out",
        str(tmp_path / "run"),
        "--no-page",
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "400"})
    assert done.returncode == 0, done.stderr
    assert "train.time_limit 1 s ends this run, not train.steps (300)" in done.stderr  # in the opening panel
    assert "longer than the block size allows (11 characters)" in done.stderr  # said, not fitted
    written = (tmp_path / "run" / "config.toml").read_text()
    assert "block_size = 12\n" in written and "steps = 300\n" in written
    header = [line for line in written.splitlines() if line.startswith("#")]
    assert "# train.time_limit 1 s ends it, not train.steps" in header, header
    assert any(line.startswith("# ended at step") and "time limit of 1 s" in line for line in header), header
    assert load_checkpoint(tmp_path / "run").config.model.block_size == 12
