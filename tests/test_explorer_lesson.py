"""The explorer page teaches: its first screen, the worked row and its pictures, the live
sampling filters, the head descriptions, and the page at phone width and from the keyboard.

One page, the suite's tiny page (tests/conftest.py): two layers of two heads, weights redrawn so that the
numbers compared with torch are far from zero.
"""

import math
import re
from pathlib import Path

import browser
import pytest
import torch

from minigpt.formats.recipes import load_config
from minigpt.model import causal_attention
from minigpt.runs.run import train
from minigpt.views.explorer_page import write_page

LONG = "christophersen"[:14] + "a"  # 15 characters: the most the default recipe reads


def torch_internals(ckpt, text):
    """Every layer's q and k per head [B=1, H, T, d] and raw scores q·k/√d [1, H, T, T], from torch."""
    tokens = [ckpt.tokenizer.bos] + ckpt.tokenizer.encode(text)
    seen = []

    def attend(q, k, v):
        seen.append({"q": q, "k": k, "scores": q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))})
        return causal_attention(q, k, v)[0]

    with torch.no_grad():
        ckpt.model(torch.tensor([tokens]), attend=[attend] * ckpt.config.model.n_layer)
    return seen


def box(page, selector):
    return page.locator(selector).bounding_box()


def test_the_first_screen_is_the_lesson(chromium, tiny_page):
    """At 1280×800, with the longest name: the text box, every head, the head large and its worked row, unscrolled."""
    page = browser.open_page(chromium, tiny_page[1], 1280, 800)
    page.fill("#name-input", LONG)
    for selector in ["#name-input", "#grid", "#big-matrix", "#math-table"]:
        b = box(page, selector)
        assert b["y"] >= 0 and b["y"] + b["height"] <= 800 and b["x"] + b["width"] <= 1280, (selector, b)
    assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")
    assert page.watched.errors == []


def test_at_phone_width_nothing_scrolls_sideways(chromium, tiny_page):
    page = browser.open_page(chromium, tiny_page[1], 390, 844)
    for text in ["emma", LONG]:
        page.fill("#name-input", text)
        page.locator("button.head-card").last.click()  # the character × character picture, the widest part
        assert page.evaluate("document.documentElement.scrollWidth <= innerWidth"), text
    browser.show(page, "#ablation")
    caption, box = (page.locator(s).bounding_box() for s in ("#costs-caption", "#ablation .scroll"))
    assert (
        caption["width"] <= box["width"] + 1
    )  # the loss the costs are against: above the scrolling box, not cut in it
    assert page.watched.errors == []


def test_a_long_block_size_puts_the_worked_row_below_the_matrix_whole(chromium, tmp_path):
    """Block size 40: the matrix leaves no room beside it, so the worked row goes below, as wide as its
    table, rather than squeezed into a sliver beside a matrix the page scrolls sideways."""
    data = tmp_path / "places.txt"
    data.write_text("\n".join(["bourton-on-the-water-by-the-sea", "stow-on-the-wold", "anna"] * 30) + "\n")
    config = load_config("tiny", ["model.block_size=40", "train.steps=2", "train.eval_interval=2"])
    run_dir = train(config, data, out_dir=tmp_path / "run", quiet=True).run_dir
    page = browser.open_page(
        chromium, write_page(run_dir, tmp_path / "page.html", text="bourton-on-the-water-by-the-sea"), 1280, 800
    )
    page.evaluate("minigpt.selectCell(30, 2)")
    row, table = box(page, "#row"), box(page, "#math-table")
    assert row["y"] >= box(page, "#big-matrix")["y"] + box(page, "#matrix-box")["height"] - 1  # below the matrix
    assert table["width"] <= row["width"] and page.evaluate("document.documentElement.scrollWidth <= innerWidth")
    assert "below" in page.inner_text("#matrix-how") and page.watched.errors == []


def test_a_click_works_out_a_row_and_a_second_closes_its_details(chromium, tiny_page):
    page = browser.open_page(chromium, tiny_page[1])
    page.locator("#big-matrix [data-i='3'][role=row] .cell").nth(1).click()  # position 3 "m" → position 1 "e"
    assert "Row 3 (“m”)" in page.inner_text("#math-title")
    assert page.locator("#math-table tr.chosen th").inner_text().startswith("1")
    assert page.is_visible("#cell-info") and "position 1 “e”" in page.inner_text("#cell-info")
    page.locator("#big-matrix [data-i='3'][role=row] .cell").nth(1).click()
    assert not page.is_visible("#cell-info")
    page.hover("#math-table tbody tr[data-j='2']")  # a line of the arithmetic lights its cell
    assert page.locator("#big-matrix [data-i='3'][role=row] .cell").nth(2).get_attribute("class") == "cell hover"
    assert page.watched.errors == []


def test_the_worked_row_is_drawn_from_the_models_numbers(chromium, tiny_page):
    """q, k, q⊙k, the scores and weights of the worked row: torch's, and the matrix's, and adding up."""
    ckpt, path = tiny_page
    page = browser.open_page(chromium, path)
    page.fill("#name-input", "xavier")
    page.evaluate("minigpt.select(1, 1)")
    page.evaluate("minigpt.selectCell(4, 2)")
    from playwright.sync_api import Error as PlaywrightError

    for call, says in (("select(1, 2)", "2 heads a layer, 0 to 1"), ("select(2, 0)", "2 layers, 0 to 1")):
        with pytest.raises(PlaywrightError, match=rf"RangeError: minigpt\.{re.escape(call)}: this model has {says}"):
            page.evaluate(f"minigpt.{call}")  # from the console: said in one line, and the head stays as it was
    worked = page.evaluate("minigpt.worked()")
    assert (worked["i"], worked["layer"], worked["head"]) == (4, 1, 1)
    seen = torch_internals(ckpt, "xavier")[1]
    torch.testing.assert_close(
        torch.tensor(worked["q"], dtype=torch.float64), seen["q"][0, 1, 4].double(), atol=1e-5, rtol=0
    )
    torch.testing.assert_close(
        torch.tensor(worked["keys"], dtype=torch.float64), seen["k"][0, 1, :5].double(), atol=1e-5, rtol=0
    )
    d = len(worked["q"])
    for j, product in enumerate(worked["products"]):  # the strip of q⊙kⱼ adds up to the score times √d
        assert sum(product) == pytest.approx(worked["scores"][j] * math.sqrt(d), abs=1e-9)
    out = [sum(w * v[n] for w, v in zip(worked["weights"], worked["values"])) for n in range(d)]
    assert out == pytest.approx(worked["out"], abs=1e-9)
    row = page.evaluate("minigpt.shown().matrix[4]")
    assert row[:5] == pytest.approx(worked["weights"], abs=1e-12) and row[5:] == [
        0,
        0,
    ]  # the matrix shows the same row; the future is 0
    shown = page.eval_on_selector_all("#math-table td.weight", "s => s.map(x => x.getAttribute('aria-label'))")
    assert [float(x) for x in shown[:5]] == pytest.approx(worked["weights"], abs=5e-4)
    start = worked["head"] * len(worked["q"])
    assert page.get_attribute("#math-table tbody tr.query .vec", "aria-label").startswith(
        f"q4[{start}–{start + len(worked['q']) - 1}] = ["
    )
    assert page.watched.errors == []


# The colour the canvas painted at the middle of cell n of a strip's frame, read back: [r, g, b, alpha]
STRIP_PIXELS = """([selector, n]) => {
    const frame = document.querySelector(selector), canvas = document.querySelector('#row canvas.paint');
    const f = frame.getBoundingClientRect(), c = canvas.getBoundingClientRect(), scale = canvas.width / c.width;
    return Array.from({length: n}, (_, k) => Array.from(canvas.getContext('2d').getImageData(
        Math.floor((f.left - c.left + 1 + (k + 0.5) * (f.width - 2) / n) * scale),
        Math.floor((f.top - c.top + f.height / 2) * scale), 1, 1).data));
}"""


def test_the_worked_rows_canvas_paints_each_strip_in_its_frame(chromium, tiny_page):
    """The strips are painted on a canvas over the table: inside each frame, cell by cell, red where the
    number is above 0 and blue below, as the frame's aria-label says; nothing between the frames."""
    page = browser.open_page(chromium, tiny_page[1])
    for text in ["xavier", LONG, "emma"]:  # the lines shown change: the canvas does not move
        page.fill("#name-input", text)
        worked = page.evaluate("minigpt.worked()")
        d = len(worked["q"])
        largest = max(abs(x) for x in worked["q"] + [x for k in worked["keys"] for x in k])
        for selector, values in [
            ("#math-table tr.query .vec", worked["q"]),
            (f"#math-table tr[data-j='{worked['i']}'] td:nth-child(2) .vec", worked["keys"][-1]),
        ]:
            pixels = page.evaluate(STRIP_PIXELS, [selector, d])
            for value, (r, g, b, alpha) in zip(values, pixels):
                assert alpha == 255, (text, selector)
                if abs(value) > 0.2 * largest:  # a clear colour: red above 0, blue below
                    assert (r > b) == (value > 0), (text, selector, value, (r, g, b))
        label = page.locator("#math-table tr[data-j='0'] th").bounding_box()
        canvas = page.locator("#row canvas.paint").bounding_box()
        between = page.evaluate(
            """([x, y]) => Array.from(document.querySelector('#row canvas.paint').getContext('2d')
            .getImageData(x, y, 1, 1).data)""",
            [int(label["x"] - canvas["x"] + 2), int(label["y"] - canvas["y"] + label["height"] / 2)],
        )
        assert between[3] == 0  # the line's label is the table's, not painted
    assert page.watched.errors == []


def test_the_scores_view_shows_torchs_raw_scores(chromium, tiny_page):
    ckpt, path = tiny_page
    page = browser.open_page(chromium, path)
    page.fill("#name-input", "xavier")
    page.check("#show-scores")
    seen = torch_internals(ckpt, "xavier")
    for layer, head in [(0, 0), (1, 1)]:
        page.evaluate("([l, h]) => minigpt.select(l, h)", [layer, head])
        shown = page.evaluate("minigpt.shown().matrix")
        expected = seen[layer]["scores"][0, head].double().tril()
        got = torch.tensor(shown, dtype=torch.float64)
        assert torch.isinf(got.triu(1)[got.triu(1) != 0]).all()  # the future is −∞: the mask
        torch.testing.assert_close(got.tril(), expected, atol=1e-5, rtol=1e-5)  # float32 rounding
    assert "−∞" in page.eval_on_selector_all(
        "#big-matrix .cell:not([hidden])", "cells => cells.map(c => c.getAttribute('aria-label'))"
    )
    assert page.watched.errors == []


def test_the_sliders_redraw_the_bars_as_sampling_filters(chromium, tiny_page):
    """Each read waits for the state it checks (Playwright's expect retries it): the chart is redrawn when it is
    seen, which a busy machine reports a frame or more after the slider moved."""
    from playwright.sync_api import expect

    page = browser.open_page(chromium, tiny_page[1])
    kept = page.locator("#next-chart .next-bar:not(.removed)")
    vocab = len(page.evaluate("minigpt.vocab")) + 1
    page.fill("#top-p", "1")
    page.fill("#top-k", "0")
    expect(kept).to_have_count(vocab)
    page.fill("#top-k", "3")
    expect(kept).to_have_count(3)
    expect(page.locator("#predictions .choice.removed").first).to_be_attached()
    expected = page.evaluate("minigpt.nextDistribution('emma', {temperature: 0.5, topK: 3, topP: 1})")
    page.fill("#temperature", "0.5")
    browser.wait_until(
        page,
        """(expected) => {
        const got = [...document.querySelectorAll('#next-chart .next-bar')].map((b) => +b.dataset.p)
            .sort((a, b) => a - b);
        const want = [...expected].sort((a, b) => a - b);
        return got.length === want.length && got.every((p, n) => Math.abs(p - want[n]) <= 1e-12);
    }""",
        arg=expected,
    )
    chart = page.eval_on_selector_all("#next-chart .next-bar", "bars => bars.map(b => [b.dataset.token, +b.dataset.p])")
    labels = page.evaluate("minigpt.vocab").copy() + ["·"]
    assert dict(chart) == pytest.approx(dict(zip(labels, expected)), abs=1e-12)
    expect(page.locator("#temperature-value")).to_have_text("0.50")
    expect(page.locator("#top-k-value")).to_have_text("3")
    assert page.watched.errors == []


def test_the_keyboard_reaches_and_moves_everything(chromium, tiny_page):
    page = browser.open_page(chromium, tiny_page[1])
    page.focus("#name-input")
    page.evaluate("""() => { window.path = []; document.addEventListener("focusin", (event) => { const a = event.target;
        window.path.push(a.id || (a.matches('.cell') ? 'cell' : '') || [...a.classList].join('.')
                         || a.tagName); }); }""")
    # Tab once round the whole page, back to where it started, however many stops the page has: a fixed count
    # of presses came up short once, under load, with nothing to say where the focus had gone
    for _ in range(400):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.id === 'name-input'"):
            break
    path = page.evaluate("window.path")
    assert {
        "show-weights",
        "cell",
        "temperature",
        "top-k",
        "top-p",
        "seed",
        "next-char",
        "ten-names",
        "thumb.selected",
        "head-card",
    } <= set(path), " ".join(path)
    # the grid of heads is one Tab stop (arrows inside), then its switches (each layer's attention and MLP, each
    # head); past them, what the matrix shows and whether it is masked, then the matrix
    c = tiny_page[0].config.model
    page.focus("#name-input")
    page.keyboard.press("Tab")  # the first stop is what docs/explorer.md says (it said the grid: the 4th here)
    assert page.evaluate("document.activeElement.getAttribute('aria-label')") == "layer 0 attention: on"
    assert "From the name box, Tab reaches layer 0's attention switch" in " ".join(
        (Path(__file__).parents[1] / "docs" / "explorer.md").read_text(encoding="utf-8").split()
    )
    page.focus("#name-input")
    for _ in range(1 + 2 * c.n_layer + c.n_layer * c.n_head + 3):
        page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.matches('#big-matrix .cell')")
    page.focus("#grid button.thumb >> nth=0")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowDown")
    assert page.inner_text("#matrix-title") == "Layer 1, head 1"
    page.keyboard.press("Enter")  # the grid is redrawn in place: focus stays on the head
    assert page.evaluate("document.activeElement.dataset.layer + document.activeElement.dataset.head") == "11"
    page.focus("#big-matrix .cell[tabindex='0']")
    active = lambda: page.evaluate("[document.activeElement.dataset.i, document.activeElement.dataset.j].join()")  # noqa: E731
    start = active()
    page.keyboard.press("ArrowUp")
    page.keyboard.press("Home")
    assert active() == "3,0" and start.startswith("4,")
    page.keyboard.press("ArrowRight")
    assert active() == "3,1" and "Row 3" in page.inner_text("#math-title")
    page.keyboard.press("Enter")
    assert page.is_visible("#cell-info")
    page.evaluate("minigpt.setText('emmy')")  # a redraw: focus stays on the cell
    assert active() == "3,1"
    assert page.evaluate("getComputedStyle(document.activeElement).outlineStyle") != "none"
    assert page.watched.errors == []


def test_no_serious_accessibility_violation(chromium, tiny_page):
    from axe_playwright_python.sync_playwright import Axe

    page = browser.open_page(chromium, tiny_page[1])
    for width, height in [(1280, 800), (390, 844)]:
        page.set_viewport_size({"width": width, "height": height})
        violations = Axe().run(page).response["violations"]
        serious = [(v["id"], v["nodes"][0]["target"]) for v in violations if v["impact"] in ("serious", "critical")]
        assert serious == [], serious


def test_heads_are_described_with_their_rules(chromium, tiny_page):
    ckpt, path = tiny_page
    page = browser.open_page(chromium, path)
    assert page.locator("button.head-card").count() == ckpt.config.model.n_layer * ckpt.config.model.n_head
    assert "validation names" in page.text_content("#roles-note")
    assert "even spread" in page.text_content("#label-rules")
    page.locator("button.head-card").nth(3).click()
    assert page.inner_text("#matrix-title") == "Layer 1, head 1"
    assert "Layer 1, head 1, by character" in page.text_content("#char-matrix")
    assert page.locator("#char-table tr").count() >= 20  # a row per character the names have
    assert page.watched.errors == []


def test_head_roles_add_up_and_labels_follow_their_rules(tiny_page):
    from minigpt.formats.checkpoint import validation_names
    from minigpt.measurements.head_roles import head_roles, label

    ckpt, _ = tiny_page
    names = validation_names(ckpt)
    assert names and len(names) == ckpt.data["val_names"]
    roles = head_roles(ckpt.model, ckpt.tokenizer, names)
    shares = torch.tensor(roles["shares"])
    assert torch.allclose(shares.sum(-1), torch.ones(2, 2), atol=0.01)  # every row's weight is somewhere
    assert sum(roles["even"]) == pytest.approx(1, abs=0.01)
    chars = roles["chars"]  # [L, H, characters, characters and the boundary token]: each row read sums to 1
    assert chars.shape[2:] == (len(roles["char_ids"]), len(roles["char_ids"]) + 1) and len(roles["char_ids"]) >= 20
    read = chars.sum(-1) > 0
    assert torch.allclose(chars.sum(-1)[read], torch.ones(int(read.sum())), atol=0.03)
    even = [0.26, 0.26, 0.18, 0.12, 0.18]
    assert label([0.2, 0.1, 0.4, 0.1, 0.2], even, 0.5) == "previous character"  # 0.4 is 2.2 times 0.18
    assert label([0.2, 0.1, 0.3, 0.1, 0.3], even, 0.5) == "leans to the previous character"
    assert label([0.42, 0.2, 0.18, 0.1, 0.1], even, 0.5) == "leans to the boundary token"
    assert label([0.26, 0.26, 0.18, 0.12, 0.18], even, 0.7) == "spread out"
    assert label([0.3, 0.3, 0.2, 0.1, 0.1], even, 0.5) == "mixed: the boundary token 30%, itself 30%"


def test_head_roles_are_the_means_over_every_row_of_every_name(tiny_page):
    """head_roles reads each distinct prefix once (the names' prefix forests) and counts it as often as
    names share it: its numbers are those of reading the names one by one."""
    from minigpt.formats.checkpoint import validation_names
    from minigpt.measurements.head_roles import head_roles, offset_masks
    from minigpt.views.attention_maps import forward_with_weights

    ckpt, _ = tiny_page
    names = validation_names(ckpt)[:60]
    roles = head_roles(ckpt.model, ckpt.tokenizer, names)
    tok, longest = ckpt.tokenizer, ckpt.config.model.block_size - 1
    place = {t: n for n, t in enumerate(roles["char_ids"])} | {tok.bos: len(roles["char_ids"])}
    shares, spread, rows = torch.zeros(2, 2, 5), torch.zeros(2, 2), 0
    chars, reads = torch.zeros(2, 2, len(place) - 1, len(place)), torch.zeros(len(place) - 1)
    for name in names:  # one name at a time, every row from position 1
        ids = [tok.bos] + tok.encode(name)[:longest]
        w = forward_with_weights(ckpt.model, torch.tensor([ids]))[1][:, 0].float()  # [L, H, T, T]
        for i in range(1, len(ids)):
            shares += torch.einsum("lhj,kj->lhk", w[:, :, i, : i + 1], offset_masks(len(ids))[:, i, : i + 1])
            spread += -(w[:, :, i] * w[:, :, i].clamp_min(1e-30).log()).sum(-1) / math.log(i + 1)
            if ids[i] in place:
                reads[place[ids[i]]] += 1
                for j in range(i + 1):
                    if ids[j] in place:
                        chars[:, :, place[ids[i]], place[ids[j]]] += w[:, :, i, j]
            rows += 1
    assert roles["rows"] == rows
    assert torch.allclose(torch.tensor(roles["shares"]), shares / rows, atol=6e-4)  # rounded to 3 decimals
    assert torch.allclose(torch.tensor(roles["spread"]), spread / rows, atol=6e-4)
    assert torch.allclose(roles["chars"], chars / reads.clamp_min(1)[None, None, :, None], atol=1e-5)


def test_validation_names_are_none_when_the_file_changed(tiny_page):
    from minigpt.formats.checkpoint import validation_names

    ckpt, _ = tiny_page
    data = ckpt.data["path"]
    original = open(data).read()
    try:
        open(data, "w").write(original.replace("a", "e"))
        assert validation_names(ckpt) is None
    finally:
        open(data, "w").write(original)
    assert validation_names(ckpt)


def readout(page) -> str:
    return page.inner_text("#readout") if page.is_visible("#readout") else ""


def test_a_strips_numbers_show_on_hover_and_focus_and_check_by_hand(chromium, tiny_page):
    """Hover a cell of the q⊙kⱼ strip: its number, and the two it is the product of; focus a strip and
    step through its numbers with the arrow keys; click one of the walk's strips (a tap) to read it."""
    page = browser.open_page(chromium, tiny_page[1])
    page.fill("#name-input", "xavier")
    page.evaluate("minigpt.select(1, 1)")  # head 1: its slice of q starts at number d, not 0
    page.evaluate("minigpt.selectCell(4, 1)")
    worked = page.evaluate("minigpt.worked()")
    strip = page.locator("#math-table tbody tr[data-j='1'] .vec").nth(1)  # q⊙k1
    b, d = strip.bounding_box(), len(worked["q"])
    n = d // 3
    page.mouse.move(b["x"] + (n + 0.5) * b["width"] / d, b["y"] + b["height"] / 2)
    shown, start = readout(page), worked["head"] * d  # the head's slice, its numbers named by their place in q
    assert f"q⊙k1[{start + n}] = " in shown, shown
    explained = shown.splitlines()[1]  # "= q4[n] × k1[n] = a × b"
    a, b_ = (float(x.replace("−", "-")) for x in explained.split(" = ")[-1].split(" × "))
    assert a == pytest.approx(worked["q"][n], abs=5e-5) and b_ == pytest.approx(worked["keys"][1][n], abs=5e-5)
    value = float(shown.split(" = ")[1].split()[0].replace("−", "-"))
    assert value == pytest.approx(a * b_, abs=2e-4) == pytest.approx(worked["products"][1][n], abs=5e-5)
    page.mouse.move(5, 5)
    assert readout(page) == ""
    page.focus("#math-table tr.query .vec")
    assert readout(page).startswith(f"q4[{start}] = ")
    page.keyboard.press("ArrowRight")
    in_the_row = readout(page).splitlines()[0].split(" (")[0]
    assert in_the_row.startswith(f"q4[{start + 1}] = ")
    browser.show(page, "#flow")  # the same number under the same name where q is shown whole
    page.focus("#flow-steps .vec >> nth=5")
    for _ in range(start + 1):
        page.keyboard.press("ArrowRight")
    assert readout(page).splitlines()[0].split(" (")[0] == in_the_row
    browser.show(page, "#walk")
    logits = page.locator("#walk .walk-step[data-key='lm_head'] .vec").first
    box, vocab = logits.bounding_box(), len(page.evaluate("minigpt.vocab")) + 1
    logits.click(position={"x": 3.5 * box["width"] / vocab, "y": box["height"] / 2})  # the first click reads number 3
    assert readout(page).startswith("lm_head[“d”] = ") and "final_norm[j]·lm_head[“d”, j]" in readout(page)
    assert page.watched.errors == []


def test_the_first_tap_on_a_strip_reads_the_number_under_the_finger(chromium, tiny_page):
    context = chromium.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    try:
        page = context.new_page()
        page.goto(Path(tiny_page[1]).resolve().as_uri())
        browser.show(page, "#walk")
        logits = page.locator("#walk .walk-step[data-key='lm_head'] .vec").first
        logits.scroll_into_view_if_needed()
        box, vocab = logits.bounding_box(), len(page.evaluate("minigpt.vocab")) + 1
        page.touchscreen.tap(box["x"] + 5.5 * box["width"] / vocab, box["y"] + box["height"] / 2)
        assert readout(page).startswith("lm_head[“f”] = ")
    finally:
        context.close()


def test_with_a_part_off_every_view_says_so_and_shows_what_changed(chromium, tiny_page):
    page = browser.open_page(chromium, tiny_page[1])
    page.evaluate("minigpt.select(1, 1)")
    page.evaluate("minigpt.setPart('head', 1, 1, false)")
    assert page.inner_text("#matrix-title") == "Layer 1, head 1 (switched off)"
    assert "this head is switched off: its output is 0" in page.inner_text("#math-table")
    browser.show(page, "#walk")
    walk = page.evaluate("minigpt.walkShown()")
    assert walk["firstDiffer"] == "layer1.heads"  # nothing before the head changed
    assert all(x == 0 for x in walk["numbers"]["layer1.heads"][1 * 8 : 2 * 8])  # its slice of the joined heads
    assert "the first change" in page.inner_text("#walk .walk-step[data-key='layer1.heads']")
    browser.show(page, "#next-chart")
    assert page.locator("#next-chart .ghost:visible").count() == len(tiny_page[0].tokenizer.chars) + 1
    assert "every part on" in page.inner_text("#loss")
    page.evaluate("minigpt.setPart('attention', 1, null, false)")
    assert page.inner_text("#matrix-title") == "Layer 1, head 1 (its layer's attention is off)"
    live = dict(page.evaluate("minigpt.liveCosts()"))
    assert live["layer 1 head 0"] == "off (its layer's attention)" and live["layer 1 attention"] == "off"
    assert "negative cost means" in page.inner_text("#costs-caption")
    assert "−0.0000" not in page.inner_text("#ablation-table")
    page.evaluate("minigpt.setPart('attention', 1, null, true); minigpt.setPart('head', 1, 1, true)")
    assert page.inner_text("#matrix-title") == "Layer 1, head 1"
    assert page.locator("#next-chart .ghost:visible").count() == 0
    assert page.watched.errors == []


def test_the_step_slider_moves_the_curve_and_the_character_picture_and_says_which_loss(chromium, tiny_page):
    page = browser.open_page(chromium, tiny_page[1])
    marker = lambda: float(page.get_attribute("#step-marker", "x1") or 0)  # noqa: E731
    # before the slider first moves: the marker at the checkpoint's step, right of the axis, and the run's loss there
    assert marker() > 44 and page.inner_text("#step-loss").startswith("the run's validation loss here")
    at_checkpoint = page.inner_html("#char-table")
    page.evaluate("minigpt.showSnapshot(0)")
    assert "at step 0" in page.inner_text("#char-matrix h3") and page.inner_html("#char-table") != at_checkpoint
    assert marker() == pytest.approx(44, abs=0.5)  # step 0: the curve's left edge
    assert page.inner_text("#step-loss") == "the run had not measured its validation loss yet"
    assert page.locator("#curve-svg text.best").count() == 0  # the best step is named in the legend, off the curve
    assert "best validation loss" in page.inner_text("#curve .legend")
    assert "not the run's own evaluation" in page.inner_text("#costs-caption")
    page.evaluate("minigpt.showSnapshot(2)")
    assert "at step" not in page.inner_text("#char-matrix h3") and page.inner_html("#char-table") == at_checkpoint
    assert page.watched.errors == []


def test_one_unit_no_loss_for_the_empty_name_and_the_row_follows_a_new_name(chromium, tiny_page):
    page = browser.open_page(chromium, tiny_page[1])
    browser.show(page, "#predict")
    assert "nats per token" in page.inner_text("#loss")
    assert "per character" not in page.inner_text("body")
    page.evaluate("minigpt.setText('')")
    browser.show(page, "#predict")
    assert page.inner_text("#loss").startswith("Type a name for its loss")
    page.fill("#name-input", "emma")
    page.locator("#big-matrix [data-i='2'][role=row] .cell").nth(1).click()
    assert "Row 2" in page.inner_text("#math-title")
    page.fill("#name-input", "emmanuel")
    assert "Row 8" in page.inner_text("#math-title")  # the last character, not the row picked in "emma"
    page.fill("#name-input", "Émile")
    assert "try “emile”" in page.inner_text("#notes")
    assert page.watched.errors == []


def test_an_accented_capital_gets_the_same_advice_on_the_command_line(tiny_page):
    from minigpt.errors import UsageError
    from minigpt.files.names_file import refuse_unseen

    with pytest.raises(UsageError, match='no accented letters: try "emile"'):
        refuse_unseen("Émile", tiny_page[0].tokenizer.unseen, "the text")


def test_raw_scores_fit_their_cells_and_the_page_opens_on_the_costliest_named_head(chromium, tiny_page):
    from minigpt.measurements.ablation import ablate
    from minigpt.measurements.head_roles import head_roles
    from minigpt.views.page_data import names_for_roles

    ckpt, path = tiny_page
    names = names_for_roles(ckpt)[0]
    labels = head_roles(ckpt.model, ckpt.tokenizer, names)["labels"]
    costs = ablate(ckpt.model, ckpt.tokenizer, names).costs  # largest first
    best = next(
        p for p, _ in costs if p.kind == "head" and not labels[p.layer][p.head].startswith(("spread out", "mixed"))
    )
    page = browser.open_page(chromium, path)
    assert page.inner_text("#matrix-title") == f"Layer {best.layer}, head {best.head}"
    page.fill("#name-input", LONG)
    page.check("#show-scores")
    shown = page.eval_on_selector_all(
        "#big-matrix .cell:not(.future)",
        "cells => cells.filter(c => c.offsetParent).map(c => c.getAttribute('aria-label'))",
    )
    assert shown and all(len(text) <= 4 for text in shown), [t for t in shown if len(t) > 4]
    assert page.watched.errors == []


def test_at_phone_width_the_words_and_the_costs_fit(chromium, tiny_page):
    page = browser.open_page(chromium, tiny_page[1], 390, 844)
    how = page.inner_text("#matrix-how")
    assert how.startswith("Tap a cell") and "worked out below" in how
    page.fill("#name-input", LONG)  # the matrix scrolls sideways in its box; its row labels stay in view
    page.evaluate("document.getElementById('matrix-box').scrollLeft = 120")
    box, label = page.locator("#matrix-box").bounding_box(), page.locator("#big-matrix .row-head").nth(3).bounding_box()
    assert page.evaluate("document.getElementById('matrix-box').scrollLeft") > 0 and label["x"] == pytest.approx(
        box["x"], abs=1
    )
    page.evaluate("minigpt.setPart('head', 0, 1, false)")  # a live cost to read too
    browser.show(page, "#ablation-table")
    for column in (3, 4):  # the cost on the names, and on the name in the box
        cell = page.locator(f"#ablation-table tbody tr:first-child td:nth-child({column})").bounding_box()
        assert cell["x"] + cell["width"] <= 390, column
    browser.show(page, "#predictions")
    nxt = page.locator("#predictions .prediction .next").first.bounding_box()
    assert nxt["x"] + nxt["width"] <= 390
    wide = browser.open_page(chromium, tiny_page[1], 1280, 800)
    assert wide.inner_text("#matrix-how").startswith("Click a cell") and "on the right" in wide.inner_text(
        "#matrix-how"
    )
    width, left = wide.evaluate(
        "[document.getElementById('play').offsetWidth,"
        " document.getElementById('step-slider').getBoundingClientRect().left]"
    )
    wide.click("#play")
    assert wide.evaluate(
        "[document.getElementById('play').offsetWidth,"
        " document.getElementById('step-slider').getBoundingClientRect().left]"
    ) == [width, left]
    wide.click("#play")
    assert page.watched.errors == [] and wide.watched.errors == []


def test_every_panel_is_drawn_without_scrolling_to_it_for_a_whole_page_capture(chromium, tiny_page):
    page = browser.open_page(chromium, tiny_page[1], 1280, 800)
    browser.wait_until(
        page, "document.querySelectorAll('#lens-table td:not([hidden])')[0].textContent !== ''", timeout=10000
    )
    assert page.evaluate("getComputedStyle(document.getElementById('lens')).contentVisibility") != "auto"
    assert page.evaluate("document.querySelector('#walk .walk-step .note-text').textContent") != ""
    assert page.watched.errors == []


def test_a_projection_reads_as_the_sum_it_is_down_to_the_weights(chromium, tiny_page):
    """q[n] = Σⱼ a[j]·W_Q[n, j], and a logit = Σⱼ x[j]·lm_head[t, j]: the readout names the largest terms, with
    the weights themselves, and their sum; the numbers are torch's."""
    import re

    ckpt, path = tiny_page
    page = browser.open_page(chromium, path)
    page.evaluate("minigpt.select(0, 1)")
    browser.show(page, "#flow")
    q = page.locator("#flow-steps .vec").nth(5)
    box, d = q.bounding_box(), ckpt.config.model.n_embd
    page.mouse.move(box["x"] + 7.5 * box["width"] / d, box["y"] + box["height"] / 2)
    shown = readout(page)
    assert "= Σⱼ layer0.attn_norm[j]·W_Q[7, j] over" in shown and "all of them add up to" in shown, shown
    j, _, w = re.search(r"layer0\.attn_norm\[(\d+)\]·W_Q\[7, \d+\] = (\S+) × (\S+)", shown).groups()
    weight = ckpt.model.layers[0].attn.attn_wq.weight[7, int(j)].item()
    assert float(w.replace("−", "-")) == pytest.approx(weight, abs=5e-5)
    browser.show(page, "#walk")
    logits = page.locator("#walk .walk-step[data-key='lm_head'] .vec").first
    box = logits.bounding_box()
    logits.hover(position={"x": 0.5 * box["width"] / (len(ckpt.tokenizer.chars) + 1), "y": box["height"] / 2})
    assert readout(page).startswith("lm_head[“a”] = ") and "= Σⱼ final_norm[j]·lm_head[“a”, j]" in readout(page)
    assert page.watched.errors == []


def test_what_learners_ask_is_answered_beside_the_matrix_and_the_loss(chromium, tiny_page):
    """Which axis is the query, why √(head size), that heads are slices of one projection, how much weight goes
    to the boundary token (measured over the names, as the head roles are), and the loss against its baselines."""
    ckpt, path = tiny_page
    page = browser.open_page(chromium, path)
    page.evaluate("minigpt.select(1, 1)")
    reading = page.text_content("#matrix-reading")
    d = ckpt.config.model.n_embd // ckpt.config.model.n_head
    assert "Rows are the positions that read (each one's query q)" in reading and f"d = {d}, the head size" in reading
    assert f"head 1 reads numbers {d} to {2 * d - 1}" in reading
    shares = page.evaluate("JSON.parse(document.getElementById('minigpt-data').textContent).roles.shares")
    assert f"puts {round(100 * shares[1][1][0])}% of a row's weight on the boundary token" in reading
    assert "guessing from character frequencies alone" in page.text_content("#loss")
    assert page.watched.errors == []


def test_the_lens_writes_the_number_its_colour_shows(chromium, tiny_page):
    """A number only in a title reaches neither a keyboard nor a finger: each lens cell writes the actual next
    token's probability, the one its colour shows, under the likeliest."""
    page = browser.open_page(chromium, tiny_page[1])
    browser.show(page, "#lens")
    probs = page.evaluate("minigpt.lens('emma')")  # [stage][position][token]
    ids = {c: i for i, c in enumerate(page.evaluate("minigpt.vocab"))}
    cell = (
        page.locator("#lens-table tbody tr").nth(0).locator("td").nth(1).text_content()
    )  # after the embeddings, "·e" → "m"
    assert cell.splitlines()[1] == f"m {round(100 * probs[0][1][ids['m']])}%"
    assert page.watched.errors == []


def test_a_view_lives_in_the_address_and_a_link_restores_it(chromium, tiny_page):
    """page.html#name=zoltan&layer=1&head=2&row=3&...: opening it shows that view; changing the view changes the
    address; back goes to the view before; the address a view writes opens that view again."""
    from playwright.sync_api import expect

    url = tiny_page[1].resolve().as_uri()
    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    browser.add_readers(page)
    page.goto(url + "#name=zoltan&layer=1&head=0&row=3&off=0.1,m1&second=zolten")
    assert page.input_value("#name-input") == "zoltan" and page.input_value("#patch-input") == "zolten"
    expect(page.locator("#matrix-title")).to_have_text("Layer 1, head 0")
    assert page.evaluate("minigpt.worked().i") == 3
    expect(page.locator("#parts-off")).to_have_text("2 parts switched off (zeroed).")
    page.fill("#name-input", "zoe")
    browser.wait_until(page, "location.hash.includes('name=zoe&')")
    page.click("#grid button.thumb >> nth=0")  # layer 0, head 0: a new entry in the history
    browser.wait_until(page, "location.hash.includes('layer=0&head=0')")
    linked = page.evaluate("location.href")
    page.go_back()
    expect(page.locator("#matrix-title")).to_have_text("Layer 1, head 0")
    other = chromium.new_page(viewport={"width": 1280, "height": 900})
    browser.add_readers(other)
    other.goto(linked)
    assert other.input_value("#name-input") == "zoe"
    expect(other.locator("#matrix-title")).to_have_text("Layer 0, head 0")
    expect(other.locator("#parts-off")).to_have_text("2 parts switched off (zeroed).")
    other.click("#copy-link")
    expect(other.locator("#link-text")).to_be_visible()
    assert other.input_value("#link-text") == linked
    page.close()
    other.close()


def test_an_address_the_page_cannot_read_leaves_the_page_as_it_opens(chromium, tiny_page):
    url = tiny_page[1].resolve().as_uri()
    page = chromium.new_page()
    browser.add_readers(page)
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(url + "#layer=99&head=-1&row=x&off=7.7,z3&mode=nan&step=123456789&show=<b>")
    assert page.evaluate("minigpt.worked().layer") < 99 and errors == []
    assert page.text_content("#parts-off") == ""
    page.close()


def test_the_boundary_tokens_share_follows_the_training_slider(chromium, tiny_page):
    """ "This head puts N% of a row's weight on the boundary token" is the step's, not the checkpoint's."""
    import re

    from playwright.sync_api import expect

    page = browser.open_page(chromium, tiny_page[1])
    data = page.evaluate("JSON.parse(document.getElementById('minigpt-data').textContent)")
    if not (data["snapshots"] and data["snapshots"]["roles"][1]):
        pytest.skip("the run has no snapshots")
    layer, head = map(int, re.findall(r"\d+", page.inner_text("#matrix-title")))
    final = round(100 * data["roles"]["shares"][layer][head][0])
    early = round(100 * data["snapshots"]["roles"][1]["shares"][layer][head][0])
    assert early != final
    expect(page.locator("#matrix-reading")).to_contain_text(f"puts {final}% of a row's weight")
    page.fill("#step-slider", "1")
    expect(page.locator("#matrix-reading")).to_contain_text(f"puts {early}% of a row's weight")


def test_the_cost_table_sorts_by_any_cost_column(chromium, tiny_page):
    """The head that matters for this name is found by sorting on the name's own cost, not by reading 24 rows."""
    from playwright.sync_api import expect

    page = browser.open_page(chromium, tiny_page[1])
    page.fill("#name-input", "christopher")
    browser.show(page, "#ablation")
    costs = lambda column: page.eval_on_selector_all(  # noqa: E731
        "#ablation-table tbody tr",
        f"rows => rows.map(r => parseFloat(r.cells[{column}].textContent.replace('−', '-').replace(/[^0-9.+-]/g, '')))",
    )
    on_names = costs(2)
    assert on_names == sorted(
        on_names, reverse=True
    )  # the costliest on the validation names first, as ablate lists them
    page.click("#ablation-table thead button.sort >> text=cost on the name")
    expect(page.locator("#ablation-table thead th").nth(3)).to_have_attribute("aria-sort", "descending")
    on_name = costs(3)
    assert on_name == sorted(on_name, reverse=True) and on_name != on_names
    page.click("#ablation-table thead button.sort >> text=part")
    assert page.eval_on_selector("#ablation-table tbody tr", "r => r.cells[0].textContent") == "layer 0 head 0"
    assert page.watched.errors == []


def test_a_masked_cell_says_why_and_the_mask_can_be_switched_off(chromium, tiny_page):
    from playwright.sync_api import expect

    page = browser.open_page(chromium, tiny_page[1])
    page.fill("#name-input", "emma")
    page.click("#big-matrix .cell[data-i='1'][data-j='3']")
    expect(page.locator("#mask-note")).to_contain_text("Position 3 comes after position 1: the causal mask hides it")
    page.check("#mask-off")
    expect(page.locator("#mask-note")).to_have_text("")
    page.click("#big-matrix .cell[data-i='1'][data-j='3']")  # now a cell like any other: its row is worked out
    assert page.evaluate("minigpt.worked().i") == 1 and len(page.evaluate("minigpt.worked().weights")) == 5
    expect(page.locator("#big-matrix .cell[data-i='1'][data-j='3']")).not_to_have_class("cell future")
    assert page.watched.errors == []


def assert_the_many_heads_answer_names_the_others_alone(page):
    """Lesson 3's answer named "the others" with the chosen head's own share among them."""
    import re

    from playwright.sync_api import expect

    page.click("#course-list button[data-lesson='3']")
    expect(page.locator("#lesson-title")).to_have_text("Lesson 3 of 8: Many heads")
    page.click("#lesson-answer-box summary")
    expect(page.locator("#lesson-answer")).to_contain_text("(the others:")
    answer = page.text_content("#lesson-answer")
    chosen = int(re.match(r"Head (\d+) of layer", answer).group(1))
    others = re.search(r"\(the others: (.*)\)\.", answer).group(1).split(", ")
    assert len(others) == 1 and not others[0].startswith(f"head {chosen} ")  # two heads a layer: one other
    page.click("#course-list button[data-lesson='2']")
    expect(page.locator("#lesson-title")).to_have_text("Lesson 2 of 8: The causal mask")


def test_the_lessons_set_a_view_ask_and_answer_from_the_model_and_link_back(chromium, tiny_page):
    """Eight lessons along the tutorials, from the contents list or previous/next; each answer is computed from
    this model (lesson 2's losses are torch's, with the mask and without); a lesson's address reopens it."""
    import re

    import torch.nn.functional as F
    from playwright.sync_api import expect

    page = browser.open_page(chromium, tiny_page[1])
    titles = page.eval_on_selector_all("#course-list button", "b => b.map(x => x.getAttribute('aria-label'))")
    assert len(titles) == 8 and titles[0] == "1. One head" and titles[1] == "2. The causal mask"
    assert page.text_content("#contents-free") == "the free page"  # in the corner's contents, and "close" in a lesson
    page.fill("#name-input", "emma")
    page.click("#course-list button[data-lesson='1']")
    expect(page.locator("#lesson-title")).to_have_text("Lesson 1 of 8: One head")
    browser.wait_until(page, "location.hash.includes('lesson=1')")
    page.click("#lesson-answer-box summary")  # an answer is worked out when it is opened
    worked = page.evaluate("minigpt.worked()")
    j = max(range(len(worked["weights"])), key=lambda n: worked["weights"][n])
    expect(page.locator("#lesson-answer")).to_contain_text(f"on position {j},")  # written as the box opens
    page.click("#lesson-next")
    expect(page.locator("#lesson-title")).to_have_text("Lesson 2 of 8: The causal mask")
    assert page.is_checked("#show-scores")
    assert_the_many_heads_answer_names_the_others_alone(page)
    page.click("#lesson-answer-box summary")
    expect(page.locator("#lesson-answer")).to_contain_text("without it")
    answer = page.text_content("#lesson-answer")
    got = [
        float(re.search(pattern, answer).group(1))
        for pattern in (r"with the mask, (\d+\.\d{3})", r"without it, (\d+\.\d{3})")
    ]
    ckpt = tiny_page[0]
    ids = torch.tensor([[ckpt.tokenizer.bos] + ckpt.tokenizer.encode("emma")])
    targets = torch.tensor([ckpt.tokenizer.encode("emma") + [ckpt.tokenizer.bos]])
    seeing_all = [lambda q, k, v: F.scaled_dot_product_attention(q, k, v)] * ckpt.config.model.n_layer
    with torch.no_grad():
        masked = ckpt.model.eval()(ids, targets)[1].item()
        unmasked = F.cross_entropy(ckpt.model(ids, attend=seeing_all)[0][0], targets[0]).item()
    assert got[0] == pytest.approx(masked, abs=1e-3) and got[1] == pytest.approx(unmasked, abs=1e-3)
    linked = page.evaluate("location.href")
    other = chromium.new_page()
    browser.add_readers(other)
    other.goto(linked)
    expect(other.locator("#lesson-title")).to_have_text("Lesson 2 of 8: The causal mask")
    assert other.is_checked("#show-scores") and other.input_value("#name-input") == "emma"
    page.click("#course-list button[data-lesson='7']")  # two names: the parts that carry the difference, ranked
    page.click("#lesson-answer-box summary")
    expect(page.locator("#lesson-answer")).to_contain_text("Copied alone, the parts that close the most:")
    shares = [float(x) for x in re.findall(r"at position \d+, (-?\d+\.\d)%", page.text_content("#lesson-answer"))]
    assert len(shares) == 3 and shares == sorted(shares, reverse=True)
    # the parts, not the cells, are counted: 2 layers of 2 heads and an MLP are 6 parts (it said 30 at 5 positions)
    positions = int(
        re.search(
            r"\(of 6 heads and MLPs at (\d+) positions, (\d+) cells\)", page.text_content("#lesson-answer")
        ).group(1)
    )
    assert f"at {positions} positions, {6 * positions} cells" in page.text_content("#lesson-answer")
    page.click("#lesson-close")
    expect(page.locator("#lesson-panel")).to_be_hidden()
    assert "lesson=" not in page.evaluate("location.hash") and page.watched.errors == []
    other.close()


def test_a_page_written_at_a_lesson_opens_there_and_the_course_is_the_one_the_command_counts(
    chromium, tiny_page, tmp_path
):
    from typer.testing import CliRunner

    from minigpt.views.web_files import lesson_count

    LESSONS = lesson_count()
    from minigpt.cli.main import app

    result = CliRunner().invoke(
        app, ["inspect-attention", str(tiny_page[0].path.parent), "--html", str(tmp_path / "l.html"), "--lesson", "2"]
    )
    assert result.exit_code == 0, result.output
    page = browser.open_page(chromium, tmp_path / "l.html")
    assert page.text_content("#lesson-title") == f"Lesson 2 of {LESSONS}: The causal mask"
    assert page.is_checked("#show-scores")  # the lesson's own view
    assert page.eval_on_selector_all("#course-list button", "b => b.length") == LESSONS
    refused = CliRunner().invoke(app, ["inspect-attention", str(tiny_page[0].path.parent), "emma", "--lesson", "2"])
    assert refused.exit_code == 2 and "give it with --html" in refused.output


def test_the_mask_lesson_measures_the_validation_names_both_ways_as_torch_does(chromium, tiny_page):
    """Lesson 2's answer: the loss on the name with the mask and without (the page's arithmetic), and over the
    validation names (carried): both equal torch's forward with every position reading every other."""
    import torch.nn.functional as F

    from minigpt.formats.checkpoint import validation_names
    from minigpt.measurements.name_losses import evaluate_names, loss_with_mask_off, name_losses

    ckpt, path = tiny_page
    names = validation_names(ckpt)
    model = ckpt.model.eval()
    reads_all = [lambda q, k, v: F.scaled_dot_product_attention(q, k, v)] * model.config.n_layer
    by_hand, tokens = 0.0, 0
    for name in names:  # one name at a time: nothing but the name is read
        ids = [ckpt.tokenizer.bos] + ckpt.tokenizer.encode(name)[: model.config.block_size - 1]
        targets = ids[1:] + ([ckpt.tokenizer.bos] if len(name) < model.config.block_size else [])
        with torch.no_grad():
            logits = model(torch.tensor([ids]), attend=reads_all)[0][0][: len(targets)]
        by_hand += F.cross_entropy(logits, torch.tensor(targets), reduction="sum").item()
        tokens += len(targets)
    assert loss_with_mask_off(model, ckpt.tokenizer, names) == pytest.approx(by_hand / tokens, abs=1e-5)
    page = browser.open_page(chromium, path, hash="#lesson=2")
    carried = page.evaluate("JSON.parse(document.getElementById('minigpt-data').textContent).mask_off")
    assert carried["unmasked"] == pytest.approx(by_hand / tokens, abs=1e-5)
    assert carried["masked"] == pytest.approx(evaluate_names(model, ckpt.tokenizer, names)["loss"], abs=1e-6)
    page.locator("#lesson-answer-box summary").click()
    from playwright.sync_api import expect

    expect(page.locator("#lesson-answer")).to_contain_text("without it")  # the answer is drawn as its box opens
    answer = page.inner_text("#lesson-answer")
    assert f"{carried['masked']:.3f} with the mask, {carried['unmasked']:.3f} without" in answer
    assert "model.causal=false" in answer  # how to train a model without the mask, to compare
    with torch.no_grad():  # and the name's own figure without the mask is torch's
        ids = torch.tensor([[ckpt.tokenizer.bos] + ckpt.tokenizer.encode("emma")])
        logits = model(ids, attend=reads_all)[0][0]
    unmasked = F.cross_entropy(logits, torch.tensor(ids[0, 1:].tolist() + [ckpt.tokenizer.bos])).item()
    [(_, _, masked)] = name_losses(model, ckpt.tokenizer, ["emma"])
    assert f"with the mask, {masked:.3f} nats per character; without it, {unmasked:.3f}" in answer
    assert page.watched.errors == []


def test_the_two_names_lesson_patches_heads_and_mlps_and_its_names_follow_the_name_box(chromium, tiny_page):
    """Lesson 7 asks which head or MLP carries the difference: its grid copies heads' and MLPs' outputs (the same
    numbers as its answer's ranking); the second name follows the name box until one is typed (82 §3)."""
    from playwright.sync_api import expect

    page = browser.open_page(chromium, tiny_page[1])
    page.click("#course-list button[data-lesson='7']")
    browser.show(page, "#patch")
    assert page.is_checked("input[name=patch-grid][value=parts]")
    config = tiny_page[0].config.model
    rows = config.n_layer * (config.n_head + 1)
    expect(page.locator("#patch-grid tbody tr")).to_have_count(rows)
    assert "a head's or an MLP's output" in page.text_content("#patch-grid caption")
    page.fill("#name-input", "zoltan")
    expect(page.locator("#patch-input")).to_have_value("aoltan")  # the second name went with the first
    browser.wait_until(page, "location.hash.includes('second=aoltan')")
    found = page.evaluate("([a, b]) => minigpt.patchGrid(a, b, 'parts')", ["zoltan", "aoltan"])
    best = max(
        (share, name, t)
        for name, row in zip(found["names"], found["grid"])
        for t, share in enumerate(row)
        if share is not None
    )
    page.click("#lesson-answer-box summary")
    expect(page.locator("#lesson-answer")).to_contain_text(f"{best[1]} at position {best[2]}, {100 * best[0]:.1f}%")
    shown = page.locator("#patch-grid .patch-cell").all_text_contents()
    assert f"{round(100 * best[0])}%" in shown
    page.fill("#patch-input", "anna")  # a second name of one's own stays
    page.fill("#name-input", "emma")
    expect(page.locator("#patch-input")).to_have_value("anna")
    page.check("input[name=patch-grid][value=residual]")
    expect(page.locator("#patch-grid tbody tr")).to_have_count(config.n_layer + 1)
    assert page.watched.errors == []


def test_a_grid_of_another_kind_starts_on_its_cell_that_closes_the_most(chromium, tiny_page):
    """Switched to heads and MLPs, the grid's part below it said "the residual stream entering layer 0": the copy
    shown is the grid's own best cell, which the detail line and the cell's mark agree on."""
    from playwright.sync_api import expect

    ckpt, path = tiny_page
    page = browser.open_page(chromium, path)
    browser.show(page, "#patch")
    page.check("input[name=patch-grid][value=parts]")
    expect(page.locator("#patch-grid tbody tr")).to_have_count(
        ckpt.config.model.n_layer * (ckpt.config.model.n_head + 1)
    )
    chosen = page.locator("#patch-grid .patch-cell.chosen")
    expect(chosen).to_have_count(1)
    best = max(
        int(text.rstrip("%")) for text in page.locator("#patch-grid .patch-cell").all_text_contents() if text != "–"
    )
    assert chosen.inner_text() == f"{best}%"
    assert "residual" not in page.locator("#patch-part").evaluate("s => s.selectedOptions[0].textContent")
    assert page.watched.errors == []
