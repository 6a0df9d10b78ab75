"""Non-finite or absurd numbers in stored files never reach a page, a table or --json as garbage:
validated on load, and JSON that minigpt hands out is always JSON (nan is null)."""

import json
import shutil

import pytest
import torch
from typer.testing import CliRunner

from minigpt.cli.main import app
from minigpt.files import strict_json

runner = CliRunner()


@pytest.fixture
def run_copy(trained_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(trained_run[0], run)
    return run


def edit_checkpoint(path, change):
    raw = torch.load(path, weights_only=True)
    change(raw)
    torch.save(raw, path)


def test_a_nan_validation_loss_is_unknown_everywhere(run_copy, tmp_path):
    edit_checkpoint(run_copy / "best.pt", lambda raw: raw.update(val_loss=float("nan"), best_val_loss=float("inf")))
    info = runner.invoke(app, ["info", str(run_copy)])
    [row] = [line for line in info.stdout.splitlines() if "val loss" in line]
    assert info.exit_code == 0 and "nan" not in row and "inf" not in row
    page = tmp_path / "page.html"
    result = runner.invoke(app, ["inspect-attention", str(run_copy), "--html", str(page)])
    assert result.exit_code == 0, result.output
    text = page.read_text(encoding="utf-8")
    data = text.split('id="minigpt-data">')[1].split("</script>")[0]
    assert json.loads(data, parse_constant=lambda c: pytest.fail(f"{c} in the page's JSON"))["card"]["val_loss"] is None


def test_absurd_weights_are_refused_in_one_line(run_copy):
    edit_checkpoint(run_copy / "best.pt", lambda raw: raw["model"]["wte"].fill_(1e30))
    for command in (["sample", str(run_copy)], ["inspect-attention", str(run_copy), "emma"], ["info", str(run_copy)]):
        result = runner.invoke(app, command)
        assert result.exit_code == 2 and "far larger than a trained model's weights" in result.stderr, command
        assert len(result.stderr.strip().splitlines()) == 1


def test_a_snapshot_scale_of_inf_is_a_damaged_file_and_the_page_goes_without(run_copy, tmp_path):
    raw = torch.load(run_copy / "snapshots.pt", weights_only=True)
    next(iter(raw["weights"].values()))["scale"][0] = float("inf")
    torch.save(raw, run_copy / "snapshots.pt")
    result = runner.invoke(app, ["inspect-attention", str(run_copy), "emma", "--step", "1"])
    assert result.exit_code == 2 and "damaged" in result.stderr
    page = tmp_path / "page.html"
    assert runner.invoke(app, ["inspect-attention", str(run_copy), "--html", str(page)]).exit_code == 0
    assert '"snapshots":null' in page.read_text(encoding="utf-8")


def test_nan_in_metrics_is_not_drawn_and_json_is_always_json(run_copy, tmp_path):
    with open(run_copy / "metrics.jsonl", "a", encoding="utf-8") as f:
        f.write('{"step": 99, "train_loss": NaN}\n{"step": 100, "val_loss": Infinity}\n')
    from minigpt.files.run_records import read_metrics, series

    assert all(loss == loss and abs(loss) != float("inf") for _, loss in series(read_metrics(run_copy), "train_loss"))
    assert (
        strict_json.dumps({"loss": float("nan"), "costs": [1.0, float("-inf")]})
        == '{"loss": null, "costs": [1.0, null]}'
    )
    result = runner.invoke(app, ["inspect-attention", str(run_copy), "emma", "--json"])
    json.loads(result.stdout, parse_constant=lambda c: pytest.fail(c))
