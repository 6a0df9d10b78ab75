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


def test_the_core_files_alone_train_sample_and_save_with_torch(tmp_path):
    copy_core(tmp_path)
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, env={"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout)
    assert found["modules"] == []  # nothing of minigpt's, nor of its command line's packages
    assert found["losses"][-1] < found["losses"][0] - 0.5, found["losses"]  # it learned
    assert {"wte", "wpe", "lm_head", "layer0.attn_wq", "layer0.attn_wk", "layer0.attn_wv", "layer0.attn_wo",
            "layer1.mlp_fc1", "layer1.mlp_fc2"} <= set(found["keys"])
    assert len(found["samples"]) == 5 and all(set(name) <= set(found["vocab"]) for name in found["samples"])
    assert (tmp_path / "out" / "last.pt").exists() and found["val_loss"] is not None
    # the core's own checkpoint is minigpt's: `minigpt sample` reads it as it reads a run's
    sampled = subprocess.run([sys.executable, "-m", "minigpt", "sample", str(tmp_path / "out"), "-n", "4",
                              "--seed", "0"], capture_output=True, text=True, timeout=120)
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
    done = subprocess.run([sys.executable, "-c", LOADS, str(run_dir / "best.pt")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout)
    assert found["vocab"] == sorted(set(data.read_text().replace("\n", "")))
    assert len(found["names"]) == 6 and all(set(name) <= set(found["vocab"]) for name in found["names"])


def test_a_checkpoint_of_an_earlier_core_without_format_or_version_still_loads_and_says_so(tmp_path, trained_run,
                                                                                         capsys):
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
