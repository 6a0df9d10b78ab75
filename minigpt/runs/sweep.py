"""`minigpt sweep`: a study over recipe keys on Optuna, each trial's seeds ordinary run directories.

    result = run_sweep("study.toml", "runs/study")   # resumes when run again; result.best, result.importance

Optuna chooses each trial's values (its TPE sampler) and prunes a trial whose first seed's validation
losses fall behind the other trials' at the same step (its median pruner), heard through the training
loop's Reporter. The study lives in a journal file in the sweep's directory (no server), or in the
database `storage` names (PostgreSQL, MySQL, SQLite, Redis), which is how several machines work on one
study: each runs the same command, and Optuna hands out the trials.

A trial stopped by Ctrl-C, or whose process is gone (killed, the machine restarted), is run again with
the same values when the study goes on; on a database, Optuna's heartbeat finds those of other machines.
"""

from __future__ import annotations

import math
import os
import signal
import socket
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from minigpt.common.arguments import as_path, quoted, whole_number_within
from minigpt.common.failures import WriteFailed, cannot_write
from minigpt.common.text import range_text
from minigpt.errors import Interrupted, RunError, UsageError
from minigpt.files.atomic_file import write_text
from minigpt.formats.recipes import recipe_toml
from minigpt.runs.run_directory import RunLock
from minigpt.runs.statistics import correlation, mean, sd
from minigpt.runs.study_folder import (
    JOURNAL,
    SPEC_COPY,
    TRIAL_MARK,
    is_study_folder,
    mark_trial_runs,
    masked,
    names_digest,
    read_study_record,
)
from minigpt.runs.study_storage import (
    claimed_study,
    import_optuna,
    journal_identity,
    open_study,
    refuse_a_lost_journal,
    sampler,
)
from minigpt.runs.sweep_spec import MOST_SEEDS, SweepSpec, read_spec

BEST = "best.toml"
IMPORTANCE_TRIALS = 5  # finished trials before each key's importance means anything: fewer, and one pair decides it

# what an interrupted sweep says, once, whichever process heard Ctrl-C
STOPPED = "interrupted: the sweep stopped, its finished trials kept; run the same command again to go on"
STOPPED_WORKERS = f"{STOPPED}; the trials that were running run again from their start"  # with --jobs
STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}  # what a worker exits 128 + for when it saved and stopped


def this_worker() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def alive(worker: str) -> bool:
    """Whether the process a trial was started by still runs; one on another machine is taken to (the
    database's heartbeat finds those)."""
    host, _, pid = worker.rpartition(":")
    if host != socket.gethostname():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError):
        return True
    return True


def run_again_what_stopped(study) -> list[int]:
    """Trials that were interrupted, or whose process is gone, failed and queued again with their values."""
    TrialState = import_optuna().trial.TrialState
    trials = study.get_trials(deepcopy=False)
    handled = run_again(trials)
    again = []
    for trial in trials:
        if trial.number in handled:
            continue
        gone = trial.state == TrialState.RUNNING and not alive(trial.user_attrs.get("worker", ""))
        if gone or (trial.state == TrialState.FAIL and trial.user_attrs.get("interrupted")):
            if gone:
                study.tell(trial.number, state=TrialState.FAIL, skip_if_finished=True)
            study.enqueue_trial(trial.params, user_attrs={"run_again_from": trial.number}, skip_if_exists=False)
            again.append(trial.number)
    return again


def run_again(trials) -> set[int]:
    """The trials queued again: their runs in a later trial are the ones that count."""
    return {t.user_attrs["run_again_from"] for t in trials if "run_again_from" in t.user_attrs}


def counted(study) -> tuple[int, int, int]:
    """Trials that count toward the budget (finished, pruned or running), those queued to run, and those that
    failed with an error (values no run can take, a bad file), which use none of the budget."""
    TrialState = import_optuna().trial.TrialState
    trials = study.get_trials(deepcopy=False)
    handled = run_again(trials)
    waiting = sum(t.state == TrialState.WAITING for t in trials)
    failed = sum(t.state == TrialState.FAIL and "error" in t.user_attrs for t in trials)
    counts = sum(t.state != TrialState.WAITING and t.number not in handled for t in trials) - failed
    return counts, waiting, failed


def pruning(trial):
    """A Reporter that tells the trial each validation loss of its first seed, and stops the run when Optuna
    prunes it. Made here, not above, as the run is: the sweep's own process starts its workers without torch."""
    from minigpt.training import Reporter

    class Pruning(Reporter):
        def evaluation(self, trainer, samples) -> None:
            if trainer.val_loss is None:
                return
            trial.report(trainer.val_loss, trainer.step)
            if trial.should_prune():
                trial.set_user_attr("pruned_at", trainer.step)
                raise import_optuna().TrialPruned(f"pruned at step {trainer.step} (validation {trainer.val_loss:.4f})")

    return Pruning()


def objective(
    spec: SweepSpec, out_dir: Path, data: Path | None, seeds: int, say: Callable[[str], None], heard: list[int]
):
    """A trial's runs; `heard` gets a signal a run heard as it ended, for `work` to stop on."""
    from minigpt.runs.run import train

    def run_trial(trial) -> float:
        trial.set_user_attr("worker", this_worker())
        values = {d.key: d.suggest(trial) for d in spec.space}
        losses, runs, steps = [], [], []
        try:
            for i in range(seeds):
                seed = spec.base_seed + i
                config = spec.recipe(values, seed)
                run_dir = out_dir / f"trial-{trial.number}-seed-{seed}"
                runs.append(run_dir.name)
                trial.set_user_attr("runs", runs)
                (run_dir / TRIAL_MARK).unlink(missing_ok=True)  # a folder of an earlier study's trial of this number
                result = train(
                    config,
                    data,
                    out_dir=run_dir,
                    overwrite=True,
                    quiet=True,
                    report=pruning(trial) if i == 0 and spec.prune else None,
                )
                if result.best_val_loss is None:  # the spec's check leaves validation names to every trial
                    raise RunError(f"trial {trial.number}'s run {run_dir} kept no validation loss to score")
                losses.append(result.best_val_loss)
                steps.append(result.steps)
                if i == 0:
                    trial.set_user_attr("recipe", recipe_toml(config))
                if result.signal_at_the_end is not None:  # heard as the run ended: the sweep stops
                    if i < seeds - 1:  # before the trial's other seeds: it runs again
                        raise Interrupted(STOPPED, result.signal_at_the_end)
                    heard.append(result.signal_at_the_end)  # after this complete trial is kept
        except (Interrupted, WriteFailed) as e:  # stopped from outside, or by the machine (a full disk): run again
            mark_trial_runs(out_dir, runs, trial.number, "stopped; run again as a later trial")
            trial.set_user_attr("interrupted", True)
            if isinstance(e, Interrupted):  # the run's own advice (train --resume) would train outside the study
                raise Interrupted(
                    f"{STOPPED}; trial {trial.number} runs again from its start", e.exit_code - 128
                ) from None
            raise
        except UsageError as e:  # values no run can take together (n_embd not divisible by n_head, ...)
            mark_trial_runs(out_dir, runs, trial.number, f"failed: {e}")
            trial.set_user_attr("error", str(e))
            say(f"trial {trial.number} failed ({values_text(values)}): {e}")
            raise
        except import_optuna().TrialPruned as e:
            mark_trial_runs(out_dir, runs, trial.number, str(e))
            raise
        trial.set_user_attr("losses", losses)
        trial.set_user_attr("steps", steps)  # a time limit's trials take the steps the machine gives them
        say(
            f"trial {trial.number}: {mean(losses):.4f} over {len(losses)} seed{'s' * (len(losses) > 1)}  "
            + values_text(values)
        )
        return mean(losses)

    return run_trial


def values_text(values: dict) -> str:
    return "  ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in values.items())


def work(
    spec_path: Path,
    out_dir: Path,
    data: Path | None,
    storage: str | None,
    seeds: int | None,
    threads: int | None = None,
    say: Callable[[str], None] = lambda line: None,
    worker: int = 0,
) -> None:
    """One worker: runs trials until the study has its number of them. Several may share a study: the
    `worker`-th of one command's --jobs, and any number of commands on other machines through `storage`."""
    if threads is not None:  # one of --jobs N processes: its share of the cores, told to torch and to minigpt
        import torch

        os.environ["OMP_NUM_THREADS"] = str(threads)
        torch.set_num_threads(threads)
    spec = read_spec(spec_path)
    if storage is not None:  # other machines' workers number theirs from 0 too
        worker += zlib.crc32(this_worker().encode())
    study = open_study(spec, out_dir, storage, worker)
    if study.trials:  # a study going on: a sampler seeded as at its start would propose its first values again
        study.sampler = sampler(spec, worker, len(study.trials))
    heard: list[int] = []
    run = objective(spec, out_dir, data, seeds or spec.seeds, say, heard)
    journal = journal_identity(out_dir, storage)
    failed_before = counted(study)[2]
    while True:
        refuse_a_lost_journal(out_dir, journal)
        done, waiting, failed = counted(study)
        if done >= spec.trials and not waiting or failed - failed_before >= spec.trials:  # or every try fails
            return
        try:
            study.optimize(run, n_trials=1, catch=(UsageError,))
            if heard:  # a signal came as a trial's run ended: that trial is kept, the sweep stops
                raise Interrupted(STOPPED, heard[0])
        except OSError as e:  # Optuna's own write of the study (its journal or database)
            refuse_a_lost_journal(out_dir, journal)
            raise cannot_write(f"the study in {masked(storage) or out_dir / JOURNAL}", e) from None
        except WriteFailed as e:
            raise WriteFailed(f"{e}; once there is room, run the sweep again: it goes on where it stopped") from None
        except Exception:
            refuse_a_lost_journal(out_dir, journal)  # what Optuna failed on, when the journal went
            raise


def worker_process(*args) -> None:
    """A --jobs process: its errors as one line, its exit code as the command's would be."""
    import sys

    os.setpgid(0, 0)  # out of the terminal's group: its Ctrl-C reaches a worker once, passed on by the sweep
    die_with_parent()
    try:
        work(*args)
    except Interrupted as e:
        sys.exit(e.exit_code)
    except (UsageError, RunError) as e:
        print(f"minigpt: error: {e}", file=sys.stderr)
        sys.exit(e.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)


def die_with_parent() -> None:
    """A --jobs process ends when the sweep that started it is gone: killed with -9, the sweep cannot stop its
    workers, and a worker left running would go on taking trials beside the sweep run again. A thread watches
    for the parent to change; the trial it leaves is run again, as any whose process is gone."""
    import threading

    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.2)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="minigpt-parent-watch").start()


def run_sweep(
    spec_path: str | Path,
    out_dir: str | Path,
    data: str | Path | None = None,
    jobs: int = 1,
    storage: str | None = None,
    seeds: int | None = None,
    say: Callable[[str], None] = lambda line: None,
) -> SweepResult:
    """Run the study to its number of trials (going on where it stopped) and sum it up; `say` hears a line
    a trial and what the sweep does."""
    if storage is not None and not isinstance(storage, str):
        raise UsageError(
            f"--storage must be a URL (text, such as postgresql://user@host/db), got {type(storage).__name__}"
        )
    if not callable(say):
        raise UsageError(f"say must be a function of one line of text (print, say), got {type(say).__name__}")
    spec, out_dir = read_spec(as_path(spec_path, "a sweep spec")), as_path(out_dir, "the sweep's directory")
    import_optuna()  # without it, nothing is written
    if seeds is not None:
        whole_number_within(seeds, "--seeds", 1, MOST_SEEDS)
    cores = os.cpu_count() or 1
    if type(jobs) is not int or not 1 <= jobs <= cores:
        raise UsageError(f"--jobs must be from 1 to {cores} (a trial a core at most), got {quoted(jobs)}")
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"--out {out_dir} is a file; the sweep writes a directory of runs")
    if out_dir.is_dir() and any(out_dir.iterdir()) and not is_study_folder(out_dir):  # a trial would replace them
        raise UsageError(
            f"--out {out_dir} holds files of its own and no study; choose an empty or new folder "
            f"(a sweep writes its trials' runs and best.toml there)"
        )
    data = as_path(data, "the names file (data)") if data is not None else None
    names = names_digest(data, spec)  # before anything is written: a typo spends no trial
    study = claimed_study(spec, out_dir, storage, data, seeds, names, say)
    # two sweeps of one folder would propose the same values (their samplers are seeded alike): one at a time
    lock = RunLock(
        out_dir,
        "another sweep",
        "let it finish, or run one sweep with --jobs N for trials side by side",
        what="the sweep's folder",
    )
    try:
        return sweep_locked(spec, out_dir, data, jobs, storage, seeds, say, study)
    finally:
        lock.release()


def sweep_locked(
    spec,
    out_dir: Path,
    data: Path | None,
    jobs: int,
    storage: str | None,
    seeds: int | None,
    say: Callable[[str], None],
    study,
) -> SweepResult:
    """run_sweep's work, with the folder to itself."""
    again = run_again_what_stopped(study)
    if again:
        say(f"running again trial{'s' * (len(again) > 1)} {', '.join(map(str, again))}, stopped before it finished")
    if jobs == 1:
        work(spec.path, out_dir, data, storage, seeds, None, say)
    else:
        run_workers(jobs, spec.path, out_dir, data, storage, seeds, say)
    result = summary(spec, out_dir, storage)
    failed = [t for t in result.trials if "error" in t.user_attrs]
    if result.best is None and failed:
        raise RunError(
            f"every trial failed (they use none of the study's {spec.trials}); the last: "
            f"{failed[-1].user_attrs['error']}"
        )
    return result


def run_workers(jobs: int, *args) -> None:
    import multiprocessing

    cores = os.cpu_count() or 1
    threads = max(1, cores // jobs)
    say = args[-1]
    say(f"{jobs} trials at a time, {threads} thread{'s' * (threads > 1)} each ({cores} cores)")
    context = multiprocessing.get_context("spawn")  # a fresh interpreter: torch's threads start clean
    processes = [context.Process(target=worker_process, args=(*args[:-1], threads, say, i)) for i in range(jobs)]
    for p in processes:
        p.start()
    stopped = watch_workers(processes)
    if stopped is not None:
        raise Interrupted(STOPPED_WORKERS, stopped)
    codes = [p.exitcode for p in processes if p.exitcode]
    killed = [(i, -code) for i, code in enumerate(codes) if code < 0]  # multiprocessing: a signal's number, negated
    if killed:
        name = signal.Signals(killed[0][1]).name
        raise RunError(
            f"a sweep process was killed by {name} (out of memory, or stopped from outside); the others "
            f"stopped with it, the trials that finished are kept, and running the sweep again goes on"
        )
    # workers stopped by a signal that the sweep's own process did not see (sent to them alone; or, in three
    # full test-suite runs, Ctrl-C to the whole group, for a reason not found) stopped the sweep all the same
    if codes and all(code - 128 in STOP_SIGNALS for code in codes):
        raise Interrupted(STOPPED_WORKERS, codes[0] - 128)
    if codes:
        raise RunError(
            f"{len(codes)} of {jobs} sweep processes failed (exit {codes[0]}); the trials that finished "
            f"are kept, and running the sweep again goes on"
        )


def watch_workers(processes) -> int | None:
    """Wait for the workers, the sweep's own process standing for them: SIGINT or SIGTERM sent to it alone is
    passed on to each (they save and stop), and a worker that dies (SIGKILL) stops the others at once rather
    than after every remaining trial. Returns the signal that stopped the sweep, or None."""
    from multiprocessing.connection import wait

    received = []

    def pass_on(signum, frame) -> None:
        received.append(signum)
        for p in processes:
            if p.is_alive():
                os.kill(p.pid, signum)

    previous = {signum: signal.signal(signum, pass_on) for signum in (signal.SIGINT, signal.SIGTERM)}
    told = False  # the rest told to stop, once, after one was killed
    try:
        while any(p.is_alive() for p in processes):
            ready = wait([p.sentinel for p in processes if p.is_alive()])
            for p in processes:
                if p.sentinel in ready:
                    p.join()  # its exit code: the sentinel can close a moment before the process is reaped
            if not told and not received and any(p.exitcode is not None and p.exitcode < 0 for p in processes):
                told = True
                for p in processes:  # one was killed: the rest save and stop (a signal of the sweep's, not the user's)
                    if p.is_alive():
                        os.kill(p.pid, signal.SIGTERM)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return received[0] if received else None


@dataclass
class SweepResult:
    spec: SweepSpec
    trials: list  # Optuna's FrozenTrials, by number
    best: Any  # the best complete trial (Optuna's FrozenTrial), or None
    importance: dict[str, float]  # each key's share of the loss's variation (Optuna's fANOVA), when it can tell
    best_toml: Path | None

    def to_json(self) -> dict:
        return {
            "study": self.spec.name,
            "trials": [trial_json(t) for t in self.trials],
            "best": trial_json(self.best) if self.best else None,
            "importance": self.importance,
            "best_toml": str(self.best_toml) if self.best_toml else None,
        }


def state_of(t) -> str:
    """A trial's state in words: a trial stopped by Ctrl-C or a full disk is "stopped" (it runs again as a
    later trial), not the "fail" Optuna records for it."""
    return "stopped" if t.user_attrs.get("interrupted") else t.state.name.lower()


def trial_json(t) -> dict:
    losses = t.user_attrs.get("losses", [])
    return {
        "number": t.number,
        "state": state_of(t),
        "value": t.value,
        "params": t.params,
        "losses": losses,
        "sd": sd(losses),
        "steps": t.user_attrs.get("steps", []),
        "runs": t.user_attrs.get("runs", []),
        "error": t.user_attrs.get("error"),
    }


def summary(spec: SweepSpec, out_dir: Path, storage: str | None, write_best: bool = True) -> SweepResult:
    """The study as it stands: its trials, the best, each key's importance, and (with write_best)
    DIR/best.toml written."""
    optuna = import_optuna()
    study = open_study(spec, out_dir, storage, create=write_best)
    trials = sorted(study.get_trials(deepcopy=False), key=lambda t: t.number)
    # a value of another type (a journal edited by hand: a string where a loss belongs) is no score to rank
    complete = [
        t
        for t in trials
        if t.state == optuna.trial.TrialState.COMPLETE and type(t.value) in (int, float) and math.isfinite(t.value)
    ]
    best = min(complete, key=lambda t: t.value) if complete else None
    importance = {}
    if len(complete) >= IMPORTANCE_TRIALS:
        try:
            importance = optuna.importance.get_param_importances(study)
        except (RuntimeError, ValueError):  # too few distinct values to tell
            importance = {}
    best_toml = None
    if best is not None and best.user_attrs.get("recipe") and write_best:
        note = compute_note(trials)
        what = (
            f"the recipe of the lowest loss of the study {spec.name}"
            if note
            else f"the best recipe of the study {spec.name}"
        )
        caveat = f"# which may follow the machine, not the recipe: {note}\n" if note else ""
        best_toml = write_text(
            out_dir / BEST,
            f"# {what} (trial {best.number}, {best.value:.4f} over its seeds), as "
            f"it trained\n{caveat}" + best.user_attrs["recipe"],
        )
    elif best is not None and (out_dir / BEST).is_file():
        best_toml = out_dir / BEST  # written when the study last ran
    return SweepResult(spec, trials, best, importance, best_toml)


def show_sweep(out_dir: str | Path, storage: str | None = None) -> SweepResult:
    """The study kept in DIR (its spec in DIR/sweep.toml) as it stands, without running a trial."""
    kept = Path(out_dir) / SPEC_COPY
    if not kept.is_file():
        raise UsageError(f"{out_dir} holds no sweep (no {SPEC_COPY}); run minigpt sweep SPEC.toml --out {out_dir}")
    record = read_study_record(Path(out_dir))
    if storage is None and record is not None and record["storage"] != JOURNAL:
        storage = record["storage"]  # where the study lives, as the folder remembers it
    return summary(read_spec(kept), Path(out_dir), storage, write_best=False)  # a look writes nothing


def compute_note(trials) -> str | None:
    """When finished trials took unequal steps (a time limit on a busy machine), between trials or between one
    trial's seeds, the ranking may be the machine's: say so, and how closely loss and steps go together where
    three trials or more can tell."""
    done = [t for t in trials if t.state.name == "COMPLETE" and t.value is not None and t.user_attrs.get("steps")]
    steps = [s for t in done for s in t.user_attrs["steps"]]
    if not steps or max(steps) <= 1.1 * min(steps):
        return None
    inside = [t for t in done if max(t.user_attrs["steps"]) > 1.1 * min(t.user_attrs["steps"])]
    within = (
        f"; trial {inside[0].number}'s seeds alone took {range_text(inside[0].user_attrs['steps'])} steps"
        if inside
        else ""
    )
    r = correlation([mean(t.user_attrs["steps"]) for t in done], [t.value for t in done]) if len(done) >= 3 else None
    follows = f" and the loss follows them (r = {r:.2f})" if r is not None and r <= -0.5 else ""
    return (
        f"the trials took {min(steps):,} to {max(steps):,} steps{follows}{within}: the ranking may be the "
        f"machine's compute, not the recipes'; a budget of steps ([sweep] steps) gives every trial the same"
    )
