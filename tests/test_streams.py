"""Standard output closed or full, standard error closed: one line and the right exit code.

The streams are replaced in this process as a shell leaves them (`>&-` gives Python no stdout;
`> /dev/full` fails each write with ENOSPC), and each command that prints is run through the
real entry point, `main`.
"""

import errno
import io
import sys

import pytest
import typer

from minigpt.cli.main import app, main

PRINTS = {  # what each command prints on standard output, when its output is asked of it
    "train": ["--json"],
    "sample": [],
    "eval": [],
    "inspect-attention": ["ab"],
    "info": [],
    "ablate": [],
    "compare": ["{twin}"],
}
WRITES_FILES_ONLY = {"export", "import", "plot"}  # what they print is a note on stderr
SWEEPS = {"sweep"}  # tests/test_experiments.py writes its study to a full standard output


class FullDisk(io.StringIO):
    def write(self, text):
        raise OSError(errno.ENOSPC, "No space left on device")

    def flush(self):
        raise OSError(errno.ENOSPC, "No space left on device")


def has_json(command: str) -> bool:
    return any("--json" in p.opts for p in typer.main.get_command(app).commands[command].params)


def command_lines(run):
    for command, extra in PRINTS.items():
        if command == "train":
            yield ["train", "--resume", str(run), "--steps", "61", "-q", "--json"]
            continue
        extra = [arg.format(twin=twin_of(run)) for arg in extra]
        yield [command, str(run), *extra]
        if has_json(command):
            yield [command, str(run), *extra, "--json"]


def twin_of(run) -> str:
    """A copy of the run, for commands that take two."""
    import shutil
    from pathlib import Path

    twin = Path(f"{run}-twin")
    if not twin.exists():
        shutil.copytree(run, twin)
    return str(twin)


def run_main(monkeypatch, args, stdout, stderr):
    monkeypatch.setattr(sys, "argv", ["minigpt", *args])
    monkeypatch.setattr(sys, "stdout", stdout)
    monkeypatch.setattr(sys, "stderr", stderr)
    with pytest.raises(SystemExit) as ended:
        main()
    return ended.value.code


def test_every_command_is_covered():
    assert set(PRINTS) | WRITES_FILES_ONLY | SWEEPS == set(typer.main.get_command(app).commands)


@pytest.mark.parametrize("stdout", ["closed", "full"])
def test_stdout_that_cannot_be_written_is_one_line_and_exit_1(trained_run, tmp_path, monkeypatch, stdout):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(trained_run[0], run)
    for args in command_lines(run):
        errors = io.StringIO()
        code = run_main(monkeypatch, args, None if stdout == "closed" else FullDisk(), errors)
        assert code == 1, (args, errors.getvalue())
        message = "standard output is closed" if stdout == "closed" else "cannot write to standard output: No space"
        assert errors.getvalue().startswith(f"minigpt: error: {message}") and errors.getvalue().count("\n") == 1


def test_a_closed_stderr_keeps_the_exit_code(trained_run, monkeypatch):
    out = io.StringIO()
    assert run_main(monkeypatch, ["sample", str(trained_run[0]), "-n", "2"], out, None) == 0
    assert len(out.getvalue().split()) == 2
    assert run_main(monkeypatch, ["sample", "no-such-run"], out, None) == 2
    assert run_main(monkeypatch, ["no-such-command"], out, FullDisk()) == 2


@pytest.mark.parametrize("command", [["info", "{run}"], ["eval", "{run}", "--per-name"], ["train", "--help"]])
def test_a_reader_gone_ends_every_command_as_sigpipe_does(trained_run, command):
    """`minigpt info RUN | head -1`: whatever prints ends with 141 and says nothing: rich's consoles (info), print
    (eval), and the help, which is printed before any command runs."""
    import subprocess
    import sys

    args = [arg.format(run=trained_run[0]) for arg in command]
    process = subprocess.Popen([sys.executable, "-m", "minigpt", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.close()  # gone before the command writes a byte
    assert process.wait(timeout=120) == 141 and process.stderr.read() == b""
