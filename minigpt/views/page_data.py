"""What the explorer page carries (views/explorer_page.py renders it): the model's weights in one
buffer, its recipe, vocabulary and card, the run's loss curve, the check of generated names, and
what the page measures on the names (what each head tends to do, what each part costs, at the
checkpoint and at every training snapshot), kept between writes by views/page_cache.py.

    data = page_data(load_checkpoint("runs/names"), text="emma")
"""

from __future__ import annotations

import array
import base64
import copy
import sys
from pathlib import Path

import torch

from minigpt.common.failures import warn
from minigpt.common.text import as_text, boundary_mark
from minigpt.errors import UsageError
from minigpt.files.run_records import read_metrics, series
from minigpt.formats.checkpoint import Checkpoint, describe_data, validation_names
from minigpt.formats.snapshots import checkpoint_snapshots, dequantize, has_snapshots, six_bit
from minigpt.machine.threads import keep_freed_memory
from minigpt.measurements.ablation import ablate_modes, all_parts
from minigpt.measurements.head_roles import head_roles, unigram_loss
from minigpt.measurements.name_losses import evaluate_names, loss_with_mask_off
from minigpt.measurements.prefix_forest import prefix_forests
from minigpt.measurements.units import firing_prefixes
from minigpt.model import eval_mode, load_microgpt_weights, microgpt_weights
from minigpt.sampling import generate
from minigpt.views.page_cache import cache_key, read_cached, write_cached

ROLE_NAMES = 1000  # the most names the head descriptions are averaged over
CURVE_POINTS = 300  # the loss curve is drawn from at most this many points a series
PAGE_MEMBERSHIP_BYTES = 2_000_000  # the most the page carries to mark training names (names or a filter)


def weights_blob(model: torch.nn.Module) -> tuple[str, dict]:
    """Every weight, under microgpt's names, in one little-endian float32 buffer, and where each lies in it."""
    floats = array.array("f")
    tensors = {}
    for name, tensor in microgpt_weights(model).items():
        tensors[name] = {"shape": list(tensor.shape), "offset": len(floats)}
        floats.extend(tensor.detach().float().cpu().flatten().tolist())
    return little_endian_base64(floats), tensors


def loss_curve(run_dir: Path) -> dict | None:
    """The train and validation loss against step, from the run's metrics.jsonl, thinned for drawing
    (every validation point kept: the best step is one of them)."""

    if not (run_dir / "metrics.jsonl").is_file():
        return None
    try:
        records = read_metrics(run_dir)
    except UsageError:
        return None

    def thin(points):
        stride = max(1, len(points) // CURVE_POINTS)
        return [[step, round(loss, 4)] for step, loss in points[::stride]]

    train = thin(series(records, "train_loss"))
    val = [[step, round(loss, 4)] for step, loss in series(records, "val_loss")]
    return {"train": train, "val": val} if train or val else None


def membership(ckpt: Checkpoint) -> dict:
    """The checkpoint's own check of generated names against the training names, and a line saying so."""
    check = ckpt.membership
    if check.names is not None and sum(map(len, check.names)) <= PAGE_MEMBERSHIP_BYTES:
        return {"kind": "exact", "names": sorted(check.names), "note": f"Names are checked against {check.describe()}."}
    if check.bits is not None and len(check.bits) <= PAGE_MEMBERSHIP_BYTES:
        return {
            "kind": "bloom",
            "bits": base64.b64encode(bytes(check.bits.tolist())).decode("ascii"),
            "hashes": check.hashes,
            "note": f"Names are checked against {check.describe()}.",
        }
    if check.kind == "none":
        return {"kind": "none", "note": "This checkpoint carries no training names, so generated names are not marked."}
    return {
        "kind": "none",
        "note": f"The check of generated names ({check.describe()}) is too large to carry in "
        f"the page; minigpt sample --mark uses it.",
    }


def card(ckpt: Checkpoint) -> dict:
    path = ckpt.data.get("path")
    return {
        "parameters": ckpt.model.num_params(),
        "step": ckpt.step,
        "val_loss": ckpt.val_loss,
        "best_val_loss": ckpt.best_val_loss,
        "data": describe_data(ckpt.data, as_text(Path(path).name) if path else "the training file"),
        "checkpoint": as_text(ckpt.path),
    }


def default_text(ckpt: Checkpoint) -> str:
    """The name the page starts with when none is given: one of the run's own names, "emma" where it is a
    training name (the bundled names'), else the first training name the checkpoint carries, else one the model
    makes (a model of Pokémon names opened on "emma" before)."""
    if "emma" in ckpt.membership:
        return "emma"
    if ckpt.train_names:
        return ckpt.train_names[0][: ckpt.config.model.block_size - 1]
    return generate(ckpt.model, ckpt.tokenizer, 1, seed=0)[0]


def names_for_roles(ckpt: Checkpoint) -> tuple[list[str], str]:
    """The names the head descriptions are averaged over, and what they are: the run's validation
    names when they can be read again, else the training names the checkpoint carries, else the
    model's own names."""

    def some(names):
        stride = max(1, len(names) // ROLE_NAMES)
        return names[::stride][:ROLE_NAMES]

    held_out = validation_names(ckpt)
    if held_out:
        return some(held_out), "validation names"
    if ckpt.train_names:
        return some(ckpt.train_names), "training names"
    return generate(ckpt.model, ckpt.tokenizer, 200, seed=0), "names the model generated"


def roles(ckpt: Checkpoint, names: list[str], what: str, forests=None) -> dict:
    """What each head tends to do (measurements/head_roles.py), and the unigram loss the curve is drawn against.
    `forests`: the names' prefix forests (measurements/prefix_forest.py), when already made."""

    found = head_roles(ckpt.model, ckpt.tokenizer, names, forests)
    if found:
        found["names"] = f"{len(names):,} {what}"
        found["chars"] = weights_base64(found["chars"])
    frequencies = ckpt.train_names or names
    found["unigram"] = unigram_loss(frequencies, ckpt.tokenizer)
    found["unigram_names"] = "the training names" if ckpt.train_names else f"the {what}"
    return found


def ablation(ckpt: Checkpoint, names: list[str], what: str, forests=None) -> dict:
    """What switching each part off costs on `names`, both ways (what `minigpt ablate` prints), and
    each part's mean output, which the page's own switches use in mean mode: `step_ablation`'s
    numbers, with the parts they are in the order of."""

    parts = [part.to_dict() for part in all_parts(ckpt.model)]
    return {
        "names": f"{len(names):,} {what}",
        "parts": parts,
        **step_ablation(ckpt.model, ckpt.tokenizer, names, forests),
    }


def step_ablation(model, tokenizer, names: list[str], forests=None) -> dict:
    """The ablation table at one step (the checkpoint's, or a training snapshot's): per mode the whole
    model's loss and each part's cost in all_parts order, and the mean outputs (`means_base64`).
    `forests`: the names' prefix forests (measurements/prefix_forest.py), made once for every step."""

    found: dict[str, object] = {}
    for mode, report in zip(("zero", "mean"), ablate_modes(model, tokenizer, names, ("zero", "mean"), forests)):
        cost = dict(report.costs)
        found[mode] = {"loss": report.loss, "costs": [cost[part] for part in all_parts(model)]}
        if mode == "mean" and report.means is not None:
            found["means"] = means_base64(report.means)
    return found


def means_base64(means: dict) -> str:
    """Each part's mean output (ablation.py's mean_outputs) as one base64 float32 buffer: the heads',
    then the attention's, then the MLPs', each in layer order."""
    return little_endian_base64(
        array.array("f", torch.cat([means[k].flatten() for k in ("head", "attention", "mlp")]).tolist())
    )


def weights_base64(weights: torch.Tensor) -> str:
    """Attention weights (0 to 1) in a byte each (w × 255, rounded), base64: the character picture's
    numbers at every step in a few kilobytes; the page shows them as whole percents."""
    return base64.b64encode(bytes(torch.round(weights.clamp(0, 1) * 255).to(torch.uint8).flatten().tolist())).decode(
        "ascii"
    )


def float16_base64(values: torch.Tensor) -> str:
    """Numbers as little-endian float16, base64 (the snapshots' row scales)."""
    halves = array.array("h", values.half().view(torch.int16).tolist())
    if sys.byteorder == "big":
        halves.byteswap()
    return base64.b64encode(halves.tobytes()).decode("ascii")


def little_endian_base64(floats: array.array) -> str:
    if sys.byteorder == "big":
        floats.byteswap()
    return base64.b64encode(floats.tobytes()).decode("ascii")


BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
ALPHABET = torch.tensor(list(BASE64.encode("ascii")), dtype=torch.uint8)  # a 6-bit value + 32 -> its character


def snapshots_data(ckpt: Checkpoint, names: list[str], progress=None, forests=None) -> dict | None:
    """The run's snapshots as the page carries them, or None when the run has none (or not this run's).

    Each number in 6 bits (formats/snapshots.py's six_bit), written as one base64 character
    (value + 32), row by row in state-dict order; each row's scale as float16. With each
    snapshot, measured on `names` with the weights the page will run: what its heads tend to do
    (shares and labels) and what each part costs (`step_ablation`); both None for the checkpoint's
    own step, where the page runs the checkpoint. `progress(done, total)` is told after each one;
    `forests`: the names' prefix forests, when already made."""

    if not has_snapshots(ckpt):
        return None  # a run trained without snapshots, or an import: a page with no step slider
    try:
        snapshots = checkpoint_snapshots(ckpt)
    except UsageError as e:  # cut short, not minigpt's, another run's: the page goes without, and says why
        warn(f"the page has no step slider: {e}")
        return None
    model = copy.deepcopy(ckpt.model)
    if forests is None:  # the same names at every step
        forests = prefix_forests(names, ckpt.tokenizer, model.config.block_size)
    chars: list[str] = []
    scales: list[torch.Tensor] = []
    tensors: dict[str, dict[str, object]] = {}
    roles: list[dict[str, object] | None] = []
    costs: list[dict[str, object] | None] = []
    for index, step in enumerate(snapshots.steps):
        decoded = {}
        for name, kept in snapshots.weights.items():
            q, scale = six_bit(kept["q"][index], kept["scale"][index])
            if index == 0:
                tensors[name] = {"shape": snapshots.shapes[name], "rows": q.shape[0], "cols": q.shape[1]}
            chars.append(bytes(ALPHABET[q.flatten().long() + 32].tolist()).decode("ascii"))
            scales.append(scale)
            decoded[name] = dequantize(q, scale, snapshots.shapes[name])  # what the page will compute
        if step == ckpt.step and step not in snapshots.steps[index + 1 :]:  # the page shows the checkpoint here
            roles.append(None)
            costs.append(None)
        else:
            load_microgpt_weights(model, decoded)
            found = head_roles(model, ckpt.tokenizer, names, forests) if names else {}
            roles.append(
                {
                    "shares": found.get("shares"),
                    "labels": found.get("labels"),
                    "chars": weights_base64(found["chars"]) if found else None,
                }
            )
            costs.append(step_ablation(model, ckpt.tokenizer, names, forests) if names else None)
        if progress:
            progress(index + 1, len(snapshots.steps))
    return {
        "steps": snapshots.steps,
        "values": "".join(chars),
        "scales": float16_base64(torch.cat(scales)) if scales else "",
        "tensors": tensors,
        "roles": roles,
        "ablation": costs,
        "checkpoint_step": ckpt.step,
    }


def mask_off(ckpt: Checkpoint, names: list[str], what: str) -> dict | None:
    """The model's loss on the names with the causal mask and without it (the mask lesson's figures)."""
    if not names:
        return None
    return {
        "masked": evaluate_names(ckpt.model, ckpt.tokenizer, names)["loss"],
        "unmasked": loss_with_mask_off(ckpt.model, ckpt.tokenizer, names),
        "names": f"{len(names):,} {what}",
    }


MEASURED = {
    "roles": dict,
    "ablation": dict,
    "units": dict,
    "snapshots": (dict, type(None)),
    "mask_off": (dict, type(None)),
}  # what `measured` returns


def measured(ckpt: Checkpoint, progress=None, snapshots: bool = True) -> dict:
    """What the page measures on the names (views/page_cache.py keeps it between writes): what each head
    tends to do, what each part costs, where each MLP unit fires most, and (with `snapshots`) the training
    snapshots with their head roles and costs."""
    names, what = names_for_roles(ckpt)
    key = cache_key(ckpt, names, f"{what}|snapshots={snapshots}")
    found = read_cached(key, MEASURED)
    if found is None:
        keep_freed_memory()  # thousands of tensors of a few megabytes: the same memory serves them all
        forests = prefix_forests(names, ckpt.tokenizer, ckpt.model.config.block_size)  # made once, read by all three
        found = {
            "roles": roles(ckpt, names, what, forests),
            "ablation": ablation(ckpt, names, what, forests),
            "units": {**firing_prefixes(ckpt.model, ckpt.tokenizer, names), "names": f"{len(names):,} {what}"},
            "snapshots": snapshots_data(ckpt, names, progress, forests) if snapshots else None,
            "mask_off": mask_off(ckpt, names, what),
        }
        write_cached(key, found)
    return found


PAGE_VOCABULARY = 50_000  # characters: the most a page is written for (measured in docs/explorer.md)


def check_page_vocabulary(ckpt: Checkpoint) -> None:
    """Refused before measuring: a page's time and memory grow with the vocabulary."""
    chars = len(ckpt.tokenizer.chars)
    if chars > PAGE_VOCABULARY:
        raise UsageError(
            f"the explorer page is written for vocabularies of up to {PAGE_VOCABULARY:,} characters, and "
            f"this model has {chars:,}: it would carry its embeddings and a bar a character, take minutes "
            f"and gigabytes to write and be slow to read; inspect-attention NAME shows it in the terminal"
        )


# what model.js computes of a recipe's choices: a model outside them is refused as the page is written, rather
# than drawn wrong (a core edited to add an activation passes its own checks, and model.js knows only these)
PAGE_COMPUTES = {"activation": ("relu", "gelu")}


def check_page_computes(ckpt: Checkpoint) -> None:
    for key, known in PAGE_COMPUTES.items():
        value = getattr(ckpt.config.model, key, None)
        if value not in known:
            raise UsageError(
                f"{ckpt.path}: the explorer page's JavaScript (model.js) computes model.{key} "
                f"{' or '.join(known)}, and this model has {value!r}: its page would show wrong numbers"
            )


def torch_check(ckpt: Checkpoint, text: str) -> dict:
    """What torch computes for `text` (the boundary token, then its characters, to the block size): its tokens and
    the logits at every position. The page recomputes them in model.js as it opens and says so plainly when the two
    disagree (a core changed since model.js was written), instead of drawing wrong numbers."""
    known = [c for c in text if c in ckpt.tokenizer.stoi][: ckpt.config.model.block_size - 1]
    tokens = [ckpt.tokenizer.bos] + [ckpt.tokenizer.stoi[c] for c in known]
    with torch.no_grad(), eval_mode(ckpt.model):  # the model left in the mode it was in
        logits, _ = ckpt.model(torch.tensor([tokens], device=next(ckpt.model.parameters()).device))
    return {"text": "".join(known), "tokens": tokens, "logits": logits[0].double().cpu().tolist()}


def page_data(ckpt: Checkpoint, text: str | None = None, progress=None, snapshots: bool = True) -> dict:
    """Everything the page carries. `progress(done, total)` follows the training snapshots, the slow part;
    `snapshots=False` leaves them out (no step slider, a page a quarter the size)."""
    check_page_vocabulary(ckpt)
    check_page_computes(ckpt)
    weights, tensors = weights_blob(ckpt.model)
    start_text = default_text(ckpt) if text is None else text
    return {
        **measured(ckpt, progress, snapshots),
        "config": ckpt.config.to_dict(),
        "vocab": ckpt.tokenizer.chars,
        "boundary": boundary_mark(ckpt.tokenizer.stoi),
        "weights": weights,
        "tensors": tensors,
        "card": card(ckpt),
        "curve": loss_curve(ckpt.path.parent),
        "membership": membership(ckpt),
        "start_text": start_text,
        "torch_check": torch_check(ckpt, start_text),
    }
