"""Two processes (gloo, CPU) train exactly as one process with the same global batch."""

import json
import os
import subprocess
import sys

import pytest
import torch

from minigpt.formats.checkpoint import load_checkpoint

COMMON = ["-c", "tiny", "--set", "model.dropout=0", "--set", "train.log_interval=1", "--batch-size", "16", "--quiet"]


def env():
    return {**os.environ, "OMP_NUM_THREADS": "1"}


def one_process(names_file, out, *extra):
    cmd = [sys.executable, "-m", "minigpt", "train", "--data", str(names_file), "--out", str(out), *COMMON, *extra]
    return subprocess.run(cmd, capture_output=True, text=True, env=env(), timeout=120)


def two_processes(*args, timeout=120):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "-m", "minigpt",
           "train", *map(str, args)]
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
    tmp = tmp_path_factory.mktemp("ddp")
    names = tmp / "names.txt"
    from conftest import BUNDLED_NAMES

    names.write_text("\n".join(BUNDLED_NAMES.read_text().split()[::11]) + "\n")
    single = one_process(names, tmp / "one", "--steps", "30")
    assert single.returncode == 0, single.stderr
    double = two_processes("--data", names, "--out", tmp / "two", *COMMON, "--steps", "30")
    assert double.returncode == 0, double.stderr
    return tmp, names


def test_two_processes_match_one_step_for_step(runs):
    tmp, _ = runs
    assert_same_run(tmp / "one", tmp / "two")


def test_only_rank_0_writes_and_its_checkpoint_samples(runs):
    tmp, _ = runs
    assert sorted(p.name for p in (tmp / "two").iterdir() if p.suffix == ".pt") == ["best.pt", "last.pt"]
    sample = subprocess.run([sys.executable, "-m", "minigpt", "sample", str(tmp / "two"), "-n", "3", "--seed", "1"],
                            capture_output=True, text=True)
    assert sample.returncode == 0 and len(sample.stdout.splitlines()) == 3


def test_a_distributed_checkpoint_resumes_on_one_process_and_back(runs):
    """2 processes to step 12, 1 process to step 20, 2 processes to step 30: the same run as 1 process to 30.

    A constant learning rate, so that extending train.steps on resuming leaves the schedule as it was.
    """
    tmp, names = runs
    constant = ["--set", "train.lr_schedule='constant'"]
    reference = one_process(names, tmp / "reference", "--steps", "30", *constant)
    assert reference.returncode == 0, reference.stderr
    first = two_processes("--data", names, "--out", tmp / "mixed", *COMMON, *constant, "--steps", "12")
    assert first.returncode == 0, first.stderr
    middle = subprocess.run([sys.executable, "-m", "minigpt", "train", "--resume", str(tmp / "mixed"),
                             "--steps", "20", "--quiet"], capture_output=True, text=True, env=env())
    assert middle.returncode == 0, middle.stderr
    last = two_processes("--resume", tmp / "mixed", "--steps", "30", "--quiet")
    assert last.returncode == 0, last.stderr
    assert_same_run(tmp / "reference", tmp / "mixed")


def test_bad_input_stops_every_rank_with_a_message(tmp_path):
    result = two_processes("--data", tmp_path / "missing.txt", "--out", tmp_path / "r", "-c", "tiny", timeout=60)
    assert result.returncode != 0
    assert "minigpt (rank 0): error: names file not found" in result.stderr
    assert "minigpt (rank 1): error: names file not found" in result.stderr


def test_batch_must_split_evenly(runs, tmp_path):
    _, names = runs
    result = two_processes("--data", names, "--out", tmp_path / "r", "-c", "tiny", "--batch-size", "15", timeout=60)
    assert result.returncode != 0 and "must be a multiple of the number of processes (2)" in result.stderr
