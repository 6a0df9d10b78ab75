"""The commands as a user runs them: exit codes, stdout, and one-line errors without tracebacks."""

import functools
import json
import os
import re
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from minigpt.cli.main import app

runner = CliRunner()


def run(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_train_sample_eval_end_to_end(names_file, tmp_path):
    out = tmp_path / "run"
    result = run("train", "-c", "tiny", "--data", names_file, "--out", out, "--steps", 20, "--quiet", "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["steps"] == 20 and summary["tokens_per_sec"] > 0 and summary["val_loss"] > 0

    result = run("sample", out, "-n", 7, "--seed", 1, "--device", "cpu")
    assert result.exit_code == 0 and len(result.stdout.splitlines()) == 7

    result = run("eval", out / "last.pt", "--data", names_file, "--json")
    assert result.exit_code == 0
    report = json.loads(result.stdout)
    assert (
        set(report) == {"loss", "tokens", "names", "block_size", "scored", "cut", "unscored_tokens"}
        and report["names"] == 300
    )


def test_sample_json_and_marks(trained_run):
    run_dir, _ = trained_run
    result = run("sample", run_dir, "-n", 50, "--seed", 3, "--json", "-t", "0.5")
    names = json.loads(result.stdout)["names"]
    assert len(names) == 50 and all(isinstance(n["in_training_data"], bool) for n in names)
    marked = run("sample", run_dir, "-n", 50, "--seed", 3, "--mark", "-t", "0.5").stdout.splitlines()
    assert [m.removesuffix(" *") for m in marked] == [n["name"] for n in names]
    assert [m.endswith(" *") for m in marked] == [n["in_training_data"] for n in names]


@pytest.mark.parametrize(
    "args, message",
    [
        (["train", "--data", "{tmp}/missing.txt"], "names file not found"),
        (["train", "--data", "{empty}"], "no names"),
        (["train", "--set", "model.wat=1"], "unknown key 'model.wat'"),
        (["train", "--config", "{tmp}/nope.toml"], "config file not found"),
        (["sample", "{tmp}/missing.pt"], "checkpoint not found"),
        (["sample", "{tmp}"], "no checkpoint in directory"),
        (["sample", "{empty}"], "not a minigpt checkpoint|cannot be read|is empty"),
        (["sample", "{run}", "--temperature", "-1"], "temperature"),
        (["sample", "{run}", "--prefix", "Q"], "never saw: 'Q'"),
        (["eval", "{run}", "--data", "{empty}"], "no names"),
        (
            ["inspect-attention", "{run}", "--name", "emma"],
            "NAME is an argument, given by its place: [a-z]+ inspect-attention CHECKPOINT NAME",
        ),
        (["sample", "--checkpoint", "{run}"], "CHECKPOINT is an argument"),
        (["inspect-attention", "{run}", "--layr", "1"], "No such option: --layr \\(Possible options: --layer\\)"),
        # where a newcomer went wrong: the option, the section, the run to train first
        (["train", "names.txt"], "a file is given by its option here, [a-z]+ train --data names.txt"),
        (["train", "--set", "dropout=0.1"], "did you mean model.dropout=0.1\\?"),
        (["sample", "{tmp}/nothing"], "train one there with minigpt train --out .*nothing"),
        # what a hostile tester found: a recipe nested 50,000 deep, a window of 10^8 batches, a cut checkpoint
        (["train", "--config", "{deep}"], "nest deeper than Python reads"),
        (
            ["train", "--set", "train.length_window=100000000", "--steps", "1", "--out", "{tmp}/w"],
            "groups .* names a window, more than the .* training names can use: at most",
        ),
        (["sample", "{cut}"], "cannot be read as a checkpoint: the file is cut short or damaged \\(a copy"),
    ],
)
def test_bad_input_is_one_line_exit_2(args, message, tmp_path, trained_run):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    deep = tmp_path / "deep.toml"
    deep.write_text("a = " + "[" * 50_000 + "]" * 50_000 + "\n")
    cut = tmp_path / "cut.pt"
    whole = (trained_run[0] / "last.pt").read_bytes()
    cut.write_bytes(whole[: len(whole) // 2])
    fill = {"tmp": tmp_path, "empty": empty, "run": trained_run[0], "deep": deep, "cut": cut}
    result = run(*[a.format(**fill) for a in args])
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("minigpt: error:")
    assert __import__("re").search(message, lines[0]), lines[0]
    assert "Errno" not in lines[0]  # the tool's words, not the operating system's


def test_real_process_prints_no_traceback(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "minigpt", "sample", str(tmp_path / "missing.pt")], capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip() == f"minigpt: error: checkpoint not found: {tmp_path / 'missing.pt'}"


def test_help_and_version():
    assert run("--help").exit_code == 0
    result = run("--version")
    assert result.exit_code == 0 and result.stdout.startswith("minigpt ")


@functools.cache
def click_group():
    import typer

    return typer.main.get_command(app)  # built once: typer builds the whole command tree each call


def every_command() -> list[list[str]]:
    return [[]] + [[name] for name in click_group().commands]


def options_of(command: list[str]):
    group = click_group()
    return (group.commands[command[0]] if command else group).params


@pytest.mark.parametrize("command", every_command())
def test_help_reads_cleanly(command):
    """No text lost to markup (a bracket read as a style leaves "file ."), no type on a flag or a
    Python type on a list, no braces."""
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    text = result.stdout
    assert not re.search(r"\w \.(\s|$)|\w ,", text), text  # a space before punctuation: something was dropped
    assert "[]" not in text and "{" not in text and "}" not in text
    assert "<bool>" not in text and "list[" not in text, text
    assert "[default:" in CliRunner().invoke(app, ["train", "--help"], env={"COLUMNS": "200"}).stdout


def test_every_mend_of_typer_and_rich_found_its_hook():
    """cli/typer_patches.py's mends are each one function that finds its hook or changes nothing: with the
    typer and rich installed here, every hook is there (a new typer that drops one shows here, not as
    help text that quietly reads wrong)."""
    from minigpt.cli.app import PATCHED

    assert PATCHED and all(PATCHED.values()), PATCHED


def type_name(param) -> str:
    return param.bare_type() if hasattr(param, "bare_type") else param.type.name  # typer 0.2x, or click's


def usage_mistakes():
    """For every command: an option it does not have, a missing argument, and each number option given a word."""
    for command in every_command():
        yield [*command, "--no-such-option"]
        params = options_of(command)
        if any(p.param_type_name == "argument" and p.required for p in params):
            yield command
        for p in params:
            if p.param_type_name == "option" and type_name(p) in ("integer", "float", "int"):
                yield [
                    *command,
                    *(["x"] if any(q.param_type_name == "argument" for q in params) else []),
                    p.opts[0],
                    "many",
                ]
            if p.param_type_name == "option" and not p.is_flag and p.opts[0] not in ("--help",):
                yield [*command, p.opts[0]]  # the option's value left out


@pytest.mark.parametrize("args", list(usage_mistakes()), ids=" ".join)
def test_every_usage_mistake_is_one_line_and_exit_2(args):
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, (args, result.output)
    assert result.stdout == "" and len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith("minigpt: error: ") and "╭" not in result.stderr


def test_json_means_print_json_in_every_command_and_the_old_spelling_still_writes_a_file(
    trained_run, tmp_path, monkeypatch, capsys
):
    from minigpt.cli.main import main

    run_dir = str(trained_run[0])
    printed = CliRunner().invoke(app, ["inspect-attention", run_dir, "ab", "--json"])
    assert printed.exit_code == 0 and json.loads(printed.stdout)["tokens"] == ["·", "a", "b"]
    monkeypatch.setattr(
        sys, "argv", ["minigpt", "inspect-attention", run_dir, "ab", "--json", str(tmp_path / "a.json")]
    )
    with pytest.raises(SystemExit) as ended:
        main()
    assert ended.value.code in (0, None) and json.loads((tmp_path / "a.json").read_text())["tokens"][0] == "·"
    assert f"--json {tmp_path / 'a.json'} is now --json-file" in capsys.readouterr().err


def test_without_matplotlib_training_says_once_how_to_get_loss_png(names_file, tmp_path, monkeypatch):
    monkeypatch.setattr("minigpt.views.panels.has_matplotlib", lambda: False)
    result = runner.invoke(
        app, ["train", "--config", "tiny", "--data", str(names_file), "--out", str(tmp_path / "run"), "--steps", "5"]
    )
    assert result.exit_code == 0, result.output
    flowing = re.sub(r"[\s│]+", " ", result.stderr)  # the panel's lines joined again
    assert flowing.count("pip install 'minigpt-names[plot]'") == 1


def test_eval_scores_the_runs_validation_names_by_default_and_says_which(trained_run):
    result = runner.invoke(app, ["eval", str(trained_run[0])])
    assert result.exit_code == 0 and result.stdout.strip().endswith("names (the run's validation names), block size 16")
    scored = json.loads(runner.invoke(app, ["eval", str(trained_run[0]), "--json"]).stdout)
    whole = json.loads(
        runner.invoke(app, ["eval", str(trained_run[0]), "--data", str(trained_run[1]), "--json"]).stdout
    )
    assert scored["scored"] == "the run's validation names" and whole["scored"].startswith("names file ")
    assert scored["names"] < whole["names"]  # the held-out names alone, not the whole file
    assert scored["block_size"] == 16 and scored["cut"] == scored["unscored_tokens"] == 0


def test_eval_says_how_many_tokens_a_short_block_size_left_unscored(trained_run, tmp_path):
    """Two losses compare only over the same tokens: names cut to fit the block size are counted and said."""
    names = tmp_path / "long.txt"
    names.write_text("anna\n" + "b" * 30 + "\n")  # 31 tokens, of which 16 are scored at block size 16
    scored = json.loads(runner.invoke(app, ["eval", str(trained_run[0]), "--data", str(names), "--json"]).stdout)
    assert scored["cut"] == 1 and scored["tokens"] == 5 + 16 and scored["unscored_tokens"] == 31 - 16
    said = runner.invoke(app, ["eval", str(trained_run[0]), "--data", str(names)])
    assert "1 name longer than the block size was cut to fit, and 15 tokens of theirs not scored" in said.stderr


def test_inspect_attentions_rough_edges(trained_run, tmp_path, monkeypatch):
    import shutil

    monkeypatch.chdir(tmp_path)
    shutil.copy(trained_run[0] / "best.pt", tmp_path / "imported.pt")  # a checkpoint alone in a folder, no snapshots
    cases = [
        (["imported.pt", "emma", "--step", "10"], "imported.pt has no training snapshots"),
        (
            [str(trained_run[0]), "emma", "--step", "-5"],
            "--step -5 is outside the run's snapshots: give a step from 0 to",
        ),
        ([str(trained_run[0]), "emma", "--lens", "--png", "grid.png"], "--lens and --png cannot go together"),
    ]
    for args, message in cases:
        result = runner.invoke(app, ["inspect-attention", *args])
        assert result.exit_code == 2 and message in result.stderr, (args, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1
    help_text = runner.invoke(app, ["inspect-attention", "--help"], terminal_width=200).stdout
    assert "--json-file or --html file" in help_text and "[default: auto]" in help_text


def test_an_export_given_as_a_checkpoint_names_its_format_and_the_import(trained_run, tmp_path):
    run_dir = trained_run[0]
    assert runner.invoke(app, ["export", str(run_dir), str(tmp_path / "hf"), "--format", "safetensors"]).exit_code == 0
    (tmp_path / "model.json").write_text('{"hyperparameters": {}, "uchars": [], "state_dict": {}}')  # microgpt's shape
    for given, what in [
        (tmp_path / "model.json", "microgpt's JSON"),
        (tmp_path / "hf", "a safetensors export"),
        (tmp_path / "hf" / "model.safetensors", "a safetensors file"),
    ]:
        result = runner.invoke(app, ["sample", str(given)])
        assert result.exit_code == 2 and what in result.stderr and "minigpt import" in result.stderr, result.stderr
    for wrong in ("back.json", "back.txt", "back.safetensors"):  # a checkpoint under another kind's name: refused
        named = runner.invoke(app, ["import", str(tmp_path / "hf"), str(tmp_path / wrong)])
        assert named.exit_code == 2 and "name it .pt" in named.stderr and not (tmp_path / wrong).exists()
    assert runner.invoke(app, ["import", str(tmp_path / "hf"), str(tmp_path / "back.pt")]).exit_code == 0
    assert runner.invoke(app, ["sample", str(tmp_path / "back.pt"), "-n", "2"]).exit_code == 0


EXTREMES = [str(2**64 + 1), "1e308", "5e-324", "nan", "-1", "0"]


def number_options():
    """Every whole-number and decimal option of every command, each at the edges of its type."""
    for command in every_command()[1:]:
        params = options_of(command)
        arguments = {"train": [], "inspect-attention": ["RUN", "ab"]}.get(command[0], ["RUN"])
        if any(p.param_type_name == "argument" for p in params) or command[0] == "train":
            for p in params:
                if p.param_type_name == "option" and type_name(p) in ("integer", "float", "int"):
                    for value in EXTREMES:
                        yield [*command, *arguments, p.opts[0], value]


@pytest.mark.parametrize("args", list(number_options()), ids=" ".join)
def test_every_number_option_at_its_extremes_means_something_or_is_one_line(args, trained_run, monkeypatch):
    """Either it does what the docs say (exit 0) or it names the allowed range in one line (exit 2);
    training itself is not run, only everything that checks its recipe."""
    monkeypatch.setattr("minigpt.runs.run.train", lambda *a, **k: None)
    args = [str(trained_run[0]) if a == "RUN" else a for a in args]
    if args[0] == "train":
        args += ["--config", "tiny", "--no-page"]  # nothing trained: no run to write a page of
    result = CliRunner().invoke(app, args)
    assert result.exit_code in (0, 2), (args, result.output)
    if result.exit_code == 2:
        assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith("minigpt: error: "), result.stderr
    whole = {o for p in options_of(args[:1]) if type_name(p) in ("integer", "int") for o in p.opts}
    if args[-2] in whole and args[-1].lstrip("-").isdigit() and abs(int(args[-1])) > 2**63:
        assert result.exit_code == 2 and "64 bits" in result.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["inspect-attention", "{run}", "emma", "--html", "{tmp}/e.png"],
            "--html {tmp}/e.png would write an HTML page into a .png file",
        ),
        (
            ["inspect-attention", "{run}", "emma", "--png", "{tmp}/e.html"],
            "--png {tmp}/e.html would write a PNG picture into a .html file",
        ),
        (["inspect-attention", "{run}", "emma", "--json-file", "{tmp}/e.txt"], "would write JSON into a .txt file"),
        (
            ["plot", "{run}", "--out", "{tmp}/loss.jpg"],
            "--out {tmp}/loss.jpg would write a PNG picture into a .jpg file",
        ),
        (
            ["inspect-attention", "{run}", "emma", "--html", "{tmp}/e.html", "--png", "{tmp}/e.png", "--step", "3"],
            "drop --png, --step, or run it without --html",
        ),
        (
            ["inspect-attention", "{run}", "emma", "--html", "{tmp}/e.html", "--lens", "--layer", "99"],
            "drop --lens, --layer",
        ),
    ],
)
def test_an_output_is_written_under_its_own_name_and_html_says_what_it_leaves_out(trained_run, tmp_path, args, message):
    given = [a.format(run=trained_run[0], tmp=tmp_path) for a in args]
    result = runner.invoke(app, given)
    assert result.exit_code == 2 and message.format(tmp=tmp_path) in result.stderr, result.stderr
    assert len(result.stderr.splitlines()) == 1 and list(tmp_path.iterdir()) == []  # nothing written


@pytest.mark.parametrize(
    "args, says",
    [
        (
            ["inspect-attention", "{run}", "emma", "--top", "0"],
            "--top is how many predictions to show a position: at least 1, got 0",
        ),
        (["inspect-attention", "{run}", "emma", "--top", "-2"], "at least 1, got -2"),
        (["train", "-c", "tiny", "--set", "train.steps=5\ntrain.lr=1", "--out", "{tmp}/x"], "got a line break in"),
    ],
)
def test_nothing_is_accepted_silently(trained_run, tmp_path, args, says):
    result = run(*[a.format(run=trained_run[0], tmp=tmp_path) for a in args])
    assert result.exit_code == 2 and says in result.output and len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "x").exists()


def test_a_hint_about_a_file_names_its_names_never_a_join_of_them(trained_run, tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("Emma\nJose\nanna\nMia\nZoe\nLea\n", encoding="utf-8")
    result = run("eval", trained_run[0], "--data", bad)
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1
    assert 'name 1 "Emma", name 2 "Jose", name 4 "Mia" and 2 more' in result.output
    assert '"Emma" reads as "emma"' in result.output and "emmajose" not in result.output.lower()


def test_a_scaled_recipe_says_where_it_is_shown_that_it_is_the_one_after_scaling(names_file, tmp_path):
    out = tmp_path / "r"
    assert run("train", "--data", names_file, "--out", out, "--steps", 3, "-q").exit_code == 0  # 300 names: scaled
    info = CliRunner().invoke(app, ["info", str(out)], env={"COLUMNS": "600"}).stdout
    assert "auto_scale False" in info and "the recipe as the run trained" in info and "batch_size 64" in info
    assert (out / "config.toml").read_text().startswith("# The recipe as this run trained it")


def test_a_name_is_read_as_a_run_only_when_it_holds_a_checkpoint(trained_run, tmp_path, monkeypatch):
    """The empty name (the boundary alone) and a folder that shares a name's spelling are names to read, not a
    second run (they were refused as "is a run"); a run directory beside the first is still a second run."""
    run_dir = str(trained_run[0])
    monkeypatch.chdir(tmp_path)
    (tmp_path / "emma").mkdir()
    for name, tokens in (("", ["·"]), ("emma", ["·", "e", "m", "m", "a"])):
        printed = CliRunner().invoke(app, ["inspect-attention", run_dir, name, "--json"])
        assert printed.exit_code == 0, printed.output
        assert json.loads(printed.stdout)["tokens"] == tokens
    two = CliRunner().invoke(app, ["inspect-attention", run_dir, run_dir])
    assert two.exit_code == 2 and "is a run: two runs go on one page" in two.stderr


@pytest.mark.parametrize("columns", ["10000000", "0", "wide"])
def test_help_in_a_terminal_of_any_width_is_drawn_at_a_width_a_table_can_take(columns):
    """COLUMNS=10000000 drew the help padded to ten million columns a line (15 s, 730 MB; 99999999: past a
    minute); now a width past 1,000 is taken as 1,000, and one no table can be drawn in is dropped."""
    done = subprocess.run(
        [sys.executable, "-m", "minigpt", "--help"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": columns},
    )
    assert done.returncode == 0 and "train" in done.stdout
    assert max(map(len, done.stdout.splitlines())) <= 1_000


def test_layer_and_head_choose_the_maps_json_carries_and_json_beside_png_does_both(trained_run, tmp_path):
    """--layer/--head filtered the terminal's maps but --json printed every head; and --json with --png printed
    the JSON and wrote no picture, exit 0."""
    pytest.importorskip("matplotlib")
    run_dir = str(trained_run[0])
    one = CliRunner().invoke(app, ["inspect-attention", run_dir, "emma", "--layer", "0", "--head", "1", "--json"])
    assert one.exit_code == 0, one.output
    assert [(m["layer"], m["head"]) for m in json.loads(one.stdout)["attention"]] == [(0, 1)]
    from minigpt.formats.checkpoint import load_checkpoint

    model = load_checkpoint(trained_run[0]).config.model
    every = json.loads(CliRunner().invoke(app, ["inspect-attention", run_dir, "emma", "--json"]).stdout)
    assert len(every["attention"]) == model.n_layer * model.n_head
    both = CliRunner().invoke(app, ["inspect-attention", run_dir, "emma", "--json", "--png", str(tmp_path / "x.png")])
    assert both.exit_code == 0 and json.loads(both.stdout)["name"] == "emma" and (tmp_path / "x.png").is_file()


def test_inspect_attentions_help_says_where_the_pages_measurements_are_kept():
    """The page's cache (about 4 MB a page, eight pages) lives outside the run: --help says where."""
    shown = CliRunner().invoke(app, ["inspect-attention", "--help"], env={"COLUMNS": "200"}).stdout
    assert "~/.cache/minigpt/pages" in "".join(shown.replace("│", "").split())  # however the help wraps it


def test_a_path_the_system_refuses_is_said_as_the_problem_not_as_pythons_exception(trained_run, tmp_path, monkeypatch):
    """A symbolic link that loops, or one to nowhere, given as a run or an output said "RuntimeError: Symlink loop
    ..." or "FileExistsError: [Errno 17] ..."; now one line names the path and the problem, exit 2."""
    monkeypatch.chdir(tmp_path)
    os.symlink("loop", "loop")
    os.symlink("nowhere", "dangling")
    run_dir = str(trained_run[0])
    for args, says in (
        (["compare", "loop", run_dir], "loop: a symbolic link that loops"),
        (["compare", run_dir, run_dir, "--baseline", "loop"], "loop: a symbolic link that loops"),
        (
            ["sweep", "spec.toml", "--out", "dangling"],
            "dangling: a symbolic link to a path that does not exist is in the way",
        ),
    ):
        (tmp_path / "spec.toml").write_text(
            '[sweep]\nconfig = "tiny"\ntrials = 1\n[space]\n"train.lr" = {low = 1e-3, high = 1e-2}\n'
        )
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 2 and says in result.stderr and "Error" not in result.stderr, result.stderr


def test_json_with_a_number_past_what_json_reads_is_refused_in_one_line(tmp_path):
    """A microgpt JSON holding a 100,000-digit integer raised ValueError from Python's int limit."""
    path = tmp_path / "big.json"
    path.write_text('{"hyperparameters": {"n_layer": ' + "9" * 100_000 + '}, "uchars": [], "state_dict": {}}')
    result = CliRunner().invoke(app, ["import", str(path), str(tmp_path / "out.pt")])
    assert result.exit_code == 2 and "not valid JSON" in result.stderr and "ValueError" not in result.stderr


def test_a_run_ends_with_its_explorer_page_and_no_page_skips_it(names_file, tmp_path):
    """The learner's loop: `minigpt train` writes RUN/page.html as it ends, the page inspect-attention --html writes
    of the same run, byte for byte; --no-page writes none."""
    result = CliRunner().invoke(
        app,
        [
            "train",
            "-c",
            "tiny",
            "--data",
            str(names_file),
            "--out",
            str(tmp_path / "run"),
            "--steps",
            "6",
            "--set",
            "train.eval_interval=3",
        ],
    )
    assert result.exit_code == 0, result.output
    page = tmp_path / "run" / "page.html"
    assert page.is_file() and "the explorer page: " in result.stderr and "open it in a browser" in result.stderr
    again = CliRunner().invoke(
        app, ["inspect-attention", str(tmp_path / "run"), "--html", str(tmp_path / "again.html")]
    )
    assert again.exit_code == 0 and (tmp_path / "again.html").read_bytes() == page.read_bytes()
    none = CliRunner().invoke(
        app,
        [
            "train",
            "-c",
            "tiny",
            "--data",
            str(names_file),
            "--out",
            str(tmp_path / "bare"),
            "--steps",
            "2",
            "--no-page",
        ],
    )
    assert none.exit_code == 0 and not (tmp_path / "bare" / "page.html").exists()


def test_a_mistyped_run_is_not_read_as_a_name(trained_run, tmp_path, monkeypatch):
    """`inspect-attention runA runs/runZZZ --html p.html` (a typo of a run) wrote a one-model page of the text."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    result = CliRunner().invoke(app, ["inspect-attention", str(trained_run[0]), "runs/runZZZ", "--html", "p.html"])
    assert result.exit_code == 2 and "runs/runZZZ is no run" in result.stderr and not (tmp_path / "p.html").exists()
    named = CliRunner().invoke(app, ["inspect-attention", str(trained_run[0]), "ac/dc", "--json"])
    assert "is no run" not in named.stderr  # a slash and no such folder: a name, read (or refused) as one


def test_a_run_mistyped_without_a_slash_is_read_as_a_name_and_said_to_be(trained_run, tmp_path, monkeypatch):
    """`inspect-attention runA runZZZ --html p.html`: no run is called runZZZ, one beside it nearly is: the page
    is of the name, and a note says the word was read as a name (83 §16)."""
    import shutil

    monkeypatch.chdir(tmp_path)
    shutil.copytree(trained_run[0], tmp_path / "runA", ignore=shutil.ignore_patterns("*.lock"))
    result = CliRunner().invoke(app, ["inspect-attention", "runA", "runZZZ", "--html", "p.html"])
    assert result.exit_code == 0 and "runZZZ is read as a name to look at, not as a run" in result.stderr
    assert "runA" in result.stderr.split("spelled like it:")[1]
    plain = CliRunner().invoke(app, ["inspect-attention", "runA", "emma", "--html", "q.html"])
    assert plain.exit_code == 0 and "read as a name" not in plain.stderr


def test_a_folder_named_as_a_bundled_recipe_does_not_hide_it(names_file, tmp_path, monkeypatch):
    """A folder `few` in the current directory is no recipe: --config few and the recipe the rule picks are the
    bundled file."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "few").mkdir()
    for picked in ([], ["-c", "few"]):
        result = CliRunner().invoke(
            app,
            [
                "train",
                *picked,
                "--data",
                str(names_file),
                "--steps",
                "2",
                "--no-page",
                "--out",
                str(tmp_path / f"run{len(picked)}"),
            ],
        )
        assert result.exit_code == 0, result.output
        assert "configs/few.toml" in (tmp_path / f"run{len(picked)}" / "config.toml").read_text().splitlines()[0]


@pytest.mark.parametrize("option", ["--data", "--config"])
def test_a_pipe_no_one_writes_to_is_said_to_be_waited_on(tmp_path, option):
    """--data (or --config: it waited with no word) a pipe whose writer has not written: the command says what it
    waits on, and Ctrl-C ends it."""
    import os
    import signal
    import subprocess
    import sys

    pipe = tmp_path / "names"
    os.mkfifo(pipe)
    # the command as `python -m minigpt` runs it, with the product's wait before its note (seconds) cut short
    code = (
        "import sys, minigpt.files.bounded as f; f.WAIT_BEFORE_SAYING = 0.2; from minigpt.cli.main import main; "
        "sys.argv[0] = 'minigpt'; main()"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "train", option, str(pipe), "--out", str(tmp_path / "run"), "--no-page"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stderr.readline()  # the note comes once the pipe has kept its names a while
        assert "is a pipe, and nothing has written to it yet" in line and "Ctrl-C stops" in line
        assert f"send the {'names' if option == '--data' else 'recipe'} and close it" in line
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 130
    finally:
        proc.kill()
        proc.wait()


def test_train_help_lists_every_bundled_recipe():
    """`minigpt train --help` listed five recipes of nine (few, small, short and sprint left out)."""
    from minigpt.common.bundled import recipe_names

    shown = " ".join(run("train", "--help").stdout.split())
    assert len(recipe_names()) >= 9 and all(name in shown for name in recipe_names())


def test_a_run_resumed_into_a_new_folder_carries_its_history(tmp_path):
    """`--resume A --out B` started B's metrics.jsonl and samples.txt at the resume step: they now hold A's
    records up to it, so B's curve is the whole run's."""
    first = run(
        "train",
        "--config",
        "tiny",
        "--set",
        "train.eval_interval=10",
        "--steps",
        "20",
        "--out",
        tmp_path / "a",
        "-q",
        "--no-page",
    )
    assert first.exit_code == 0, first.output
    more = run("train", "--resume", tmp_path / "a", "--steps", "40", "--out", tmp_path / "b", "-q", "--no-page")
    assert more.exit_code == 0, more.output
    steps = [json.loads(line)["step"] for line in (tmp_path / "b" / "metrics.jsonl").read_text().splitlines()]
    assert min(steps) < 20 and max(steps) == 40 and steps == sorted(steps)
    samples = (tmp_path / "b" / "samples.txt").read_text()
    assert "step 10" in samples and "step 40" in samples


def test_compiling_on_a_cpu_says_so_before_its_first_steps(monkeypatch):
    """--set train.compile=true on a CPU took 3 minutes for 3 steps without a word."""
    import torch

    from minigpt.formats.recipes import load_config
    from minigpt.runs import setup

    said = []
    monkeypatch.setattr(setup, "warn", said.append)
    setup.say_compiling(load_config("tiny", ["train.compile=true"]), torch.device("cpu"))
    assert said and "compiles the training step" in said[0] and "minutes" in said[0]
    said.clear()
    setup.say_compiling(load_config("tiny"), torch.device("cpu"))
    assert said == []


def test_info_shows_a_vocabulary_that_starts_with_a_space_on_whole_lines(tmp_path):
    """A vocabulary whose first character is a space broke `info`'s line after the opening quote."""
    from conftest import tiny_config

    from minigpt.runs.run import train

    names = tmp_path / "names.txt"
    names.write_text("\n".join(["anna maria", "jean luc", "bob", "carla", "dina", "emil"] * 20) + "\n")
    run_dir = train(tiny_config("train.steps=2"), data_path=names, out_dir=tmp_path / "run", quiet=True).run_dir
    shown = runner.invoke(app, ["info", str(run_dir)], env={"COLUMNS": "80"}).stdout
    lines = [line.strip("│ ") for line in shown.splitlines()]
    assert not any(line.endswith("'") and line.count("'") == 1 for line in lines), shown
    assert "'␣abcdeijlmnoru'" in shown and "(␣ a space)" in shown


@pytest.mark.parametrize(
    "args",
    [
        ["sample", "{tmp}/nothing"],
        ["info", "{tmp}/nothing"],
        ["train", "--data", "{tmp}/n.txt"],
        ["train", "--resume", "{tmp}/nothing"],
        ["inspect-attention", "{tmp}/nothing", "emma"],
    ],
)
def test_a_wrong_path_is_refused_before_torch_is_imported(args, tmp_path):
    """Errors took 5 to 7 s on a busy machine: each command imported torch before it looked at its files."""
    code = (
        "import sys; from minigpt.cli.main import main; sys.argv[0] = 'minigpt'\n"
        "try:\n    main()\nexcept SystemExit as e:\n    print('torch' in sys.modules, e.code)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *[a.format(tmp=tmp_path) for a in args]],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stdout.split() == ["False", "2"], done.stdout + done.stderr
    assert done.stderr.startswith("minigpt: error: ") and len(done.stderr.strip().splitlines()) == 1
