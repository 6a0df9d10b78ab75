"""Text from files is never markup and never raw control characters: names holding rich markup
("a[/]b", "[link=…]"), a terminal escape sequence and a right-to-left override, through every
command that prints them."""

import pytest
from typer.testing import CliRunner

from minigpt.cli.main import app
from minigpt.formats.recipes import load_config
from minigpt.runs.run import train

runner = CliRunner()
HOSTILE = ["a[/]b", "[link=http://x]c", "e\x1b]0;title\x07f", "g\u202eh", "anna", "bob"]
RAW = ("\x1b", "\x07", "\u202e")


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile")
    names = tmp / "names.txt"
    names.write_text("\n".join(HOSTILE * 30) + "\n", encoding="utf-8")
    return train(load_config("tiny", ["train.steps=20"]), names, out_dir=tmp / "run", quiet=True).run_dir


COMMANDS = [
    ["info", "{run}"],
    ["inspect-attention", "{run}", "a[/]b"],
    ["inspect-attention", "{run}", "a[/]b", "--lens"],
    ["inspect-attention", "{run}", "[link=http://x]"],
    ["sample", "{run}", "-n", "20", "--mark"],
    ["ablate", "{run}"],
    ["eval", "{run}", "--data", "{run}/../names.txt"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c[::2]))
def test_no_command_prints_a_files_text_as_markup_or_raw_control_characters(hostile_run, command):
    result = runner.invoke(app, [part.format(run=hostile_run) for part in command])
    assert result.exit_code == 0, result.output
    printed = result.stdout + result.stderr
    assert not any(c in printed for c in RAW), printed
    if "a[/]b" in command:
        assert "[" in printed and "]" in printed  # its brackets shown, not taken as markup


def test_the_run_directorys_files_hold_no_raw_control_characters(hostile_run):
    text = (hostile_run / "samples.txt").read_text(encoding="utf-8")
    assert not any(c in text for c in RAW)
