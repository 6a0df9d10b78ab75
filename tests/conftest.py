import sys

# Write compiled modules (into __pycache__, which git ignores) even where PYTHONDONTWRITEBYTECODE is set: each
# xdist worker imports every test module, and the suite starts dozens of interpreters that import minigpt; with
# the compiled files written once, none of them compiles the same source again.
sys.dont_write_bytecode = False

import atexit
import gc
import os
import shutil
import signal
import tempfile
import time
from pathlib import Path

import pytest

from minigpt.common.bundled import BUNDLED_NAMES
from minigpt.formats.recipes import load_config

# the commands the tests start run on one thread, as the tests do (one_torch_thread): two workers share the cores
os.environ.setdefault("OMP_NUM_THREADS", "1")
# the explorer page's measurements are cached between writes (views/page_cache.py): in a folder of the suite's own
os.environ["MINIGPT_CACHE_DIR"] = tempfile.mkdtemp(prefix="minigpt-page-cache-")
atexit.register(shutil.rmtree, os.environ["MINIGPT_CACHE_DIR"], ignore_errors=True)  # each process removes its own


@pytest.fixture
def names_file(tmp_path):
    """300 real names, enough for a tiny model to learn something in a few dozen steps."""
    path = tmp_path / "names.txt"
    path.write_text("\n".join(BUNDLED_NAMES.read_text().split()[::17][:300]) + "\n", encoding="utf-8")
    return path


def wait_for_command(proc, ready, timeout=180, stderr_file=None):
    """Wait until `ready()` says a started command got where the test needs it. Should the command end first, or
    not get there in `timeout` seconds (generous: the suite must pass on a busy machine too), stop it and every
    process it started and fail with what it said (on its stderr pipe, or in `stderr_file`), rather than wait
    on a command that would run for ever."""
    deadline = time.monotonic() + timeout
    while not ready():
        ended = proc.poll() is not None
        if ended or time.monotonic() > deadline:
            stop_with_what_it_started(proc)
            said = proc.communicate()[1] if stderr_file is None else Path(stderr_file).read_text()
            pytest.fail(f"the command {'ended' if ended else f'was not ready in {timeout} s'}; it said: {said!r}")
        time.sleep(0.05)


def written(path):
    """For wait_for_command: whether the command has written something to `path`."""
    return lambda: path.exists() and path.stat().st_size > 0


def stepped(metrics):
    """For wait_for_command: whether the run whose metrics.jsonl is `metrics` has logged a training step (its first
    line is written before the first step, when a signal stops the run at once, with nothing to save)."""
    return lambda: metrics.exists() and '"train_loss"' in metrics.read_text(errors="replace")


def stop_with_what_it_started(proc) -> None:
    """SIGKILL to a started command and to the processes it started (a sweep's workers, torchrun's ranks)."""
    kill_children_of(proc.pid)
    proc.kill()


def kill_children_of(pid: int) -> None:
    for child in children_of(pid):
        kill_children_of(child)
        try:
            os.kill(child, signal.SIGKILL)
        except ProcessLookupError:
            pass


def children_of(pid: int) -> set[int]:
    """The processes `pid` started that still run, from Linux's /proc (elsewhere, none are found)."""
    found = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found |= {int(child) for child in (task / "children").read_text().split()}
        except OSError:  # the thread or the process ended meanwhile
            continue
    return found


def hide_package(monkeypatch, package: str) -> None:
    """Make `import package` (and its submodules) fail, as on a machine without it."""
    import builtins

    real_import = builtins.__import__

    def without(name, *args, **kwargs):
        if name.startswith(package):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", without)


def tiny_config(*overrides):
    return load_config("tiny", list(overrides))


@pytest.fixture(scope="session", autouse=True)
def one_torch_thread():
    """Tiny models run fastest on one thread, and the suite stays predictable. Set here rather than on importing
    this file: pytest's own process, which under xdist runs no test, then starts its workers without torch."""
    import torch

    torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def no_loss_png_unless_asked(request, monkeypatch):
    """Drawing loss.png takes most of a tiny run's time: only tests marked `draws_loss_png` (and the
    shared runs, made before this applies) draw it; tests/test_records.py looks at those."""
    if "draws_loss_png" not in request.keywords:
        monkeypatch.setattr("minigpt.runs.recorder.write_loss_png_if_possible", lambda run_dir: None)
        monkeypatch.setattr("minigpt.views.plotting.import_pyplot_meanwhile", lambda: None)


@pytest.fixture(scope="session")
def shared_chromium():
    """Headless Chromium for the explorer page's tests (tests/browser.py), one per pytest process: a launch
    costs more than most tests."""
    import browser

    reason = browser.missing()
    if reason:
        browser.skip_or_fail(reason)
    with browser.chromium() as chromium:
        yield chromium


@pytest.fixture
def chromium(shared_chromium):
    """The shared Chromium, with the tabs a test opened closed or blanked after it: a tab left on its page goes
    on drawing it, beside every later test's. A blanked tab is the next test's (browser.open_page)."""
    import browser

    yield shared_chromium
    browser.spare_tabs_after_a_test(shared_chromium)


@pytest.fixture(scope="session")
def tiny_page(tmp_path_factory):
    """The page most browser tests read: a model of two layers of two heads (the tiny recipe, one layer more)
    trained for 2 steps on every 11th bundled name, its weights redrawn so that the numbers compared with torch
    are far from zero (tests/browser.py), written for "emma". Its checkpoint and the page's path."""
    import browser

    from minigpt.formats.checkpoint import load_checkpoint
    from minigpt.runs.run import train
    from minigpt.views.explorer_page import write_page

    tmp = tmp_path_factory.mktemp("tiny_page")
    data = tmp / "names.txt"
    data.write_text("\n".join(BUNDLED_NAMES.read_text().split()[::11]) + "\n")
    config = tiny_config("model.n_layer=2", "train.steps=2", "train.eval_interval=2", "train.time_limit=0")
    run_dir = train(config, data, out_dir=tmp / "run", quiet=True).run_dir
    browser.redraw_weights(run_dir / "best.pt", seed=2)
    return load_checkpoint(run_dir), write_page(run_dir, tmp / "page.html", text="emma")


@pytest.fixture(scope="session")
def trained_run(tmp_path_factory):
    """One tiny run shared by the tests that only read its checkpoint."""
    from minigpt.runs.run import train

    tmp = tmp_path_factory.mktemp("run")
    data = tmp / "names.txt"
    data.write_text("\n".join(BUNDLED_NAMES.read_text().split()[::7]) + "\n", encoding="utf-8")
    result = train(tiny_config("train.steps=60"), data_path=data, out_dir=tmp / "run", quiet=True)
    return result.run_dir, data


def pytest_configure(config):
    """The markers (the one above, and the two kinds below); and property-based tests (tests/test_properties.py) run
    the "ci" profile unless HYPOTHESIS_PROFILE names another."""
    config.addinivalue_line("markers", "draws_loss_png: the test's training runs draw loss.png")
    config.addinivalue_line("markers", "browser: the test opens a page in Chromium")
    config.addinivalue_line("markers", "processes: the test starts processes (commands, workers, torchrun, a kernel)")
    try:
        from hypothesis import HealthCheck, settings
    except ImportError:
        return
    # each example runs a command: no per-example deadline, and fixtures shared across examples are fine
    relaxed = {"deadline": None, "suppress_health_check": [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]}
    settings.register_profile("ci", max_examples=100, **relaxed)
    settings.register_profile("thorough", max_examples=2000, **relaxed)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


# what starts a process, in a test's own code or its module's fixtures
STARTS_PROCESSES = ("subprocess.", "Popen", "multiprocessing", "os.fork", "torchrun", "nbclient", "sys.executable")


def pytest_collection_modifyitems(config, items):
    """The two slow kinds, marked by what a test does, so that no mark is forgotten: `browser` for a test that uses
    Chromium, `processes` for one whose code (or a fixture or helper of its module) starts a process. `python -m
    pytest -m "not browser and not processes"` is the quick part alone."""
    starts = {}
    for item in items:
        if "chromium" in item.fixturenames or "shared_chromium" in item.fixturenames:
            item.add_marker("browser")
        path = Path(item.module.__file__)
        if path not in starts:
            starts[path] = functions_that_start_processes(path)
        if {item.originalname, *item.fixturenames} & starts[path]:
            item.add_marker("processes")


def functions_that_start_processes(path: Path) -> set[str]:
    """The names of a test module's functions (tests, fixtures, helpers) whose code says one of STARTS_PROCESSES, or
    calls a function of the module that does (a test that starts its command through the module's helper): read
    from the module's text once (asking inspect for each function's source took seconds a worker)."""
    import ast

    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    functions = {node.name: node for node in ast.parse(text).body if isinstance(node, ast.FunctionDef)}
    code = {name: "\n".join(lines[node.lineno - 1 : node.end_lineno]) for name, node in functions.items()}
    starting = {name for name in functions if any(word in code[name] for word in STARTS_PROCESSES)}
    uses = {name: {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} for name, node in functions.items()}
    while more := {name for name in functions if uses[name] & starting} - starting:
        starting |= more
    return starting


def pytest_unconfigure(config):
    """Every pytest process (each worker too) freezes what is alive as it ends: Python's exit would
    otherwise run the garbage collector over torch's objects and the suite's, seconds a process."""
    gc.freeze()
