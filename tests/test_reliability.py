"""Never lose work: interruption, exact resume, kill -9, non-finite losses, full disks, bad files."""

import errno
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import pytest
import torch
from conftest import stepped, tiny_config, wait_for_command, written
from typer.testing import CliRunner

from minigpt.cli.main import app
from minigpt.errors import Interrupted, RunError, UsageError
from minigpt.files import atomic_file
from minigpt.formats import checkpoint as checkpoint_module
from minigpt.formats.checkpoint import load_checkpoint, resume_config
from minigpt.formats.snapshots import read_snapshots
from minigpt.runs.run import train
from minigpt.training import Trainer

runner = CliRunner()


def per_step(run_dir, key="train_loss"):
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return {r["step"]: r[key] for r in records if key in r}


def config(*extra):
    return tiny_config("model.dropout=0.1", "train.steps=40", "train.eval_interval=10", "train.log_interval=1", *extra)


def interrupt_at(monkeypatch, step, signum=signal.SIGINT):
    original = Trainer.train_step

    def train_step(self):
        loss = original(self)
        if self.step == step:
            os.kill(os.getpid(), signum)
        return loss

    monkeypatch.setattr(Trainer, "train_step", train_step)


@pytest.mark.parametrize("optimizer", ["adamw", "muon"])
def test_interrupted_and_resumed_run_matches_the_uninterrupted_one(names_file, tmp_path, monkeypatch, optimizer):
    chosen = f"train.optimizer='{optimizer}'"
    whole = train(config(chosen), names_file, out_dir=tmp_path / "whole", quiet=True)
    interrupt_at(monkeypatch, 17)
    with pytest.raises(Interrupted) as stopped:
        train(config(chosen), names_file, out_dir=tmp_path / "split", quiet=True)
    assert stopped.value.exit_code == 130 and "--resume" in str(stopped.value)
    assert load_checkpoint(tmp_path / "split" / "last.pt").step == 17
    monkeypatch.undo()
    shutil.copytree(tmp_path / "split", tmp_path / "old")
    resumed = train(resume_config(tmp_path / "split"), quiet=True, resume_from=tmp_path / "split")
    assert per_step(resumed.run_dir) == per_step(whole.run_dir)  # every step's loss, exactly
    # saved before wte and wpe had an AdamW group of their own: one group fewer, they first in the first
    saved = torch.load(tmp_path / "old" / "last.pt", weights_only=False)
    adam = saved["optimizer"]["adamw"] if optimizer == "muon" else saved["optimizer"]
    embeddings, rest, *others = adam["param_groups"]
    assert len(embeddings["params"]) == 2
    adam["param_groups"] = [{**rest, "params": embeddings["params"] + rest["params"]}, *others]
    torch.save(saved, tmp_path / "old" / "last.pt")
    old = train(resume_config(tmp_path / "old"), quiet=True, resume_from=tmp_path / "old")
    assert per_step(old.run_dir) == per_step(whole.run_dir)
    assert per_step(resumed.run_dir, "val_loss") == per_step(whole.run_dir, "val_loss")
    a, b = (load_checkpoint(d / "last.pt").model.state_dict() for d in (whole.run_dir, resumed.run_dir))
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert resumed.best_val_loss == whole.best_val_loss and resumed.steps == 40
    a, b = (read_snapshots(d) for d in (whole.run_dir, resumed.run_dir))  # the same snapshots, to the bit
    assert a.steps == b.steps and len(a.steps) > 5
    assert all(torch.equal(x, y) for name in a.weights for x, y in zip(a.weights[name]["q"], b.weights[name]["q"]))


def test_sigterm_saves_and_reports_143(names_file, tmp_path, monkeypatch):
    interrupt_at(monkeypatch, 5, signal.SIGTERM)
    with pytest.raises(Interrupted) as stopped:
        train(config(), names_file, out_dir=tmp_path / "r", quiet=True)
    assert stopped.value.exit_code == 143 and load_checkpoint(tmp_path / "r" / "last.pt").step == 5


def start_training(names_file, out, *extra):
    args = [
        sys.executable,
        "-m",
        "minigpt",
        "train",
        "-c",
        "tiny",
        "--data",
        str(names_file),
        "--out",
        str(out),
        "--steps",
        "10000000",
        "--quiet",
        *extra,
    ]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_real_process_stops_cleanly_on_a_signal(names_file, tmp_path, signum, code):
    proc = start_training(names_file, tmp_path / "run", "--set", "train.eval_interval=1000000")
    wait_for_command(proc, stepped(tmp_path / "run" / "metrics.jsonl"))
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1].endswith(f"Resume with: minigpt train --resume {tmp_path / 'run'}")
    assert load_checkpoint(tmp_path / "run" / "last.pt").step > 0


@pytest.mark.parametrize("resumed", [False, True])
def test_a_signal_before_the_first_step_stops_the_run_at_once(names_file, tmp_path, monkeypatch, resumed):
    """SIGTERM to a run that had not reached its first step (compiling on a CPU, a first batch that takes minutes)
    waited for that step to end: `timeout 60` left one running 17 minutes (91 §19). The first signal now stops it
    at once, with nothing to save: a new run leaves no folder, a resumed one its checkpoint as it was."""
    run = tmp_path / "run"
    if resumed:
        train(config("train.steps=10"), names_file, out_dir=run, quiet=True)
    original = Trainer.train_step

    def slow_first_step(self):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # ended by the signal now; before, slept through, and the run stopped after this step
        return original(self)

    monkeypatch.setattr(Trainer, "train_step", slow_first_step)
    with pytest.raises(Interrupted) as stopped:
        if resumed:
            train(resume_config(run, ["train.steps=20"]), quiet=True, resume_from=run)
        else:
            train(config(), names_file, out_dir=run, quiet=True)
    assert stopped.value.exit_code == 143 and "stopped before the first step" in str(stopped.value)
    if resumed:
        assert load_checkpoint(run / "last.pt").step == 10 and f"--resume {run / 'last.pt'}" in str(stopped.value)
    else:
        assert not run.exists() and "nothing was trained" in str(stopped.value)


def test_kill_9_at_any_moment_leaves_loadable_checkpoints(names_file, tmp_path):
    run = tmp_path / "run"
    rng = random.Random(0)
    for attempt in range(3):  # kill, resume, kill again...
        extra = ["--set", "train.eval_interval=1"]  # a checkpoint every step: many chances to die mid-write
        if attempt == 0:
            proc = start_training(names_file, run, *extra)
        else:
            proc = subprocess.Popen(
                [sys.executable, "-m", "minigpt", "train", "--resume", str(run), "--quiet"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        wait_for_command(proc, written(run / "last.pt"))
        time.sleep(rng.uniform(0.2, 0.6))
        proc.kill()
        proc.communicate()
        for path in run.glob("*.pt"):  # best.pt may be a step ahead: it is written first
            if path.name == "snapshots.pt":
                assert read_snapshots(run).steps[0] == 0  # written whole, or not at all
            else:
                assert load_checkpoint(path).step > 0


def test_non_finite_loss_stops_with_the_step_and_keeps_the_last_good_checkpoint(names_file, tmp_path, monkeypatch):
    original = Trainer.train_step

    def train_step(self):
        loss, tokens = original(self)
        return (torch.full_like(loss, float("nan")), tokens) if self.step == 13 else (loss, tokens)

    monkeypatch.setattr(Trainer, "train_step", train_step)
    with pytest.raises(RunError, match=r"loss became nan at step 13; the last good checkpoint is .*last.pt"):
        train(config("train.log_interval=5"), names_file, out_dir=tmp_path / "r", quiet=True)
    assert load_checkpoint(tmp_path / "r" / "last.pt").step == 10


def test_full_disk_keeps_the_previous_checkpoint(names_file, tmp_path, monkeypatch):
    run = tmp_path / "r"
    train(config("train.steps=10"), names_file, out_dir=run, quiet=True)
    before = (run / "last.pt").read_bytes()

    def onto_a_full_disk(path, data, failed):
        def write(f):
            raise OSError(errno.ENOSPC, "No space left on device")

        return atomic_file.write_atomically(path, write, failed)

    monkeypatch.setattr(checkpoint_module, "write_bytes", onto_a_full_disk)
    with pytest.raises(RunError, match="cannot write checkpoint .*No space left on device"):
        train(resume_config(run, ["train.steps=20"]), quiet=True, resume_from=run)
    assert (run / "last.pt").read_bytes() == before
    assert not list(run.glob(".*.tmp"))


def test_resume_refuses_what_it_cannot_honour(names_file, tmp_path):
    run = tmp_path / "r"
    train(config("train.steps=10"), names_file, out_dir=run, quiet=True)
    with pytest.raises(
        UsageError, match="already complete at step 10: it has taken its 10 steps; resume with --steps 20"
    ):
        train(resume_config(run), quiet=True, resume_from=run)
    with pytest.raises(UsageError, match="model.n_layer cannot change when resuming"):
        resume_config(run, ["model.n_layer=2"])
    with pytest.raises(
        UsageError, match="model.dropout cannot change when resuming"
    ):  # not a shape: named for what it is
        resume_config(run, ["model.dropout=0.5"])
    with pytest.raises(UsageError, match="optimizer state does not fit train.optimizer = 'adamw'"):
        train(resume_config(run, ["train.steps=20", "train.optimizer='adamw'"]), quiet=True, resume_from=run)
    names_file.write_text(names_file.read_text() + "zed\n")
    with pytest.raises(UsageError, match="names have changed"):
        train(resume_config(run, ["train.steps=20"]), quiet=True, resume_from=run)


def cli(*args):
    result = runner.invoke(app, [str(a) for a in args])
    lines = result.stderr.strip().splitlines()
    return result.exit_code, lines, result.output


def assert_one_line_error(args, code, message):
    exit_code, lines, output = cli(*args)
    assert exit_code == code, output
    assert len(lines) == 1 and lines[0].startswith("minigpt: error:"), lines
    assert message in lines[0], lines[0]
    assert "Traceback" not in output


class Evil:
    def __reduce__(self):
        return (os.system, ("touch pwned",))


@pytest.fixture
def bad_checkpoints(tmp_path, trained_run):
    good = (trained_run[0] / "last.pt").read_bytes()
    files = {
        "truncated": good[: len(good) // 2],
        "random": random.Random(1).randbytes(5000),
    }
    for name, content in files.items():
        (tmp_path / f"{name}.pt").write_bytes(content)
    torch.save({"weights": Evil()}, tmp_path / "evil.pt")
    torch.save({"state_dict": {"fc.weight": torch.zeros(2, 2)}}, tmp_path / "foreign.pt")
    newer = torch.load(trained_run[0] / "last.pt", weights_only=True)
    torch.save({**newer, "version": 99}, tmp_path / "newer.pt")
    return tmp_path


@pytest.mark.parametrize(
    "name, message",
    [
        ("truncated", "cannot be read as a checkpoint"),
        ("random", "cannot be read as a checkpoint"),
        ("evil", "refused: the file holds pickled objects or code"),
        ("foreign", "not a minigpt checkpoint"),
        ("newer", "written by a newer minigpt (format version 99"),
    ],
)
def test_bad_checkpoint_files(bad_checkpoints, name, message, monkeypatch):
    monkeypatch.chdir(bad_checkpoints)
    path = bad_checkpoints / f"{name}.pt"
    assert_one_line_error(["sample", path], 2, f"{path}: {message}")
    assert not (bad_checkpoints / "pwned").exists()  # the pickled code never ran


def test_bad_names_files(tmp_path):
    (tmp_path / "latin1.txt").write_bytes("anna\nren\xe9e\n".encode("latin-1"))
    assert_one_line_error(["train", "--data", tmp_path, "-c", "tiny"], 2, "is a directory")
    assert_one_line_error(["train", "--data", tmp_path / "latin1.txt", "-c", "tiny"], 2, "line 2 is not valid UTF-8")
    (tmp_path / "blank.txt").write_text("\n \n\t\n")
    assert_one_line_error(["train", "--data", tmp_path / "blank.txt", "-c", "tiny"], 2, "no names")


def test_awkward_but_valid_names_files_train(tmp_path):
    names = ["zoë", "peña", "o'neil", "jean-luc", "anna", "anna", "maximiliananderson"] * 3
    path = tmp_path / "names.txt"
    path.write_bytes(("\ufeff" + "\r\n".join(names) + "\r\n").encode("utf-8"))  # BOM and CRLF
    code, lines, output = cli("train", "-c", "tiny", "--data", path, "--out", tmp_path / "r", "--steps", 5, "--quiet")
    assert code == 0, output
    assert lines == [
        "minigpt: note: 3 training names are longer than the block size allows (15 characters) "
        "and were cut to fit; --set model.block_size=N reads names of up to N - 1 characters whole"
    ]
    chars = load_checkpoint(tmp_path / "r").tokenizer.chars
    assert {"ë", "ñ", "'", "-"} <= set(chars) and "\ufeff" not in chars and "\r" not in chars
    single = tmp_path / "one.txt"
    single.write_text("anna")
    assert cli("train", "-c", "tiny", "--data", single, "--out", tmp_path / "one", "--steps", 3, "--quiet")[0] == 0


def test_bad_configs_from_the_command_line(tmp_path, names_file):
    (tmp_path / "bad.toml").write_text("[model]\nn_layer = \n")
    base = ["train", "--data", names_file]
    assert_one_line_error([*base, "-c", tmp_path / "bad.toml"], 2, "not valid TOML")
    assert_one_line_error(
        [*base, "--set", "model.n_head=3"], 2, "model.n_embd (64) must be divisible by model.n_head (3)"
    )
    assert_one_line_error([*base, "--set", "model.n_embd=-4"], 2, "must be positive")
    assert_one_line_error([*base, "--lr", "-1"], 2, "train.lr must be positive")
    assert_one_line_error([*base, "--set", "train.steps=lots"], 2, "train.steps must be int")


@pytest.mark.parametrize(
    "options, message",
    [
        (["-t", "-1"], "--temperature must not be negative"),
        (["-t", "nan"], "--temperature must be a finite number, got nan"),
        (["--top-p", "0"], "--top-p must be in (0, 1]"),
        (["--top-p", "1.5"], "--top-p must be in (0, 1]"),
        (["--top-k", "-1"], "--top-k must not be negative"),
        (["-n", "0"], "--num must be at least 1"),
        (["--prefix", "é"], "never saw: 'é'"),
        (["--prefix", "a" * 16], "at most 15"),
    ],
)
def test_bad_sampling_options_from_the_command_line(trained_run, options, message):
    assert_one_line_error(["sample", trained_run[0], *options], 2, message)


def test_a_sampling_option_means_on_the_command_line_what_it_means_in_a_recipe(trained_run):
    """--top-k 0 keeps every character, as sample.top_k = 0 does; -t 0 takes the likeliest each time."""
    run = trained_run[0]
    every = runner.invoke(app, ["sample", str(run), "-n", "5", "--seed", "3", "--top-k", "0"])
    assert (
        every.exit_code == 0
        and every.stdout == runner.invoke(app, ["sample", str(run), "-n", "5", "--seed", "3"]).stdout
    )
    greedy = [runner.invoke(app, ["sample", str(run), "-n", "3", "--seed", str(seed), "-t", "0"]) for seed in (1, 2)]
    assert all(r.exit_code == 0 for r in greedy) and greedy[0].stdout == greedy[1].stdout  # no draw matters
    assert len(set(greedy[0].stdout.split())) == 1  # the one likeliest name, every time


def test_with_a_seed_the_first_names_do_not_depend_on_how_many_are_asked_for(trained_run):
    run = trained_run[0]
    names = {
        n: runner.invoke(app, ["sample", str(run), "-n", str(n), "--seed", "7"]).stdout.split() for n in (1, 5, 10)
    }
    assert names[10][:5] == names[5] and names[10][:1] == names[1]


def test_bad_eval_and_inspect_input(trained_run, tmp_path):
    odd = tmp_path / "odd.txt"
    odd.write_text("anna\nzoë\n", encoding="utf-8")
    assert_one_line_error(["eval", trained_run[0], "--data", odd], 2, "has characters the model never saw: 'ë'")
    assert_one_line_error(["inspect-attention", trained_run[0], "zoë"], 2, "never saw: 'ë'")


def test_unwritable_output_directory(tmp_path, names_file):
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert_one_line_error(["train", "--data", names_file, "--out", blocker / "run"], 2, "cannot write to run directory")
    assert_one_line_error(["train", "--data", names_file, "--out", blocker], 2, "exists and is not a directory")


def test_debug_shows_the_traceback(tmp_path):
    quiet = runner.invoke(app, ["sample", str(tmp_path / "x.pt")])
    assert quiet.exit_code == 2 and isinstance(quiet.exception, SystemExit) and "Traceback" not in quiet.output
    loud = runner.invoke(app, ["--debug", "sample", str(tmp_path / "x.pt")])
    assert isinstance(loud.exception, UsageError) and "checkpoint not found" in str(loud.exception)  # raised on


def test_second_ctrl_c_during_a_save_stops_at_once_and_corrupts_nothing(names_file, tmp_path, monkeypatch):
    run = tmp_path / "r"
    train(config("train.steps=10"), names_file, out_dir=run, quiet=True)
    before = (run / "last.pt").read_bytes()
    interrupt_at(monkeypatch, 13)  # the first Ctrl-C: finish the step, then save
    real_save = torch.save

    def save_interrupted_again(obj, f):
        real_save(obj, f)
        os.kill(os.getpid(), signal.SIGINT)  # the second Ctrl-C, while the file is half-way to disk

    monkeypatch.setattr(checkpoint_module.torch, "save", save_interrupted_again)
    with pytest.raises(Interrupted, match="stopped at once by a second signal") as stopped:
        train(resume_config(run, ["train.steps=20"]), quiet=True, resume_from=run)
    assert stopped.value.exit_code == 130
    assert (run / "last.pt").read_bytes() == before and not list(run.glob(".*.tmp"))


@pytest.mark.parametrize(
    "command",
    [
        "sample {ckpt}",
        "eval {ckpt} --data {data}",
        "inspect-attention {ckpt} ab",
        "info {ckpt}",
        "train --resume {ckpt}",
    ],
)
def test_a_checkpoint_with_a_non_finite_weight_is_refused_by_every_command(trained_run, tmp_path, command):
    run_dir, data = trained_run
    raw = torch.load(run_dir / "last.pt", weights_only=True)
    raw["model"]["layer0.attn_wq"][0, 0] = float("nan")
    torch.save(raw, tmp_path / "last.pt")
    result = runner.invoke(app, command.format(ckpt=tmp_path / "last.pt", data=data).split())
    assert result.exit_code == 2, result.output
    assert "weight layer0.attn_wq holds 1 non-finite value (nan or inf)" in result.stderr


@pytest.fixture
def crafted(trained_run, tmp_path):
    """Checkpoints made from the shared run, with their stored recipe changed: {name: path}."""
    raw = torch.load(trained_run[0] / "best.pt", weights_only=True)

    def with_model(name, **changes):
        edited = {**raw, "config": {**raw["config"], "model": {**raw["config"]["model"], **changes}}}
        torch.save(edited, tmp_path / name)
        return tmp_path / name

    return with_model


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"n_embd": 8192}, "would have 805,"),  # an 84 KB file once allocated 3.4 GB before it was refused
        ({"n_layer": 10**7}, "minigpt builds at most 100,000,000"),  # once grew without bound
        ({"n_embd": 2048, "n_head": 4}, "the weights hold"),  # within the budget, but not what the file holds
        ({"n_layer": "2"}, "model.n_layer must be int, got str"),
        ({"dropout": 7.0}, "model.dropout must be in [0, 1)"),
    ],
)
def test_a_crafted_recipe_in_a_checkpoint_is_refused_before_anything_is_built(crafted, changes, message, monkeypatch):
    import minigpt.formats.checkpoint as module

    built = []
    monkeypatch.setattr(module, "GPT", lambda config: built.append(config))
    result = runner.invoke(app, ["sample", str(crafted("crafted.pt", **changes)), "-n", "1"])
    assert result.exit_code == 2 and message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert built == []


def test_crafted_imports_are_refused_before_anything_is_built(trained_run, tmp_path):
    from minigpt.formats.microgpt_json import import_microgpt

    document = {
        "hyperparameters": {"n_layer": 10**7, "n_embd": 16, "n_head": 4, "block_size": 16, "vocab_size": 3},
        "uchars": ["a", "b"],
        "state_dict": {},
    }
    (tmp_path / "bomb.json").write_text(json.dumps(document))
    with pytest.raises(UsageError, match="minigpt builds at most"):
        import_microgpt(tmp_path / "bomb.json", tmp_path / "out.pt")
    assert not (tmp_path / "out.pt").exists()
    pytest.importorskip("safetensors.torch")
    runner.invoke(app, ["export", str(trained_run[0]), str(tmp_path / "st"), "--format", "safetensors"])
    config = json.loads((tmp_path / "st" / "config.json").read_text())
    (tmp_path / "st" / "config.json").write_text(json.dumps({**config, "n_layer": 10**7}))
    result = runner.invoke(app, ["import", str(tmp_path / "st"), str(tmp_path / "out.pt")])
    assert result.exit_code == 2 and "minigpt builds at most" in result.stderr and not (tmp_path / "out.pt").exists()


@pytest.mark.parametrize(
    "command, ending",
    [
        (["inspect-attention", "{run}", "emma", "--json-file", "{out}"], ".json"),
        (["inspect-attention", "{run}", "emma", "--png", "{out}"], ".png"),
        (["plot", "{run}", "--out", "{out}"], ".png"),
    ],
)
def test_output_files_are_not_replaced_without_overwrite_and_never_a_checkpoint(trained_run, tmp_path, command, ending):
    run_dir = trained_run[0]
    existing = tmp_path / f"mine{ending}"
    existing.write_text("keep me")
    fill = lambda out: [part.format(run=run_dir, out=out) for part in command]
    result = runner.invoke(app, fill(existing))
    assert result.exit_code == 2 and "already exists; pass --overwrite" in result.stderr
    assert existing.read_text() == "keep me"
    checkpoint = tmp_path / f"best{ending}"  # a checkpoint under the output's name
    checkpoint.write_bytes((run_dir / "best.pt").read_bytes())
    result = runner.invoke(app, fill(checkpoint) + ["--overwrite"])
    assert result.exit_code == 2 and "is a checkpoint" in result.stderr
    assert checkpoint.read_bytes() == (run_dir / "best.pt").read_bytes()


def test_a_line_cut_short_by_a_full_disk_never_blocks_resume_or_plot(names_file, tmp_path, capsys):
    run = tmp_path / "run"
    train(config("train.steps=20"), names_file, out_dir=run, quiet=True)
    metrics = run / "metrics.jsonl"
    metrics.write_text(metrics.read_text() + '{"step": 21, "train_lo')  # the disk filled mid-line
    result = runner.invoke(app, ["plot", str(run), "--out", str(tmp_path / "loss.png")])
    assert result.exit_code == 0 and "the last line was cut short" in result.stderr
    resumed = train(resume_config(run, ["train.steps=30"]), quiet=True, resume_from=run)
    assert resumed.steps == 30 and "line 24 was cut short" in capsys.readouterr().err
    steps = [json.loads(line)["step"] for line in metrics.read_text().splitlines()]  # every line whole again
    assert steps == sorted(steps) and steps[-1] == 30


def test_a_full_disk_while_logging_stops_the_run_in_one_line(names_file, tmp_path, monkeypatch):
    from minigpt.runs.recorder import RunRecords

    class FullDisk:
        def write(self, text):
            raise OSError(errno.ENOSPC, "No space left on device")

        def close(self):
            pass

    def log_onto_a_full_disk(self, trainer, train_loss):
        self.files["metrics.jsonl"] = FullDisk()
        self.write("metrics.jsonl", "{}")

    monkeypatch.setattr(RunRecords, "log", log_onto_a_full_disk)
    with pytest.raises(RunError, match="cannot write metrics.jsonl: No space left on device; the checkpoints"):
        train(config("train.steps=20"), names_file, out_dir=tmp_path / "run", quiet=True)


def test_overwrite_clears_the_old_run_before_the_new_one_starts(names_file, tmp_path, monkeypatch):
    run = tmp_path / "run"
    train(config("train.steps=20"), names_file, out_dir=run, quiet=True)
    old_best = load_checkpoint(run / "best.pt")
    interrupt_at(monkeypatch, 2)  # the new run stops before its first evaluation
    with pytest.raises(Interrupted):
        train(config("train.steps=20", "train.seed=5"), names_file, out_dir=run, overwrite=True, quiet=True)
    assert not (run / "best.pt").exists()  # the old run's best.pt would sample the old model
    assert load_checkpoint(run).step == 2 and load_checkpoint(run).config.train.seed == 5
    assert old_best.step == 20


def test_one_training_at_a_time_in_a_run_directory(names_file, tmp_path):
    from minigpt.runs.run_directory import RunLock

    run = tmp_path / "run"
    train(config("train.steps=10"), names_file, out_dir=run, quiet=True)
    before = {p.name: p.read_bytes() for p in run.iterdir()}
    held = RunLock(run)  # as a training in another process holds it
    try:
        for args in (
            ["--resume", str(run), "--steps", "20"],
            ["-c", "tiny", "--data", str(names_file), "--out", str(run), "--overwrite"],
        ):
            result = runner.invoke(app, ["train", *args])
            assert result.exit_code == 2, result.output
            assert f"run directory {run} is in use by another training (process {os.getpid()})" in result.stderr
    finally:
        held.release()
    assert {p.name: p.read_bytes() for p in run.iterdir()} == before  # nothing touched
    assert train(resume_config(run, ["train.steps=20"]), quiet=True, resume_from=run).steps == 20  # free again


def test_resuming_from_an_earlier_checkpoint_than_last_needs_overwrite_later(names_file, tmp_path):
    run = tmp_path / "run"
    train(config("train.steps=40", "train.patience=0", "train.keep_best=false"), names_file, out_dir=run, quiet=True)
    (run / "best.pt").write_bytes((run / "last.pt").read_bytes())
    torch.save({**torch.load(run / "best.pt", weights_only=True), "step": 10}, run / "early.pt")
    lines = (run / "metrics.jsonl").read_text()
    result = runner.invoke(app, ["train", "--resume", str(run / "early.pt"), "--steps", "30"])
    assert result.exit_code == 2 and "pass --overwrite-later" in result.stderr and "at step 40" in result.stderr
    assert (run / "metrics.jsonl").read_text() == lines and load_checkpoint(run / "last.pt").step == 40
    result = runner.invoke(
        app, ["train", "--resume", str(run / "early.pt"), "--steps", "30", "--overwrite-later", "--quiet"]
    )
    assert result.exit_code == 0, result.output
    assert load_checkpoint(run / "last.pt").step == 30 and per_step(run)[30] is not None and 40 not in per_step(run)


def test_sample_prints_control_characters_of_a_shared_vocabulary_as_escapes(trained_run, tmp_path):
    raw = torch.load(trained_run[0] / "best.pt", weights_only=True)
    raw["vocab"] = ["\x1b"] + raw["vocab"][1:]  # a checkpoint from someone else, with an escape character
    torch.save(raw, tmp_path / "shared.pt")
    result = runner.invoke(app, ["sample", str(tmp_path / "shared.pt"), "-n", "3", "--prefix", "\x1b", "--seed", "1"])
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.stdout and [line[:4] for line in result.stdout.splitlines()] == ["\\x1b"] * 3
    as_json = runner.invoke(app, ["sample", str(tmp_path / "shared.pt"), "-n", "1", "--prefix", "\x1b", "--json"])
    assert json.loads(as_json.stdout)["names"][0]["name"].startswith("\x1b")  # JSON escapes it its own way


def test_eval_names_why_the_validation_names_are_gone_and_its_advice_works(names_file, tmp_path):
    run = tmp_path / "r"
    train(config("train.steps=10"), names_file, out_dir=run, quiet=True)
    names_file.write_text(names_file.read_text().replace("a", "e", 40))  # the training file changed since the run
    refused = runner.invoke(app, ["eval", str(run)])
    assert (
        refused.exit_code == 2 and "changed since the run trained" in refused.stderr and "--data FILE" in refused.stderr
    )
    followed = runner.invoke(app, ["eval", str(run), "--data", str(names_file)])
    assert followed.exit_code == 0 and followed.stdout.startswith("loss ")


def test_a_failure_keeps_its_message_and_every_reporter_hears_the_end(names_file, tmp_path, monkeypatch):
    """A full disk while logging: the file's close flushes again and fails again, which must not replace the
    message, nor keep the display's and the user's reporters from hearing the end."""
    from minigpt.runs.recorder import RunRecords
    from minigpt.training import Reporter

    class FullDisk:
        def write(self, text):
            raise OSError(errno.ENOSPC, "No space left on device")

        flush = close = lambda self: FullDisk.write(self, "")

    def log_onto_a_full_disk(self, trainer, train_loss):
        self.files["metrics.jsonl"] = FullDisk()
        self.write("metrics.jsonl", "{}")

    class Ends(Reporter):
        heard = []

        def end(self, trainer, result):
            self.heard.append(result)

    monkeypatch.setattr(RunRecords, "log", log_onto_a_full_disk)
    with pytest.raises(RunError, match="cannot write metrics.jsonl: No space left on device; the checkpoints"):
        train(config("train.steps=20"), names_file, out_dir=tmp_path / "run", quiet=True, report=Ends())
    assert Ends.heard == [None]
    result = runner.invoke(app, ["train", "-c", "tiny", "--data", names_file, "--steps", 20, "--out", tmp_path / "cli"])
    assert result.exit_code == 1  # a full disk is exit 1 in every command, as writing a checkpoint onto one is


def test_a_full_disk_is_one_exit_code_whatever_was_written(trained_run, tmp_path, monkeypatch):
    from minigpt.files import atomic_file as atomic

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic.os, "fsync", full)
    for args in (
        ["export", trained_run[0], tmp_path / "hf", "--format", "safetensors"],
        ["inspect-attention", trained_run[0], "--html", tmp_path / "page.html"],
        ["inspect-attention", trained_run[0], "emma", "--json-file", tmp_path / "emma.json"],
    ):
        assert_one_line_error(args, 1, "No space left on device")


def test_a_checkpoint_whose_evaluation_was_not_logged_logs_it_when_the_run_goes_on(names_file, tmp_path, monkeypatch):
    """The disk fills after best.pt and last.pt of step 10 but before the evaluation's line: resuming writes it
    from the checkpoint, so that the records hold every evaluation."""
    from minigpt.runs.recorder import RunRecords

    def full_at_the_evaluation(self, trainer, samples):
        raise RunError("cannot write metrics.jsonl: No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(RunRecords, "evaluation", full_at_the_evaluation)
        with pytest.raises(RunError):
            train(config("train.steps=20", "train.eval_interval=10"), names_file, out_dir=tmp_path / "run", quiet=True)
    saved = load_checkpoint(tmp_path / "run" / "last.pt")
    assert saved.step == 10
    train(resume_config(tmp_path / "run", ["train.steps=20"]), quiet=True, resume_from=tmp_path / "run")
    records = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records if "val_loss" in r] == [10, 20]
    assert next(r["val_loss"] for r in records if "val_loss" in r) == pytest.approx(saved.val_loss)


def test_an_edited_config_toml_is_kept_when_the_run_resumes(names_file, tmp_path, capsys):
    """--resume trained the checkpoint's recipe and rewrote config.toml without a word, losing the user's edit."""
    import os
    import time

    from conftest import tiny_config

    from minigpt.formats.checkpoint import resume_config
    from minigpt.runs.run import train

    run_dir = train(
        tiny_config("train.steps=4", "train.eval_interval=2"), names_file, out_dir=tmp_path / "run", quiet=True
    ).run_dir
    recipe = run_dir / "config.toml"
    recipe.write_text(recipe.read_text() + "# my note: try lr 0.02\n")
    later = time.time() + 5
    os.utime(recipe, (later, later))  # edited after the last checkpoint
    train(resume_config(run_dir, ["train.steps=6"]), quiet=True, resume_from=run_dir)
    assert "my note" in (run_dir / "config.toml.edited").read_text()
    assert "was edited after the run's last checkpoint" in capsys.readouterr().err


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_at_any_moment_of_a_commands_start_is_one_line_and_its_exit_code(signum, tmp_path, names_file):
    """Ctrl-C while torch and numpy loaded was swallowed (the run trained to its end) or ended in numpy's import
    errors; SIGTERM before the handlers killed the command with no line. At each of these moments now: one line,
    128 + the signal, no traceback (the interpreter's own first hundredths of a second aside)."""
    import time

    said = []
    for delay in (0.3, 0.6, 1.0, 1.5):
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "minigpt",
                "train",
                "-c",
                "tiny",
                "--data",
                str(names_file),
                "--out",
                str(tmp_path / f"r{delay}"),
                "--quiet",
                "--no-page",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(delay)
        process.send_signal(signum)
        _, err = process.communicate(timeout=120)
        said.append((delay, process.returncode, err))
        if process.returncode == 0:  # the whole run ended before the signal: a faster machine than planned
            continue
        assert process.returncode == 128 + signum and "Traceback" not in err, (delay, err)
        assert len([line for line in err.splitlines() if line.startswith("minigpt:")]) == 1, (delay, err)
    assert any(code == 128 + signum for _, code, _ in said), said


SWEEP_SPEC = """[sweep]
config = "tiny"
trials = 1
steps = 3

[space]
"train.lr" = {low = 1e-3, high = 1e-2, log = true}
"""


@pytest.mark.parametrize("command", ["sweep", "inspect-attention --html", "export"])
def test_sigterm_at_any_moment_of_a_sweep_a_page_or_an_export_is_one_line_and_nothing_half_written(
    command, trained_run, tmp_path
):
    """SIGTERM before a sweep's first trial, and anywhere in `inspect-attention --html` and `export`, killed the
    command with no line, or was swallowed by a library and said as another failure ("best.pt: cannot be read as
    a checkpoint: the file is cut short or damaged"). Now: 143 and one line, or the work done and 0."""
    run_dir, names = trained_run
    (tmp_path / "study.toml").write_text(SWEEP_SPEC, encoding="utf-8")
    out = tmp_path / "out"
    args = {
        "sweep": ["sweep", str(tmp_path / "study.toml"), "--data", str(names), "--out", str(out)],
        "inspect-attention --html": ["inspect-attention", str(run_dir), "emma", "--html", str(out)],
        "export": ["export", str(run_dir), str(out)],
    }[command]
    codes = []
    for delay in (0.3, 0.6, 1.0, 1.5, 2.5):
        shutil.rmtree(out, ignore_errors=True)
        out.unlink(missing_ok=True)
        process = subprocess.Popen(
            [sys.executable, "-m", "minigpt", *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        time.sleep(delay)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=300)
        codes.append(process.returncode)
        assert process.returncode in (0, 143) and "Traceback" not in err and "error" not in err, (delay, err)
        if process.returncode == 143:
            assert [line for line in err.splitlines() if line.startswith("minigpt:")] == err.splitlines()[-1:]
        leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith((".", "out.")) or "tmp" in p.name]
        assert not leftovers, (delay, leftovers)
        if out.is_file():  # the page is whole or not there
            assert out.read_text(encoding="utf-8").rstrip().endswith("</html>"), delay
    assert 143 in codes, codes


def test_a_signal_a_library_swallowed_is_still_the_commands_end(monkeypatch):
    """tqdm, starting its monitor thread, catches any Exception, and a reader takes any failure for damage: the
    Interrupted a signal raised inside them was lost (the sweep trained on, exit 0) or said as another error."""
    import typer

    from minigpt.cli import signals
    from minigpt.cli.app import reporting_errors
    from minigpt.errors import UsageError

    def swallowed_then(outcome):
        def command():
            signals.HEARD.append(signal.SIGTERM)  # what heard_early does before it raises
            if outcome is not None:
                raise outcome
            return "done"

        return command

    for outcome in (UsageError("best.pt: cannot be read as a checkpoint"), None):
        with pytest.raises(typer.Exit) as ended:
            reporting_errors(swallowed_then(outcome))
        assert ended.value.exit_code == 143
    assert reporting_errors(lambda: "done") == "done"  # a command that heard nothing ends as it ends


def test_a_signal_swallowed_before_a_runs_first_step_stops_it_after_that_step(names_file, tmp_path):
    from conftest import tiny_config

    from minigpt.errors import Interrupted
    from minigpt.runs.setup import StopSignals
    from minigpt.training import Trainer

    trainer = Trainer.from_names(tiny_config(), ["emma", "olivia", "ava"] * 20)
    with StopSignals(trainer, "stopped before the first step") as stop:
        with pytest.raises(Interrupted):
            stop._handle(signal.SIGTERM, None)
        assert stop.requested == signal.SIGTERM  # what the loop reads after its step, had the raise been lost


def test_a_signal_as_the_process_ends_is_one_line_and_its_exit_code():
    """Python's finalization puts the handlers back to their defaults before it tears the modules down: a signal
    then killed the command with no line (-15 after "wrote page.html")."""
    code = (
        "import os, signal\n"
        "from minigpt.cli.signals import end_process\n"
        "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})\n"
        "os.kill(os.getpid(), signal.SIGTERM)  # held, as it would be in the last moment of the exit\n"
        "end_process(0)\n"
    )
    ended = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (
        ended.returncode == 143 and ended.stderr == "minigpt: stopped by SIGTERM as it exited; everything was written\n"
    )
    quiet = subprocess.run([sys.executable, "-c", "from minigpt.cli.signals import end_process; end_process(3)"])
    assert quiet.returncode == 3
