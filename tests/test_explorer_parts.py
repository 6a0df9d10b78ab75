"""The explorer page's parts (minigpt/views/web/explorer/): each a namespace of its own, a new panel
added by its part file and one line in the registry, and the tests' readers kept out of the page."""

from __future__ import annotations

import re

import browser
import pytest
from playwright.sync_api import expect

from minigpt.views.explorer_page import explorer_parts, write_page
from minigpt.views.web_files import web_file


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


def test_the_parts_come_state_drawing_and_measures_first_and_wiring_last():
    parts = explorer_parts()
    assert parts[:3] == ["state.js", "drawing.js", "measures.js"] and parts[-1] == "wiring.js"
    assert "lessons.js" in parts and "cache.js" in parts and len(parts) == len(set(parts))


SHARED = {"State", "Drawing", "Measures"}  # what every part may read: the state, the drawing helpers, the measures


def test_no_part_reaches_into_another_only_the_registry_knows_them_all():
    """A part reads State, Drawing and Measures, writes the state and says what changed; it never calls or
    reads another part (wiring.js, the registry, is the one place that names them all)."""
    namespaces = {"".join(w.title() for w in part.removesuffix(".js").split("_")): part for part in explorer_parts()}
    reaching = [
        f"{part} uses {name}.{member}"
        for part in explorer_parts()
        if part != "wiring.js"
        for name, member in re.findall(r"\b([A-Z][A-Za-z]+)\.([A-Za-z_]+)", body(part))
        if name in namespaces and name not in SHARED and namespaces[name] != part
    ]
    assert reaching == []


def test_a_change_is_one_word_the_controls_say_and_the_panels_list():
    """One vocabulary: every change a part announces (changed("...")) is one the registry answers, and every
    word a panel redraws on is one that something announces."""
    script = "".join(body(part) for part in explorer_parts())
    announced = set(re.findall(r'changed\(\s*"([a-z]+)"', script)) | set(
        re.findall(r'changed\(setView \? "([a-z]+)" : "([a-z]+)"', script)[0]
    )
    wiring = body("wiring.js")
    groups = {"SELECTION": ["text", "head", "cell"]}
    listed = set()
    for on in re.findall(
        r"\bon: \[?([^\]\n}]*)", wiring[wiring.index("const PANELS") : wiring.index("];", wiring.index("const PANELS"))]
    ):
        listed |= set(re.findall(r'"([a-z]+)"', on))
        listed |= {word for group, words in groups.items() if group in on for word in words}
    assert listed - {"resized"} <= announced, listed - announced
    assert announced - {"resized", "lesson", "name"} <= listed, announced - listed  # a name is new text (ALSO)


def test_the_tests_readers_are_not_in_the_page():
    script = "".join(web_file(f"explorer/{part}") for part in explorer_parts())
    for reader in ["whyShown", "walkShown", "liveCosts", "patchGrid(textA", "worked()", "nextDistribution"]:
        assert reader not in script
    assert "forward(text" in script  # the console API a learner reads stays


HELLO = """
const Hello = (() => {
const { $, changed, state } = State;
state.loud = false;
const section = '<section id="hello" aria-labelledby="hello-title"><h2 id="hello-title">Hello</h2>' +
  '<label><input type="checkbox" id="hello-loud"> loud</label><p id="hello-text"></p></section>';
const build = () => $("hello-loud").addEventListener("change", (event) => {
  state.loud = event.target.checked; changed("loud");
});
const draw = () => {
  $("hello-loud").checked = state.loud;
  $("hello-text").textContent = `${state.view.tokens.length} tokens` + (state.loud ? "!" : "");
};
const address = { key: "loud", write: () => (state.loud ? "yes" : null),
                  read: (value) => { state.loud = value === "yes"; } };
const lesson = { title: "Counting", section: "hello", view: {}, text: "The model reads a token more than the name has.",
                 look: "The count.", question: "How many tokens does emma make?",
                 answer: () => `${state.view.tokens.length}.` };
return { address, build, draw, lesson, section };
})();
"""
ENTRY = (
    '  { id: "hello", section: Hello.section, build: Hello.build, draw: Hello.draw, on: ["text", "loud"], '
    "address: Hello.address, lesson: Hello.lesson },\n"
)


def test_a_new_panel_is_its_part_file_and_one_line_in_the_registry(chromium, trained_run, tmp_path):
    """docs/development.md's recipe: the part (its section, its control, its draw, its address key and its
    lesson) and its line in PANELS, in its place on the page, nothing else."""
    path = write_page(trained_run[0], tmp_path / "page.html", text="emma")
    page_text = path.read_text(encoding="utf-8")
    wiring = page_text.index("// wiring.js:")
    page_text = page_text[:wiring] + HELLO + page_text[wiring:]
    lens = page_text.index("\n", page_text.index("{ section: Lens.section")) + 1  # its place: below the lens
    page_text = page_text[:lens] + ENTRY + page_text[lens:]
    path.write_text(page_text, encoding="utf-8")
    page = browser.open_page(chromium, path)
    page.fill("#name-input", "zoe")
    browser.show(page, "#hello")
    browser.wait_until(page, "document.getElementById('hello-text').textContent === '4 tokens'")
    assert page.evaluate("document.getElementById('hello').previousElementSibling.id") == "lens"
    page.check("#hello-loud")  # the control: the state, the panel and the address follow it
    browser.wait_until(
        page, "document.getElementById('hello-text').textContent === '4 tokens!' && location.hash.includes('loud=yes')"
    )
    again = browser.open_page(
        chromium, path, hash=page.evaluate("location.hash")
    )  # the address opens the view as it was
    browser.show(again, "#hello")
    browser.wait_until(again, "document.getElementById('hello-text').textContent === '4 tokens!'")
    assert again.is_checked("#hello-loud")
    again.click("#course-list button[data-lesson='9']")  # the panel's lesson, after the course's eight
    expect(again.locator("#lesson-title")).to_have_text("Lesson 9 of 9: Counting")
    again.click("#lesson-answer-box summary")
    expect(again.locator("#lesson-answer")).to_have_text("4.")
    assert page.watched.errors == [] and again.watched.errors == []


def test_both_names_live_in_the_one_state_and_the_address_follows_them(chromium, trained_run, tmp_path):
    page = browser.open_page(chromium, write_page(trained_run[0], tmp_path / "page.html", text="emma"))
    page.fill("#patch-input", "anna")
    browser.wait_until(page, "location.hash.includes('second=anna')")
    page.fill("#name-input", "ella")
    browser.wait_until(page, "location.hash.includes('name=ella&')")
    assert page.evaluate("State.state.name") == "ella" and page.evaluate("State.state.second") == "anna"
    assert page.watched.errors == []


@pytest.mark.parametrize("lesson", [0, 9, "2", 2.0])
def test_a_page_opens_only_at_a_lesson_the_course_has(lesson, tmp_path):
    """The Python API checks the lesson as the command line does, before anything is read."""
    from minigpt.errors import UsageError

    with pytest.raises(UsageError, match="course has lessons 1 to 8"):
        write_page(tmp_path / "no-such-run", tmp_path / "page.html", lesson=lesson)
