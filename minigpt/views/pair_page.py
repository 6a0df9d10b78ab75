"""Two models on one page: what a change did inside the model.

The page (web/pair.html with web/pair.js) runs both models in the browser on the same name, with
model.js, the explorer's forward pass: every head of both side by side and the difference of the two
maps, both models' next-character distributions and losses, the validation names one finds much easier
than the other, the heads of one matched to the heads of the other by what they tend to do, and one
training slider that moves both. It carries each model's weights, recipe, card, head roles and
snapshots (views/page_data.py's, kept by its cache), and the two models' losses on the same names.

    write_pair_page("runs/default", "runs/drop0lr2x", "two.html", text="emma")
"""

from __future__ import annotations

import re
from pathlib import Path

import torch

from minigpt.common.text import as_text, boundary_mark, one_line
from minigpt.errors import UsageError
from minigpt.formats.checkpoint import Checkpoint, as_checkpoint, validation_names
from minigpt.formats.recipes import flat_config, recipe_differences
from minigpt.measurements.name_losses import name_losses
from minigpt.model import microgpt_weights
from minigpt.sampling import generate
from minigpt.views.explorer_page import page_destination, save_page, script_json
from minigpt.views.page_data import (
    card,
    check_page_vocabulary,
    default_text,
    loss_curve,
    measured,
    snapshots_data,
    torch_check,
    weights_blob,
)
from minigpt.views.web_files import web_file

ROLE_KEYS = ("shares", "even", "labels", "names")  # what the page carries of views/page_data.py's head roles
# the most names both models' losses are carried for (strided through the validation names)
COMPARED_NAMES = 2000
SAMPLES = 10  # names each model generates for the page (the same seed for both)


def same_reading(a: Checkpoint, b: Checkpoint) -> None:
    """Refuse two models that cannot read the same names the same way: their vocabularies must be one."""
    chars_a, chars_b = a.tokenizer.chars, b.tokenizer.chars
    if chars_a == chars_b:
        return
    only_a = [c for c in chars_a if c not in b.tokenizer.stoi]
    only_b = [c for c in chars_b if c not in a.tokenizer.stoi]
    if not only_a and not only_b:
        why = "they hold the same characters in another order, so a token means another character in each"
    else:
        why = "; ".join(
            f"only {where} has {one_line(''.join(chars[:20]))!r}" + ("…" if len(chars) > 20 else "")
            for where, chars in (("the first", only_a), ("the second", only_b))
            if chars
        )
        why = f"their vocabularies differ ({why})"
    raise UsageError(
        f"{a.path} and {b.path} cannot be put on one page: {why}; two models compare on one page only "
        f"when both were trained on the same characters"
    )


def compared_names(a: Checkpoint, b: Checkpoint) -> tuple[list[str], str]:
    """The names both models are scored on: the first run's validation names (else the second's), those that
    fit both block sizes whole (so both losses cover the same tokens), at most COMPARED_NAMES of them."""
    for ckpt, which in ((a, "the first run's"), (b, "the second run's")):
        names = validation_names(ckpt)
        if names:
            fits = min(a.config.model.block_size, b.config.model.block_size) - 1
            names = [name for name in names if len(name) <= fits]
            stride = max(1, len(names) // COMPARED_NAMES)
            return names[::stride][:COMPARED_NAMES], f"{which} validation names"
    return [], "neither run's validation names can be read again"


def name_table(a: Checkpoint, b: Checkpoint) -> dict:
    """Each compared name with both models' mean loss a token on it (what `eval --per-name` prints)."""
    names, what = compared_names(a, b)
    if not names:
        return {"names": [], "a": [], "b": [], "what": what}
    losses = [[round(loss, 5) for _, _, loss in name_losses(ckpt.model, ckpt.tokenizer, names)] for ckpt in (a, b)]
    return {"names": names, "a": losses[0], "b": losses[1], "what": what}


def model_data(ckpt: Checkpoint, progress=None) -> dict:
    """What the page carries of one model: its weights, recipe, card, loss curve, head roles and snapshots.
    A model trained without the causal mask has no head roles (they are measured under the mask), and its
    snapshots carry their weights alone."""
    weights, tensors = weights_blob(ckpt.model)
    if ckpt.config.model.causal:
        found = measured(ckpt, progress)
        roles, snapshots = {key: found["roles"].get(key) for key in ROLE_KEYS}, found["snapshots"]
    else:
        roles, snapshots = dict.fromkeys(ROLE_KEYS), snapshots_data(ckpt, [], progress)
    if snapshots:  # the roles at each step, without the character pictures and costs this page does not show
        snapshots = {
            **snapshots,
            "ablation": None,
            "roles": [role and {"shares": role["shares"], "labels": role["labels"]} for role in snapshots["roles"]],
        }
    return {
        "config": ckpt.config.to_dict(),
        "weights": weights,
        "tensors": tensors,
        "card": card(ckpt),
        "curve": loss_curve(ckpt.path.parent),
        "roles": roles,
        "snapshots": snapshots,
        "samples": generate(ckpt.model, ckpt.tokenizer, SAMPLES, seed=0),
        "run": as_text(ckpt.path.parent.name if ckpt.path.name == "best.pt" else ckpt.path.name),
    }


def pair_data(a: Checkpoint, b: Checkpoint, text: str | None = None, progress=None) -> dict:
    """Everything the two-model page carries. `progress(done, total)` follows both runs' snapshots."""
    same_reading(a, b)
    check_page_vocabulary(a)  # b's is the same
    start = default_text(a) if text is None else text
    # each model's logits for the name as torch computes them: the page checks model.js against both as it opens
    both = [{**model_data(ckpt, progress), "torch_check": torch_check(ckpt, start)} for ckpt in (a, b)]
    differences = recipe_differences([flat_config(a.config), flat_config(b.config)])
    weights = [microgpt_weights(ckpt.model) for ckpt in (a, b)]
    identical = weights[0].keys() == weights[1].keys() and all(
        torch.equal(weights[0][k], weights[1][k]) for k in weights[0]
    )
    same_names = a.data.get("train_digest") is not None and a.data.get("train_digest") == b.data.get("train_digest")
    return {
        "a": both[0],
        "b": both[1],
        "vocab": a.tokenizer.chars,
        "boundary": boundary_mark(a.tokenizer.stoi),
        "differences": differences,
        "identical": identical,
        "same_names": same_names,
        "names": name_table(a, b),
        "start_text": start,
    }


def render_pair_page(data: dict) -> str:
    parts = {
        "CSS": web_file("base.css") + web_file("pair.css"),
        "DATA": script_json(data),
        "MODEL_JS": web_file("model.js"),
        "PAIR_JS": web_file("paint.js") + web_file("pair.js"),
    }
    return re.sub(r"/\*(CSS|DATA|MODEL_JS|PAIR_JS)\*/", lambda m: parts[m.group(1)], web_file("pair.html"))


def write_pair_page(
    first: str | Path | Checkpoint,
    second: str | Path | Checkpoint,
    out: str | Path,
    text: str | None = None,
    overwrite: bool = False,
    progress=None,
) -> Path:
    """Write the page of two models (each a checkpoint file, a run directory or a loaded Checkpoint) to `out`."""
    if text is not None and not isinstance(text, str):
        raise UsageError(f"the page's first name must be text, got {type(text).__name__}")
    out = page_destination(out, overwrite)
    a, b = as_checkpoint(first), as_checkpoint(second)
    return save_page(render_pair_page(pair_data(a, b, text, progress)), out, overwrite)
