"""Two processes (gloo, CPU) train exactly as one process with the same global batch, and resume either way."""

import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

import pytest
import torch
from typer.testing import CliRunner

from minigpt.cli.main import app
from minigpt.errors import UsageError
from minigpt.formats.checkpoint import load_checkpoint
from minigpt.machine.processes import Distributed

pytestmark = pytest.mark.xdist_group("torchrun")  # one worker makes the module's shared fixture once

# the CPU's processes (gloo) even where there is a GPU: one GPU cannot hold two processes' runs
COMMON = [
    "-c",
    "tiny",
    "--device",
    "cpu",
    "--no-page",
    "--set",
    "model.dropout=0",
    "--set",
    "train.log_interval=1",
    "--batch-size",
    "16",
    "--quiet",
]


# torchrun's own temporary folders (/tmp/torchelastic_*) go here, removed when the tests end, even those of a
# launch the tests killed, which torchrun never removes itself
TORCHRUN_TMP = tempfile.mkdtemp(prefix="minigpt-torchrun-")
atexit.register(shutil.rmtree, TORCHRUN_TMP, ignore_errors=True)


def env():
    return {**os.environ, "OMP_NUM_THREADS": "1", "TMPDIR": TORCHRUN_TMP}


def one_process(*args):
    """`minigpt train` with these arguments, in this process (the tests' one thread, no launch to wait for)."""
    return CliRunner().invoke(app, ["train", *map(str, args)])


def two_processes(*args, timeout=120):
    """`minigpt train --nproc 2`: two processes in torchrun's environment, started by minigpt itself."""
    cmd = [sys.executable, "-m", "minigpt", "train", "--nproc", "2", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, env=env(), timeout=timeout)


def losses(run_dir, key="train_loss"):
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return {r["step"]: r[key] for r in records if key in r}


def assert_same_run(a, b):
    la, lb = losses(a), losses(b)
    assert la.keys() == lb.keys()
    assert max(abs(la[k] - lb[k]) for k in la) < 1e-5
    va, vb = losses(a, "val_loss"), losses(b, "val_loss")
    shared = va.keys() & vb.keys()  # a run that stopped and resumed also evaluated where it stopped
    assert len(shared) >= 3 and max(abs(va[k] - vb[k]) for k in shared) < 1e-5
    sa, sb = (load_checkpoint(d / "last.pt").model.state_dict() for d in (a, b))
    for key in sa:
        torch.testing.assert_close(sa[key], sb[key], atol=1e-4, rtol=1e-4)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One process to step 12, two processes (torchrun) to step 20, one process to step 30; and one
    process all the way. A constant learning rate, so that extending train.steps on resuming leaves
    the schedule as it was. One of the suite's two launches of several processes: they start slowly."""
    tmp = tmp_path_factory.mktemp("ddp")
    names = tmp / "names.txt"
    from conftest import BUNDLED_NAMES

    names.write_text("\n".join(BUNDLED_NAMES.read_text().split()[::11]) + "\n")
    constant = ["--set", "train.lr_schedule='constant'", "--set", "train.eval_interval=4"]
    reference = one_process("--data", names, "--out", tmp / "reference", *COMMON, "--steps", "30", *constant)
    assert reference.exit_code == 0, reference.output
    first = one_process("--data", names, "--out", tmp / "mixed", *COMMON, "--steps", "12", *constant)
    assert first.exit_code == 0, first.output
    middle = two_processes("--resume", tmp / "mixed", "--steps", "20", "--quiet", "--no-page")
    assert middle.returncode == 0, middle.stderr
    written_by_two = {p.name: p.read_bytes() for p in (tmp / "mixed").iterdir()}
    last = one_process("--resume", tmp / "mixed", "--steps", "30", "--quiet", "--no-page")
    assert last.exit_code == 0, last.output
    return tmp, written_by_two


def test_two_processes_match_one_step_for_step_and_resume_either_way(runs):
    tmp, _ = runs
    assert_same_run(tmp / "reference", tmp / "mixed")
    steps_on_two = {step: loss for step, loss in losses(tmp / "mixed").items() if 12 < step <= 20}
    assert len(steps_on_two) == 8  # logged every step by rank 0


def test_only_rank_0_writes_and_its_checkpoint_samples(runs, tmp_path):
    _, written_by_two = runs
    assert sorted(name for name in written_by_two if name.endswith(".pt")) == ["best.pt", "last.pt", "snapshots.pt"]
    (tmp_path / "last.pt").write_bytes(written_by_two["last.pt"])
    sample = CliRunner().invoke(app, ["sample", str(tmp_path), "-n", "3", "--seed", "1"])
    assert sample.exit_code == 0 and len(sample.stdout.splitlines()) == 3


def test_bad_input_stops_every_rank_with_a_message(tmp_path, monkeypatch):
    """Each rank reads the names itself, so each fails on its own, and says which rank it is."""
    for rank in (0, 1):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("LOCAL_RANK", str(rank))  # as torchrun sets it beside RANK
        monkeypatch.setenv("WORLD_SIZE", "2")
        monkeypatch.setenv("MASTER_ADDR", "127.0.0.1"), monkeypatch.setenv("MASTER_PORT", "29500")  # as torchrun
        monkeypatch.setattr(
            "minigpt.runs.setup.setup_distributed", lambda device, rank=rank: Distributed(rank, 2, rank, device)
        )
        result = CliRunner().invoke(app, ["train", "--data", str(tmp_path / "missing.txt"), "-c", "tiny"])
        assert result.exit_code == 2
        assert f"minigpt (rank {rank}): error: names file not found" in result.stderr


def test_batch_must_split_evenly():
    with pytest.raises(
        UsageError, match=r"train.batch_size \(15\) must be a multiple of the number of processes \(2\)"
    ):
        Distributed(rank=0, world=2).wrap(torch.nn.Linear(2, 2), batch_size=15, seed=0)


def endless_two_process_run(tmp_path) -> list[str]:
    """`minigpt train --nproc 2` on a tenth of the bundled names, with steps and evaluations it never reaches:
    a run that goes on until a test stops it."""
    from conftest import BUNDLED_NAMES

    names = tmp_path / "names.txt"
    names.write_text("\n".join(BUNDLED_NAMES.read_text().split()[::11]) + "\n")
    train = ["train", "--nproc", "2", "--data", str(names), "--out", str(tmp_path / "run"), "-c", "tiny"]
    endless = ["--batch-size", "16", "--steps", "10000000", "--device", "cpu", "--set", "train.eval_interval=1000000"]
    return [sys.executable, "-m", "minigpt", *train, *endless]


def test_ctrl_c_stops_every_process_after_a_saved_step_and_exits_130(tmp_path):
    from conftest import stepped, wait_for_command

    cmd = endless_two_process_run(tmp_path)
    # its own process group, which a terminal's Ctrl-C reaches as a whole
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env(), start_new_session=True
    )
    metrics = tmp_path / "run" / "metrics.jsonl"
    wait_for_command(proc, stepped(metrics))
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and err.strip().splitlines()[-1].endswith(f"--resume {tmp_path / 'run'}")
    assert load_checkpoint(tmp_path / "run" / "last.pt").step > 0


def test_a_batch_that_does_not_split_is_refused_before_any_process_starts(tmp_path):
    result = CliRunner().invoke(
        app, ["train", "--nproc", "2", "-c", "tiny", "--batch-size", "15", "--out", str(tmp_path / "run")]
    )
    assert result.exit_code == 2 and not (tmp_path / "run").exists()
    assert result.stderr == "minigpt: error: train.batch_size (15) must be a multiple of --nproc (2)\n"


@pytest.mark.parametrize(
    "env, message",
    [
        ({"WORLD_SIZE": "abc"}, "WORLD_SIZE='abc' in the environment is not a number"),
        ({"WORLD_SIZE": "2"}, "but RANK is unset"),
        ({"WORLD_SIZE": "2", "RANK": "5", "LOCAL_RANK": "0"}, "but RANK is '5'"),
    ],
)
def test_an_environment_torchrun_could_not_have_set_is_one_line(env, message, names_file, tmp_path, monkeypatch):
    for key in ("WORLD_SIZE", "RANK", "LOCAL_RANK"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    result = CliRunner().invoke(
        app, ["train", "--data", str(names_file), "-c", "tiny", "--steps", "1", "--out", str(tmp_path / "r")]
    )
    assert result.exit_code == 2 and message in result.stderr and len(result.stderr.splitlines()) == 1, result.stderr
    failing = CliRunner().invoke(
        app, ["sample", str(tmp_path / "missing")]
    )  # any failing command: one line, no traceback
    assert failing.exit_code == 2 and failing.stderr.startswith("minigpt: error: checkpoint not found")


def test_more_processes_on_cuda_than_gpus_is_one_line_before_any_process_waits(monkeypatch):
    """Each process takes a GPU of its own; on a machine with one, rank 1 would ask for a GPU that is not there."""
    from minigpt.machine import processes

    monkeypatch.setenv("WORLD_SIZE", "2"), monkeypatch.setenv("RANK", "1"), monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1"), monkeypatch.setenv("MASTER_PORT", "29500")  # as torchrun sets them
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    with pytest.raises(
        UsageError, match="2 processes on CUDA need a GPU each, and this machine has 1; use --device cpu"
    ):
        processes.setup(torch.device("cuda"))
    assert not torch.distributed.is_initialized()


def test_nproc_has_a_ceiling():
    result = CliRunner().invoke(app, ["train", "--nproc", "100000"])
    assert result.exit_code == 2 and "--nproc must be from 1 to" in result.stderr


def test_a_process_killed_mid_run_is_one_line_naming_it_not_the_backends_words(tmp_path):
    """SIGKILL to rank 1 (as the out-of-memory killer sends it): rank 0 loses it inside a collective, where gloo
    says "Connection reset by peer"; the launching process says instead which process was killed, once."""
    from conftest import stepped, wait_for_command

    cmd = [*endless_two_process_run(tmp_path), "--quiet"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
    metrics = tmp_path / "run" / "metrics.jsonl"
    wait_for_command(proc, stepped(metrics))
    rank_1 = next(
        pid
        for pid in map(
            int, subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
        )
        if b"RANK=1\0" in open(f"/proc/{pid}/environ", "rb").read()
    )
    os.kill(rank_1, signal.SIGKILL)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGKILL, err
    lines = err.strip().splitlines()
    assert lines == [
        "minigpt: error: process 1 was killed by SIGKILL (out of memory, or stopped from outside); the "
        "others stopped with it: minigpt train --resume RUN_DIR continues from the run's last checkpoint"
    ]


def test_the_launcher_prints_each_processs_error_once(tmp_path):
    """Bad input that every process meets alike is one line, not one per process; errors that differ name
    their processes; a process that only lost another adds nothing."""
    from types import SimpleNamespace

    from minigpt.machine.torchrun import LOST_A_PROCESS, failures

    workers = [SimpleNamespace(returncode=2), SimpleNamespace(returncode=2)]
    for rank in (0, 1):
        (tmp_path / f"{rank}.txt").write_text("names file not found: x.txt")
    assert failures(workers, tmp_path) == ["minigpt: error: names file not found: x.txt"]
    (tmp_path / "1.txt").write_text("cannot write run/last.pt: No space left on device")
    assert failures(workers, tmp_path) == [
        "minigpt (process 0): error: names file not found: x.txt",
        "minigpt (process 1): error: cannot write run/last.pt: No space left on device",
    ]
    (tmp_path / "0.txt").write_text(LOST_A_PROCESS + "another process of this run stopped, and this one with it")
    assert failures(workers, tmp_path) == [
        "minigpt (process 1): error: cannot write run/last.pt: No space left on device"
    ]
    (tmp_path / "1.txt").unlink()
    assert failures(workers, tmp_path) == ["minigpt: error: another process of this run stopped, and this one with it"]


class EndsAt:
    """A stand-in for a worker process (torchrun.Worker) that ends with `code` at its `at`-th poll."""

    followed = stopped_here = False

    def __init__(self, code, at):
        self.code, self.at, self.polls, self.returncode = code, at, 0, None

    def poll(self):
        self.polls += 1
        if self.polls >= self.at:
            self.returncode = self.code
        return self.returncode

    def kill(self):
        self.returncode = -9


def test_a_process_that_aborts_after_another_was_killed_only_followed_it(tmp_path):
    """Rank 1 killed by SIGKILL, then rank 0 aborting (gloo's C++ runtime on a lost peer, SIGABRT): the exit code
    and the one line are rank 1's, whatever order the processes are listed in; the abort's report is left out."""
    from minigpt.machine.torchrun import ABORT_REPORT, failures, wait_for_all

    workers = [EndsAt(-signal.SIGABRT, 4), EndsAt(-signal.SIGKILL, 2)]
    assert wait_for_all(workers) == 128 + signal.SIGKILL
    assert failures(workers, tmp_path) == [
        "minigpt: error: process 1 was killed by SIGKILL (out of memory, or stopped from outside); the others stopped "
        "with it: minigpt train --resume RUN_DIR continues from the run's last checkpoint"
    ]
    report = (
        b"step 5\nterminate called after throwing an instance of 'gloo::IoException'\n"
        b"  what():  [../gloo/x.cc:1] reset\n"
    )
    assert ABORT_REPORT.sub(b"", report) == b"step 5\n"


@pytest.mark.parametrize(
    "env, says",
    [
        ({"MASTER_PORT": "99999"}, "MASTER_PORT is '99999'"),
        ({"MASTER_ADDR": None}, "MASTER_ADDR (where they meet) is unset"),
    ],
)
def test_an_impossible_meeting_place_is_the_environments_mistake_exit_2(env, says, monkeypatch, tmp_path):
    """MASTER_PORT=99999 raised torch's ValueError, and a missing MASTER_ADDR a ValueError, exit 1."""
    for key, value in {
        "RANK": "0",
        "LOCAL_RANK": "0",
        "WORLD_SIZE": "2",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": "29500",
        **env,
    }.items():
        monkeypatch.delenv(key, raising=False) if value is None else monkeypatch.setenv(key, value)
    result = CliRunner().invoke(app, ["train", "-c", "tiny", "--out", str(tmp_path / "r")])
    assert result.exit_code == 2 and says in result.stderr, result.stderr


def test_a_process_waiting_for_others_that_never_come_says_so_and_stops_on_ctrl_c(tmp_path, monkeypatch):
    """torchrun's variables set by hand with no other process coming: train printed nothing for minutes, and
    Ctrl-C was not heard until torch gave up. It now says what it waits for, where, for how long and how to stop,
    and stops at Ctrl-C."""
    import socket

    from conftest import wait_for_command

    from minigpt.machine import processes

    with socket.socket() as s:  # a port nobody serves
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {
        **os.environ,
        "RANK": "0",
        "LOCAL_RANK": "0",
        "WORLD_SIZE": "2",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port),
    }
    errors = tmp_path / "stderr.txt"
    with open(errors, "w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "minigpt", "train", "-c", "tiny", "--out", str(tmp_path / "r")],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
        wait_for_command(process, lambda: "waits for the others to meet" in errors.read_text(), stderr_file=errors)
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=60) == 130
    said = errors.read_text()
    assert f"127.0.0.1:{port}" in said and f"{processes.MEETING.seconds // 60} minutes" in said and "Ctrl-C" in said
    assert "minigpt: interrupted" in said and "Traceback" not in said
