"""Where a sweep's study lives, opened for this spec: Optuna's journal in the sweep's folder, or a database.

    study = claimed_study(spec, out_dir, storage, data, seeds, names, say)   # folder, journal and question checked
    study = open_study(spec, out_dir, storage, create=False)                 # a look that changes nothing

A journal cut by an interrupted write is mended before anything is appended (study_folder.py); on a
database, Optuna's heartbeat finds the trials of machines that went away.
"""

from __future__ import annotations

import errno
import re
import shutil
import stat
import time
import warnings
import zlib
from collections.abc import Callable
from pathlib import Path

from minigpt.common.failures import first_line
from minigpt.errors import Interrupted, RunError, UsageError
from minigpt.runs.study_folder import (
    JOURNAL,
    claim_folder,
    claim_study,
    hide_password,
    keep_spec,
    masked,
    mend_torn_journal,
    question,
    storage_url,
    whole_records,
)
from minigpt.runs.sweep_spec import SweepSpec


def import_optuna():
    try:
        import optuna
    except ImportError:
        raise UsageError(
            "minigpt sweep runs on Optuna: pip install 'minigpt-names[sweep]' (or pip install optuna)"
        ) from None
    optuna.logging.set_verbosity(optuna.logging.ERROR)  # a failed trial is one line of ours, not its traceback
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)  # the heartbeat's, each run
    return optuna


def sampler(spec: SweepSpec, worker: int = 0, trials_before: int = 0):
    """Optuna's TPE sampler, seeded from the recipe's seed, the worker and how many trials the study had when it
    joined: workers starting together, or a study going on, do not propose the same values again."""
    return import_optuna().samplers.TPESampler(seed=zlib.crc32(f"{spec.base_seed} {worker} {trials_before}".encode()))


TRIAL_FOLDER = re.compile(r"trial-(\d+)-seed-\d+")


def refuse_trials_the_study_forgot(study, out_dir: Path, where: str) -> None:
    """Trial folders the study holds no trial for (its journal emptied or replaced by hand): a new trial of that
    number would train into them and rewrite their best.pt. They are the study's record: refused, naming them."""
    known = len(study.trials)
    forgotten = sorted(
        {int(m.group(1)) for p in out_dir.iterdir() if (m := TRIAL_FOLDER.fullmatch(p.name)) and p.is_dir()}
        - set(range(known))
    )
    if forgotten:
        shown = ", ".join(f"trial-{n}" for n in forgotten[:5]) + (" and more" if len(forgotten) > 5 else "")
        raise UsageError(
            f"{out_dir} holds the runs of {shown}, and the study in {where} holds {known} trial"
            f"{'s' * (known != 1)}: its record was emptied or replaced, and a new trial would train into those "
            f"folders; the trial folders are the study's record: give the sweep another --out, or move them away"
        )


def refuse_a_journal_not_a_file(journal: Path) -> None:
    """A study's journal is a file minigpt appends to and reads back whole: a pipe (or a folder, a device) there
    would wait for a writer for ever, or was called "a database"; refused, naming what it is."""
    if journal.exists() and not journal.is_file():
        kind = "a pipe (FIFO)" if stat.S_ISFIFO(journal.stat().st_mode) else "not a file"
        raise UsageError(
            f"{journal} is {kind}: a study's journal is a file minigpt appends to and reads whole; move "
            f"it away, or give the sweep another --out"
        )


def journal_identity(out_dir: Path, storage: str | None) -> tuple[int, int] | None:
    """Which file the study's journal is (device and inode), for `refuse_a_lost_journal`; None in a database."""
    if storage is not None:
        return None
    try:
        found = (out_dir / JOURNAL).stat()
    except OSError:
        return None
    return found.st_dev, found.st_ino


def refuse_a_lost_journal(out_dir: Path, opened: tuple[int, int] | None) -> None:
    """The journal deleted or replaced while the study runs: Optuna would go on writing the trials' ends into a
    new file that lacks their starts (and fail inside itself). Stop, the trial folders as they are, and set aside
    what was written since, so that the next sweep into the folder is refused as one whose journal is gone."""
    if opened is None or journal_identity(out_dir, None) == opened:
        return
    journal = out_dir / JOURNAL
    aside = ""
    if journal.exists():
        kept = journal.with_name(f"{JOURNAL}.after-it-was-lost")
        journal.replace(kept)
        aside = f"; what was written to it since is kept as {kept.name}"
    raise UsageError(
        f"{journal} was deleted or replaced while the study ran, and with it the record of its trials: the "
        f"study stopped, its trial folders kept as they are{aside}. Put the journal back to go on, or run "
        f"the study into another --out"
    )


def open_study(spec: SweepSpec, out_dir: Path, storage: str | None, worker: int = 0, create: bool = True):
    """The study: in DIR/study.journal, or in the database at `storage` (made on first use, unless
    `create` is False: a look at a study changes nothing, in its files or its database)."""
    optuna = import_optuna()
    if storage is None:
        refuse_a_journal_not_a_file(out_dir / JOURNAL)
    if not create and storage is None and not (out_dir / JOURNAL).is_file():
        raise UsageError(f"{out_dir} holds no {JOURNAL}: its study lives in a database; give it with --storage URL")
    try:
        if storage is None:
            from optuna.storages.journal import JournalFileBackend

            backend = optuna.storages.JournalStorage(JournalFileBackend(str(out_dir / JOURNAL)))
        elif storage.startswith(("redis://", "rediss://")):
            from optuna.storages.journal import JournalRedisBackend

            backend = optuna.storages.JournalStorage(JournalRedisBackend(storage))
        else:
            check_storage_url(storage)
            backend = database(optuna, storage)
        if not create:
            return optuna.load_study(study_name=spec.name, storage=backend)
        pruner = (
            optuna.pruners.MedianPruner(n_startup_trials=2, n_warmup_steps=spec.first_prune_step)
            if spec.prune
            else optuna.pruners.NopPruner()
        )
        return optuna.create_study(
            study_name=spec.name,
            storage=backend,
            direction="minimize",
            load_if_exists=True,
            sampler=sampler(spec, worker),
            pruner=pruner,
        )
    except (UsageError, Interrupted):  # said already, in minigpt's words; a signal is the stop
        raise
    except KeyError:  # load_study: no study of that name there
        raise UsageError(f"{masked(storage) or out_dir / JOURNAL} holds no study named {spec.name!r}") from None
    except OSError as e:
        if e.errno in (errno.ENOSPC, errno.EIO, errno.EDQUOT):  # the machine failed, not the storage given: exit 1
            raise RunError(f"cannot write the study's journal {out_dir / JOURNAL}: {e.strerror}") from None
        raise UsageError(
            f"cannot open the study's storage {masked(storage) or out_dir / JOURNAL}: "
            f"{hide_password(e.strerror or str(e), storage)}"
        ) from None
    except (ImportError, ValueError) as e:
        journal = out_dir / JOURNAL
        if storage is None and journal.is_file() and whole_records(journal.read_bytes()) < journal.stat().st_size:
            raise UsageError(
                f"{journal} is cut or damaged after its first whole records; run the sweep again "
                f"to set the damaged part aside (the whole file is kept beside it)"
            ) from None
        raise UsageError(
            f"cannot open the study's storage {masked(storage) or journal}: {hide_password(str(e), storage)}"
        ) from None
    except Exception as e:  # a database that refuses: SQLAlchemy's and redis's own errors
        if storage is None:  # a journal Optuna cannot replay: a record of an operation it does not know, say
            raise UsageError(
                f"{out_dir / JOURNAL} holds a record this Optuna ({optuna.__version__}) cannot replay "
                f"({first_line(e)}): it was edited, or written by "
                f"another version of Optuna; move it away, or give the sweep another --out"
            ) from None
        # SQLAlchemy's "(psycopg.OperationalError) connection failed: ...": the reason, not the class
        first = (str(e).splitlines() or [type(e).__name__])[0]  # an error may say nothing but its kind
        reason = hide_password(re.sub(r"^\([\w.]+\) ", "", first), storage)
        if storage is not None and ("Name or service not known" in reason or "nodename nor servname" in reason):
            parsed = storage_url(storage)
            host = (parsed.host if parsed is not None else None) or "its host"
            raise UsageError(
                f"cannot open the study's storage {masked(storage)}: no machine is known by the name "
                f"{host!r} (check the host in the URL)"
            ) from None
        raise RunError(f"cannot open the study's storage {masked(storage)}: {reason}") from None


DATABASES = ("sqlite", "postgresql", "mysql", "mariadb")  # what Optuna's RDB storage is tested with


def check_storage_url(url: str) -> None:
    """A --storage URL the database storage can read, said in minigpt's words where SQLAlchemy's would be ("Can't
    load plugin: sqlalchemy.dialects:http", "invalid literal for int() with base 10")."""
    parsed = storage_url(url)
    if parsed is None:
        several = "," in url.split("://", 1)[-1].split("/", 1)[0]
        why = (
            "several hosts in one URL (libpq's form) are not read by the storage's driver: give one host"
            if several
            else "it reads as no database URL (scheme://user:password@host:port/database)"
        )
        raise UsageError(f"cannot open the study's storage: {why}")
    if parsed.get_backend_name() not in DATABASES:
        raise UsageError(
            f"cannot open the study's storage {masked(url)}: no database is served by "
            f"{parsed.get_backend_name()!r}; minigpt sweep keeps a study in a journal in its folder, "
            f"or in {', '.join(DATABASES)} or redis"
        )


def database(optuna, url: str, tries: int = 5):
    """An RDB storage with Optuna's heartbeat, which finds the trials of machines that went away. Machines
    that start together race to make its tables, and all but one fail: they try again once the tables are made."""
    for attempt in range(tries):
        try:
            return optuna.storages.RDBStorage(
                url,
                heartbeat_interval=30,
                grace_period=120,
                heartbeat_stale_trial_callback=optuna.storages.RetryHeartbeatStaleTrialCallback(max_retry=3),
            )
        except Exception as e:
            if attempt == tries - 1 or "already exists" not in str(e) and "duplicate key" not in str(e):
                raise
            time.sleep(0.2 * (attempt + 1))


def claimed_study(
    spec: SweepSpec,
    out_dir: Path,
    storage: str | None,
    data: Path | None,
    seeds: int | None,
    names: str,
    say: Callable[[str], None],
):
    """The study, its folder and its question claimed for this spec; refused, a folder made for it is taken away."""
    fresh = not out_dir.exists()
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        keep_spec(spec, out_dir)
        claim_folder(out_dir, spec, storage, data, names)
        if storage is None:
            refuse_a_journal_not_a_file(out_dir / JOURNAL)
        torn = mend_torn_journal(out_dir / JOURNAL) if storage is None else None
        if torn:
            say(
                f"{out_dir / JOURNAL} ended in a cut record (a write was interrupted): it is cut back to its last "
                f"whole record, the whole file kept as {torn}"
            )
        study = open_study(spec, out_dir, storage)
        refuse_trials_the_study_forgot(study, out_dir, masked(storage) or str(out_dir / JOURNAL))
        claim_study(study, question(spec, seeds, names), masked(storage) or str(out_dir / JOURNAL))
        return study
    except (UsageError, RunError):
        if fresh:
            shutil.rmtree(out_dir, ignore_errors=True)
        raise
