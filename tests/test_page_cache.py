"""The explorer page's measurements are kept between writes, and never used when anything they came from changed."""

import json
import re

import pytest
import torch

from minigpt.formats.checkpoint import load_checkpoint
from minigpt.views import explorer_page, page_cache, page_data


def carried(path):
    text = path.read_text(encoding="utf-8")
    return json.loads(
        re.search(r'<script type="application/json" id="minigpt-data">(.*?)</script>', text, re.S).group(1)
    )


def test_a_second_page_of_the_same_run_measures_nothing_and_says_the_same(trained_run, tmp_path, monkeypatch):
    monkeypatch.setenv("MINIGPT_CACHE_DIR", str(tmp_path / "cache"))
    run_dir, _ = trained_run
    first = explorer_page.write_page(run_dir, tmp_path / "first.html", text="emma")
    assert len(list((tmp_path / "cache").glob("*.json"))) == 1

    def measuring(*args, **kwargs):
        raise AssertionError("measured again")

    with monkeypatch.context() as m:
        m.setattr(page_data, "snapshots_data", measuring)
        m.setattr(page_data, "ablation", measuring)
        second = explorer_page.write_page(run_dir, tmp_path / "second.html", text="anna")
    a, b = carried(first), carried(second)
    assert (a.pop("start_text"), b.pop("start_text")) == ("emma", "anna")
    assert (a.pop("torch_check")["text"], b.pop("torch_check")["text"]) == ("emma", "anna")  # torch's, fresh
    assert a == b


def test_a_changed_model_or_a_broken_cache_file_is_measured_again(trained_run, tmp_path, monkeypatch):
    monkeypatch.setenv("MINIGPT_CACHE_DIR", str(tmp_path / "cache"))
    run_dir, _ = trained_run
    ckpt = load_checkpoint(run_dir)
    before = page_data.measured(ckpt)
    calls = []
    real = page_data.ablation
    monkeypatch.setattr(page_data, "ablation", lambda *a: calls.append(1) or real(*a))
    with torch.no_grad():
        ckpt.model.lm_head.weight[0, 0] += 1.0  # one weight changed in memory, as a notebook might
    changed = page_data.measured(ckpt)
    assert calls == [1] and changed["ablation"] != before["ablation"]
    for path in (tmp_path / "cache").glob("*.json"):
        path.write_text("{not json")
    assert page_data.measured(ckpt) == changed and calls == [1, 1]  # measured again, no error
    assert page_cache.read_cached("0" * 64, page_data.MEASURED) is None


WHOLE = {"roles": {}, "ablation": {}, "units": {}, "snapshots": None, "mask_off": None}  # the shape of a whole entry


def test_the_cache_keeps_a_bounded_number_of_pages_and_removes_only_its_own(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIGPT_CACHE_DIR", str(tmp_path))
    (tmp_path / "notes.json").write_text("mine")  # the user's own file, a folder and a dangling link: all stay
    (tmp_path / "x.json").mkdir()
    (tmp_path / "y.json").symlink_to(tmp_path / "gone")
    for n in range(page_cache.KEPT + 3):
        page_cache.write_cached(f"{n:064x}", {**WHOLE, "roles": {"n": n}})
    assert len(list(tmp_path.glob("[0-9a-f]" * 64 + ".json"))) == page_cache.KEPT
    assert page_cache.read_cached(f"{page_cache.KEPT + 2:064x}", page_data.MEASURED)["roles"] == {
        "n": page_cache.KEPT + 2
    }
    assert (
        (tmp_path / "notes.json").read_text() == "mine"
        and (tmp_path / "x.json").is_dir()
        and (tmp_path / "y.json").is_symlink()
    )


@pytest.mark.parametrize(
    "damaged", ["{}", "null", "[" * 100_000, '{"roles": [], "ablation": {}, "units": {}, "snapshots": null}']
)
def test_a_damaged_or_replaced_entry_is_measured_again(trained_run, tmp_path, monkeypatch, damaged):
    monkeypatch.setenv("MINIGPT_CACHE_DIR", str(tmp_path / "cache"))
    ckpt = load_checkpoint(trained_run[0])
    first = page_data.measured(ckpt, snapshots=False)
    for entry in (tmp_path / "cache").glob("*.json"):
        entry.write_text(damaged)
    assert page_data.measured(ckpt, snapshots=False) == first


@pytest.mark.parametrize("unwritable", ["a file where the folder would be"])
def test_an_unwritable_cache_is_no_error(trained_run, tmp_path, monkeypatch, unwritable):
    blocker = tmp_path / "cache"
    blocker.write_text(unwritable)
    monkeypatch.setenv("MINIGPT_CACHE_DIR", str(blocker))
    run_dir, _ = trained_run
    assert explorer_page.write_page(run_dir, tmp_path / "page.html").is_file()
