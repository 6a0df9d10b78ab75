"""Where a learner tripped on the explorer page, mended: the course's contents on screen wherever one is, the
answers following the view, the lessons' words matching the page, and the controls that misled.

One page, the suite's tiny page (tests/conftest.py).
"""

import re

import browser
import pytest
from playwright.sync_api import expect

from minigpt.formats.checkpoint import load_checkpoint


def on_screen(page, selector: str) -> bool:
    box = page.locator(selector).bounding_box()
    view = page.viewport_size
    return (
        box is not None
        and box["y"] >= 0
        and box["y"] + box["height"] <= view["height"]
        and box["x"] >= 0
        and box["x"] + box["width"] <= view["width"]
    )


def open_answer(page, lesson: int) -> None:
    page.evaluate("(n) => { location.hash = 'lesson=' + n; }", lesson)
    expect(page.locator("#lesson-title")).to_contain_text(f"Lesson {lesson} of")
    if not page.locator("#lesson-answer-box").evaluate("box => box.open"):
        page.evaluate("document.getElementById('lesson-answer').textContent = ''")  # the last lesson's answer: gone
        page.click("#lesson-answer-box summary")
    browser.wait_until(page, "document.getElementById('lesson-answer').textContent.length > 0")  # drawn as it opens


@pytest.mark.parametrize("width, height", [(1280, 800), (390, 844)])
def test_the_lessons_are_a_list_on_screen_wherever_one_has_scrolled(chromium, tiny_page, width, height):
    page = browser.open_page(chromium, tiny_page[1], width=width, height=height)
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    assert on_screen(page, "#contents summary")
    page.click("#contents summary")
    items = page.locator("#lesson-list button")
    assert items.count() == 8 and items.nth(1).inner_text() == "The causal mask"
    assert on_screen(page, "#lesson-list li:last-child button")
    items.nth(4).click()
    expect(page.locator("#lesson-title")).to_have_text(re.compile("^Lesson 5 of 8: The whole model"))
    assert not page.locator("#contents").evaluate("box => box.open")  # it folds away once a lesson is chosen
    assert (
        items.nth(4).get_attribute("aria-current") == "true" and items.nth(0).get_attribute("aria-current") == "false"
    )
    page.click("#contents summary")
    page.click("#contents-free")
    expect(page.locator("#lesson-panel")).to_be_hidden()
    assert page.watched.errors == []


def test_an_open_answer_follows_the_head_the_row_and_the_name(chromium, tiny_page):
    page = browser.open_page(chromium, tiny_page[1])
    open_answer(page, 1)
    page.locator("#grid button.thumb").nth(3).click()  # layer 1, head 1
    expect(page.locator("#lesson-answer")).to_contain_text("of layer 1, head 1 puts")
    page.locator("#big-matrix .cell[data-i='2'][data-j='1']").click()
    expect(page.locator("#lesson-answer")).to_contain_text("Row 2 (“m”)")
    page.fill("#name-input", "anna")  # a new name: the row follows its end again
    expect(page.locator("#lesson-answer")).to_contain_text("Row 4 (“a”)")
    open_answer(page, 6)  # why this character: at the row shown, as the bars under it are
    page.locator("#big-matrix .cell[data-i='1'][data-j='0']").click()
    expect(page.locator("#lesson-answer")).to_contain_text("At row 1 (“a”)")
    target = page.eval_on_selector("#why-target", "s => s.options[s.selectedIndex].text")
    assert target.split()[0].strip("“”") in page.inner_text("#lesson-answer")
    assert page.watched.errors == []


def test_the_lessons_words_match_the_page(chromium, tiny_page):
    ckpt = load_checkpoint(tiny_page[1].parent / "run")
    c = ckpt.config.model
    page = browser.open_page(chromium, tiny_page[1])
    open_answer(page, 3)
    assert f"one {c.n_embd} × {c.n_embd} matrix" in page.inner_text("#lesson-text")
    assert f"{c.n_head} × {c.n_embd // c.n_head} = {c.n_embd} numbers" in page.inner_text("#lesson-text")
    open_answer(page, 4)
    assert "“add the model's next character”, under the table" in page.inner_text("#lesson-text")
    assert page.inner_text("#cache-next") == "add the model's next character"
    browser.show(page, "#cache")
    count = re.search(r"reads all (\d+) of them", page.inner_text("#cache-check")).group(1)
    assert page.inner_text("#lesson-answer").startswith(f"{count}: ")  # the panel and the answer count alike
    page.fill("#patch-input", "anna")
    open_answer(page, 7)
    rows = page.locator("#lesson-answer table tr")
    expect(rows).to_have_count(11)  # the ranked table: a heading and the ten parts that close the most
    shares = [float(rows.nth(n).locator("td").nth(2).inner_text().rstrip("%")) for n in range(1, 11)]
    assert shares == sorted(shares, reverse=True)
    page.set_viewport_size({"width": 390, "height": 844})
    open_answer(page, 8)
    assert on_screen(page, "#step-slider")  # lesson 8's slider in sight as its lesson opens, in its panel
    open_answer(page, 1)
    page.evaluate("window.scrollTo(0, 2000)")
    assert not on_screen(page, "#step-slider")  # only while lesson 8 is open
    assert page.watched.errors == []


def test_the_controls_do_what_they_look_like(chromium, tiny_page):
    page = browser.open_page(chromium, tiny_page[1])
    open_answer(page, 1)
    style = "b => [getComputedStyle(b).color, getComputedStyle(b).cursor]"
    disabled, enabled = page.eval_on_selector("#lesson-prev", style), page.eval_on_selector("#lesson-next", style)
    assert page.is_disabled("#lesson-prev") and disabled[0] != enabled[0] and disabled[1] == "not-allowed"
    # a masked cell, clicked, moves nothing under the pointer
    cell = page.locator("#big-matrix .cell[data-i='1'][data-j='3']")
    before = cell.bounding_box()
    cell.click()
    expect(page.locator("#mask-note")).to_contain_text("the causal mask hides it")
    assert cell.bounding_box() == before
    # the switches under the squares are Tab stops
    page.locator("#grid button.thumb[tabindex='0']").focus()
    page.keyboard.press("Tab")
    assert page.evaluate(
        "document.activeElement.closest('#grid') !== null && document.activeElement.type === 'checkbox'"
    )
    # a snapshot's figures say they are carried in fewer bits than the run keeps
    page.locator("#step-slider").fill("0")
    expect(page.locator("#step-precision")).to_contain_text("6 bits a number")
    assert page.watched.errors == []


def test_the_worked_row_on_a_phone_says_it_scrolls_and_keeps_its_positions(chromium, tiny_page):
    page = browser.open_page(chromium, tiny_page[1], width=390, height=844)
    browser.show(page, "#row")
    assert page.is_visible("#math-scroll")
    holder = page.locator("#row .scroll")
    first = page.locator("#math-table tbody tr[data-j='0'] th")
    left = first.bounding_box()["x"]
    holder.evaluate("box => { box.scrollLeft = 200; }")
    browser.wait_until(page, "document.querySelector('#row .scroll').scrollLeft > 0")
    assert first.bounding_box()["x"] == pytest.approx(left, abs=1)  # the position column stayed
    wide = browser.open_page(chromium, tiny_page[1], width=1280, height=900)
    assert not wide.is_visible("#math-scroll")


def test_typing_a_name_after_a_toggle_keeps_the_toggle_in_the_history(chromium, tiny_page):
    page = browser.open_page(chromium, tiny_page[1])
    page.check("#mask-off")
    browser.wait_until(page, "location.hash.includes('mask=off')")
    page.click("#name-input")
    page.keyboard.press("End")
    page.keyboard.type("nuel")
    browser.wait_until(page, "location.hash.includes('name=emmanuel')")
    page.go_back()  # the name typed is one entry: back returns to the toggle, with the name it had
    browser.wait_until(page, "location.hash.includes('name=emma&')")
    assert page.is_checked("#mask-off") and page.input_value("#name-input") == "emma"
    page.go_back()
    browser.wait_until(page, "!location.hash.includes('mask=off')")
    assert not page.is_checked("#mask-off")
    assert page.watched.errors == []


def test_the_worked_rows_formula_follows_the_mask(chromium, tiny_page):
    page = browser.open_page(chromium, tiny_page[1])
    expect(page.locator("#math-formula")).to_contain_text("with −∞ for every later j")
    page.check("#mask-off")
    expect(page.locator("#math-formula")).to_contain_text("every j: the mask is off")
    assert "−∞" not in page.inner_text("#math-formula")
    assert page.watched.errors == []


def test_no_blank_band_where_the_worked_row_sits_below_the_matrix(chromium, tiny_page):
    """At 1,100 px the worked row goes below the matrix: the room kept for the longest name's matrix and rows,
    so that typing moves nothing beside them, would be a blank band there (58 §5). Side by side it is kept."""
    gaps = {}
    for width in (1100, 1280):
        page = browser.open_page(chromium, tiny_page[1], width, 800)
        browser.wait_until(page, "document.querySelectorAll('#big-matrix .cell').length > 0")
        gaps[width] = page.evaluate("""() => {
            const above = Math.max(...['#grid', '#big-matrix']
                .map((s) => document.querySelector(s).getBoundingClientRect().bottom));
            const row = document.getElementById('row').getBoundingClientRect();
            return { below: row.top > above - 1, gap: row.top - above,
                     room: getComputedStyle(document.getElementById('matrix-room')).minHeight };
        }""")
        page.close()
    assert gaps[1100]["below"] and gaps[1100]["gap"] < 120 and gaps[1100]["room"] == "0px", gaps
    assert gaps[1280]["room"] != "0px" and not gaps[1280]["below"], gaps


def test_panels_out_of_sight_are_drawn_in_a_browser_never_idle(chromium, tiny_page):
    """Panels below the first screen are drawn in the browser's idle time, so that a page captured whole shows
    them all. A browser never idle (a busy machine, a tab behind others) calls back only at the timeout, with
    no time to spare; the panels are drawn then too, not left until scrolled to."""
    page = browser.open_page(
        chromium,
        tiny_page[1],
        before="""window.forcedCallbacks = 0;
      window.requestIdleCallback = (callback) => setTimeout(() => {
        window.forcedCallbacks += 1;
        callback({ didTimeout: true, timeRemaining: () => 0 });
      }, 10);""",
    )
    browser.wait_until(page, "() => window.forcedCallbacks > 0 && !document.querySelector('[aria-busy=true]')")
    assert page.evaluate("window.scrollY") == 0 and not page.watched.errors  # drawn unseen, from the top of the page


def test_with_the_mask_off_the_worked_rows_legend_no_longer_says_a_later_score_is_minus_infinity(chromium, tiny_page):
    """The legend said "A later position's score is −∞" with the mask switched off, where every score counts."""
    page = browser.open_page(chromium, tiny_page[1], hash="#mask=off")
    browser.wait_until(page, "document.getElementById('math-legend').textContent.length > 0")
    legend = page.inner_text("#math-legend")
    assert "The mask is off" in legend and "−∞" not in legend
    masked = browser.open_page(chromium, tiny_page[1])
    browser.wait_until(masked, "document.getElementById('math-legend').textContent.length > 0")
    assert "A later position's score is −∞" in masked.inner_text("#math-legend")
    assert page.watched.errors == [] and masked.watched.errors == []


def test_enter_on_next_keeps_the_focus_on_the_lessons_buttons(chromium, tiny_page):
    """Enter on "next →" moved the lesson and dropped the keyboard's focus to the page's body."""
    page = browser.open_page(chromium, tiny_page[1], hash="#lesson=1")
    browser.wait_until(page, "!document.getElementById('lesson-panel').hidden")
    page.focus("#lesson-next")
    page.keyboard.press("Enter")
    browser.wait_until(page, "document.getElementById('lesson-title').textContent.startsWith('Lesson 2')")
    assert page.evaluate("document.activeElement.id") == "lesson-next"
    for _ in range(6):  # to the last lesson, where "next" is disabled: the focus goes to the lesson's title
        page.keyboard.press("Enter")
    browser.wait_until(page, "document.getElementById('lesson-title').textContent.startsWith('Lesson 8')")
    assert page.evaluate("document.activeElement.id") == "lesson-title"
    assert page.watched.errors == []


@pytest.mark.parametrize("width, height", [(1280, 900), (390, 844)])
def test_the_course_is_a_numbered_list_in_sight_with_the_open_lesson_marked(chromium, tiny_page, width, height):
    """The lessons were a drop-down at the top (or a folded list in a corner): now each is a numbered button in
    the header, on screen when the page opens, the open one marked, at desktop and phone width alike."""
    page = browser.open_page(chromium, tiny_page[1], width=width, height=height)
    assert page.locator("header select").count() == 0  # no drop-down
    buttons = page.locator("#course-list button")
    assert buttons.count() == 8 and buttons.nth(0).inner_text().startswith("1.")
    for n in range(8):
        box = buttons.nth(n).bounding_box()
        assert box and 0 <= box["y"] and box["y"] + box["height"] <= height and box["x"] + box["width"] <= width
    buttons.nth(2).click()
    browser.wait_until(page, "document.getElementById('lesson-title').textContent.startsWith('Lesson 3')")
    current = page.eval_on_selector_all("#course-list button", "b => b.map((x) => x.getAttribute('aria-current'))")
    assert current == ["false", "false", "true"] + ["false"] * 5
    assert page.watched.errors == []


SUBJECT_IN_SIGHT = """() => {
  const e = Lessons.subjectOf(Lessons.LESSONS[State.state.lesson]);
  if (!e) return false;
  const r = e.getBoundingClientRect();
  return r.height > 0 && r.top >= -1 && r.bottom <= innerHeight + 1;
}"""

# the lesson's title in sight above the course's contents (on a phone, a bar along the bottom edge), and what it
# asks about whole below it; or, where the two do not both fit, the title at the top with its subject begun
LESSON_IN_SIGHT = """() => {
  const rect = (e) => e.getBoundingClientRect(), subject = Lessons.subjectOf(Lessons.LESSONS[State.state.lesson]);
  if (!subject || rect(subject).height === 0) return false;
  const floor = Math.min(innerHeight, rect(document.getElementById("contents")).top);
  const title = rect(document.getElementById("lesson-title")), panel = rect(document.getElementById("lesson-panel"));
  const s = rect(subject), whole = s.top >= -1 && s.bottom <= floor + 1;
  const both = Math.max(s.bottom, panel.bottom) - Math.min(s.top, panel.top) <= floor;
  return title.top >= -1 && title.bottom <= floor && (whole || (!both && title.top < 2 && s.top < floor - 40));
}"""

FOCUS_IN_SIGHT = """() => {
  const r = document.activeElement.getBoundingClientRect();
  const bar = document.getElementById("contents").getBoundingClientRect();
  return r.top >= 0 && r.bottom <= Math.min(innerHeight, bar.top);
}"""

# each of the panel's lines in sight is the panel's own at its point: nothing floats over the lesson's words
TEXT_UNCOVERED = """() => ["lesson-title", "lesson-text", "lesson-look", "lesson-question"].every((id) => {
  const r = document.getElementById(id).getBoundingClientRect();
  if (r.bottom <= 0 || r.top >= innerHeight) return true;
  const y = Math.min(Math.max(r.top + 4, 0), innerHeight - 1), x = r.left + 4;
  return document.getElementById("lesson-panel").contains(document.elementFromPoint(x, y));
})"""


@pytest.mark.parametrize("width, height", [(1280, 900), (390, 844)])
def test_every_lesson_opens_with_what_it_asks_about_in_sight_and_nothing_over_its_words(
    chromium, tiny_page, width, height
):
    """82 §2: lesson 3's head squares were half below the fold, lesson 4's button 2,943 px down, lesson 5's last
    line below it, lesson 8's floating step bar over its title. Each lesson now opens with its subject (the matrix,
    the squares, the cache, the walk's last line, the why bars, the patching grid) in the viewport under its title
    (begun there, where the two do not both fit) and none of its words covered; lesson 2's answer, opened, leaves
    the matrix in sight; lesson 8 holds its own slider."""
    page = browser.open_page(chromium, tiny_page[1], width=width, height=height)
    for n in range(1, 9):
        page.evaluate("window.scrollTo(0, 0)")
        page.click(f"#course-list button[data-lesson='{n}']")
        expect(page.locator("#lesson-title")).to_contain_text(f"Lesson {n} of")
        browser.wait_until(page, LESSON_IN_SIGHT)
        assert page.evaluate(TEXT_UNCOVERED), f"lesson {n}: something covers its words"
        if n == 2 and width == 1280:
            page.click("#lesson-answer-box summary")
            browser.wait_until(page, "document.getElementById('lesson-answer').textContent.length > 0")
            assert page.evaluate(SUBJECT_IN_SIGHT), "lesson 2's open answer pushed the matrix out of sight"
        if n == 4:
            assert on_screen(page, "#cache-next") or width < 700  # the character is added where its row appears
    assert page.evaluate("document.getElementById('lesson-panel').contains(document.getElementById('training-steps'))")
    page.click("#lesson-close")
    assert page.evaluate("document.querySelector('header').contains(document.getElementById('training-steps'))")
    assert page.is_visible("#matrix-reading")  # the free page: the matrix's own words again, at either width
    assert page.watched.errors == []


def test_lesson_fours_button_adds_a_position_to_the_cache_where_it_is_read(chromium, tiny_page):
    page = browser.open_page(chromium, tiny_page[1], hash="#lesson=4")
    shown = "document.querySelectorAll('#cache-table tr:not([hidden])').length"
    browser.wait_until(page, f"{shown} > 1")
    rows, name = page.evaluate(shown), page.input_value("#name-input")
    page.click("#cache-next")  # a character drawn as sampling draws it: the name and its cache one longer
    note = "document.getElementById('cache-next-note').textContent"
    browser.wait_until(page, f"{shown} === {rows + 1} || {note}.includes('ends')")
    assert page.input_value("#name-input").startswith(name)
    # what the click did is said beside the button, also where the model ends the name and the table stays as
    # it was ("The model ends the name here." appeared some 3,000 px below)
    said = page.evaluate(note)
    assert said.startswith("Drew “") or said.startswith("The model ends the name here")
    box, button = (page.locator(s).bounding_box() for s in ("#cache-next-note", "#cache-next"))
    assert abs(box["y"] - button["y"]) < 40
    assert page.watched.errors == []


def test_the_page_opens_on_a_name_of_the_runs_own_data(tmp_path):
    """A model of Pokémon names opened on "emma", a name it can spell but never saw: it opens on one of its
    own training names now, and on "emma" where "emma" is one."""
    from conftest import tiny_config

    from minigpt.formats.checkpoint import load_checkpoint
    from minigpt.runs.run import train
    from minigpt.views.page_data import default_text

    pokemon = tmp_path / "pokemon.txt"
    pokemon.write_text("\n".join(["pikachu", "bulbasaur", "charmander", "squirtle", "meowth", "eevee"] * 20) + "\n")
    ckpt = load_checkpoint(train(tiny_config("train.steps=2"), pokemon, out_dir=tmp_path / "p", quiet=True).run_dir)
    assert not ckpt.tokenizer.unseen("emma") and default_text(ckpt) in ckpt.train_names
    names = tmp_path / "names.txt"
    names.write_text("\n".join(["anna", "emma", "olivia", "ava", "mia", "noah"] * 20) + "\n")
    ckpt = load_checkpoint(train(tiny_config("train.steps=2"), names, out_dir=tmp_path / "n", quiet=True).run_dir)
    assert default_text(ckpt) == "emma"


@pytest.mark.parametrize("width, height", [(1280, 800), (390, 844)])
def test_the_course_in_the_header_names_every_lesson(chromium, tiny_page, width, height):
    """The visible lesson list was numbers only, the names in a drop-down or a tooltip: each button in the header
    says its lesson's name, on the first screen, at either width."""
    page = browser.open_page(chromium, tiny_page[1], width=width, height=height)
    buttons = page.locator("#course-list button")
    titles = page.evaluate("Lessons.LESSONS.map((l) => l.title)")
    assert len(titles) == buttons.count() == 8
    for n, title in enumerate(titles):
        assert " ".join(buttons.nth(n).inner_text().split()) == f"{n + 1}. {title}"
        assert on_screen(page, f"#course-list li:nth-child({n + 1}) button")
    assert page.watched.errors == []


def test_with_the_mask_off_the_header_and_the_costs_say_which_loss_they_show(chromium, tiny_page):
    """Lesson 2: with the mask off the header kept "the run's validation loss here" with the mask, and the costs
    said "Loss with every part on" as if nothing had changed: each says which it is now."""
    page = browser.open_page(chromium, tiny_page[1])
    browser.wait_until(page, "document.getElementById('step-loss').textContent.length > 0")
    assert "with it off" not in page.text_content("#step-loss")
    page.check("#mask-off")
    browser.wait_until(page, "document.getElementById('step-loss').textContent.includes('with it off')")
    assert re.search(r"with the mask; with it off, \d\.\d{3} over the [\d,]+ ", page.text_content("#step-loss"))
    browser.show(page, "#ablation")
    browser.wait_until(page, "document.getElementById('costs-caption').textContent.includes('Both with the mask')")
    page.uncheck("#mask-off")
    browser.wait_until(page, "!document.getElementById('step-loss').textContent.includes('with it off')")
    assert "Both with the mask" not in page.text_content("#costs-caption")
    assert page.watched.errors == []


def test_at_phone_width_the_walk_through_notes_wrap_inside_the_screen(chromium, tiny_page):
    """At 390 px a note of the walk through the model ran off the screen's edge ("155 of 256 zeroe"): the strips
    scroll sideways in their box, and a note now wraps within the screen, however long."""
    page = browser.open_page(chromium, tiny_page[1], width=390, height=844)
    browser.show(page, "#walk")
    browser.wait_until(page, "document.querySelectorAll('#walk .note-text').length > 3")
    right = page.evaluate("""() => {
      const notes = [...document.querySelectorAll('#walk .note-text')];
      const long = 'fire most: #90 1.12, #16 1.03, #187 1.00; 155 of 256 zeroed '.repeat(3);
      notes.forEach((n) => { n.textContent = long; });
      return Math.max(...notes.map((n) => n.getBoundingClientRect().right));
    }""")
    assert right <= page.evaluate("innerWidth"), right
    assert page.watched.errors == []


@pytest.mark.parametrize("width, height", [(1280, 800), (390, 844)])
def test_lesson_five_opens_with_its_title_its_question_and_the_walks_last_line_in_sight(
    chromium, tiny_page, width, height
):
    """Lesson 5 opened with its title and question above the screen (-425 px at 1280, -2,104 at 390), and Enter on
    "next" from lesson 4 left the focus off screen: its panel now sits under the walk, beside its last line."""
    page = browser.open_page(chromium, tiny_page[1], width=width, height=height)
    page.click("#course-list button[data-lesson='4']")
    expect(page.locator("#lesson-title")).to_contain_text("Lesson 4 of")
    page.focus("#lesson-next")
    page.keyboard.press("Enter")
    expect(page.locator("#lesson-title")).to_contain_text("Lesson 5 of")
    browser.wait_until(page, SUBJECT_IN_SIGHT)
    for selector in ("#lesson-title", "#lesson-question"):
        assert on_screen(page, selector), selector
    focused = page.evaluate(
        "(() => { const r = document.activeElement.getBoundingClientRect(); "
        "return r.top >= 0 && r.bottom <= innerHeight; })()"
    )
    assert focused and page.evaluate(TEXT_UNCOVERED)
    assert page.watched.errors == []


@pytest.mark.parametrize("width, height", [(1280, 800), (390, 844)])
def test_next_through_the_course_keeps_each_lessons_title_and_the_focus_in_sight(chromium, tiny_page, width, height):
    """At 390 px lessons 3, 4, 6, 7 and 8 opened with their titles above the screen, the panel scrolled up until
    the whole subject was in sight, and Enter on "next" to lesson 8 left the focus (its title) up there. The title
    comes first now: where the panel and its subject do not both fit, the subject starts below the panel."""
    page = browser.open_page(chromium, tiny_page[1], width=width, height=height, hash="#lesson=1")
    browser.wait_until(page, LESSON_IN_SIGHT)
    for n in range(2, 9):
        page.focus("#lesson-next")
        page.keyboard.press("Enter")
        expect(page.locator("#lesson-title")).to_contain_text(f"Lesson {n} of")
        browser.wait_until(page, LESSON_IN_SIGHT)
        assert page.evaluate(FOCUS_IN_SIGHT), f"lesson {n}: the focus is off screen"
    assert page.watched.errors == []


def test_on_a_phone_the_contents_are_a_bar_that_covers_nothing_brought_into_view(chromium, tiny_page):
    """At 390 px the fixed "Lessons" button sat over numbers (a head's square, the cache's v and weight, patching
    cells), the mask's controls and lesson text. It is a bar along the bottom edge now: what the page scrolls
    into view lands above it, and the page's end clears it."""
    page = browser.open_page(chromium, tiny_page[1], width=390, height=844)
    bar = page.locator("#contents").bounding_box()
    assert bar["x"] == 0 and bar["width"] == 390 and bar["y"] + bar["height"] == pytest.approx(844, abs=1)
    browser.show(page, "#cache")
    row = page.locator("#cache-table tr:not([hidden])").last
    row.evaluate("r => r.scrollIntoView({ block: 'end' })")
    assert row.bounding_box()["y"] + row.bounding_box()["height"] <= bar["y"] + 1
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    footer = page.locator("footer").bounding_box()
    assert footer["y"] + footer["height"] <= bar["y"] + 1
    assert page.watched.errors == []


@pytest.mark.parametrize("width, height", [(1280, 800), (390, 844)])
def test_with_the_mask_off_its_switch_says_the_names_loss_and_first_choice(chromium, tiny_page, width, height):
    """Lesson 2 asks whether the name's loss falls or rises without the mask; the loss and the predictions were
    2,300 px below the switch (4,400 at 390). While the mask is off, the line under the switch says both, with the
    mask and without, in the figures the lesson's answer gives."""
    page = browser.open_page(chromium, tiny_page[1], width=width, height=height, hash="#lesson=2")
    expect(page.locator("#lesson-title")).to_contain_text("Lesson 2 of")
    expect(page.locator("#mask-effect")).to_be_hidden()
    page.check("#mask-off")
    expect(page.locator("#mask-effect")).to_contain_text("with it off")
    page.locator("#mask-effect").scroll_into_view_if_needed()
    assert on_screen(page, "#mask-effect") and on_screen(page, "#mask-off")
    page.click("#lesson-answer-box summary")
    browser.wait_until(page, "document.getElementById('lesson-answer').textContent.length > 0")
    masked, unmasked = re.search(
        r"with the mask, (\d\.\d{3}) nats per character; without it, (\d\.\d{3})", page.inner_text("#lesson-answer")
    ).groups()
    said = page.inner_text("#mask-effect")
    assert f"{masked} nats per token with the mask, {unmasked} with it off" in said
    assert re.search(r"first choice: .+ \d+\.\d% with the mask, .+ \d+\.\d% with it off", said)
    page.uncheck("#mask-off")
    expect(page.locator("#mask-effect")).to_be_hidden()
    assert page.watched.errors == []


def test_the_mask_back_on_with_a_part_off_shows_the_masked_pass(chromium, tiny_page):
    """With a part switched off, the mask off and then on again left every number on the unmasked pass: the page
    reused the last pass's positions, which with the same parts off it took for the same, though they had read
    the later ones."""
    page = browser.open_page(chromium, tiny_page[1])
    page.locator("#grid label.switch input").first.uncheck()
    browser.wait_until(page, "location.hash.includes('off=')")
    masked = page.evaluate("Array.from(State.state.view.steps[0].logits)")
    page.check("#mask-off")
    browser.wait_until(page, "location.hash.includes('mask=off')")
    assert page.evaluate("Array.from(State.state.view.steps[0].logits)") != masked
    page.uncheck("#mask-off")
    browser.wait_until(page, "!location.hash.includes('mask=off')")
    assert page.evaluate("Array.from(State.state.view.steps[0].logits)") == masked
    assert page.watched.errors == []


def test_lesson_seven_changes_your_name_beside_the_grid(chromium, tiny_page):
    """In lesson 7 the learner typed in the name box at the top of the page, some 5,000 px above the grid it was
    reading. The patching section has the name's own box beside the second name's: typing there changes the name
    everywhere, and the grid stays where it was."""
    page = browser.open_page(chromium, tiny_page[1], hash="#lesson=7")
    expect(page.locator("#lesson-title")).to_contain_text("Lesson 7 of")
    browser.show(page, "#patch")
    assert page.input_value("#patch-first") == page.input_value("#name-input") == "emma"
    page.locator("#patch-first").scroll_into_view_if_needed()
    grid = page.locator("#patch-grid").bounding_box()["y"]
    page.click("#patch-first")
    page.keyboard.press("End")
    page.keyboard.type("lie")
    browser.wait_until(page, "location.hash.includes('name=emmalie')")
    assert page.input_value("#name-input") == "emmalie"
    assert page.locator("#patch-grid").bounding_box()["y"] == pytest.approx(grid, abs=2)  # where it was on screen
    page.fill("#name-input", "anna")  # the box at the top writes this one too
    browser.show(page, "#patch")
    expect(page.locator("#patch-first")).to_have_value("anna")
    assert page.watched.errors == []


def test_at_desktop_width_a_lessons_text_reads_in_one_column(chromium, tiny_page):
    """At 1280 px the lesson's text ran in two columns, and a sentence broke from the foot of one to the head of
    the other ("… Click | a masked cell"): every line of it now starts at the same left edge."""
    page = browser.open_page(chromium, tiny_page[1], width=1280, height=800)
    for n in range(1, 9):
        page.click(f"#course-list button[data-lesson='{n}']")
        expect(page.locator("#lesson-title")).to_contain_text(f"Lesson {n} of")
        lefts = page.evaluate("""() => { const range = document.createRange();
          range.selectNodeContents(document.getElementById('lesson-text'));
          return [...range.getClientRects()].map((r) => Math.round(r.left)); }""")
        assert lefts and max(lefts) - min(lefts) <= 1, (n, sorted(set(lefts)))
    assert page.watched.errors == []


def test_a_head_card_focused_at_the_bottom_of_the_screen_is_brought_above_the_lessons_button(chromium, tiny_page):
    """At 1280 px the fixed Lessons button covered the label of a focused head card at the bottom of the screen:
    what the page brings into view lands above the button there too (scroll-padding), as on a phone."""
    page = browser.open_page(chromium, tiny_page[1], width=1280, height=800)
    browser.show(page, "#heads")
    cards = page.locator("button.head-card")
    page.evaluate(
        "() => { const card = [...document.querySelectorAll('button.head-card')].pop();"
        " window.scrollBy(0, card.getBoundingClientRect().bottom - window.innerHeight + 4); }"
    )
    cards.nth(cards.count() - 2).focus()
    page.keyboard.press("Tab")
    expect(cards.last).to_be_focused()
    card, button = cards.last.bounding_box(), page.locator("#contents").bounding_box()
    assert card["y"] + card["height"] <= button["y"], (card, button)
    assert page.watched.errors == []


@pytest.mark.parametrize("width, height", [(1280, 800), (390, 844)])
def test_a_lesson_named_in_the_address_opens_at_it_and_the_first_tab_goes_on_from_it(
    chromium, tiny_page, width, height
):
    """Editing #lesson=N in the address of an open page did not scroll to that lesson; after a lesson's link
    opened the page, the first Tab jumped to the top of the page."""
    page = browser.open_page(chromium, tiny_page[1], width=width, height=height, hash="#lesson=3")
    expect(page.locator("#lesson-title")).to_contain_text("Lesson 3 of")
    expect(page.locator("#lesson-title")).to_be_focused()
    page.keyboard.press("Tab")
    focused = page.evaluate("() => document.activeElement.getBoundingClientRect().top")
    assert 0 <= focused <= height, focused
    page.evaluate("window.scrollTo(0, 0)")
    page.evaluate("location.hash = '#lesson=6'")
    expect(page.locator("#lesson-title")).to_contain_text("Lesson 6 of")
    browser.wait_until(page, "Math.abs(document.getElementById('lesson-title').getBoundingClientRect().top) < 20")
    assert page.watched.errors == []


def test_where_the_model_ends_the_name_the_next_character_it_likes_best_can_be_added(chromium, tiny_page):
    """Lesson 4 with "emma": the model drew the end however often its button was pressed, and the cache gained no
    row. The note now offers the likeliest character that does not end the name, and adds it."""
    page = browser.open_page(chromium, tiny_page[1], hash="#lesson=4")
    expect(page.locator("#lesson-title")).to_contain_text("Lesson 4 of")
    browser.show(page, "#cache")
    rows = page.locator("#cache-table tr:not([hidden])").count()
    page.evaluate("MiniGPTModel.sampleToken = () => State.BOS")  # a model sure the name ends here
    page.click("#cache-next")
    offer = page.locator("#cache-next-note button")
    expect(offer).to_contain_text("its likeliest character")
    added = re.search("add “(.)”", offer.inner_text()).group(1)
    offer.click()
    expect(page.locator("#name-input")).to_have_value("emma" + added)
    browser.wait_until(page, "(n) => document.querySelectorAll('#cache-table tr:not([hidden])').length > n", rows)
    assert page.watched.errors == []


def test_lesson_ones_answer_asks_for_an_earlier_character_and_never_names_the_rows_own(chromium, tiny_page):
    """The first lesson asks which earlier character a row looks at most; its answer named the row's own position
    where that had the most weight (row 0, the boundary, always does)."""
    page = browser.open_page(chromium, tiny_page[1], hash="#lesson=1")
    expect(page.locator("#lesson-title")).to_contain_text("Lesson 1 of")
    page.evaluate("minigpt.selectCell(0, 0)")
    page.click("#lesson-answer-box summary")
    browser.wait_until(page, "document.getElementById('lesson-answer').textContent.startsWith('Row 0')")
    said = page.inner_text("#lesson-answer")
    assert "no earlier character" in said and "on position 0" not in said, said
    page.evaluate("minigpt.selectCell(3, 0)")
    browser.wait_until(page, "!document.getElementById('lesson-answer').textContent.includes('no earlier')")
    said = page.inner_text("#lesson-answer")
    own = re.search(r"on position (\d+)", said)
    assert "its own position" in said or (own and own.group(1) != "3"), said
    assert page.watched.errors == []


def test_on_a_phone_lesson_eight_shows_the_selected_heads_label_beside_its_slider(chromium, tiny_page):
    """At 390 px lesson 8 asks to watch the selected head's label as the slider moves, and the label was below the
    screen, under the grid: it is beside the slider in the lesson too."""
    page = browser.open_page(chromium, tiny_page[1], width=390, height=844, hash="#lesson=8")
    expect(page.locator("#lesson-title")).to_contain_text("Lesson 8 of")
    label = page.locator("#step-head-label")
    expect(label).to_contain_text("layer ")
    assert on_screen(page, "#step-head-label")
    assert page.inner_text("#head-label").split(": ", 1)[1].rstrip(".") in label.inner_text()
    assert page.watched.errors == []
