"""minigpt in a notebook: the tutorial runs top to bottom on a real kernel, and the explorer it shows
inline runs in a browser exactly as torch does, asking nothing of the network."""

import html
import re
from pathlib import Path

import browser
import pytest
import torch

from minigpt.formats.checkpoint import load_checkpoint
from minigpt.views.attention_maps import forward_with_weights

REPO = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.xdist_group("notebook")  # one worker runs the tutorial, once


@pytest.fixture(scope="module")
def tutorial(tmp_path_factory):
    """The tutorial, run as a front end runs it: a kernel (ipykernel), the cells in order, outputs kept."""
    nbformat = pytest.importorskip("nbformat")
    from nbclient import NotebookClient

    folder = tmp_path_factory.mktemp("tutorial")
    notebook = nbformat.read(REPO / "examples" / "tutorial.ipynb", as_version=4)
    assert all(
        not cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code"
    )  # stripped in the repository
    NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(folder)}}
    ).execute()
    return notebook, folder


def outputs(notebook, mime):
    return [
        out["data"][mime]
        for cell in notebook.cells
        if cell.cell_type == "code"
        for out in cell.outputs
        if mime in out.get("data", {})
    ]


def test_the_tutorial_runs_and_shows_names_the_explorer_and_a_picture(tutorial):
    notebook, folder = tutorial
    errors = [
        out for cell in notebook.cells if cell.cell_type == "code" for out in cell.outputs if out.output_type == "error"
    ]
    assert errors == []
    printed = "".join(
        out.get("text", "") for cell in notebook.cells if cell.cell_type == "code" for out in cell.outputs
    )
    assert "1000 steps, validation loss" in printed and "loss with every part on" in printed
    assert "\x1b[" not in printed  # no terminal escape codes in a notebook's text
    plain = outputs(notebook, "text/plain")
    assert any("minigpt train" in text for text in plain)  # the start panel, as text and as HTML
    assert not any("\x1b[" in text for text in plain)  # and its text/plain part is plain too
    frames = [h for h in outputs(notebook, "text/html") if 'class="minigpt-explorer"' in h]
    assert len(frames) == 1 and frames[0].startswith("<iframe")
    assert outputs(notebook, "image/png")  # the attention grid, as a picture
    assert (folder / "tutorial.html").is_file() and (folder / "runs" / "tutorial" / "best.pt").is_file()


def test_the_inline_explorer_runs_as_torch_does_and_asks_nothing_of_the_network(chromium, tutorial, tmp_path):
    notebook, folder = tutorial
    [frame] = [h for h in outputs(notebook, "text/html") if 'class="minigpt-explorer"' in h]
    cell = tmp_path / "cell.html"  # the output as a front end puts it in the page: the iframe and its srcdoc
    cell.write_text(f"<!doctype html><html><body>{frame}{frame}</body></html>", encoding="utf-8")
    page = browser.open_page(chromium, cell)
    inner = [f for f in page.frames if f.url == "about:srcdoc"]
    assert len(inner) == 2  # two explorers on one page, each its own document
    browser.wait_until(inner[0], "window.minigpt !== undefined")
    ckpt = load_checkpoint(folder / "runs" / "tutorial")
    tokens = [ckpt.tokenizer.bos] + ckpt.tokenizer.encode("xavier")
    logits, _ = forward_with_weights(ckpt.model, torch.tensor([tokens]))
    shown = inner[0].evaluate("minigpt.forward('xavier').logits")
    torch.testing.assert_close(torch.tensor(shown, dtype=torch.float64), logits[0].double(), atol=1e-4, rtol=0)
    inner[1].evaluate("minigpt.setText('zoe')")  # typing in one explorer leaves the other as it was
    assert (
        inner[0].evaluate("minigpt.shown().tokens.length") == 5
        and inner[1].evaluate("minigpt.shown().tokens.length") == 4
    )
    # each frame is as tall as its page: no scroll bar inside it
    # (the frame follows its page after a redraw, at the next frame: waited for, not read at once)
    browser.wait_until(
        page,
        "[...document.querySelectorAll('iframe')]"
        ".every(f => f.contentDocument.documentElement.scrollHeight <= f.clientHeight + 2)",
        timeout=10_000,
    )
    assert page.watched.requests == [cell.resolve().as_uri()] and page.watched.errors == []
    assert html.unescape(re.search(r'srcdoc="(.*?)"', frame, re.S).group(1)).startswith("<!doctype html>")


def test_explore_says_what_is_wrong_in_one_line_and_how_to_keep_the_page(trained_run, tmp_path):
    from minigpt import explore
    from minigpt.errors import UsageError

    corrupt = tmp_path / "model.pt"
    corrupt.write_bytes(b"\x00\x01not a checkpoint\x00")  # no kind minigpt knows: torch says why it cannot be read
    for where, message in [(tmp_path / "missing", "checkpoint not found"), (corrupt, "cannot be read as a checkpoint")]:
        with pytest.raises(UsageError, match=message) as caught:
            explore(where)
        assert len(str(caught.value).splitlines()) == 1
    explorer = explore(trained_run[0], text="Émile", snapshots=False)  # a name it cannot read: it starts on one it can
    assert ".save('page.html')" in repr(explorer) and "MB" in repr(explorer)
    saved = explorer.save(tmp_path / "page.html")
    assert saved.read_text(encoding="utf-8") == explorer.page and '"snapshots":null' in explorer.page
    with pytest.raises(UsageError, match="already exists"):
        explorer.save(saved)


def test_explore_checks_its_arguments_and_takes_the_free_cores_as_the_commands_do(trained_run, monkeypatch):
    import os

    from minigpt import explore
    from minigpt.errors import UsageError

    for wrong in ({"text": 5}, {"text": b"emma"}, {"text": ["emma"]}, {"snapshots": "no"}):
        with pytest.raises(UsageError, match="explore's"):
            explore(trained_run[0], **wrong)
    if (os.cpu_count() or 1) < 2:
        pytest.skip("one core: nothing to choose")
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)  # the suite sets it; a notebook has none
    monkeypatch.setattr("minigpt.machine.threads.busy_cores", lambda seconds: os.cpu_count() - 1.0)  # one core free
    torch.set_num_threads(2)
    try:
        explore(trained_run[0], snapshots=False)
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(1)
