"""The core stands on its own, as nanoGPT's two files do: the lesson files copied alone into an empty
folder, with torch and no minigpt, train a model on a Python list of names, sample from it, and save a
checkpoint under microgpt's names: the one checkpoint every minigpt command reads, and the core reads
minigpt's."""

import json
import subprocess
import sys

from test_layers import CORE_FILES, PACKAGE

SCRIPT = r"""
import json, random, sys
from pathlib import Path

sys.modules["minigpt"] = None  # an import of minigpt itself fails here, installed or not

import torch
from lesson.config import Config, GPTConfig, TrainConfig
from lesson.sampling import generate
from lesson.training import Reporter, Trainer, train_loop

rng = random.Random(0)
starts, middles, ends = ["ma", "jo", "ka", "li", "be", "sa"], ["r", "n", "l", "th", "v"], ["a", "o", "ie", "en", "y"]
names = ["".join([rng.choice(starts), rng.choice(middles), rng.choice(ends)]) for _ in range(200)]

class Losses(Reporter):
    def __init__(self):
        self.seen = []

    def log(self, trainer, train_loss):
        self.seen.append(train_loss)

config = Config(model=GPTConfig(n_layer=2, n_head=2, n_embd=32, block_size=16, dropout=0.0),
                train=TrainConfig(steps=120, batch_size=32, warmup_steps=10, eval_interval=60, log_interval=10))
trainer = Trainer.from_names(config, names[:180], names[180:])
losses = Losses()
train_loop(trainer, Path("out"), losses)
saved = torch.load("out/best.pt", weights_only=True)
print(json.dumps({"losses": losses.seen, "val_loss": trainer.val_loss, "keys": sorted(saved["model"]),
                  "vocab": saved["vocab"], "samples": generate(trainer.model, trainer.tokenizer, 5, seed=1),
                  "modules": sorted(m for m, module in sys.modules.items() if module is not None
                                    and m.split(".")[0] in ("minigpt", "typer", "rich"))}))
"""


def copy_core(folder):
    lesson = folder / "lesson"
    lesson.mkdir()
    for name in CORE_FILES:
        (lesson / name).write_bytes((PACKAGE / name).read_bytes())


def run_alone(folder, script: str, *args: str) -> dict:
    """`script` run in `folder` (the core copied into folder/lesson) with torch and no minigpt: what it printed,
    read as JSON."""
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_the_core_files_alone_train_sample_and_save_with_torch(tmp_path):
    copy_core(tmp_path)
    found = run_alone(tmp_path, SCRIPT)
    assert found["modules"] == []  # nothing of minigpt's, nor of its command line's packages
    assert found["losses"][-1] < found["losses"][0] - 0.5, found["losses"]  # it learned
    assert {
        "wte",
        "wpe",
        "lm_head",
        "layer0.attn_wq",
        "layer0.attn_wk",
        "layer0.attn_wv",
        "layer0.attn_wo",
        "layer1.mlp_fc1",
        "layer1.mlp_fc2",
    } <= set(found["keys"])
    assert len(found["samples"]) == 5 and all(set(name) <= set(found["vocab"]) for name in found["samples"])
    assert (tmp_path / "out" / "last.pt").exists() and found["val_loss"] is not None
    # the core's own checkpoint is minigpt's: `minigpt sample` reads it as it reads a run's
    sampled = subprocess.run(
        [sys.executable, "-m", "minigpt", "sample", str(tmp_path / "out"), "-n", "4", "--seed", "0"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert sampled.returncode == 0, sampled.stderr[-2000:]
    assert len(sampled.stdout.split()) >= 4 and "note" not in sampled.stderr, (sampled.stdout, sampled.stderr)


LOADS = r"""
import json, sys
sys.modules["minigpt"] = None
import torch
from lesson.sampling import generate
from lesson.training import from_checkpoint

model, tokenizer = from_checkpoint(torch.load(sys.argv[1], weights_only=True))
print(json.dumps({"names": generate(model, tokenizer, 6, seed=0), "vocab": tokenizer.chars}))
"""


def test_a_checkpoint_of_minigpt_train_loads_in_the_core_alone(tmp_path, trained_run):
    run_dir, data = trained_run
    copy_core(tmp_path)
    found = run_alone(tmp_path, LOADS, str(run_dir / "best.pt"))
    assert found["vocab"] == sorted(set(data.read_text().replace("\n", "")))
    assert len(found["names"]) == 6 and all(set(name) <= set(found["vocab"]) for name in found["names"])


def test_a_checkpoint_of_an_earlier_core_without_format_or_version_still_loads_and_says_so(
    tmp_path, trained_run, capsys
):
    """The core's own save once wrote only what sampling needs (no format, version, names or data): such a file
    loads, as version 0, with a note."""
    import torch

    from minigpt.formats.checkpoint import load_checkpoint

    run_dir, _ = trained_run
    raw = torch.load(run_dir / "best.pt", weights_only=True)
    earlier = {key: raw[key] for key in ("model", "config", "vocab", "step", "val_loss", "best_val_loss")}
    torch.save(earlier, tmp_path / "earlier.pt")
    ckpt = load_checkpoint(tmp_path / "earlier.pt")
    assert ckpt.version == 0 and ckpt.tokenizer.chars == raw["vocab"]
    assert "earlier core" in capsys.readouterr().err


REFUSES = r"""
import json, sys
from pathlib import Path
sys.modules["minigpt"] = None
from lesson.config import Config, TrainConfig
from lesson.errors import UsageError
from lesson.training import Reporter, Trainer, train_loop

names = ["anna", "bob", "carl", "dora", "emil", "fay"]
said = {}
for key, value in json.loads(sys.argv[1]):
    try:
        Trainer.from_names(Config(train=TrainConfig(**{key: value})), names, names[:2])
        said[key + "=" + json.dumps(value)] = None
    except UsageError as e:
        said[key + "=" + json.dumps(value)] = str(e)
for what, train, val in [("a string", "anna", []), ("numbers", [1, 2], []), ("nothing", [], [])]:
    try:
        Trainer.from_names(Config(), train, val)
        said[what] = None
    except UsageError as e:
        said[what] = str(e)
Path("a_file").write_text("mine")
try:
    train_loop(Trainer.from_names(Config(train=TrainConfig(steps=1)), names), Path("a_file"), Reporter())
except UsageError as e:
    said["out"] = str(e)
print(json.dumps(said))
"""

BAD_RECIPES = [
    ("optimizer", "foo"),
    ("steps", 0),
    ("steps", -3),
    ("precision", "float16"),
    ("time_limit", -1.0),
    ("seed", -1),
    ("lr", -1.0),
    ("eval_interval", 0),
    ("batch_size", 0),
]


def test_the_core_alone_refuses_what_the_command_line_refuses_in_the_same_words(tmp_path):
    """One check of a recipe (config.py's check_recipe), shared: the copied-out core refuses each value the
    command line refuses, with the same one line; and a string, numbers or nothing as the names, and an out
    path that is a file, each in one line of its own rather than Python's or torch's error."""
    import pytest

    from minigpt.errors import UsageError
    from minigpt.formats.recipes import load_config

    copy_core(tmp_path)
    said = run_alone(tmp_path, REFUSES, json.dumps(BAD_RECIPES))
    for key, value in BAD_RECIPES:
        with pytest.raises(UsageError) as refused:
            load_config(None, [f"train.{key}={json.dumps(value)}"])
        assert said[f"{key}={json.dumps(value)}"] == str(refused.value), key
    assert "a list of names" in said["a string"] and "each name is a non-empty string" in said["numbers"]
    assert "at least 1 name" in said["nothing"] and "is a file" in said["out"]
    assert (tmp_path / "a_file").read_text() == "mine"


def test_the_core_reads_the_split_and_device_keys_of_its_recipe():
    """train.val_fraction, val_max and split_seed choose the names the core holds out when it is given none, as
    the command line's split does; train.device places them."""
    from minigpt.config import Config, TrainConfig
    from minigpt.data import split_names
    from minigpt.training import Trainer

    names = [f"n{'abcdefghij'[i % 10]}{'klmnopqrst'[i // 10 % 10]}{'uvwxyz'[i // 100]}" for i in range(600)]
    recipe = TrainConfig(val_fraction=0.2, val_max=50, split_seed=7, device="cpu")
    trainer = Trainer.from_names(Config(train=recipe), names)
    train, val = split_names(names, 0.2, 50, 7)
    assert len(trainer.val_data) == len(val) == 50 and len(trainer.train_data) == len(train) == 550
    assert trainer.membership == set(train) and trainer.train_data.flat.device.type == "cpu"
