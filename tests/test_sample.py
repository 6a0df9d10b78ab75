import re

import pytest
import torch
from typer.testing import CliRunner

from minigpt import generate
from minigpt.cli.main import app
from minigpt.errors import UsageError
from minigpt.formats.checkpoint import load_checkpoint
from minigpt.runs.new_names import sample
from minigpt.sampling import filter_logits


def test_same_seed_same_names(trained_run):
    ckpt = load_checkpoint(trained_run[0])
    a = generate(ckpt.model, ckpt.tokenizer, 20, seed=5)
    assert a == generate(ckpt.model, ckpt.tokenizer, 20, seed=5)
    assert a != generate(ckpt.model, ckpt.tokenizer, 20, seed=6)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_a_seed_gives_the_same_names_on_the_gpu_as_on_the_cpu(trained_run):
    """The random numbers are drawn on the CPU wherever the model runs (a run's own samples are on its device)."""
    ckpt = load_checkpoint(trained_run[0])
    on_cpu = generate(ckpt.model, ckpt.tokenizer, 50, seed=5)
    assert generate(ckpt.model.to("cuda"), ckpt.tokenizer, 50, seed=5) == on_cpu


def test_names_respect_prefix_vocabulary_and_block_size(trained_run):
    ckpt = load_checkpoint(trained_run[0])
    names = generate(ckpt.model, ckpt.tokenizer, 200, temperature=2.0, prefix="ma", seed=0)
    assert len(names) == 200
    assert all(n.startswith("ma") and len(n) <= ckpt.config.model.block_size for n in names)
    assert all(not ckpt.tokenizer.unseen(n) for n in names)
    assert all(n for n in generate(ckpt.model, ckpt.tokenizer, 200, temperature=3.0, seed=0))


def test_batches_do_not_change_the_count(trained_run):
    ckpt = load_checkpoint(trained_run[0])
    assert len(generate(ckpt.model, ckpt.tokenizer, 25, batch_size=7, seed=0)) == 25


def test_top_k_one_is_greedy(trained_run):
    ckpt = load_checkpoint(trained_run[0])
    names = generate(ckpt.model, ckpt.tokenizer, 5, top_k=1, seed=0)
    assert len(set(names)) == 1


@pytest.mark.parametrize("temperature", [1e-3, 1e-30, 5e-324, 1e-300])  # down to the smallest float64, a denormal
def test_a_temperature_near_zero_decodes_greedily(trained_run, temperature):
    ckpt = load_checkpoint(trained_run[0])
    greedy = generate(ckpt.model, ckpt.tokenizer, 3, top_k=1, seed=0)
    assert generate(ckpt.model, ckpt.tokenizer, 3, temperature=temperature, seed=4) == greedy
    logits = torch.tensor([[2.0, 1.0, -float("inf"), 2.0]])
    assert not torch.isnan(filter_logits(logits, temperature, None, 1.0)).any()  # a tie and a masked token: no nan


@pytest.mark.parametrize("seed", [-1, 2**63, 10**20])
def test_a_seed_outside_torchs_range_is_a_usage_error(trained_run, seed):
    from typer.testing import CliRunner

    from minigpt.cli.main import app

    result = CliRunner().invoke(app, ["sample", str(trained_run[0]), "--seed", str(seed)])
    assert result.exit_code == 2 and "--seed must be" in result.stderr and "9,223,372,036,854,775,807" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    result = CliRunner().invoke(app, ["train", "--config", "tiny", "--set", f"train.seed={seed}", "--out", "unused"])
    assert result.exit_code == 2 and "train.seed must be a whole number from 0 to" in result.stderr


def test_filter_logits_top_k_and_top_p():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    assert torch.isinf(filter_logits(logits, 1.0, 2, 1.0)).tolist() == [[False, False, True, True]]
    # 0.5 + 0.3 reaches 0.8: the third token is not needed
    assert torch.isinf(filter_logits(logits, 1.0, 0, 0.8)).tolist() == [[False, False, True, True]]
    assert torch.isinf(filter_logits(logits, 1.0, 0, 0.81)).tolist() == [[False, False, False, True]]
    assert torch.isinf(filter_logits(logits, 1.0, 0, 0.1)).tolist() == [[False, True, True, True]]


def test_new_only_drops_training_names(trained_run):
    ckpt = load_checkpoint(trained_run[0])
    names = sample(ckpt, 30, new_only=True, seed=1, temperature=0.8)
    assert len(names) == 30 and not set(names) & set(ckpt.train_names)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"temperature": -0.5}, "temperature"),
        ({"top_p": 1.5}, "top-p"),
        ({"top_p": 0}, "top-p"),
        ({"top_k": -1}, "top-k"),
        ({"num": 0}, "num"),
        ({"prefix": "q" * 16}, "block size"),
        ({"prefix": "z9"}, "'9'"),
    ],
)
def test_bad_sampling_options(trained_run, options, message):
    ckpt = load_checkpoint(trained_run[0])
    options = {"num": 3, **options}
    with pytest.raises(UsageError, match=message):
        generate(ckpt.model, ckpt.tokenizer, **options)


def test_cached_and_recomputed_decoding_give_the_same_names(trained_run):
    ckpt = load_checkpoint(trained_run[0])
    for prefix in ("", "ma"):
        cached = generate(ckpt.model, ckpt.tokenizer, 50, temperature=1.5, prefix=prefix, seed=3)
        assert cached == generate(
            ckpt.model, ckpt.tokenizer, 50, temperature=1.5, prefix=prefix, seed=3, use_cache=False
        )


def test_prompt_runs_once_and_ended_names_stop_being_computed(trained_run):
    ckpt = load_checkpoint(trained_run[0])
    rows_fed = []
    hook = ckpt.model.register_forward_pre_hook(lambda module, args: rows_fed.append(args[0].size(0)))
    names = generate(ckpt.model, ckpt.tokenizer, 300, temperature=0.8, seed=0)
    hook.remove()
    assert rows_fed[0] == 1  # the shared prompt, once
    # decoding pass i feeds the i-th character of every name still going, plus fewer ended ones than that
    for i, rows in enumerate(rows_fed[1:], start=1):
        going = sum(len(name) >= i for name in names)
        assert going <= rows < 2 * going
    assert len(rows_fed) == max(map(len, names)) + (max(map(len, names)) < ckpt.config.model.block_size)


def test_a_closed_pipe_ends_sample_quietly(trained_run):
    import subprocess
    import sys

    process = subprocess.Popen(
        [sys.executable, "-m", "minigpt", "sample", str(trained_run[0]), "-n", "100000", "--seed", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout.readline().strip()  # `| head -1`: one name read, then the pipe is closed
    process.stdout.close()
    assert process.wait(timeout=120) == 141 and process.stderr.read() == b""


def test_a_name_cut_at_the_block_size_is_marked_and_never_counted_as_new(trained_run):
    import json

    from typer.testing import CliRunner

    from minigpt.cli.main import app
    from minigpt.common.text import CUT, is_cut

    run = str(trained_run[0])
    block = load_checkpoint(trained_run[0]).config.model.block_size
    wild = ["sample", run, "-n", "300", "--seed", "1", "-t", "3"]  # hot enough that some names never end
    printed = CliRunner().invoke(app, wild)
    cut = [line for line in printed.stdout.splitlines() if line.endswith(CUT)]
    assert cut and all(len(line) == block + 1 for line in cut)
    assert f"{len(cut)} filled the model's {block} positions" in printed.stderr
    new = int(printed.stderr.split(" of ")[0])
    assert new <= 300 - len(cut)
    found = json.loads(CliRunner().invoke(app, [*wild, "--json"]).stdout)["names"]
    assert [n["name"] for n in found if n["cut"]] == [line[:-1] for line in cut]
    assert all(is_cut(n["name"], block) == n["cut"] for n in found)
    fresh = CliRunner().invoke(app, [*wild, "--new-only"]).stdout.splitlines()
    assert len(fresh) == 300 and not any(line.endswith(CUT) for line in fresh)


def test_training_marks_cut_samples_in_its_table_samples_txt_and_summary(tmp_path, capsys):
    """A model whose block size is shorter than its names: the samples it shows while training and at the
    end are marked cut, and the summary counts none of them as new."""
    from minigpt.common.text import CUT
    from minigpt.formats.recipes import load_config
    from minigpt.runs.run import train
    from minigpt.views.training_display import TrainingDisplay

    names = tmp_path / "long.txt"
    names.write_text("\n".join(["stow-on-the-wold", "bourton-on-the-water", "chipping-campden"] * 40) + "\n")
    config = load_config(
        "tiny", ["model.block_size=6", "train.auto_scale=false", "train.steps=4", "train.eval_interval=4"]
    )
    result = train(config, names, out_dir=tmp_path / "run", report=TrainingDisplay(tmp_path / "run"), quiet=True)
    cut = [name for name, _ in result.samples if len(name) >= 6]
    assert cut and result.cut_samples == len(cut) and result.new_samples == len(result.samples) - len(cut)
    assert result.to_json()["cut_samples"] == len(cut)
    written = (tmp_path / "run" / "samples.txt").read_text().splitlines()[-1].split("\t")[1:]
    assert sum(name.endswith(CUT) for name in written) == sum(len(name.rstrip(CUT)) >= 6 for name in written) > 0
    shown = capsys.readouterr().err
    assert " cut " in shown or "cut\n" in shown
    assert f"{len(cut)} reached the block size (6) before they ended: cut, marked {CUT}" in " ".join(
        shown.replace("│", " ").split()
    )


@pytest.mark.parametrize(
    "option, says",
    [
        (["-t", "inf"], "--temperature must be a finite number, got inf"),
        (["-t", "nan"], "--temperature must be a finite number, got nan"),
        (["--top-p", "1e-50"], "--top-p must be in (0, 1], got 1e-50, which is 0 as the float32"),
        (["--top-p", "nan"], "--top-p must be a finite number, got nan"),
    ],
)
def test_floats_at_their_edges_are_refused_in_the_precision_they_are_used_in(trained_run, option, says):
    result = CliRunner().invoke(app, ["sample", str(trained_run[0]), "-n", "3", *option])
    assert result.exit_code == 2 and says in result.stderr and len(result.stderr.splitlines()) == 1


def test_negative_zero_and_the_smallest_top_p_sample_as_zero_and_greedy_do(trained_run):
    """-0.0 is 0 (greedy), not a division that flips every sign; a top-p that float32 still holds keeps the
    likeliest."""
    greedy = CliRunner().invoke(app, ["sample", str(trained_run[0]), "-n", "3", "-t", "0", "--seed", "1"]).stdout
    assert (
        CliRunner().invoke(app, ["sample", str(trained_run[0]), "-n", "3", "-t", "-0.0", "--seed", "1"]).stdout
        == greedy
    )
    assert (
        CliRunner().invoke(app, ["sample", str(trained_run[0]), "-n", "3", "--top-p", "1e-40", "--seed", "1"]).stdout
        == greedy
    )


def test_a_recipes_floats_are_checked_as_float32_and_shortcuts_by_their_own_names(tmp_path):
    from minigpt.errors import UsageError
    from minigpt.formats.recipes import load_config

    for setting, says in [
        ("train.lr=1e-50", "train.lr must be positive, got 1e-50, which is 0"),
        ("train.lr=1e300", "train.lr must be a finite number, got 1e+300, which is inf"),
        ("sample.top_p=1e-50", "sample.top_p must be in (0, 1]"),
    ]:
        with pytest.raises(UsageError, match=re.escape(says)):
            load_config("tiny", [setting])
    result = CliRunner().invoke(app, ["train", "-c", "tiny", "--lr", "inf", "--out", str(tmp_path / "r")])
    assert result.exit_code == 2 and result.stderr == "minigpt: error: --lr must be a finite number, got inf\n"


@pytest.mark.parametrize("json_out", [False, True])
def test_sample_prints_names_as_they_are_made(trained_run, monkeypatch, json_out):
    """Each batch is printed (and flushed) before the next is drawn: a million names start at once, and
    `--json` holds no list of them either."""
    import json
    import sys

    from minigpt.runs import new_names

    seen_before_the_second = []

    def two_batches(*args, **kwargs):
        yield ["anna", "bo"]
        seen_before_the_second.append(sys.stdout.buffer.getvalue().decode())
        yield ["cy"]

    monkeypatch.setattr(new_names, "sample_batches", two_batches)
    result = CliRunner().invoke(app, ["sample", str(trained_run[0]), "-n", "3", *(["--json"] if json_out else [])])
    assert result.exit_code == 0
    if json_out:
        assert [n["name"] for n in json.loads(result.stdout)["names"]] == ["anna", "bo", "cy"]
        assert '"anna"' in seen_before_the_second[0] and '"bo"' in seen_before_the_second[0]
    else:
        assert result.stdout.split() == ["anna", "bo", "cy"] and seen_before_the_second == ["anna\nbo\n"]


def test_a_vocabulary_of_a_million_bounds_what_is_computed_at_once():
    from minigpt.data import LOGITS_AT_ONCE, rows_at_once

    assert rows_at_once(256, 16, 27) == 256 and rows_at_once(2048, 1, 27) == 2048  # names: as before
    assert rows_at_once(256, 16, 1_000_001) == 1  # a name at a time, never none
    assert rows_at_once(2048, 1, 200_001) * 200_001 <= LOGITS_AT_ONCE


def test_the_advice_for_more_new_names_fits_the_options():
    from minigpt.runs.new_names import what_to_try

    assert "raise --top-k" in what_to_try({"top_k": 1, "temperature": 1.0, "top_p": 1.0})
    assert "raise --top-k" in what_to_try({"top_k": 0, "temperature": 0, "top_p": 1.0})
    assert "--top-p" in what_to_try({"top_k": 0, "temperature": 1.0, "top_p": 0.5})
    assert what_to_try({"top_k": 0, "temperature": 0.8, "top_p": 1.0}) == "try a higher temperature"
