"""Training snapshots: when they are taken, how exact they are, and reading them back."""

import shutil

import pytest
import torch
from conftest import tiny_config
from typer.testing import CliRunner

from minigpt.cli.main import app
from minigpt.formats.checkpoint import load_checkpoint
from minigpt.formats.snapshots import FILE, dequantize, quantize, read_snapshots, snapshot_steps
from minigpt.runs.run import train

runner = CliRunner()


def test_steps_are_evenly_spaced_in_log_step_from_zero():
    steps = snapshot_steps(1800, 16)
    assert len(steps) == 16 and steps[:2] == [0, 1] and steps[-1] == 1800
    ratios = [b / a for a, b in zip(steps[2:], steps[3:])]
    assert max(ratios) / min(ratios) < 1.3  # the same factor from one to the next, up to rounding
    assert (
        snapshot_steps(5, 16) == [0, 1, 2, 3, 4, 5] and snapshot_steps(100, 0) == [] and snapshot_steps(100, 1) == [0]
    )


def test_eight_bits_per_row_are_within_half_a_step():
    w = torch.randn(64, 48) * torch.logspace(-3, 1, 64)[:, None]  # rows of very different sizes
    q, scale = quantize(w)
    assert q.dtype == torch.int8 and scale.shape == (64,)
    assert torch.all((dequantize(q, scale, w.shape) - w).abs() <= scale[:, None] / 2 + 1e-7)


@pytest.fixture(scope="module")
def snapshot_run(tmp_path_factory):
    from conftest import BUNDLED_NAMES

    tmp = tmp_path_factory.mktemp("snapshots")
    data = tmp / "names.txt"
    data.write_text("\n".join(BUNDLED_NAMES.read_text().split()[::9]) + "\n")
    config = tiny_config("train.steps=60", "train.eval_interval=20", "train.snapshots=8")
    return train(config, data, out_dir=tmp / "run", quiet=True), data


def test_a_run_keeps_its_snapshots_first_last_and_best(snapshot_run):
    result, _ = snapshot_run
    snapshots = read_snapshots(result.run_dir)
    expected = set(snapshot_steps(60, 8, 5)) | {result.steps, result.best_step}  # the tiny recipe warms up for 5 steps
    assert snapshots.steps == sorted(expected)
    ckpt = load_checkpoint(result.run_dir)
    params = ckpt.model.num_params()
    assert (result.run_dir / FILE).stat().st_size < len(snapshots.steps) * (
        params + 4 * 200
    ) + 20_000  # a byte a number
    # the best step's snapshot is the final model to 8 bits: logits on the names move by little
    snapshots.load_into(ckpt.model, snapshots.steps.index(result.best_step))
    exact = load_checkpoint(result.run_dir).model
    ids = torch.tensor([[ckpt.tokenizer.bos] + ckpt.tokenizer.encode("anna")])
    with torch.no_grad():
        gap = (ckpt.model(ids)[0] - exact(ids)[0]).abs().max().item()
    assert 0 < gap < 0.05
    snapshots.load_into(ckpt.model, 0)  # step 0: the weights before training, far from the final ones
    with torch.no_grad():
        assert (ckpt.model(ids)[0] - exact(ids)[0]).abs().max().item() > 0.5


def test_no_snapshots_when_asked_for_none(names_file, tmp_path):
    result = train(tiny_config("train.steps=5", "train.snapshots=0"), names_file, out_dir=tmp_path / "r", quiet=True)
    assert not (result.run_dir / FILE).exists()


def test_inspect_attention_reads_the_nearest_snapshot(snapshot_run, tmp_path):
    result, _ = snapshot_run
    steps = read_snapshots(result.run_dir).steps
    out = runner.invoke(app, ["inspect-attention", str(result.run_dir), "anna", "--step", str(steps[3] + 1), "--json"])
    assert out.exit_code == 0, out.output
    assert f"reading the snapshot at step {steps[3]} (the nearest to {steps[3] + 1})" in out.stderr
    said = " ".join(out.stderr.split())
    assert "8 bits a number" in said and "carries them in 6" in said  # as the page says of its own
    at_zero = runner.invoke(app, ["inspect-attention", str(result.run_dir), "anna", "--step", "0", "--json"])
    assert at_zero.stdout != out.stdout  # other weights, other attention


def test_bad_snapshots_are_refused_in_one_line_and_nothing_is_written(snapshot_run, tmp_path, names_file):
    result, _ = snapshot_run
    run = tmp_path / "copy"
    shutil.copytree(result.run_dir, run)
    other = train(tiny_config("train.steps=5", "train.seed=7"), names_file, out_dir=tmp_path / "other", quiet=True)
    png = tmp_path / "a.json"
    cases = [(["--step", "100000"], "is outside the run's snapshots: give a step from 0")]
    for args, message in cases:
        out = runner.invoke(app, ["inspect-attention", str(run), "anna", *args, "--json-file", str(png)])
        assert out.exit_code == 2 and message in out.stderr and len(out.stderr.strip().splitlines()) == 1
    shutil.copy(other.run_dir / FILE, run / FILE)  # another run's snapshots
    out = runner.invoke(app, ["inspect-attention", str(run), "anna", "--step", "1", "--json-file", str(png)])
    assert out.exit_code == 2 and "from another run" in out.stderr
    data = (result.run_dir / FILE).read_bytes()
    (run / FILE).write_bytes(data[: len(data) // 2])  # cut short
    out = runner.invoke(app, ["inspect-attention", str(run), "anna", "--step", "1", "--json-file", str(png)])
    assert out.exit_code == 2 and "damaged or incomplete" in out.stderr and len(out.stderr.strip().splitlines()) == 1
    (run / FILE).unlink()
    out = runner.invoke(app, ["inspect-attention", str(run), "anna", "--step", "1", "--json-file", str(png)])
    assert out.exit_code == 2 and "has no training snapshots" in out.stderr
    assert not png.exists()


@pytest.mark.parametrize("count", [-3, 257, 10**12])
def test_train_snapshots_outside_its_range_is_a_usage_error(count):
    from minigpt.errors import UsageError
    from minigpt.formats.recipes import load_config

    with pytest.raises(UsageError, match="train.snapshots must be from 0 to 256"):
        load_config("tiny", [f"train.snapshots={count}"])


def test_a_snapshots_file_holding_thousands_is_refused(trained_run, tmp_path):
    import shutil

    import torch

    from minigpt.errors import UsageError
    from minigpt.formats.snapshots import read_snapshots

    run = tmp_path / "run"
    shutil.copytree(trained_run[0], run)
    raw = torch.load(run / "snapshots.pt", weights_only=True)
    raw["steps"] = list(range(3000))
    torch.save(raw, run / "snapshots.pt")
    with pytest.raises(UsageError, match="3,000 snapshots; a run takes at most 258"):
        read_snapshots(run)


def test_with_a_warmup_no_two_snapshots_in_a_row_show_one_picture(names_file, tmp_path):
    """While the learning rate climbs from 0 the weights barely move: snapshots spaced in log(step + warmup)
    each differ from the one before (in log(step) alone, steps 1, 2, 3, 5, 9 of the warmup looked alike)."""
    from conftest import tiny_config

    from minigpt.runs.run import train

    assert snapshot_steps(2000, 16, 100)[:4] == [0, 23, 50, 84]
    result = train(
        tiny_config("train.steps=80", "train.warmup_steps=40", "train.snapshots=8", "train.eval_interval=40"),
        names_file,
        out_dir=tmp_path / "r",
        quiet=True,
    )
    snaps = read_snapshots(result.run_dir)
    assert snaps.steps[: len(snapshot_steps(80, 8, 40))] == snapshot_steps(80, 8, 40)
    for name, kept in snaps.weights.items():
        if name.startswith("layer0.attn_wq"):
            for before, after in zip(kept["q"], kept["q"][1:]):
                assert not torch.equal(before, after)


def test_the_page_says_why_it_has_no_step_slider_and_takes_no_shorter_runs_snapshots(snapshot_run, tmp_path):
    """A page of a run whose snapshots.pt is cut short, or is a shorter run's of the same names, seed and model (whose
    run identity is this run's), is written without the slider and says why; so does --step (83 §16)."""
    result, data = snapshot_run
    run = tmp_path / "copy"
    shutil.copytree(result.run_dir, run, ignore=shutil.ignore_patterns(".lock"))
    shorter = train(
        tiny_config("train.steps=40", "train.eval_interval=20", "train.snapshots=8"),
        data,
        out_dir=tmp_path / "shorter",
        quiet=True,
    )
    assert read_snapshots(shorter.run_dir).val_loss[-1] is not None  # the last step's loss, held to the records
    shutil.copy(shorter.run_dir / FILE, run / FILE)
    said = runner.invoke(app, ["inspect-attention", str(run), "anna", "--step", "1", "--json"])
    assert said.exit_code == 2 and "from another run: at step 40" in said.stderr
    page = runner.invoke(app, ["inspect-attention", str(run), "--html", str(tmp_path / "p.html")])
    assert page.exit_code == 0 and "the page has no step slider" in page.stderr and "from another run" in page.stderr
    data_bytes = (result.run_dir / FILE).read_bytes()
    (run / FILE).write_bytes(data_bytes[: len(data_bytes) // 2])
    page = runner.invoke(app, ["inspect-attention", str(run), "--html", str(tmp_path / "q.html")])
    assert page.exit_code == 0 and "no step slider" in page.stderr and "damaged or incomplete" in page.stderr
    (run / FILE).unlink()  # a run without snapshots: no note, no slider
    page = runner.invoke(app, ["inspect-attention", str(run), "--html", str(tmp_path / "r.html")])
    assert page.exit_code == 0 and "no step slider" not in page.stderr
