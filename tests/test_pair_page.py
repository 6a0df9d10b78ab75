"""The page of two models (views/pair_page.py, web/pair.js): both models' numbers are torch's, the page
shows the same view of both, and two models that cannot read the same names are refused."""

import browser
import pytest
import torch
from typer.testing import CliRunner

from minigpt.cli.main import app
from minigpt.formats.checkpoint import load_checkpoint, validation_names
from minigpt.formats.recipes import load_config
from minigpt.formats.snapshots import checkpoint_snapshots, dequantize, six_bit
from minigpt.measurements.name_losses import name_losses
from minigpt.model import load_microgpt_weights
from minigpt.runs.run import train
from minigpt.views.attention_maps import forward_with_weights
from minigpt.views.explorer_page import write_page
from minigpt.views.pair_page import write_pair_page

runner = CliRunner()
pytestmark = pytest.mark.xdist_group("pair")  # one worker trains the module's runs, once


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """Two runs on the same names: the default recipe, tiny, and a variant with another shape of head and
    learning rate (another seed too); their weights redrawn so that logits differ by whole nats."""
    from minigpt.common.bundled import BUNDLED_NAMES

    tmp = tmp_path_factory.mktemp("pair")
    data = tmp / "names.txt"
    data.write_text("\n".join(BUNDLED_NAMES.read_text().split()[::9]) + "\n")
    runs = []
    for seed, extra in ((1, ["model.n_layer=2"]), (2, ["model.n_layer=2", "model.n_head=4", "train.lr=0.006"])):
        config = load_config(
            "tiny",
            [
                "train.steps=40",
                "train.eval_interval=20",
                "train.time_limit=0",
                "train.snapshots=4",
                f"train.seed={seed}",
                *extra,
            ],
        )
        run_dir = train(config, data, out_dir=tmp / f"run{seed}", quiet=True).run_dir
        browser.redraw_weights(run_dir / "best.pt", seed=seed)
        runs.append(run_dir)
    page = write_pair_page(runs[0], runs[1], tmp / "two.html", text="emma")
    return runs, page, tmp


def page_weights(snapshots, index):
    """A snapshot's weights as the page carries them (six bits a number, views/page_data.py)."""
    return {
        name: dequantize(*six_bit(kept["q"][index], kept["scale"][index]), snapshots.shapes[name])
        for name, kept in snapshots.weights.items()
    }


def torch_run(ckpt, text):
    tokens = [ckpt.tokenizer.bos] + ckpt.tokenizer.encode(text)
    logits, weights = forward_with_weights(ckpt.model, torch.tensor([tokens]))
    return tokens, logits[0].double(), weights[:, 0].double()


def test_both_models_on_the_page_compute_what_torch_computes(chromium, pair):
    runs, path, _ = pair
    page = browser.open_page(chromium, path)
    for text in ["emma", "xavier", "abcdefghijklmnopqrstuvwxyz"]:
        got = page.evaluate("text => minigpt.forward(text)", text)
        for side, run_dir in zip("ab", runs):
            ckpt = load_checkpoint(run_dir)
            tokens, logits, attention = torch_run(ckpt, text[: ckpt.config.model.block_size - 1])
            assert got["tokens"] == tokens
            steps = got[side]
            torch.testing.assert_close(
                torch.tensor([s["logits"] for s in steps], dtype=torch.float64), logits, atol=1e-4, rtol=0
            )
            js = torch.tensor(
                [
                    [
                        [s["weights"][l][h] + [0] * (len(tokens) - len(s["weights"][l][h])) for s in steps]
                        for h in range(ckpt.config.model.n_head)
                    ]
                    for l in range(ckpt.config.model.n_layer)
                ]
            )
            torch.testing.assert_close(js.double(), attention, atol=1e-5, rtol=0)
    # the loss of each on a name that fits is name_losses' (eval --per-name's)
    got = page.evaluate("() => minigpt.forward('emma')")
    for side, run_dir in zip("ab", runs):
        ckpt = load_checkpoint(run_dir)
        [(_, _, loss)] = name_losses(ckpt.model, ckpt.tokenizer, ["emma"])
        assert sum(s["loss"] for s in got[side]) / len(got[side]) == pytest.approx(loss, abs=1e-4)
    assert page.watched.errors == []


def test_the_names_each_finds_easier_are_eval_per_names_and_open_in_the_view(chromium, pair):
    runs, path, _ = pair
    page = browser.open_page(chromium, path)
    carried = page.evaluate("JSON.parse(document.getElementById('minigpt-data').textContent).names")
    first = load_checkpoint(runs[0])
    assert carried["names"] == [n for n in validation_names(first) if len(n) < first.config.model.block_size]
    for side, run_dir in zip("ab", runs):
        ckpt = load_checkpoint(run_dir)
        expected = [loss for _, _, loss in name_losses(ckpt.model, ckpt.tokenizer, carried["names"])]
        assert carried[side] == pytest.approx(expected, abs=1e-4)
    gaps = [b - a for a, b in zip(carried["a"], carried["b"])]
    easiest = carried["names"][gaps.index(max(gaps))]  # the name A finds easiest compared with B
    link = page.locator("#easier-a button").first
    assert link.inner_text() == easiest
    link.click()
    assert page.input_value("#name-input") == easiest
    browser.wait_until(page, "name => decodeURIComponent(location.hash).includes('name=' + name)", arg=easiest)
    assert f"“{easiest}”" in page.inner_text("#losses")
    assert page.watched.errors == []


def test_one_head_row_and_step_are_shown_in_both_and_kept_in_the_address(chromium, pair):
    runs, path, _ = pair
    page = browser.open_page(chromium, path, hash="#name=anna&layer=1&head=1&row=2")
    assert page.input_value("#name-input") == "anna"
    assert page.inner_text("#maps-title").startswith("Layer 1, head 1")
    assert page.locator("#heads button[aria-pressed=true]").get_attribute("data-layer") == "1"
    maps = page.locator("#maps .map-box")
    assert maps.count() == 3
    for n in range(3):  # the same row picked in A, B and their difference
        assert maps.nth(n).locator(".map-rows button[aria-pressed=true]").inner_text() == "2 n"
    # B - A is the difference of the two maps shown, in points; a screen reader hears the picked row's numbers
    got = page.evaluate("() => minigpt.forward('anna')")
    a, b = (got[side][2]["weights"][1][1] + [0, 0] for side in "ab")
    shown = page.evaluate("() => minigpt.shownMaps()")
    assert len(shown[2][2]) == 5 and shown[0][2][:3] == [str(round(100 * x)) for x in a[:3]]
    for text, x, y in zip(shown[2][2], a, b):
        assert abs(float(text.replace("−", "-")) - (y - x) * 100) <= 0.5 + 1e-9
    assert page.locator("#maps .visually-hidden").nth(2).inner_text().startswith("B − A, in points, row 2 (n): ")
    # the step slider moves both models to their snapshots, and the address keeps the step
    slider = page.locator("#step-slider")
    slider.fill("0")
    steps = [checkpoint_snapshots(load_checkpoint(run)).steps[0] for run in runs]
    assert page.inner_text("#step-value") == f"A at step {steps[0]}, B at step {steps[1]}"
    browser.wait_until(page, "() => location.hash.includes('step=')")
    got = page.evaluate("() => minigpt.forward('anna')")
    for side, run_dir in zip("ab", runs):
        ckpt = load_checkpoint(run_dir)
        load_microgpt_weights(ckpt.model, page_weights(checkpoint_snapshots(ckpt), 0))
        _, logits, _ = torch_run(ckpt, "anna")
        torch.testing.assert_close(
            torch.tensor([s["logits"] for s in got[side]], dtype=torch.float64), logits, atol=1e-4, rtol=0
        )
    page.goto(page.url)  # the address opens the same view
    page.reload()
    assert page.inner_text("#step-value") == f"A at step {steps[0]}, B at step {steps[1]}"
    assert page.watched.errors == []


def test_a_model_beside_itself_matches_every_head_to_itself(chromium, pair):
    runs, _, tmp = pair
    path = write_pair_page(runs[0], runs[0], tmp / "same.html")
    page = browser.open_page(chromium, path)
    matched = page.evaluate("() => minigpt.matchedHeads()")
    assert matched and all((m["la"], m["ha"]) == (m["lb"], m["hb"]) and m["distance"] == 0 for m in matched)
    assert "are the same" in page.inner_text("#differences")
    labels = "[...document.querySelectorAll('#heads button span:not(.pair-picture)')]"
    browser.wait_until(page, f"{labels}.length === 4 && {labels}.every((s) => s.textContent)")
    assert [button.inner_text() for button in page.locator("#heads button").all()] == [
        f"{l}.{h} · 0.00" for l in range(2) for h in range(2)
    ]
    # every head shows its own strip of one picture of all the heads
    pictures = page.evaluate(
        "[...document.querySelectorAll('#heads .pair-picture')].map((p) => "
        "[p.style.backgroundImage.slice(0, 26), p.style.backgroundPosition])"
    )
    assert [image for image, _ in pictures] == ['url("data:image/png;base64'] * 4
    assert [position for _, position in pictures] == ["0px 0%", "0px 33.3333%", "0px 66.6667%", "0px 100%"]
    assert page.watched.errors == []


def test_the_page_is_no_larger_than_the_two_models_own_pages(pair):
    runs, path, tmp = pair
    own = [write_page(run, tmp / f"own{n}.html", text="emma").stat().st_size for n, run in enumerate(runs)]
    assert path.stat().st_size <= sum(own)


def test_no_serious_accessibility_violation(chromium, pair):
    from axe_playwright_python.sync_playwright import Axe

    page = browser.open_page(chromium, pair[1])
    for width, height in [(1280, 800), (390, 844)]:
        page.set_viewport_size({"width": width, "height": height})
        violations = Axe().run(page).response["violations"]
        serious = [(v["id"], v["nodes"][0]["target"]) for v in violations if v["impact"] in ("serious", "critical")]
        assert serious == [], serious


def test_the_command_writes_the_page_and_refuses_two_models_that_read_differently(pair, tmp_path):
    runs, _, _ = pair
    out = tmp_path / "two.html"
    result = runner.invoke(app, ["inspect-attention", str(runs[0]), str(runs[1]), "--html", str(out), "zoe"])
    assert result.exit_code == 0, result.output
    assert out.is_file() and '"start_text":"zoe"' in out.read_text()
    # a run on other characters: one line, exit 2, and no page
    other = tmp_path / "other.txt"
    other.write_text("abab\nbaba\naabb\nbbaa\nabba\nbaab\n" * 5)
    config = load_config("tiny", ["train.steps=2", "train.eval_interval=2", "train.time_limit=0"])
    odd = train(config, other, out_dir=tmp_path / "odd", quiet=True).run_dir
    refused = tmp_path / "refused.html"
    result = runner.invoke(app, ["inspect-attention", str(runs[0]), str(odd), "--html", str(refused)])
    assert result.exit_code == 2 and "cannot be put on one page" in result.output
    assert "only the first has" in result.output and len(result.output.strip().splitlines()) == 1
    assert not refused.exists()
    # two runs without --html, and a second name that is not a run
    result = runner.invoke(app, ["inspect-attention", str(runs[0]), str(runs[1])])
    assert result.exit_code == 2 and "--html" in result.output
    result = runner.invoke(app, ["inspect-attention", str(runs[0]), "emma", "anna"])
    assert result.exit_code == 2 and "one NAME" in result.output


def test_a_model_trained_without_the_mask_runs_unmasked_beside_the_masked_one(chromium, pair):
    runs, _, tmp = pair
    config = load_config(
        "tiny",
        ["model.n_layer=2", "model.causal=false", "train.steps=20", "train.eval_interval=10", "train.time_limit=0"],
    )
    unmasked = train(config, tmp / "names.txt", out_dir=tmp / "unmasked", quiet=True).run_dir
    browser.redraw_weights(unmasked / "best.pt", seed=5)
    page = browser.open_page(chromium, write_pair_page(runs[0], unmasked, tmp / "mask.html", text="emma"))
    ckpt = load_checkpoint(unmasked)
    got = page.evaluate("() => minigpt.forward('emma')")["b"]
    tokens, logits, attention = torch_run(ckpt, "emma")
    torch.testing.assert_close(torch.tensor([s["logits"] for s in got], dtype=torch.float64), logits, atol=1e-4, rtol=0)
    js = torch.tensor([[[s["weights"][l][h] for s in got] for h in range(2)] for l in range(2)], dtype=torch.float64)
    torch.testing.assert_close(js, attention, atol=1e-5, rtol=0)
    assert js.triu(1).sum() > 0  # it reads the positions after its own
    assert "Trained without the causal mask" in page.inner_text("#card-b")
    assert "model.causal true → false" in page.inner_text("#differences")
    assert "has none to match" in page.inner_text("#roles-note")
    # the share of weight on later positions leaves out the last row, which cannot read ahead, and each head
    # that reads ahead is named (the figure averaged every row, and no head was named)
    browser.show(page, "#mask-table")
    browser.wait_until(page, "document.getElementById('mask-table').rows.length > 5")
    rows = {
        row[0]: row[1:]
        for row in page.evaluate(
            "[...document.querySelectorAll('#mask-table tr')].map((tr) => [...tr.cells].map((c) => c.textContent))"
        )
    }
    shares = js.triu(1).sum(-1)[:, :, :-1]  # [layer, head, row] weight on later positions, the last row left out
    expected = f"{100 * shares.mean().item():.1f}%"
    assert rows["weight on later positions (every row but the last, which has none)"] == ["0.0%", expected]
    by_head = shares.mean(-1)
    order = sorted(((by_head[l, h].item(), f"{l}.{h}") for l in range(2) for h in range(2)), reverse=True)
    named = [head for share, head in order if share > 0.5]
    readers = rows["heads that read ahead (over half a row's weight on later positions)"]
    over, _, rest = readers[1].partition(" (the next, under half: ")
    assert readers[0].startswith("none (the next, under half: ")
    assert [part.split()[0] for part in over.split(", ") if part != "none"] == named
    # the closest head under half is named with its number (a head at 49.6% was left out without a word)
    under = [(share, head) for share, head in order if share <= 0.5]
    assert not under or rest.startswith(f"{under[0][1]} {100 * under[0][0]:.1f}%")
    assert page.watched.errors == []


def test_a_run_beside_its_identical_twin_is_called_one_and_ties_count_for_neither(chromium, pair):
    """A run beside one that trained the same weights was said to differ by "another seed, or other data", and B
    was counted better on 516 of 516 equal names; where the two disagree most, at position 0, the page showed
    empty quotes for the boundary."""
    runs, _, tmp = pair
    path = write_pair_page(runs[0], runs[0], tmp / "twin.html", text="emma")
    page = browser.open_page(chromium, path)
    assert "same run: identical weights" in page.inner_text("#differences")
    browser.show(page, "#names-summary")
    browser.wait_until(page, "document.getElementById('names-summary').textContent.includes('ties')")
    summary = page.inner_text("#names-summary")
    assert "A is better on 0 of them, B on 0, and" in summary and "one run" in summary
    browser.show(page, "#disagree")
    browser.wait_until(page, "document.getElementById('disagree').textContent.includes('position')")
    assert "after “”" not in page.inner_text("#disagree")
    # identical runs were said to "disagree most at position 0 (0.00 apart)"
    assert page.inner_text("#disagree").startswith("They agree at every position")
    assert page.watched.errors == []


def test_at_phone_width_each_map_is_as_tall_as_the_name_with_no_blank_band_under_it(chromium, pair):
    """82 §7: at 390 px the maps, one below another, each kept the room of the longest name: about 200 px of blank
    under each. Below one another, a map is as tall as the name it shows, and grows as the name does."""
    page = browser.open_page(chromium, pair[1], width=390, height=844, hash="#name=emma")
    heights = "() => [...document.querySelectorAll('#maps .map-grid')].map((g) => g.getBoundingClientRect().height)"
    browser.wait_until(page, f"({heights})().length === 3")
    assert all(h <= (5 + 1) * 22 + 1 for h in page.evaluate(heights))  # the boundary and four characters
    page.fill("#name-input", "emmanuel")
    browser.wait_until(page, f"({heights})().every((h) => h >= (9 + 1) * 22 - 1)")
    assert page.watched.errors == []


def test_at_phone_width_the_heads_table_shows_every_column_and_cuts_no_label(chromium, pair):
    """At 390 px the table of both models' heads was 661 px wide in a 374 px scroller: labels cut at its right
    edge, B's side and the distance scrolled out of sight. Its words wrap in their columns now."""
    page = browser.open_page(chromium, pair[1], width=390, height=844, hash="#name=emma")
    browser.show(page, "#roles")
    browser.wait_until(page, "document.querySelectorAll('#roles tr').length > 1")
    table, scroller = page.evaluate(
        "() => { const t = document.getElementById('roles'); return [t.scrollWidth, t.parentElement.clientWidth]; }"
    )
    assert table <= scroller, (table, scroller)
    assert page.watched.errors == []
