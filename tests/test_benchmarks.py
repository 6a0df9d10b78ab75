"""The benchmark scripts run (on tiny settings); what they measure is not tested here."""

import json
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def run(script, *args):
    result = subprocess.run([sys.executable, str(BENCHMARKS / script), *map(str, args)],
                            capture_output=True, text=True, cwd=BENCHMARKS, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_throughput_reports_every_batch_size(tmp_path):
    out = tmp_path / "throughput.json"
    run("throughput.py", "--config", "tiny", "--batch-sizes", "8,16", "--seconds", "0.3", "--out", out)
    results = json.loads(out.read_text())
    assert [row["batch_size"] for row in results["rows"]] == [8, 16]
    assert results["matmul_peak"]["gflops"] > 0 and all(row["tokens_per_sec"] > 0 for row in results["rows"])


def test_sampling_and_startup(trained_run, tmp_path):
    run_dir, _ = trained_run
    out = run("sampling.py", "--checkpoint", run_dir, "--num", "40", "--batch-sizes", "16", "--repeats", "1")
    assert "names/s" in out
    assert "minigpt --help" in run("startup.py", "--checkpoint", run_dir, "--repeats", "1")
