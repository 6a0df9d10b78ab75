"""Characters that belong in names and look like something else: a Catalan "·" is a character, not
the boundary token (which is then drawn as a stand-in, the same one everywhere); the zero-width
joiners of Persian names and emoji families print as themselves, not as escapes."""

import json

import browser
import pytest
from typer.testing import CliRunner

from minigpt.cli.main import app
from minigpt.common.text import BOUNDARY, boundary_mark, one_line, token_label, token_text
from minigpt.data import Tokenizer
from minigpt.formats.recipes import load_config
from minigpt.runs.run import train
from minigpt.views.explorer_page import write_page

runner = CliRunner()
NAMES = ["gal·la", "pau·la", "mar·cel", "anna", "ali\u200creza", "x\u200dy"] * 40


@pytest.fixture(scope="module")
def dotted_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dotted")
    (tmp / "names.txt").write_text("\n".join(NAMES) + "\n", encoding="utf-8")
    return train(
        load_config("tiny", ["train.steps=4", "train.eval_interval=4"]),
        tmp / "names.txt",
        out_dir=tmp / "run",
        quiet=True,
    ).run_dir


def test_the_boundary_token_is_drawn_apart_from_a_character_of_the_vocabulary():
    assert boundary_mark(Tokenizer(list("ab")).stoi) == BOUNDARY
    plain = Tokenizer(list("ab·"))
    mark = boundary_mark(plain.stoi)
    assert mark not in plain.chars and token_label(plain, plain.bos) == mark
    crowded = Tokenizer(["·", "◇", "¤", "␄", "⟂"])
    assert boundary_mark(crowded.stoi) not in crowded.chars


def test_inspect_attention_marks_the_boundary_apart_from_a_dot_in_the_name(dotted_run):
    shown = runner.invoke(app, ["inspect-attention", str(dotted_run), "gal·la"])
    assert shown.exit_code == 0, shown.output
    mark = boundary_mark(Tokenizer(sorted(set("".join(NAMES)))).stoi)
    assert mark != "·" and f"{mark} is the boundary token" in shown.stdout
    assert "· is the boundary token" not in shown.stdout
    report = json.loads(runner.invoke(app, ["inspect-attention", str(dotted_run), "gal·la", "--json"]).stdout)
    assert report["boundary"] == mark and report["tokens"] == [mark, *"gal·la"]


def test_joiners_print_as_themselves_in_names_and_as_escapes_alone():
    assert one_line("ali\u200creza") == "ali\u200creza" and one_line("x\u200dy") == "x\u200dy"
    assert token_text("\u200c") == "\\u200c"  # a heading of one joiner would show nothing
    assert one_line("g\u202eh") == "g\\u202eh"  # a right-to-left override is still escaped


def test_sample_prints_names_with_their_joiners(dotted_run):
    result = runner.invoke(app, ["sample", str(dotted_run), "-n", "200", "--seed", "1"])
    assert result.exit_code == 0, result.output
    assert "\\u200c" not in result.stdout and "\\u200d" not in result.stdout


def test_the_page_reads_a_dot_in_a_name_as_the_character(chromium, dotted_run, tmp_path):
    page = browser.open_page(chromium, write_page(dotted_run, tmp_path / "page.html", text="gal·la"))
    mark = page.evaluate("JSON.parse(document.getElementById('minigpt-data').textContent).boundary")
    assert mark != "·"
    assert page.evaluate("minigpt.forward('gal·la').tokens.length") == 7  # the boundary token, then six characters
    assert page.locator("#read").inner_text().replace("\n", "").replace(" ", "").startswith(mark + "gal·la")
    assert "· the boundary token" not in page.content() and not page.watched.errors
