"""The explorer page, in a real browser: its JavaScript model agrees with torch, and the page works.

Checkpoints of three architectures: the default recipe; makemore's (GELU, learned norm gains);
microgpt's (no final norm). Their weights are redrawn at a scale where logits differ by whole
nats, so that agreeing within 1e-4 says something about the arithmetic.
"""

import array
import base64
import copy
import math
import sys

import browser
import pytest
import torch
from typer.testing import CliRunner

from minigpt.cli.main import app
from minigpt.formats.checkpoint import load_checkpoint
from minigpt.formats.recipes import load_config
from minigpt.formats.snapshots import dequantize
from minigpt.runs.run import train
from minigpt.views.attention_maps import forward_with_weights
from minigpt.views.explorer_page import write_page
from minigpt.views.page_data import BASE64

runner = CliRunner()
pytestmark = pytest.mark.xdist_group("explorer")  # one worker builds the module's pages, once
RECIPES = ["default", "makemore", "microgpt"]


@pytest.fixture(scope="module")
def pages(tmp_path_factory, names_text):
    """One page per recipe: a checkpoint trained for 2 steps, its weights redrawn, then written as a page. Two
    layers at most: the recipes differ in their parts (GELU, norm gains, no final norm), which two layers hold."""
    tmp = tmp_path_factory.mktemp("pages")
    data = tmp / "names.txt"
    data.write_text(names_text)
    made = {}
    for recipe in RECIPES:
        depth = [] if load_config(recipe).model.n_layer <= 2 else ["model.n_layer=2"]
        config = load_config(recipe, ["train.steps=2", "train.eval_interval=2", "train.time_limit=0", *depth])
        run_dir = train(config, data, out_dir=tmp / recipe, quiet=True).run_dir
        browser.redraw_weights(run_dir / "best.pt", seed=RECIPES.index(recipe))
        made[recipe] = (load_checkpoint(run_dir), write_page(run_dir, tmp / f"{recipe}.html", text="emma"))
    return made


@pytest.fixture(scope="module")
def names_text():
    from minigpt.common.bundled import BUNDLED_NAMES

    return "\n".join(BUNDLED_NAMES.read_text().split()[::11]) + "\n"


def torch_forward(ckpt, text):
    tokens = [ckpt.tokenizer.bos] + ckpt.tokenizer.encode(text)
    logits, weights = forward_with_weights(ckpt.model, torch.tensor([tokens]))
    return tokens, logits[0], weights[:, 0]  # [T, vocab], [layers, heads, T, T]


STEP_BY_STEP = """text => {
    // model.js reads a name at once (forward, layer by layer) or one token at a time over a
    // cache (step, as sampling does): the largest difference between the two, logits and weights
    const model = MiniGPTModel.load(JSON.parse(document.getElementById("minigpt-data").textContent));
    const tokens = minigpt.forward(text).tokens;
    const atOnce = MiniGPTModel.forward(model, tokens), cache = MiniGPTModel.newCache(model.config);
    let worst = 0;
    const compare = (a, b) => a.forEach((x, i) => { worst = Math.max(worst, Math.abs(x - b[i])); });
    tokens.forEach((token, t) => {
        const one = MiniGPTModel.step(model, cache, token);
        compare(one.logits, atOnce[t].logits);
        one.layers.forEach((layer, l) => layer.weights.forEach((w, h) => compare(w, atOnce[t].layers[l].weights[h])));
    });
    return worst;
}"""


@pytest.mark.parametrize("recipe", RECIPES)
def test_the_pages_model_computes_what_torch_computes(chromium, pages, recipe):
    """Logits to 1e-4 and attention to 1e-5 against torch, at once and token by token."""
    ckpt, path = pages[recipe]
    page = browser.open_page(chromium, path)
    longest = "abcdefghijklmnopqrstuvwxyz"[: ckpt.config.model.block_size - 1]
    for text in ["", "emma", "xavier", longest]:
        result = page.evaluate("text => minigpt.forward(text)", text)
        tokens, logits, attention = torch_forward(ckpt, text)
        assert result["tokens"] == tokens
        assert logits.abs().max() > 1  # the redrawn weights give logits worth comparing
        torch.testing.assert_close(
            torch.tensor(result["logits"], dtype=torch.float64), logits.double(), atol=1e-4, rtol=0
        )
        js_attention = torch.tensor(result["attention"], dtype=torch.float64)
        torch.testing.assert_close(js_attention, attention.double(), atol=1e-5, rtol=0)
        torch.testing.assert_close(js_attention.sum(-1), torch.ones(js_attention.shape[:-1], dtype=torch.float64))
        assert torch.all(js_attention.triu(1) == 0)  # no weight on a future position
        # and read token by token over a cache, as sampling reads it (one to sixteen positions:
        # every remainder of linearAll's blocks of four), the same to 1e-9
        assert page.evaluate(STEP_BY_STEP, text) < 1e-9
    assert page.watched.errors == []


def matrix_labels(page):
    return page.eval_on_selector_all(
        "#big-matrix [role=row]:not([hidden]) .row-head", "cells => cells.map(c => c.textContent)"
    )


def test_typing_redraws_the_matrices_and_predictions(chromium, pages):
    page = browser.open_page(chromium, pages["default"][1])
    assert matrix_labels(page) == ["·", "e", "m", "m", "a"]
    page.fill("#name-input", "")
    page.type("#name-input", "anna")
    assert matrix_labels(page) == ["·", "a", "n", "n", "a"]
    browser.show(page, "#predict")
    assert page.locator("#predictions .prediction:not([hidden])").count() == 5
    assert "“anna”" in page.text_content("#loss")
    assert page.locator("#grid button.thumb").count() == 2 * 4  # layers × heads
    # one canvas paints every head over the buttons' faces: the first cell of each picture is position 0
    # reading itself, weight 1 (viridis yellow), where the grid's own background is white
    corners = page.evaluate("""() => { const canvas = document.getElementById('grid-canvas');
        const box = canvas.getBoundingClientRect();
        const scale = canvas.width / box.width, ctx = canvas.getContext('2d');
        return [...document.querySelectorAll('#grid .face')].map(face => { const r = face.getBoundingClientRect();
            const x = (r.left - box.left + 1) * scale, y = (r.top - box.top + 1) * scale;
            return Array.from(ctx.getImageData(x, y, 1, 1).data); }); }""")
    assert len(corners) == 2 * 4 and all(pixel == [253, 231, 37, 255] for pixel in corners)
    page.locator("#grid button.thumb").nth(6).click()  # layer 1, head 2
    assert page.inner_text("#matrix-title") == "Layer 1, head 2"
    page.locator("#big-matrix .row-head").nth(1).click()  # work out position 1
    assert "Row 1 (“a”) worked out, layer 1, head 2" in page.inner_text("#math-title")
    page.locator("#grid button.thumb").nth(0).click()
    assert "Row 1 (“a”)" in page.inner_text("#math-title")  # the row stays when switching heads
    assert page.locator("#math-table tbody tr:not([hidden])").count() == 1 + 5 + 1  # q, a line per position, the sums
    assert page.watched.errors == []


def test_typing_computes_only_new_positions_and_shows_a_whole_pass(chromium, pages):
    """Typed at the end, deleted, edited in the middle, parts switched off: what the page shows, which
    reuses the positions it shares with the text before, is a whole forward pass's."""
    page = browser.open_page(chromium, pages["default"][1])
    page.fill("#name-input", "")

    def shows_a_whole_pass(text, off=None):
        shown, whole = (
            page.evaluate("minigpt.shown()"),
            page.evaluate("([t, off]) => minigpt.forward(t, off)", [text, off]),
        )
        assert shown["tokens"] == whole["tokens"]
        assert torch.tensor(shown["logits"]).sub(torch.tensor(whole["logits"])).abs().max() < 1e-12

    page.type("#name-input", "xavier")
    shows_a_whole_pass("xavier")
    page.keyboard.press("Backspace")
    shows_a_whole_pass("xavie")
    page.keyboard.press("Home")
    page.keyboard.press("Delete")
    shows_a_whole_pass("avie")
    page.click("[data-part='head,0,1'] >> nth=0")  # a part off: nothing is reused across the switch
    page.focus("#name-input")
    page.keyboard.press("End")
    page.keyboard.type("z")
    shows_a_whole_pass("aviez", {"heads": [[0, 1]]})
    assert page.watched.errors == []


def test_nothing_typed_breaks_the_page(chromium, pages):
    page = browser.open_page(chromium, pages["microgpt"][1])
    for text in ["", "ÉMMA!!", "12345", "anna" * 50, "a paragraph pasted in.\nwith lines\tand tabs " * 40, "😀 emma"]:
        page.fill("#name-input", text)
        assert matrix_labels(page)[0] == "·"
    page.fill("#name-input", "Emma")
    assert page.inner_text("#notes") == (
        "Skipped “E”: not in the model's vocabulary (abcdefghijklmnopqrstuvwxyz). "
        "The vocabulary is lowercase: try “emma”."
    )  # as the command line says
    page.fill("#name-input", "EMMA emma")
    assert "Skipped “E”, “M”, “A”, “ ”" in page.inner_text("#notes") and "lowercase" not in page.inner_text("#notes")
    assert matrix_labels(page) == ["·", "e", "m", "m", "a"]
    page.fill("#name-input", "a" * 40)
    assert "Cut 25 characters" in page.inner_text("#notes") and len(matrix_labels(page)) == 16
    assert page.watched.errors == []


def test_sampling_with_a_seed_repeats_and_marks_training_names(chromium, pages):
    ckpt, path = pages["default"]
    page = browser.open_page(chromium, path)
    first = page.evaluate("minigpt.sample({seed: 7, temperature: 1})")
    assert first == page.evaluate("minigpt.sample({seed: 7, temperature: 1})")
    assert first and set(first) <= set(ckpt.tokenizer.chars) and len(first) <= ckpt.config.model.block_size
    names = page.evaluate("minigpt.sampleNames(40, {seed: 1})")
    assert len(names) == 40 and len(set(names)) > 20
    known = ckpt.train_names[3]
    assert page.evaluate("name => minigpt.inTrainingData(name)", known) is True
    # clicks as events, not at a point on the screen: on a busy machine a redraw can move a button between
    # where Playwright measured it and where it clicks, and the seed then counts one draw short
    page.dispatch_event("#whole-name", "click")
    page.dispatch_event("#ten-names", "click")
    page.fill("#name-input", "")  # room to grow: the whole name drawn above may fill the block
    for _ in range(3):
        page.dispatch_event("#next-char", "click")
    assert page.locator("#generated li").count() >= 11
    marks = page.eval_on_selector_all("#generated .mark", "ms => ms.map(m => m.textContent)")
    assert set(marks) <= {"new", "in the training data"}
    assert page.input_value("#seed") == str(1 + 1 + 10 + 3)  # one seed per draw
    assert page.watched.errors == []


def test_the_page_asks_nothing_of_the_network(chromium, pages):
    page = browser.open_page(chromium, pages["makemore"][1])
    page.type("#name-input", "xyz")
    page.click("#ten-names")
    page.click("#big-matrix .cell >> nth=0")
    assert page.is_visible("#cell-info")
    assert page.watched.requests and all(url.startswith(("file://", "data:")) for url in page.watched.requests)
    assert page.watched.errors == []


def test_cli_writes_the_page_and_refuses_what_it_should(trained_run, tmp_path):
    run_dir, _ = trained_run
    out = tmp_path / "page.html"
    result = runner.invoke(app, ["inspect-attention", str(run_dir), "--html", str(out)])
    assert result.exit_code == 0, result.output
    html = out.read_text()
    assert html.startswith("<!doctype html>") and "window.minigpt" in html and "/*DATA*/" not in html
    assert "src=" not in html and "href=" not in html  # nothing to load from elsewhere
    again = runner.invoke(app, ["inspect-attention", str(run_dir), "--html", str(out)])
    assert again.exit_code == 2 and "already exists; pass --overwrite" in again.stderr
    assert (
        runner.invoke(app, ["inspect-attention", str(run_dir), "anna", "--html", str(out), "--overwrite"]).exit_code
        == 0
    )
    for args, message in [
        ([str(tmp_path / "missing.pt"), "--html", str(tmp_path / "new.html")], "checkpoint not found"),
        ([str(run_dir), "--html", str(tmp_path / "no" / "p.html")], "does not exist"),
        ([str(run_dir)], "needs a NAME"),
    ]:
        result = runner.invoke(app, ["inspect-attention", *args])
        assert result.exit_code == 2 and message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_names_in_the_data_cannot_end_the_script_early(tmp_path):
    from minigpt.views.explorer_page import script_json

    text = script_json({"names": ["</script><script>alert(1)</script>", "a&b"]})
    assert "<" not in text and "&" not in text


def test_a_bloom_filter_marks_names_in_the_page_as_in_python(chromium, names_file, tmp_path, monkeypatch):
    import random

    from minigpt.files import membership
    from minigpt.formats.recipes import load_config as recipe

    monkeypatch.setattr(membership, "EXACT_CHARACTERS", 100)  # a "large" corpus: the checkpoint carries a filter
    run_dir = train(recipe("tiny", ["train.steps=5"]), names_file, out_dir=tmp_path / "run", quiet=True).run_dir
    ckpt = load_checkpoint(run_dir)
    assert ckpt.membership.kind == "bloom"
    page = browser.open_page(chromium, write_page(ckpt, tmp_path / "page.html"))
    rng = random.Random(0)
    strangers = ["".join(rng.choice("aeilnorst") for _ in range(rng.randint(2, 8))) for _ in range(400)]
    names = names_file.read_text().split() + strangers + ["Zoë", ""]
    in_page = page.evaluate("names => names.map(n => minigpt.inTrainingData(n))", names)
    assert in_page == [name in ckpt.membership for name in names]
    assert sum(in_page) >= 270  # the training names, and no more than a few strangers
    assert page.watched.errors == []


def test_the_pages_sampling_filters_are_pythons(chromium, pages):
    """The end-token rule first, then temperature, top-k, top-p: sampling.py's order, to 1e-6."""
    import copy

    from minigpt.sampling import filter_logits

    ckpt, path = pages["default"]
    page = browser.open_page(chromium, path)
    model = copy.deepcopy(ckpt.model).double()  # the page computes in float64
    settings = [(1.0, 0, 1.0), (0.5, 0, 1.0), (1.5, 3, 1.0), (1.0, 0, 0.6), (0.8, 5, 0.9), (1.0, 1, 1.0), (2.0, 0, 0.3)]
    for text in ["", "em"]:
        tokens = [ckpt.tokenizer.bos] + ckpt.tokenizer.encode(text)
        with torch.no_grad():
            logits = model(torch.tensor([tokens]))[0][0, -1]
        if not text:
            logits[ckpt.tokenizer.bos] = float("-inf")  # a name has at least one character
        for temperature, top_k, top_p in settings:
            expected = torch.softmax(filter_logits(logits[None], temperature, top_k or None, top_p), dim=-1)[0]
            got = page.evaluate(
                "([text, options]) => minigpt.nextDistribution(text, options)",
                [text, {"temperature": temperature, "topK": top_k, "topP": top_p}],
            )
            assert max(abs(g - e) for g, e in zip(got, expected.tolist())) < 1e-6, (text, temperature, top_k, top_p)
    # top-k 1 when the end token is likeliest at the first position: the end is ruled out first, so a
    # character remains (filtering top-k first would leave nothing to draw from)
    kept = page.evaluate("MiniGPTModel.softmax(MiniGPTModel.filterLogits([0, 1, 5], {topK: 1, first: true}))")
    assert kept == [0.0, 1.0, 0.0]
    assert page.watched.errors == []


ABLATIONS = [
    {"heads": [[0, 1]]},
    {"heads": [[0, 0], [0, 3]], "mlp": [0]},
    {"attention": [0]},
    {"heads": [[0, 2]], "mode": "mean"},
    {"attention": [0], "mlp": [0], "mode": "mean"},
]


@pytest.mark.parametrize("recipe", RECIPES)
def test_the_pages_ablated_forward_and_lens_are_pythons(chromium, pages, recipe):
    """Parts switched off, zeroed or set to their mean: model.js and measurements/ablation.py agree to 1e-4;
    and the lens, to 1e-5."""
    from minigpt.measurements.ablation import Part, ablate, forward_without
    from minigpt.views.page_data import names_for_roles

    ckpt, path = pages[recipe]
    page = browser.open_page(chromium, path)
    means = ablate(ckpt.model, ckpt.tokenizer, names_for_roles(ckpt)[0], "mean").means  # what the page carries
    tokens = [ckpt.tokenizer.bos] + ckpt.tokenizer.encode("xavier")
    for off in ABLATIONS:
        parts = [Part("head", l, h) for l, h in off.get("heads", [])]
        parts += [Part("attention", l) for l in off.get("attention", [])] + [Part("mlp", l) for l in off.get("mlp", [])]
        with torch.no_grad():
            expected = forward_without(
                ckpt.model, torch.tensor([tokens]), parts, means if off.get("mode") == "mean" else None
            )[0]
        got = torch.tensor(
            page.evaluate("([text, off]) => minigpt.forward(text, off).logits", ["xavier", off]), dtype=torch.float64
        )
        torch.testing.assert_close(got, expected.double(), atol=1e-4, rtol=0)
        plain = torch.tensor(page.evaluate("text => minigpt.forward(text).logits", "xavier"), dtype=torch.float64)
        assert (got - plain).abs().max() > 1e-3  # switching the parts off changed the logits
    # each layer's guess: the page's logit lens is measurements/logit_lens.py's, every stage and position
    from minigpt.measurements.logit_lens import read_off, residual_streams

    with torch.no_grad():
        lens = torch.stack(
            [
                torch.softmax(read_off(ckpt.model, x)[0], -1)
                for _, x in residual_streams(ckpt.model, torch.tensor([tokens]))
            ]
        )
    got = torch.tensor(
        page.evaluate("text => minigpt.lens(text)", "xavier"), dtype=torch.float64
    )  # [stage, position, token]
    torch.testing.assert_close(got, lens.double(), atol=1e-5, rtol=0)
    browser.show(page, "#lens")
    assert page.locator("#lens-table tbody tr").count() == 1 + 2 * ckpt.config.model.n_layer
    assert page.watched.errors == []


def test_the_switches_redraw_the_page_and_the_table_is_minigpt_ablate(chromium, pages, tmp_path):
    import json

    ckpt, path = pages["default"]
    page = browser.open_page(chromium, path)
    page.fill("#name-input", "xavier")
    before = page.evaluate("minigpt.forward('xavier').attention[1]")  # a later layer's attention
    browser.show(page, "#predict")
    loss = page.text_content("#loss")
    page.click("[data-part='head,0,1'] >> nth=0")
    assert page.evaluate("minigpt.forward('xavier', {heads: [[0, 1]]}).attention[1]") != before
    browser.show(page, "#predict")  # the click scrolled to the grid: the predictions draw when seen again
    assert page.text_content("#loss") != loss and "1 part off" in page.text_content("#loss")
    assert page.locator("button.thumb.off").count() == 1
    assert not page.is_checked("#ablation-table [data-part='head,0,1']")  # every switch of a part follows it
    page.click("#all-on")
    assert page.locator("button.thumb.off").count() == 0
    shown = page.eval_on_selector_all(
        "#ablation-table tbody tr", "rows => rows.map(r => [r.cells[0].textContent, r.cells[2].textContent])"
    )
    result = runner.invoke(app, ["ablate", str(ckpt.path.parent), "--json"])
    assert result.exit_code == 0, result.output
    cli = json.loads(result.stdout)["parts"]
    assert [name for name, _ in shown] == [p["part"] for p in cli]
    assert [float(cost.replace("−", "-").lstrip("+")) for _, cost in shown] == pytest.approx(
        [p["cost"] for p in cli], abs=1e-4
    )
    live = dict(page.evaluate("minigpt.liveCosts()"))
    assert len(live) == len(cli) and all(cost.startswith(("+", "−")) for cost in live.values())
    # a live cost, which reuses the layers before the part's, against two whole forward passes
    whole = page.evaluate("""() => { const loss = (off) => { const r = minigpt.forward('xavier', off), t = r.tokens;
        return -r.logits.reduce((sum, row, i) => {
            const m = Math.max(...row), z = row.reduce((a, v) => a + Math.exp(v - m), 0);
            return sum + row[i + 1 < t.length ? t[i + 1] : t[0]] - m - Math.log(z); }, 0) / t.length; };
        return loss({heads: [[1, 1]]}) - loss(null); }""")
    assert float(live["layer 1 head 1"].replace("−", "-")) == pytest.approx(whole, abs=1e-4)
    assert page.watched.errors == []


def test_the_step_slider_runs_each_snapshots_weights_as_torch_does(chromium, pages):
    """The model, its costs table and its mean outputs all follow the slider."""
    from minigpt.measurements.ablation import Part, ablate, forward_without
    from minigpt.model import load_microgpt_weights
    from minigpt.views.page_data import names_for_roles

    ckpt, path = pages["makemore"]
    page = browser.open_page(chromium, path)
    carried = page.evaluate("JSON.parse(document.getElementById('minigpt-data').textContent).snapshots")
    assert carried["steps"] == [0, 1, 2] and page.is_visible("#step-slider")
    tokens = [ckpt.tokenizer.bos] + ckpt.tokenizer.encode("xavier")
    final = page.evaluate("minigpt.forward('xavier').logits")
    for index in (0, 1):
        page.evaluate("i => minigpt.showSnapshot(i)", index)
        assert f"snapshot {index + 1} of 3" in page.inner_text("#step-value")
        model = __import__("copy").deepcopy(ckpt.model)
        load_microgpt_weights(model, snapshot_weights(carried, index))
        with torch.no_grad():
            expected = model(torch.tensor([tokens]))[0][0]
        got = torch.tensor(page.evaluate("minigpt.forward('xavier').logits"), dtype=torch.float64)
        torch.testing.assert_close(got, expected.double(), atol=1e-4, rtol=0)
    # at snapshot 1: the table's costs are minigpt ablate's on the snapshot's weights, and mean mode
    # puts the snapshot's mean outputs in place of a part
    names, _ = names_for_roles(ckpt)
    zero, mean = (ablate(model, ckpt.tokenizer, names, mode) for mode in ("zero", "mean"))
    browser.show(page, "#ablation")
    shown = dict(
        page.eval_on_selector_all(
            "#ablation-table tbody tr", "rows => rows.map(r => [r.cells[0].textContent, r.cells[2].textContent])"
        )
    )
    assert {part: float(cost.replace("−", "-")) for part, cost in shown.items()} == pytest.approx(
        {str(p): c for p, c in zero.costs}, abs=1e-4
    )
    assert "at step 1" in page.text_content("#costs-caption")
    with torch.no_grad():
        expected = forward_without(model, torch.tensor([tokens]), [Part("head", 0, 1)], mean.means)[0]
    got = page.evaluate("minigpt.forward('xavier', {heads: [[0, 1]], mode: 'mean'}).logits")
    torch.testing.assert_close(torch.tensor(got, dtype=torch.float64), expected.double(), atol=1e-4, rtol=0)
    page.fill("#step-slider", "2")  # the checkpoint's step: its exact weights again
    assert page.evaluate("minigpt.forward('xavier').logits") == final
    assert page.watched.errors == []


def test_a_page_without_snapshots_has_no_slider(chromium, trained_run, tmp_path):
    run_dir, _ = trained_run
    import shutil

    shutil.copytree(run_dir, tmp_path / "run")
    (tmp_path / "run" / "snapshots.pt").unlink(missing_ok=True)
    page = browser.open_page(chromium, write_page(tmp_path / "run", tmp_path / "page.html"))
    assert not page.is_visible("#step-slider") and page.watched.errors == []


def torch_walk(model, tokens, parts=(), means=None) -> dict:
    """Every operation's output at every position [T, ...], from forward hooks on torch's modules while
    measurements/ablation.py's forward_without runs the model with `parts` off: the walk's numbers, by its keys.
    A module that does not run (a part that is off) records nothing."""
    from minigpt.measurements.ablation import forward_without

    seen, hooks = {}, []

    def record(module, key, side="out"):
        def hook(_module, inputs, output):
            seen[key] = (
                (inputs[0] if side == "in" else output)[0].detach().double().clone()
            )  # before relu's in-place work

        hooks.append(module.register_forward_hook(hook))

    record(model.emb_norm, "embedded", "in")
    record(model.emb_norm, "x")
    act = model.config.activation
    for l, layer in enumerate(model.layers):
        record(layer.attn_norm, f"layer{l}.attn_norm")
        record(layer.attn.attn_wo, f"layer{l}.heads", "in")
        record(layer.attn.attn_wo, f"layer{l}.attn_wo")
        record(layer.mlp_norm, f"layer{l}.after_attn", "in")
        record(layer.mlp_norm, f"layer{l}.mlp_norm")
        record(layer.mlp.mlp_fc1, f"layer{l}.mlp_fc1")
        record(layer.mlp.mlp_fc2, f"layer{l}.{act}", "in")
        record(layer.mlp.mlp_fc2, f"layer{l}.mlp_fc2")
        # the stream after layer l is what reads it next: the next layer's attention, else the head
        after = model.layers[l + 1].attn_norm if l + 1 < len(model.layers) else model.final_norm or model.lm_head
        record(after, f"layer{l}.after_mlp", "in")
    if model.final_norm is not None:
        record(model.final_norm, "final_norm")
    record(model.lm_head, "lm_head")
    try:
        with torch.no_grad():
            forward_without(model, torch.tensor([tokens]), parts, means)
    finally:
        for hook in hooks:
            hook.remove()
    seen["softmax"] = torch.softmax(seen["lm_head"], -1)
    return seen


WALK_ABLATIONS = [{}, {"heads": [[0, 1]], "mlp": [0]}, {"heads": [[0, 2]], "attention": [], "mode": "mean"}]


@pytest.mark.parametrize("recipe", RECIPES)
def test_the_walk_through_the_whole_model_is_torchs_at_every_operation(chromium, pages, recipe):
    """Every operation the walk shows, at every position, with parts on and off: torch's to 1e-5 (torch in
    float64 on the same weights, as model.js computes: in float32 the redrawn weights' MLP outputs of ~20
    round at 1e-6)."""
    import copy

    from minigpt.measurements.ablation import Part, ablate
    from minigpt.views.page_data import names_for_roles

    ckpt, path = pages[recipe]
    page = browser.open_page(chromium, path)
    means = ablate(ckpt.model, ckpt.tokenizer, names_for_roles(ckpt)[0], "mean").means
    tokens = [ckpt.tokenizer.bos] + ckpt.tokenizer.encode("xavier")
    for off in WALK_ABLATIONS:
        parts = [Part("head", l, h) for l, h in off.get("heads", [])] + [Part("mlp", l) for l in off.get("mlp", [])]
        as_float64 = {kind: mean.double() for kind, mean in means.items()} if off.get("mode") == "mean" else None
        expected = torch_walk(copy.deepcopy(ckpt.model).double(), tokens, parts, as_float64)
        for i in range(len(tokens)):
            got = page.evaluate("([text, i, off]) => minigpt.walk(text, i, off)", ["xavier", i, off or None])
            # an MLP switched off runs nothing to hook (its norm included): the rest is compared
            unseen = {
                f"layer{l}.{op}"
                for l in off.get("mlp", [])
                for op in ("after_attn", "mlp_norm", "mlp_fc1", ckpt.config.model.activation, "mlp_fc2")
            }
            assert set(got) - set(expected) == unseen and set(expected) <= set(got)
            for key in set(got) - unseen:
                torch.testing.assert_close(
                    torch.tensor(got[key], dtype=torch.float64),
                    expected[key][i],
                    atol=1e-5,
                    rtol=0,
                    msg=lambda m, key=key, i=i, off=off: f"{key} at position {i} with {off}: {m}",
                )
    assert page.watched.errors == []


def snapshot_weights(carried: dict, index: int) -> dict[str, torch.Tensor]:
    """Snapshot `index` as the page decodes it: what the page computes with, to check it against torch."""
    per_snapshot = sum(t["rows"] * t["cols"] for t in carried["tensors"].values())
    rows_per_snapshot = sum(t["rows"] for t in carried["tensors"].values())
    values = carried["values"] if isinstance(carried["values"], str) else "".join(carried["values"])
    scales = carried["scales"]
    if isinstance(scales, str):
        halves = array.array("h", base64.b64decode(scales))
        if sys.byteorder == "big":
            halves.byteswap()
        scales = torch.tensor(halves, dtype=torch.int16).view(torch.float16).float().tolist()
    at, row = index * per_snapshot, index * rows_per_snapshot
    weights = {}
    for name, t in carried["tensors"].items():
        size = t["rows"] * t["cols"]
        q = torch.tensor([BASE64.index(c) - 32 for c in values[at : at + size]], dtype=torch.float32).view(
            t["rows"], t["cols"]
        )
        scale = torch.tensor(list(scales[row : row + t["rows"]]), dtype=torch.float32)
        weights[name] = dequantize(q, scale, t["shape"])
        at, row = at + size, row + t["rows"]
    return weights


@pytest.mark.parametrize("recipe", RECIPES)
def test_the_pages_attribution_is_pythons_with_parts_on_and_off(chromium, pages, recipe):
    """Why this character: every part's term in every logit, model.js against measurements/attribution.py
    in float64, with every part on and with parts switched off (zero and mean) as the switches do; the
    terms add up to the logits."""
    from minigpt.measurements.ablation import Part, ablate
    from minigpt.measurements.attribution import attribution, part_outputs
    from minigpt.views.page_data import names_for_roles

    ckpt, path = pages[recipe]
    page = browser.open_page(chromium, path)
    model = copy.deepcopy(ckpt.model).double()
    means = ablate(ckpt.model, ckpt.tokenizer, names_for_roles(ckpt)[0], "mean").means  # what the page carries
    means = {kind: [m.double() for m in per_layer] for kind, per_layer in means.items()}
    idx = torch.tensor([[ckpt.tokenizer.bos] + ckpt.tokenizer.encode("xavier")])
    for off in [None, *ABLATIONS]:
        parts = [Part("head", l, h) for l, h in (off or {}).get("heads", [])]
        parts += [Part("attention", l) for l in (off or {}).get("attention", [])]
        parts += [Part("mlp", l) for l in (off or {}).get("mlp", [])]
        mean = means if (off or {}).get("mode") == "mean" else None
        names, _ = part_outputs(model, idx, parts, mean)
        expected, scale = attribution(model, idx, parts, mean)
        got = page.evaluate("([text, off]) => minigpt.attribution(text, off)", ["xavier", off])
        assert got["parts"] == names
        terms = torch.tensor(got["terms"], dtype=torch.float64).transpose(0, 1)  # [part, position, token]
        torch.testing.assert_close(terms, expected[:, 0], atol=1e-5, rtol=0)
        torch.testing.assert_close(torch.tensor(got["scales"], dtype=torch.float64), scale[0], atol=1e-7, rtol=0)
        logits = torch.tensor(
            page.evaluate("([text, off]) => minigpt.forward(text, off).logits", ["xavier", off]), dtype=torch.float64
        )
        torch.testing.assert_close(terms.sum(0), logits, atol=1e-9, rtol=0)
    assert page.watched.errors == []


def test_why_this_character_shows_the_likeliest_and_follows_a_choice(chromium, pages):
    ckpt, path = pages["default"]
    page = browser.open_page(chromium, path)
    browser.show(page, "#why")
    logits = page.evaluate("minigpt.forward('emma').logits")[-1]
    best = max(range(len(logits)), key=lambda t: logits[t])
    shown = page.evaluate("minigpt.whyShown()")
    assert shown["target"] == best and shown["rival"] != best
    values = [float(value.split(" ")[0].replace("−", "-")) for _, value in shown["toward"]]
    assert values == sorted(values, reverse=True) and len(values) == 1 + 5 * ckpt.config.model.n_layer
    assert sum(values) == pytest.approx(logits[best], abs=5e-3)  # each shown to three decimals
    assert "the logit of ‘" in page.text_content("#why-note")
    page.select_option("#why-rival", str(best - 1 if best else best + 1))
    assert page.evaluate("minigpt.whyShown()")["rival"] == (best - 1 if best else best + 1)
    browser.show(page, "#predict")
    bar = page.locator("#next-chart .next-bar").nth(3)
    token = bar.get_attribute("data-token")
    bar.click()
    clicked = len(ckpt.tokenizer.chars) if token == "·" else ckpt.tokenizer.chars.index(token)
    browser.wait_until(page, "target => minigpt.whyShown().target === target", clicked)  # drawn after the click
    assert page.evaluate("minigpt.whyShown()")["target"] == clicked
    page.evaluate("minigpt.setPart('head', 0, 1, false)")
    browser.show(page, "#why")
    assert "←" in page.text_content("#why-toward") and "every part on" in page.text_content("#why-note")
    assert page.watched.errors == []


@pytest.mark.parametrize("recipe", ["default", "makemore"])
def test_a_units_panel_lists_where_it_fires_and_what_it_writes_as_torch_does(chromium, pages, recipe):
    ckpt, path = pages[recipe]
    page = browser.open_page(chromium, path)
    browser.show(page, "#units")
    data = page.evaluate("JSON.parse(document.getElementById('minigpt-data').textContent).units")
    layer, unit = int(page.input_value("#unit-layer")), int(page.input_value("#unit-number"))
    marked = page.eval_on_selector_all(
        "#unit-firing li", "items => items.map(li => li.querySelector('.strip-text').textContent)"
    )
    assert marked == [data["prefixes"][p] for p in data["layers"][layer][unit]]
    got = torch.tensor(
        page.evaluate(
            """([l, unit]) => {
        const m = MiniGPTModel.load(JSON.parse(document.getElementById('minigpt-data').textContent));
        return Array.from(MiniGPTModel.readThrough(m, MiniGPTModel.unitColumn(m, l, unit))); }""",
            [layer, unit],
        ),
        dtype=torch.float64,
    )
    model = copy.deepcopy(ckpt.model).double()
    column = model.layers[layer].mlp.mlp_fc2.weight[:, unit]
    gain = model.final_norm.weight if model.final_norm is not None and model.final_norm.weight is not None else 1.0
    torch.testing.assert_close(got, (model.lm_head.weight @ (column * gain)).detach(), atol=1e-9, rtol=0)
    page.fill("#unit-number", "3")
    page.dispatch_event("#unit-number", "change")
    assert "unit #3 " in page.text_content("#unit-firing-note") and "column 3 of" in page.text_content("#unit-writes")
    assert page.watched.errors == []


def torch_patched(model, tokens_a, tokens_b, part):
    """A's logits with B's part at one position copied in, by forward hooks on the model's own modules."""
    kind, l, h, t = part["kind"], part["layer"], part.get("head", 0), part["position"]
    d = model.config.head_dim
    if kind == "residual":
        module = model.layers[l] if l < model.config.n_layer else (model.final_norm or model.lm_head)
    else:
        module = model.layers[l].attn.attn_wo if kind == "head" else model.layers[l].mlp
    kept = {}

    def keep(m, args, *out):
        value = out[0] if kind == "mlp" else args[0]
        kept["b"] = value[0, t, h * d : (h + 1) * d] if kind == "head" else value[0, t]

    def put(m, args, *out):
        value = (out[0] if kind == "mlp" else args[0]).clone()
        if kind == "head":
            value[0, t, h * d : (h + 1) * d] = kept["b"]
        else:
            value[0, t] = kept["b"]
        return value if kind == "mlp" else (value,)

    register = module.register_forward_hook if kind == "mlp" else module.register_forward_pre_hook
    with torch.no_grad():
        hook = register(keep)
        model(torch.tensor([tokens_b]))
        hook.remove()
        hook = register(put)
        logits, _ = model(torch.tensor([tokens_a]))
        hook.remove()
    return logits[0]


@pytest.mark.parametrize("recipe", RECIPES)
def test_copying_a_part_from_one_name_into_another_is_torchs(chromium, pages, recipe):
    ckpt, path = pages[recipe]
    page = browser.open_page(chromium, path)
    model = copy.deepcopy(ckpt.model).double()
    a, b = "emma", "xavi"
    tokens_a, tokens_b = ([ckpt.tokenizer.bos] + ckpt.tokenizer.encode(name) for name in (a, b))
    n = model.config.n_layer
    parts = [
        {"kind": "residual", "layer": 0, "position": 1},
        {"kind": "residual", "layer": n, "position": 4},
        {"kind": "residual", "layer": n - 1, "position": 2},
        {"kind": "head", "layer": 0, "head": 1, "position": 3},
        {"kind": "mlp", "layer": n - 1, "position": 4},
    ]
    plain = torch.tensor(page.evaluate("t => minigpt.forward(t).logits", a), dtype=torch.float64)
    for part in parts:
        got = torch.tensor(
            page.evaluate("([a, b, part]) => minigpt.patched(a, b, part)", [a, b, part]), dtype=torch.float64
        )
        torch.testing.assert_close(got, torch_patched(model, tokens_a, tokens_b, part), atol=1e-5, rtol=0)
        assert (got - plain).abs().max() > 1e-3  # the copy changed something
    grid = page.evaluate("([a, b]) => minigpt.patchGrid(a, b)", [a, b])["grid"]
    assert len(grid) == n + 1 and all(len(row) == 5 for row in grid)
    assert grid[0][0] == pytest.approx(0, abs=1e-9)  # the boundary token reads the same in both names
    assert grid[n][4] == pytest.approx(1, abs=1e-9)  # the whole last stream copied: the whole difference
    one_apart = page.evaluate("([a, b]) => minigpt.patchGrid(a, b)", ["emma", "amma"])["grid"]
    assert one_apart[0][1] == pytest.approx(1, abs=1e-9)  # the first character is all the two names differ in
    assert page.watched.errors == []


def test_the_second_name_panel_draws_the_grid_and_copies_a_part(chromium, pages):
    page = browser.open_page(chromium, pages["default"][1])
    browser.show(page, "#patch")
    assert page.input_value("#patch-input") == "amma"
    assert page.locator("#patch-grid .patch-cell").count() == 3 * 5  # entering both layers and leaving, at 5 positions
    assert page.locator("#patch-grid .patch-cell[tabindex='0']").count() == 1  # one Tab stop for the grid
    page.locator("#patch-grid .patch-cell").nth(1).click()  # entering layer 0, position 1
    assert "position 1 from “amma” into “emma”" in page.text_content("#patch-detail")
    page.keyboard.press("ArrowDown")
    assert page.evaluate("document.activeElement.getAttribute('aria-label')").startswith(
        "copy the residual stream entering layer 1 at position 1"
    )
    page.select_option("#patch-part", "head 0 2")
    assert "layer 0 head 2's output" in page.text_content("#patch-detail")
    page.fill("#patch-input", "")
    assert "Type a second name" in page.text_content("#patch-note")
    assert page.watched.errors == []


def test_the_learners_mends_switches_lens_walk_and_the_loss_out_of_sight(chromium, pages):
    """A switch says off when it is off; the microgpt recipe's lens says it has no final norm; the walk's
    softmax says why the predictions' bars differ under the filters; the loss is current out of sight."""
    page = browser.open_page(chromium, pages["default"][1])
    box = page.locator("input.part-switch[data-part='head,0,1']").first
    assert box.get_attribute("aria-label") == "layer 0 head 1: on"
    before = page.text_content("#loss")
    page.evaluate("minigpt.setPart('head', 0, 1, false)")  # the predictions panel is out of sight
    assert box.get_attribute("aria-label") == "layer 0 head 1: off"
    assert page.text_content("#loss") != before and "with 1 part off" in page.text_content("#loss")
    assert page.text_content("#lens-read") == "final norm, then lm_head"
    page.fill("#temperature", "0.5")
    browser.show(page, "#walk")
    assert "temperature 0.50" in page.text_content("#walk-steps")
    micro = browser.open_page(chromium, pages["microgpt"][1])
    assert "no final norm" in micro.text_content("#lens-read")
    assert page.watched.errors == [] and micro.watched.errors == []


def test_numbers_in_titles_are_written_out_too(chromium, pages):
    """A title reaches neither a keyboard nor a finger: under the filters, each prediction says the model's own
    probabilities beside the filtered bars; each row of the character picture writes its largest shares."""
    page = browser.open_page(chromium, pages["default"][1])
    page.fill("#name-input", "emma")
    browser.show(page, "#predict")
    # no filter: nothing changed, nothing said (after the first character: at position 0 a draw cannot end the name)
    assert not page.locator(".prediction .model").nth(1).is_visible()
    page.fill("#temperature", "0.5")
    page.dispatch_event("#temperature", "input")
    browser.show(page, "#predict")
    said = page.locator(".prediction .model").first.inner_text()
    model = torch.tensor(page.evaluate("minigpt.shown().logits[0]")).softmax(-1)  # the model's own, at position 0
    assert said.startswith("before the filters: ") and f"{model.max():.2f}" in said
    page.locator("button.head-card").nth(1).click()
    most = page.locator("#char-table td.most").all_inner_texts()
    assert most and all("%" in text for text in most)
    assert page.watched.errors == []


def test_the_advice_for_unreadable_text_follows_the_vocabulary(chromium, tmp_path):
    """A Greek vocabulary with accented letters reads "γιώργος" for "ΓΙΏΡΓΟΣ": lowercase is the advice,
    not dropping the accents; on the command line and on the page alike."""
    from minigpt.data import Tokenizer
    from minigpt.errors import UsageError
    from minigpt.files.names_file import refuse_unseen

    names = ["γιώργος", "μαρία", "ελένη", "νίκος", "δημήτρης", "κατερίνα", "σοφία", "ανδρέας"] * 4
    tokenizer = Tokenizer.from_names(names)
    with pytest.raises(UsageError, match='is lowercase: try "γιώργος"'):
        refuse_unseen("ΓΙΏΡΓΟΣ", tokenizer.unseen, "the name")
    with pytest.raises(UsageError, match='no accented letters: try "emile"'):
        refuse_unseen("Émile", Tokenizer(list("abcdefghijklmnopqrstuvwxyz")).unseen, "the name")
    data = tmp_path / "greek.txt"
    data.write_text("\n".join(names) + "\n", encoding="utf-8")
    config = load_config("tiny", ["train.steps=2", "train.eval_interval=2", "train.snapshots=0"])
    run_dir = train(config, data, out_dir=tmp_path / "run", quiet=True).run_dir
    page = browser.open_page(chromium, write_page(run_dir, tmp_path / "greek.html", text="ΓΙΏΡΓΟΣ"))
    assert "The vocabulary is lowercase: try “γιώργος”." in page.text_content("#notes")
    assert page.evaluate("getComputedStyle(document.getElementById('notes')).overflowWrap") == "anywhere"
    assert page.watched.errors == []


def test_the_weights_themselves_are_readable_and_the_hand_check_reaches_them(chromium, pages):
    """The head's rows of W_Q, W_K and W_V, a strip a row, read as torch holds them; the norm gains where the
    recipe has them; and every linear layer of the walk reads as its sum, down to its weights."""
    ckpt, path = pages["makemore"]
    page = browser.open_page(chromium, path)
    page.evaluate("minigpt.select(1, 2)")
    browser.show(page, "#flow")
    d = ckpt.config.model.n_embd // ckpt.config.model.n_head
    weights = {"W_Q": ckpt.model.layers[1].attn.attn_wq.weight, "W_V": ckpt.model.layers[1].attn.attn_wv.weight}
    for block, name in ((0, "W_Q"), (2, "W_V")):
        page.focus(f".flow-step.weights >> nth={block} >> .vec >> nth=0")
        page.keyboard.press("ArrowDown")  # the next row: number 2d + 1 of q (or v)
        page.keyboard.press("ArrowRight")
        shown = page.locator("#readout").inner_text()
        value = float(shown.split(" = ")[1].split()[0].replace("−", "-"))
        assert shown.startswith(f"{name}[{2 * d + 1}][1] = ") and value == pytest.approx(
            weights[name][2 * d + 1, 1].item(), abs=5e-5
        )
        assert "the row's" in shown and "terms add up to" in shown
        strip, box = page.locator(":focus").bounding_box(), page.locator("#readout").bounding_box()
        assert box["x"] >= strip["x"] + strip["width"]  # beside the rows, covering none of them
    page.focus(".flow-step.weights >> nth=3 >> .vec >> nth=1")  # attn_wo's column 2d + 1: head 2's number 1
    shown = page.locator("#readout").inner_text()
    value = float(shown.split(" = ")[1].split()[0].replace("−", "-"))
    assert shown.startswith(f"attn_wo[:, {2 * d + 1}][0] = ")
    assert value == pytest.approx(ckpt.model.layers[1].attn.attn_wo.weight[0, 2 * d + 1].item(), abs=5e-5)
    gains = page.locator("#flow-steps .flow-step", has_text="attn_norm's gains").locator(".vec")
    gains.focus()
    shown = page.locator("#readout").inner_text()
    assert shown.startswith("layer1.attn_norm gains[0] = ")
    value = float(shown.split(" = ")[1].split()[0].replace("−", "-"))
    assert value == pytest.approx(ckpt.model.layers[1].attn_norm.weight[0].item(), abs=5e-5)
    browser.show(page, "#walk")
    page.focus("#walk .walk-step[data-key='layer1.attn_wo'] .vec >> nth=0")
    assert "= Σⱼ layer1.heads[j]·layer1.attn_wo[0, j] over" in page.locator("#readout").inner_text()
    page.focus("#walk .walk-step[data-key='layer0.mlp_fc2'] .vec >> nth=0")
    assert "= Σⱼ layer0.gelu[j]·layer0.mlp_fc2[0, j] over" in page.locator("#readout").inner_text()
    browser.show(page, "#why")  # the row of lm_head every part is read through, and the final norm's gains
    target = int(page.eval_on_selector("#why-target", "s => s.value"))
    page.focus("#why-row .vec >> nth=0")
    page.keyboard.press("ArrowRight")
    shown = page.locator("#readout").inner_text()
    from minigpt.common.text import token_label

    mark = token_label(ckpt.tokenizer, target)
    assert shown.startswith(f"lm_head[“{mark}”][1] = ") and "terms add up to the logit" in shown
    value = float(shown.split(" = ")[1].split()[0].replace("−", "-"))
    assert value == pytest.approx(ckpt.model.lm_head.weight[target, 1].item(), abs=5e-5)
    page.focus("#why-row .vec >> nth=1")
    value = float(page.locator("#readout").inner_text().split(" = ")[1].split()[0].replace("−", "-"))
    assert value == pytest.approx(ckpt.model.final_norm.weight[0].item(), abs=5e-5)
    assert page.watched.errors == []


def test_the_pages_arithmetic_holds_at_every_vocabulary_the_trainer_accepts(chromium):
    """Past about 125,000 characters, a vocabulary-sized array spread into a call (Math.max(...p), append(...bars))
    exceeds the call stack: the page's softmax, argmax and bars take any length."""
    from minigpt.views.web_files import web_file

    page = chromium.new_page()
    page.set_content('<html><body><div id="bars"></div></body></html>')
    page.add_script_tag(content=web_file("model.js") + "\nwindow.MiniGPTModel = MiniGPTModel;")
    page.add_script_tag(content=web_file("paint.js") + "\nwindow.appendAll = Paint.appendAll;")
    found = page.evaluate("""() => {
        const V = 300000, logits = Array.from({ length: V }, (_, i) => Math.sin(i));
        const p = MiniGPTModel.softmax(logits), best = MiniGPTModel.argmax(p);
        appendAll(document.getElementById("bars"), Array.from({ length: V }, () => document.createElement("span")));
        return { sum: p.reduce((a, b) => a + b, 0), best, bars: document.getElementById("bars").children.length };
    }""")
    assert found["sum"] == pytest.approx(1.0) and found["bars"] == 300000
    assert found["best"] == max(range(300000), key=math.sin)
    page.close()


def test_a_page_past_its_vocabulary_bound_is_refused_before_it_is_measured(monkeypatch, tmp_path):
    from minigpt.errors import UsageError
    from minigpt.views import page_data

    run = train(load_config("tiny", ["train.steps=1"]), out_dir=tmp_path / "run", quiet=True)
    monkeypatch.setattr(page_data, "PAGE_VOCABULARY", 10)
    monkeypatch.setattr(page_data, "measured", lambda *args: pytest.fail("measured before the bound was checked"))
    with pytest.raises(UsageError, match="written for vocabularies of up to 10 characters, and this model has 26"):
        write_page(run.run_dir, tmp_path / "page.html")
    assert not (tmp_path / "page.html").exists()


@pytest.mark.parametrize("recipe", ["default", "makemore"])
def test_with_the_mask_off_the_page_computes_torchs_forward_without_it(chromium, pages, recipe):
    """The mask-off switch runs the model with every position reading every other: its logits are torch's
    forward with attention that is not causal, and its loss on the name falls or rises as torch's does."""
    import torch.nn.functional as F

    ckpt, path = pages[recipe]
    page = browser.open_page(chromium, path)
    model = ckpt.model.eval()
    seeing_all = [lambda q, k, v: F.scaled_dot_product_attention(q, k, v)] * model.config.n_layer
    for text in ["emma", "xavier"]:
        got = page.evaluate("([t, off]) => minigpt.forward(t, off)", [text, {"unmasked": True}])
        ids = torch.tensor([got["tokens"]])
        with torch.no_grad():
            logits = model(ids, attend=seeing_all)[0][0]
        torch.testing.assert_close(torch.tensor(got["logits"], dtype=torch.float64), logits.double(), atol=1e-4, rtol=0)
        weights = torch.tensor(got["attention"], dtype=torch.float64)
        assert torch.all(weights.triu(1).sum() > 0)  # weight on later positions: the future is read
        masked = page.evaluate("t => minigpt.forward(t).logits", text)
        assert not torch.allclose(torch.tensor(masked, dtype=torch.float64), logits.double(), atol=1e-3)
    page.check("#mask-off")
    assert "The causal mask is off" in page.text_content("#parts-off") and "mask=off" in page.evaluate("location.hash")
    assert page.watched.errors == []


def test_the_cache_panel_reads_a_name_as_torchs_cached_decode_does(chromium, pages):
    """The page reads a name a position at a time over its key/value cache: the cached keys and values are
    torch's KVCache after the same decode, and the panel says they equal the whole pass's."""
    from minigpt.attention import KVCache

    ckpt, path = pages["default"]
    page = browser.open_page(chromium, path)
    got = page.evaluate("t => minigpt.cache(t)", "xavier")
    model = ckpt.model.eval()
    cache = KVCache(model, 1)
    with torch.no_grad():
        for token in got["tokens"]:
            logits = model(torch.tensor([[token]]), positions=cache.next_positions(1), attend=cache.layers)[0]
    for l, layer in enumerate(cache.layers):
        keys = layer.k[: layer.length, 0].reshape(layer.length, -1)  # [T, n_embd]: the heads side by side
        values = layer.v[: layer.length, 0].reshape(layer.length, -1)
        torch.testing.assert_close(torch.tensor(got["keys"][l], dtype=torch.float64), keys.double(), atol=1e-5, rtol=0)
        torch.testing.assert_close(
            torch.tensor(got["values"][l], dtype=torch.float64), values.double(), atol=1e-5, rtol=0
        )
    torch.testing.assert_close(
        torch.tensor(got["logits"][-1], dtype=torch.float64), logits[0, -1].double(), atol=1e-4, rtol=0
    )
    page.fill("#name-input", "xavier")
    browser.show(page, "#cache")
    assert page.locator("#cache-table tbody tr:not([hidden])").count() == 7
    check = page.text_content("#cache-check")
    assert "fills the cache with 7 keys" in check and float(check.rsplit(" ", 1)[1].rstrip(".")) < 1e-12
    assert page.watched.errors == []
