"""Anything handed as a checkpoint or an export, damaged, cut short or edited field by field, is
read or refused in one line (a UsageError): never another exception, never a warning first,
never a crash on the next step."""

import copy
import io
import json
import random
import warnings

import pytest
import torch
from conftest import tiny_config

from minigpt.errors import UsageError
from minigpt.formats.checkpoint import load_checkpoint, read_resume_state
from minigpt.formats.microgpt_json import import_microgpt
from minigpt.runs.run import train

ODD_VALUES = [None, 1, -1, 2**70, 1.5, float("nan"), "x", "\ud800", [], [1, 2], {}, {"a": 1}, torch.zeros(2), True]


def read_as_a_checkpoint(path) -> None:
    """Load `path` for sampling and for resuming: each may refuse it, only ever with a UsageError."""
    for read in (load_checkpoint, read_resume_state):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # torch's warnings about odd pickles are not for the user
            try:
                read(path)
            except UsageError:
                pass


def saved(payload) -> bytes:
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    return buffer.getvalue()


def damaged_bytes(good: bytes, legacy: bytes, seed: int = 0):
    """Short random files, pickle openings, prefixes of both torch formats, and bytes flipped in them."""
    rng = random.Random(seed)
    yield from (rng.randbytes(n) for n in range(0, 48, 3))
    yield from (bytes([0x80, rng.choice([2, 3, 4, 5])]) + rng.randbytes(rng.randrange(40)) for _ in range(120))
    for whole in (good, legacy):
        yield from (whole[: rng.randrange(len(whole))] for _ in range(60))
        for _ in range(60):
            flipped = bytearray(whole)
            for _ in range(rng.randrange(1, 5)):
                flipped[rng.randrange(len(flipped))] = rng.randrange(256)
            yield bytes(flipped)


def test_damaged_bytes_are_refused_in_one_line(trained_run, tmp_path):
    good = (trained_run[0] / "last.pt").read_bytes()
    legacy = io.BytesIO()
    torch.save(torch.load(trained_run[0] / "last.pt", weights_only=True), legacy, _use_new_zipfile_serialization=False)
    path = tmp_path / "case.pt"
    for content in damaged_bytes(good, legacy.getvalue()):
        path.write_bytes(content)
        read_as_a_checkpoint(path)


def fields(table: dict, above=()):
    """Every field's path in a checkpoint's dict; the weights, the recipe and the optimizer's state taken as
    one field each (a recipe's keys are checked by tests/test_config.py, the optimizer's state below)."""
    for key, value in table.items():
        yield above + (key,)
        if isinstance(value, dict) and key not in ("model", "config", "optimizer"):
            yield from fields(value, above + (key,))


def test_every_field_of_another_type_or_missing_is_refused_in_one_line(trained_run, tmp_path):
    raw = torch.load(trained_run[0] / "last.pt", weights_only=True)
    path = tmp_path / "case.pt"
    for field_path in fields(raw):
        for value in [*ODD_VALUES, "missing"]:
            edited = table = dict(raw)  # the tables along the path copied, the tensors shared
            for key in field_path[:-1]:
                table[key] = dict(table[key])
                table = table[key]
            if value == "missing":
                del table[field_path[-1]]
            else:
                table[field_path[-1]] = value
            path.write_bytes(saved(edited))
            read_as_a_checkpoint(path)


@pytest.mark.parametrize("dtype", [torch.int64, torch.bool, torch.complex64])
def test_weights_that_are_not_floating_point_are_refused(trained_run, tmp_path, dtype):
    raw = torch.load(trained_run[0] / "last.pt", weights_only=True)
    raw["model"]["wte"] = raw["model"]["wte"].to(dtype)
    torch.save(raw, tmp_path / "case.pt")
    with pytest.raises(UsageError, match="weight wte holds .* values, and a model's weights are floating-point"):
        load_checkpoint(tmp_path / "case.pt")


def test_half_a_surrogate_pair_in_the_vocabulary_is_refused(trained_run, tmp_path):
    raw = torch.load(trained_run[0] / "last.pt", weights_only=True)
    raw["vocab"][0] = "\ud800"
    torch.save(raw, tmp_path / "case.pt")
    with pytest.raises(UsageError, match="half a surrogate pair .U\\+D800"):
        load_checkpoint(tmp_path / "case.pt")


def damaged_optimizer_states(state: dict):
    """A muon run's optimizer state with one thing wrong: misshapen moments crash fused AdamW outright."""
    adamw = state["adamw"]
    first = next(iter(adamw["state"]))
    edits = {
        "a moment of the wrong shape": lambda s: s["adamw"]["state"][first].update(exp_avg=torch.zeros(3)),
        "a step as text": lambda s: s["adamw"]["state"][first].update(step="x"),
        "betas as null": lambda s: s["adamw"]["param_groups"][0].update(betas=None),
        "a learning rate as text": lambda s: s["adamw"]["param_groups"][0].update(lr="x"),
        "no parameter groups": lambda s: s["adamw"].update(param_groups=[]),
        "state as null": lambda s: s["adamw"].update(state=None),
        "state for a parameter not there": lambda s: s["adamw"]["state"].update({99: {}}),
        "a squared moment below zero": lambda s: s["adamw"]["state"][first]["exp_avg_sq"].fill_(-1.0),
    }
    for what, edit in edits.items():
        damaged = copy.deepcopy(state)
        edit(damaged)
        yield what, damaged


def test_a_damaged_optimizer_state_is_refused_before_a_step(names_file, tmp_path):
    run = train(
        tiny_config("train.steps=4", "train.eval_interval=2"),
        data_path=names_file,
        out_dir=tmp_path / "run",
        quiet=True,
    ).run_dir
    raw = torch.load(run / "last.pt", weights_only=True)
    for what, optimizer in damaged_optimizer_states(raw["optimizer"]):
        torch.save({**raw, "optimizer": optimizer}, run / "last.pt")
        with pytest.raises(UsageError, match="its optimizer state is damaged"):
            train(tiny_config("train.steps=6"), resume_from=run, quiet=True)
        assert torch.load(run / "last.pt", weights_only=True)["step"] == 4, what  # nothing was written


MICROGPT_FIELDS = {"hyperparameters": dict, "uchars": list, "state_dict": dict}


def test_every_field_of_a_microgpt_export_of_another_type_is_refused(tmp_path):
    document = {
        "format": "microgpt",
        "hyperparameters": {"n_layer": 1, "n_embd": 4, "n_head": 2, "block_size": 4, "vocab_size": 3},
        "uchars": ["a", "b"],
        "bos": 2,
        "state_dict": {},
    }
    cases = [(key, value) for key in [*MICROGPT_FIELDS, "bos"] for value in ODD_VALUES]
    cases += [(f"hyperparameters.{key}", value) for key in document["hyperparameters"] for value in ODD_VALUES]
    for where, value in cases:
        if isinstance(value, torch.Tensor):
            continue
        edited = copy.deepcopy(document)
        *tables, key = where.split(".")
        (edited[tables[0]] if tables else edited)[key] = value
        (tmp_path / "case.json").write_text(json.dumps(edited))
        with pytest.raises(UsageError):
            import_microgpt(tmp_path / "case.json", tmp_path / "out.pt", overwrite=True)


def snapshot_edits(raw: dict):
    """The snapshots file of a run with one field of another type, missing, or out of order."""
    for value in ODD_VALUES:
        for where in ("steps", "val_loss", "weights", "run"):
            yield f"{where}={value!r}", lambda d, k=where, v=value: d.__setitem__(k, v)
        yield f"steps[0]={value!r}", lambda d, v=value: d["steps"].__setitem__(0, v)
        yield f"val_loss[0]={value!r}", lambda d, v=value: d["val_loss"].__setitem__(0, v)
        yield f"wte.shape={value!r}", lambda d, v=value: d["weights"]["wte"].__setitem__("shape", v)
        yield f"wte={value!r}", lambda d, v=value: d["weights"].__setitem__("wte", v)
    yield "no wte", lambda d: d["weights"].pop("wte")
    yield "one loss short", lambda d: d["val_loss"].pop()
    yield "steps out of order", lambda d: d.__setitem__("steps", list(reversed(d["steps"])))


def test_a_damaged_snapshots_file_is_refused_in_one_line(trained_run, tmp_path):
    import shutil

    from typer.testing import CliRunner

    from minigpt.cli.main import app

    run = tmp_path / "run"
    shutil.copytree(trained_run[0], run)
    raw = torch.load(run / "snapshots.pt", weights_only=True)
    for what, edit in snapshot_edits(raw):
        edited = copy.deepcopy(raw)
        edit(edited)
        torch.save(edited, run / "snapshots.pt")
        result = CliRunner().invoke(app, ["inspect-attention", str(run), "emma", "--step", "10", "--json"])
        assert result.exit_code in (0, 2), (what, result.stderr, result.exception)
        if result.exit_code == 2:
            assert len(result.stderr.strip().splitlines()) == 1 and "snapshots" in result.stderr, (what, result.stderr)
