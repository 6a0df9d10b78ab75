"""The explorer page's parts (minigpt/views/web/explorer/): each a namespace of its own, a new panel
added by its part file and one line in the registry, and the tests' readers kept out of the page."""

from __future__ import annotations

import re

import pytest

import browser
from minigpt.views.web_files import web_file
from minigpt.views.explorer_page import explorer_parts, write_page

def body(part: str) -> str:
    """A part file's code, its opening comment left out."""
    return re.sub(r"\A(//[^\n]*\n)+\s*", "", web_file(f"explorer/{part}"))


@pytest.mark.parametrize("part", explorer_parts())
def test_each_part_is_a_namespace_of_its_own(part):
    code = body(part)
    if part == "wiring.js":  # the start: it names nothing for others
        assert code.startswith("(() => {\n") and code.endswith("})();\n")
        return
    namespace = "".join(word.title() for word in part.removesuffix(".js").split("_"))
    assert code.startswith(f"const {namespace} = (() => {{\n") and code.endswith("};\n})();\n")
    assert code.count("\n})();") == 1  # one namespace, closed once, at the end


def test_the_parts_come_state_and_drawing_first_and_wiring_last():
    parts = explorer_parts()
    assert parts[:2] == ["state.js", "drawing.js"] and parts[-1] == "wiring.js"
    assert "lessons.js" in parts and "cache.js" in parts and len(parts) == len(set(parts))


def test_the_tests_readers_are_not_in_the_page():
    script = "".join(web_file(f"explorer/{part}") for part in explorer_parts())
    for reader in ["whyShown", "walkShown", "liveCosts", "patchGrid(textA", "worked()", "nextDistribution"]:
        assert reader not in script
    assert "forward(text" in script  # the console API a learner reads stays


HELLO = """
const Hello = (() => {
const { $, state } = State;
const section = '<section id="hello" aria-labelledby="hello-title"><h2 id="hello-title">Hello</h2><p id="hello-text"></p></section>';
const draw = () => { $("hello-text").textContent = `${state.view.tokens.length} tokens`; };
return { section, draw };
})();
"""
ENTRY = '  { id: "hello", section: Hello.section, after: "lens", draw: Hello.draw, on: ["text"] },\n'


def test_a_new_panel_is_its_part_file_and_one_line_in_the_registry(chromium, trained_run, tmp_path):
    """docs/development.md's recipe: the part (its section, its draw) and its line in PANELS, nothing else."""
    path = write_page(trained_run[0], tmp_path / "page.html", text="emma")
    page_text = path.read_text(encoding="utf-8")
    wiring = page_text.index("// wiring.js:")
    page_text = page_text[:wiring] + HELLO + page_text[wiring:]
    page_text = page_text.replace("const PANELS = [\n", "const PANELS = [\n" + ENTRY, 1)
    path.write_text(page_text, encoding="utf-8")
    page = browser.open_page(chromium, path)
    page.fill("#name-input", "zoe")
    browser.show(page, "#hello")
    page.wait_for_function("document.getElementById('hello-text').textContent === '4 tokens'")
    assert page.evaluate("document.getElementById('hello').previousElementSibling.id") == "lens"
    assert page.watched.errors == []



def test_both_names_live_in_the_one_state_and_the_address_follows_them(chromium, trained_run, tmp_path):
    page = browser.open_page(chromium, write_page(trained_run[0], tmp_path / "page.html", text="emma"))
    page.fill("#patch-input", "anna")
    page.wait_for_function("location.hash.includes('second=anna')")
    page.fill("#name-input", "ella")
    page.wait_for_function("location.hash.includes('name=ella&')")
    assert page.evaluate("State.state.name") == "ella" and page.evaluate("State.state.second") == "anna"
    assert page.watched.errors == []


@pytest.mark.parametrize("lesson", [0, 9, "2", 2.0])
def test_a_page_opens_only_at_a_lesson_the_course_has(lesson, tmp_path):
    """The Python API checks the lesson as the command line does, before anything is read."""
    from minigpt.common.errors import UsageError

    with pytest.raises(UsageError, match="course has lessons 1 to 8"):
        write_page(tmp_path / "no-such-run", tmp_path / "page.html", lesson=lesson)
