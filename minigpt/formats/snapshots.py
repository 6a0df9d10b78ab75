"""Training snapshots: the weights at a few steps of a run, to watch attention form.

A run keeps `train.snapshots` of them (0 keeps none) in one file, RUN/snapshots.pt: at step
0 (the weights before training), then at steps spaced evenly in log(step + train.warmup_steps) up to
train.steps (most of what a model learns, it learns early, once its learning rate has warmed up), and at the
run's last and best steps when those are not among them. A run that stops before train.steps (a time limit,
patience) has the snapshots it reached.

Each weight is kept in 8 bits per number: every row of a matrix (every vector) is scaled so
that its largest magnitude is 127, rounded to int8, and kept with its scale, so a number is
off by at most half a step of its row's scale. docs/explorer.md gives the largest difference
that makes to a logit, and the file's size.

    {"format": "minigpt-snapshots", "version": 1, "run": {...the run's identity...},
     "steps": [0, 1, 2, ...], "val_loss": [None or float, ...],
     "weights": {name: {"q": int8 [S, rows, cols], "scale": float32 [S, rows]}}}   (microgpt's names)
"""

from __future__ import annotations

import bisect
import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path

import torch

from minigpt.common.arguments import as_path, as_whole_number
from minigpt.config import MAX_SNAPSHOTS, GPTConfig
from minigpt.errors import Interrupted, UsageError
from minigpt.files.bounded import check_archive
from minigpt.files.fields import entry, expect, whole_number
from minigpt.files.run_records import read_metrics
from minigpt.formats.checkpoint import load_quietly, write_checkpoint
from minigpt.formats.checkpoint_checks import weight_trouble
from minigpt.model import GPT, load_microgpt_weights, microgpt_weights

FORMAT = "minigpt-snapshots"
VERSION = 1
FILE = "snapshots.pt"


def snapshot_steps(total: int, count: int, warmup: int = 0) -> list[int]:
    """Step 0 and up to count - 1 steps from 1 to `total`, evenly spaced in log(step), or with a warmup of
    `warmup` steps in log(step + warmup): while the learning rate climbs from 0 the weights barely move, and
    snapshots at steps 1, 2, 3, 5, 9, ... of a 100-step warmup would show one picture nine times."""
    if count <= 0:
        return []
    if count == 1 or total < 1:
        return [0]
    if count == 2:
        return [0, total]
    if warmup <= 0:
        spaced = {round(math.exp(math.log(total) * k / (count - 2))) for k in range(count - 1)}
    else:
        span = math.log((total + warmup) / warmup)
        spaced = {round(warmup * math.exp(span * k / (count - 1))) - warmup for k in range(1, count)}
    return [0] + sorted(spaced - {0})


def quantize(tensor: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A tensor as int8 per row (a vector is one row) and each row's scale: tensor ≈ q * scale."""
    rows = tensor.detach().float().cpu().reshape(tensor.shape[0] if tensor.dim() > 1 else 1, -1)
    scale = rows.abs().amax(dim=1).clamp_min(1e-12) / 127
    return torch.round(rows / scale[:, None]).to(torch.int8), scale


def dequantize(q: torch.Tensor, scale: torch.Tensor, shape) -> torch.Tensor:
    return (q.float() * scale[:, None]).reshape(shape)


@dataclass
class Snapshots:
    """A run's snapshots, in memory: taken while training, written to RUN/snapshots.pt."""

    run: dict  # what makes a run this run: its data, seed and model
    steps: list[int] = field(default_factory=list)
    val_loss: list[float | None] = field(default_factory=list)
    weights: dict[str, dict[str, list[torch.Tensor]]] = field(default_factory=dict)
    shapes: dict[str, list[int]] = field(default_factory=dict)

    def take(self, step: int, model: GPT, val_loss: float | None = None) -> None:
        """Keep the model's weights now as the snapshot of `step` (a step not kept yet)."""
        at = bisect.bisect(self.steps, step)  # kept in step order (a run's best step comes after its last)
        self.steps.insert(at, step)
        self.val_loss.insert(at, val_loss)
        for name, tensor in microgpt_weights(model).items():
            q, scale = quantize(tensor)
            kept = self.weights.setdefault(name, {"q": [], "scale": []})
            kept["q"].insert(at, q)
            kept["scale"].insert(at, scale)
            self.shapes[name] = list(tensor.shape)

    def drop_after(self, step: int) -> None:
        """Forget the snapshots after `step` (a resumed run takes them again)."""
        keep = [i for i, s in enumerate(self.steps) if s <= step]
        self.steps = [self.steps[i] for i in keep]
        self.val_loss = [self.val_loss[i] for i in keep]
        for kept in self.weights.values():
            kept["q"] = [kept["q"][i] for i in keep]
            kept["scale"] = [kept["scale"][i] for i in keep]

    def write(self, run_dir: Path) -> None:
        write_checkpoint(
            {
                "format": FORMAT,
                "version": VERSION,
                "run": self.run,
                "steps": self.steps,
                "val_loss": self.val_loss,
                "weights": {
                    name: {"q": torch.stack(kept["q"]), "scale": torch.stack(kept["scale"]), "shape": self.shapes[name]}
                    for name, kept in self.weights.items()
                }
                if self.steps
                else {},
            },
            run_dir / FILE,
        )

    def load_into(self, model: GPT, index: int) -> None:
        """Set the model's weights to snapshot `index` (dequantized), 0 to len(steps) - 1 in the order of `steps`."""
        if not isinstance(model, GPT):
            raise UsageError(
                f"load_into takes the model to set (a minigpt GPT, checkpoint.model), got {type(model).__name__}"
            )
        index = as_whole_number(index, "a snapshot's index", 0, len(self.steps) - 1)
        try:
            load_microgpt_weights(
                model,
                {
                    name: dequantize(kept["q"][index], kept["scale"][index], self.shapes[name])
                    for name, kept in self.weights.items()
                },
            )
        except ValueError as e:  # weights of another model, or missing ones: the file was edited or damaged
            raise UsageError(f"the snapshots do not fit the model: {e}") from None

    def nearest(self, step: int) -> int:
        """The index of the snapshot whose step is nearest `step` (the earlier one on a tie)."""
        return min(range(len(self.steps)), key=lambda i: (abs(self.steps[i] - step), self.steps[i]))


class RunSnapshots:
    """The snapshots a training run takes: at step 0 and at `snapshot_steps`, then at its last and
    best steps; written before each last.pt when one was taken since the last write, so that a
    resumed run finds every one up to last.pt's step; read back when the run resumes."""

    def __init__(self, run: dict, total_steps: int, count: int, model: GPT, warmup: int = 0):
        self.due = set(snapshot_steps(total_steps, count, warmup))
        self.taken = Snapshots(run)
        self.taken.take(0, model)  # before training (a resumed run reads them back instead)
        self.written: list[int] | None = None  # the steps whose snapshots are in the file

    def after_step(self, step: int, model: GPT) -> None:
        if step in self.due:
            self.taken.take(step, model)

    def keep(self, step: int, model: GPT, val_loss: float | None = None) -> None:
        """The model now, as the snapshot of `step` (the run's last or best), unless it has one; with
        its validation loss, which ties the snapshots to the run's own records."""
        if step not in self.taken.steps:
            self.taken.take(step, model, val_loss)
            return
        at = self.taken.steps.index(step)
        if val_loss is not None and self.taken.val_loss[at] != val_loss:
            self.taken.val_loss[at] = val_loss
            self.written = None  # the file is to be written again

    def write(self, run_dir: Path) -> None:
        if self.taken.steps != self.written:
            self.taken.write(run_dir)
            self.written = list(self.taken.steps)

    def resume(self, run_dir: Path, step: int) -> bool:
        """Read back the ones taken up to `step` (the steps after it take theirs again). False when the
        run began without snapshots: it cannot have a whole set of them."""
        if not (run_dir / FILE).exists():
            return False
        self.taken = read_snapshots(run_dir, self.taken.run)
        self.taken.drop_after(step)
        return True


def tensors_by_name(weights, path) -> dict:
    """The snapshots' weights: a table of {"q", "scale", "shape"} under the model's names."""
    for name, kept in expect(weights, dict, path, "'weights'").items():
        expect(kept, dict, path, f"'weights'[{name!r}]")
    return weights


def checked_weight(name: str, kept: dict, count: int, path) -> tuple[dict, list[int]]:
    """One weight's `count` snapshots, 8-bit rows and their scales, that dequantize into its shape."""
    q, scale = entry(kept, "q", torch.Tensor, path), entry(kept, "scale", torch.Tensor, path)
    shape = [whole_number(n, path, f"a size of {name}", least=1) for n in entry(kept, "shape", list, path)]
    if q.dim() != 3 or scale.dim() != 2 or q.shape[0] != count or scale.shape[0] != count:
        raise ValueError(f"{name} holds {q.shape[0] if q.dim() else 0} snapshots, not {count}")
    if q.dtype != torch.int8 or q.shape[1] != scale.shape[1] or q.shape[1] * q.shape[2] != math.prod(shape):
        raise ValueError(f"{name}'s numbers do not fill its shape {shape}")
    trouble = weight_trouble(scale)
    if trouble:
        raise ValueError(f"{name} has a scale that holds {trouble}")
    return {"q": list(q), "scale": list(scale)}, shape


def six_bit(q: torch.Tensor, scale: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """An 8-bit row coarsened to 6 bits (-31..31), as the explorer page carries snapshots: one base64
    character a number. Returns the 6-bit values and their rows' scale, rounded to float16 (the page
    carries it in two bytes; next to 6-bit numbers, its 11 bits are exact enough)."""
    return torch.round(q.float() * 31 / 127).to(torch.int8), (scale.float() * 127 / 31).half().float()


def run_identity(data_info: dict, config) -> dict:
    return {
        "train_digest": data_info.get("train_digest"),
        "val_digest": data_info.get("val_digest"),
        "seed": config.train.seed,
        "model": dataclasses.asdict(config.model),
    }


def with_later_keys(run: dict) -> dict:
    """A stored run identity with the model keys added since it was written at their defaults (model.causal:
    every model before it was causal), so that a run's own snapshots stay its own."""
    if not isinstance(run.get("model"), dict):
        return run
    defaults = {f.name: f.default for f in dataclasses.fields(GPTConfig)}
    return {**run, "model": {**defaults, **run["model"]}}


def has_snapshots(ckpt) -> bool:
    """Whether the run a loaded checkpoint comes from kept snapshots: a file beside the checkpoint (named by it,
    not by a folder such as ".")."""
    return (ckpt.path.parent / FILE).is_file()


def checkpoint_snapshots(ckpt) -> Snapshots:
    """The snapshots of the run a loaded checkpoint (formats/checkpoint.py's Checkpoint) comes from."""
    if not has_snapshots(ckpt):
        raise UsageError(
            f"{ckpt.path} has no training snapshots: there is no {FILE} beside it (trained with "
            f"train.snapshots = 0, before snapshots were kept, or imported)"
        )
    snapshots = read_snapshots(ckpt.path.parent, run_identity(ckpt.data, ckpt.config))
    check_losses_agree(snapshots, ckpt.path.parent)
    return snapshots


def check_losses_agree(snapshots: Snapshots, run_dir: Path) -> None:
    """Another run of the same names, seed and model (a shorter one, say) has snapshots that pass for this
    run's: their validation losses then disagree with the run's own records, step for step."""
    try:
        records = read_metrics(run_dir)
    except UsageError:
        return  # no records to hold them to (an import, a copied checkpoint)
    logged = {record["step"]: record["val_loss"] for record in records if record.get("val_loss") is not None}
    for step, loss in zip(snapshots.steps, snapshots.val_loss):
        if loss is not None and step in logged and logged[step] != loss:
            raise UsageError(
                f"{run_dir / FILE}: the snapshots are from another run: at step {step:,} they hold a "
                f"validation loss of {loss:.4f}, and the run's metrics.jsonl {logged[step]:.4f}"
            )


def read_snapshots(run_dir: Path, run: dict | None = None) -> Snapshots:
    """A run's snapshots file, checked: its format, that it is whole, and (given `run`) that it is this run's."""
    path = as_path(run_dir, "a run directory") / FILE
    if not path.is_file():
        raise UsageError(
            f"{run_dir} has no {FILE}: it was trained with train.snapshots = 0, before snapshots were kept, or imported"
        )
    check_archive(path, "snapshots file")
    try:
        raw = load_quietly(path)
        if not isinstance(raw, dict) or raw.get("format") != FORMAT:
            raise ValueError("not a snapshots file")
        steps = [whole_number(step, path, "a step") for step in expect(raw["steps"], list, path, "'steps'")]
        if len(steps) > MAX_SNAPSHOTS + 2:  # the recipe's, and a run's last and best steps
            raise ValueError(f"it holds {len(steps):,} snapshots; a run takes at most {MAX_SNAPSHOTS + 2}")
        if steps != sorted(set(steps)):
            raise ValueError("its steps are not in order")
        losses = [
            expect(loss, (float, type(None)), path, "a loss")
            for loss in expect(raw["val_loss"], list, path, "'val_loss'")
        ]
        if len(losses) != len(steps):
            raise ValueError(f"it holds {len(steps)} steps and {len(losses)} losses")
        snapshots = Snapshots(run=expect(raw["run"], dict, path, "'run'"), steps=steps, val_loss=losses)
        for name, kept in tensors_by_name(raw["weights"], path).items():
            snapshots.weights[name], snapshots.shapes[name] = checked_weight(name, kept, len(steps), path)
    except Interrupted:  # a signal heard while it loaded is the stop, not damage
        raise
    except Exception as e:  # a truncated zip, a missing key, a wrong shape: all the same to the user
        reason = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise UsageError(f"{path}: the snapshots file is damaged or incomplete ({reason})") from None
    if run is not None and with_later_keys(snapshots.run) != run:
        raise UsageError(f"{path}: the snapshots are from another run (other names, seed or model)")
    return snapshots
