"""A run in TensorBoard: the event files hold what metrics.jsonl holds, read back with TensorBoard's own reader."""

import json
import sys

import pytest
from conftest import tiny_config

pytest.importorskip("tensorboard")


def scalars_and_texts(folder):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(folder), size_guidance={"scalars": 0, "tensors": 0})
    events.Reload()
    scalars = {tag: [(e.step, e.value) for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]}
    texts = [e.tensor_proto.string_val[0].decode() for e in events.Tensors("samples/text_summary")]
    return scalars, texts


def test_a_runs_losses_rate_and_samples_read_back_from_its_event_files(names_file, tmp_path):
    from minigpt.runs.run import train
    from minigpt.runs.tensorboard_log import TensorBoard

    result = train(
        tiny_config("train.log_interval=5"),
        names_file,
        out_dir=tmp_path / "tiny-run",
        quiet=True,
        report=TensorBoard(tmp_path / "tb"),
    )
    assert [p.name for p in (tmp_path / "tb").iterdir()] == ["tiny-run"]  # the run as TensorBoard names it
    scalars, texts = scalars_and_texts(tmp_path / "tb" / "tiny-run")
    records = [json.loads(line) for line in (result.run_dir / "metrics.jsonl").read_text().splitlines()]
    for tag, key in (("loss/train", "train_loss"), ("loss/val", "val_loss"), ("lr", "lr")):
        logged = [(r["step"], r[key]) for r in records if key in r]
        assert [s for s, _ in scalars[tag]] == [s for s, _ in logged], tag
        assert all(abs(a - b) <= 1e-6 * max(1, abs(b)) for (_, a), (_, b) in zip(scalars[tag], logged)), tag
    assert len(scalars["tokens_per_sec"]) == len(scalars["loss/train"])
    assert len(texts) == 3 and all("(* a training name)" in t for t in texts)  # an evaluation every 10 of 30 steps


def test_the_command_line_writes_them_too_and_names_the_extra_without_it(names_file, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from minigpt.cli.main import app

    runner = CliRunner()
    result = runner.invoke(
        app,
        [
            "train",
            "--config",
            "tiny",
            "--data",
            str(names_file),
            "--out",
            str(tmp_path / "cli-run"),
            "--quiet",
            "--no-page",
            "--tensorboard",
            str(tmp_path / "tb"),
        ],
    )
    assert result.exit_code == 0, result.stderr
    scalars, _ = scalars_and_texts(tmp_path / "tb" / "cli-run")
    assert len(scalars["loss/val"]) == 3
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)  # as where the extra is not installed
    result = runner.invoke(
        app,
        [
            "train",
            "--config",
            "tiny",
            "--data",
            str(names_file),
            "--out",
            str(tmp_path / "other"),
            "--tensorboard",
            str(tmp_path / "tb"),
        ],
    )
    assert result.exit_code == 2 and "pip install 'minigpt-names[tensorboard]'" in result.stderr
    assert not (tmp_path / "other").exists()
