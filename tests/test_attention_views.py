import json
import re

import pytest
import torch
from conftest import hide_package
from typer.testing import CliRunner

from minigpt.cli.main import app
from minigpt.errors import UsageError
from minigpt.formats.checkpoint import load_checkpoint
from minigpt.views import attention_maps as inspect

runner = CliRunner()


def test_report_rows_sum_to_one_with_no_future(trained_run):
    ckpt = load_checkpoint(trained_run[0])
    report = inspect.attention_report(ckpt.model, ckpt.tokenizer, "anna")
    cfg = ckpt.config.model
    assert report.tokens == ["·", "a", "n", "n", "a"]
    assert report.weights.shape == (cfg.n_layer, cfg.n_head, 5, 5)
    torch.testing.assert_close(report.weights.sum(-1), torch.ones(cfg.n_layer, cfg.n_head, 5))
    assert torch.all(report.weights.triu(1) == 0)
    assert len(report.predictions) == 5 and all(len(p) == 3 for p in report.predictions)


def test_report_rejects_unseen_characters_and_long_names(trained_run):
    ckpt = load_checkpoint(trained_run[0])
    with pytest.raises(UsageError, match="never saw: '7'"):
        inspect.attention_report(ckpt.model, ckpt.tokenizer, "ann7")
    with pytest.raises(UsageError, match="at most 15"):
        inspect.attention_report(ckpt.model, ckpt.tokenizer, "a" * 16)


def test_cli_heatmaps_bars_json_and_png(trained_run, tmp_path):
    pytest.importorskip("matplotlib")
    run_dir, _ = trained_run
    png, js = tmp_path / "att.png", tmp_path / "att.json"
    shown = runner.invoke(app, ["inspect-attention", str(run_dir), "anna"])
    assert "layer 0, head 1" in shown.stdout and "what the model predicts next" in shown.stdout
    result = runner.invoke(app, ["inspect-attention", str(run_dir), "anna", "--png", str(png), "--json-file", str(js)])
    assert result.exit_code == 0, result.output
    assert result.stdout == "" and result.stderr == f"wrote {js} and {png}\n"  # the files, not 168 lines of tables
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    data = json.loads(js.read_text())
    assert data["tokens"] == ["·", "a", "n", "n", "a"]
    for entry in data["attention"]:
        for i, row in enumerate(entry["weights"]):
            assert sum(row) == pytest.approx(1.0, abs=1e-5) and all(w == 0 for w in row[i + 1 :])

    bars = runner.invoke(
        app, ["inspect-attention", str(run_dir), "anna", "--layer", "0", "--head", "1", "--position", "2"]
    )
    assert bars.exit_code == 0
    rows = [line for line in bars.stdout.splitlines() if line.strip()[:1].isdigit() and "│" not in line]
    assert len(rows) == 5 and all(row.rstrip().endswith("masked (a later position)") for row in rows[3:])
    assert all(re.search(r"\d\.\d{3}$", row.rstrip()) for row in rows[:3])  # what it attends to, with its weight


@pytest.mark.parametrize(
    "args, message",
    [
        (["zz9"], "never saw: '9'"),
        (["anna", "--layer", "5"], "--layer 5 is out of range"),
        (["anna", "--position", "9"], "--position 9 is out of range"),
    ],
)
def test_cli_bad_input(trained_run, args, message):
    result = runner.invoke(app, ["inspect-attention", str(trained_run[0]), *args])
    assert result.exit_code == 2 and message in result.stderr and "Traceback" not in result.output


def test_png_without_matplotlib_says_how_to_install(trained_run, tmp_path, monkeypatch):
    hide_package(monkeypatch, "matplotlib")
    result = runner.invoke(app, ["inspect-attention", str(trained_run[0]), "anna", "--png", str(tmp_path / "a.png")])
    assert result.exit_code == 2
    assert result.stderr.strip().startswith(
        "minigpt: error: PNG output needs matplotlib, in minigpt's plot extra: pip install 'minigpt-names[plot]'"
    )


def test_a_capitalised_name_is_refused_with_the_obvious_fix(trained_run):
    result = runner.invoke(app, ["inspect-attention", str(trained_run[0]), "Emma"])
    assert result.exit_code == 2
    assert result.stderr == (
        "minigpt: error: 'Emma' has characters the model never saw: 'E' (the vocabulary is lowercase: try \"emma\")\n"
    )
    result = runner.invoke(app, ["sample", str(trained_run[0]), "--prefix", "Em!"])
    assert result.exit_code == 2 and "try" not in result.stderr  # "em!" would not do either: no fix offered
    assert "reads as \"em!\" but for '!'" in result.stderr  # the plainer spelling, with what it still lacks


def test_the_boundary_token_has_one_name_in_the_terminal_json_page_and_docs(trained_run, tmp_path):
    from pathlib import Path

    from minigpt.common.text import BOUNDARY
    from minigpt.views.explorer_page import explorer_script

    assert BOUNDARY == "·"
    shown = runner.invoke(app, ["inspect-attention", str(trained_run[0]), "anna"]).stdout
    data = json.loads(runner.invoke(app, ["inspect-attention", str(trained_run[0]), "anna", "--json"]).stdout)
    assert data["tokens"][0] == "·" and any(n["token"] == "·" for p in data["predictions"] for n in p["next"])
    page = explorer_script()
    assert "token === BOS ? BOUNDARY" in page and "const BOUNDARY = DATA.boundary" in page and 'BOS ? "end"' not in page
    root = Path(__file__).resolve().parent.parent
    for text in [shown, page, *(path.read_text() for path in [root / "README.md", *(root / "docs").glob("*.md")])]:
        assert "<BOS>" not in text and "<end>" not in text


def test_a_heatmap_wider_than_the_terminal_says_what_it_left_out(tmp_path, monkeypatch):
    from minigpt.formats.recipes import load_config
    from minigpt.runs.run import train

    names = tmp_path / "places.txt"
    names.write_text("\n".join(["stow-on-the-wold", "bourton-on-the-water", "anna", "moreton"] * 20) + "\n")
    run = train(
        load_config("tiny", ["model.block_size=24", "train.steps=2"]), names, out_dir=tmp_path / "r", quiet=True
    ).run_dir
    monkeypatch.setenv("COLUMNS", "80")
    wide = CliRunner().invoke(
        app, ["inspect-attention", str(run), "bourton-on-the-water", "--layer", "0", "--head", "0"]
    )
    assert wide.exit_code == 0 and "the last positions are cut off at 80 columns" in wide.stdout
    narrow = CliRunner().invoke(app, ["inspect-attention", str(run), "anna", "--layer", "0", "--head", "0"])
    assert narrow.exit_code == 0 and "cut off" not in narrow.stdout


def test_a_map_wider_than_the_terminal_keeps_its_title_and_caption(trained_run):
    """The map is cut at the terminal's right edge; its title and caption, at the left, are not (58 §5)."""
    shown = runner.invoke(
        app,
        ["inspect-attention", str(trained_run[0]), "annabella", "--layer", "0", "--head", "1"],
        env={"COLUMNS": "30"},
    )
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.splitlines()
    assert lines[0].startswith("layer 0, head 1") and any(line.startswith("· is the boundary token") for line in lines)


def test_the_prediction_table_keeps_each_probability_beside_its_character_at_50_columns(trained_run):
    """At 50 columns the table wrapped a probability onto a line of its own, apart from its character."""
    from typer.testing import CliRunner

    from minigpt.cli.main import app

    shown = (
        CliRunner()
        .invoke(
            app,
            ["inspect-attention", str(trained_run[0]), "anna", "--layer", "0", "--head", "0"],
            env={"COLUMNS": "50"},
        )
        .stdout
    )
    rows = shown.split("what the model predicts next")[1].splitlines()
    cells = [cell.strip() for row in rows if "│" in row for cell in row.split("│")[2:]]
    assert cells and all(re.fullmatch(r"\S+ [01]\.\d{3}", cell) for cell in cells if cell), cells
