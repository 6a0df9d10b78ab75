"""Which study a sweep's folder belongs to, where that study lives, and what question it asks.

    DIR/sweep.toml    the spec the study runs (another spec in DIR is refused)
    DIR/study.json    the study's name, its storage (the URL without its password) and the digest of the
                      names its trials train on: another study, or other names, in DIR is refused
    DIR/study.journal the study itself, unless it lives in a database; a record cut by an interrupted write
                      is set aside (the whole file kept beside it) before anything is appended
    DIR/trial-N-seed-S/sweep-trial.json   in the run of a trial pruned, failed or stopped: what became of it,
                      so that `compare` over a glob of the sweep's runs leaves it out
    the study itself  its recipe, budget, seeds, trials, space, fixed keys and names, kept in the storage:
                      another spec of the same name, in any folder, is refused

A password in a storage URL is never shown: `masked` writes it as ***.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from pathlib import Path
from typing import overload

from minigpt.errors import MiniGPTError, UsageError
from minigpt.files.atomic_file import write_bytes, write_text
from minigpt.runs.sweep_spec import SweepSpec

JOURNAL = "study.journal"
TRIAL_MARK = "sweep-trial.json"
SPEC_COPY = "sweep.toml"
STUDY_RECORD = "study.json"


# the query parameters that can carry a secret: a password under any name (password, sslpassword, passwd), a
# token, a key, credentials, and libpq's options, which can set anything (-c password=...)
SECRET_PARTS = ("pass", "secret", "token", "key", "auth", "cred", "options")


def secret_key(key: str) -> bool:
    return any(part in key.lower() for part in SECRET_PARTS)


def storage_url(url: str):
    """The URL as the storage driver reads it (SQLAlchemy's parser, which Optuna's storages use), or None
    when it reads none: then nothing of it is shown, since no part of it can be told from a password."""
    try:
        from sqlalchemy.engine import make_url

        return make_url(url)
    except Exception:  # a malformed host or port: SQLAlchemy raises ValueError, ArgumentError and others
        return None


def secrets(url: str | None) -> list[str]:
    """The secrets a storage URL holds, as written and as the driver decodes them: its password, a user name
    given alone (scheme://TOKEN@host, a token), and every query parameter that can carry one."""
    from urllib.parse import quote

    parsed = storage_url(url) if url else None
    if parsed is None:  # no driver reads it: whatever stands between "://" and "@" may be a secret
        import re

        userinfo = re.findall(r"://([^/@]+)@", url or "")  # user:password, or a token alone
        return sorted(
            {*userinfo, *(part.split(":", 1)[1] for part in userinfo if ":" in part)} - {""}, key=len, reverse=True
        )
    values = [v for k, v in parsed.query.items() if secret_key(k)]
    found = [parsed.password, parsed.username if not parsed.password else None]
    found += [item for value in values for item in (value if isinstance(value, tuple) else (value,))]
    found = [str(value) for value in found if value]
    return sorted({*found, *(quote(value, safe="") for value in found)}, key=len, reverse=True)


@overload
def masked(url: str) -> str: ...
@overload
def masked(url: None) -> None: ...
def masked(url: str | None) -> str | None:
    """A storage URL as it is shown and recorded, masked by its parts (never by searching its text): the
    password, a user name given alone, and every query parameter that can carry a secret as ***."""
    if url is None:
        return None
    parsed = storage_url(url)
    if parsed is None:
        return "a storage URL that cannot be read as one"
    if parsed.username and not parsed.password:
        parsed = parsed.set(username="***")
    hidden = {key: "***" for key in parsed.query if secret_key(key)}
    if hidden:
        parsed = parsed.update_query_dict(hidden)
    return parsed.render_as_string(hide_password=True).replace("%2A%2A%2A", "***")  # the mask, not its URL quoting


def hide_password(text: str, url: str | None) -> str:
    """A driver's message with the storage URL's secrets as ***: the URL, where the message repeats it, as `masked`
    shows it; then each secret where it stands as a word of its own, never inside another word (a password "p"
    leaves "postgresql" and "port" as they are)."""
    import re

    if not text or not url:
        return text
    text = text.replace(url, masked(url))
    for secret in secrets(url):
        text = re.sub(rf"(?<![\w]){re.escape(secret)}(?![\w])", "***", text)
    return text


def without_password(url: str) -> str:
    """A storage URL as a study folder records it: no secret at all (the database's own login supplies it)."""
    parsed = storage_url(url)
    if parsed is None:
        return masked(url)
    parsed = parsed._replace(password=None).difference_update_query([key for key in parsed.query if secret_key(key)])
    return parsed.render_as_string(hide_password=False)


def keep_spec(spec: SweepSpec, out_dir: Path) -> None:
    """DIR/sweep.toml: the spec the study in DIR runs; another spec in the same DIR is refused."""
    kept = out_dir / SPEC_COPY
    if kept.exists() and kept.read_text(encoding="utf-8", errors="replace") != spec.text:
        raise UsageError(f"{out_dir} holds a study of another spec ({kept}); choose another --out, or run that spec")
    if not kept.exists():
        write_text(kept, spec.text)


def mend_torn_journal(journal: Path) -> Path | None:
    """A journal whose last record was cut (a kill or a full disk while writing) is cut back to its last whole
    record, the whole file first copied beside it: Optuna would append the next record straight after the cut,
    and no later open could read the journal. The copy, or None when the journal is whole."""
    if not journal.is_file():
        return None
    from optuna.storages.journal import JournalFileSymlinkLock

    lock = JournalFileSymlinkLock(str(journal))  # Optuna's own lock: no worker appends while the journal is cut
    lock.acquire()
    try:
        data = journal.read_bytes()
        whole = whole_records(data)
        if whole == len(data):
            return None
        damaged = data[:whole].count(b"\n") + 1
        if any(line.endswith(b"\n") and is_json(line) for line in data[whole:].splitlines(keepends=True)[1:]):
            # records after the damage: cutting back would drop them and retrain their trials; the study is refused
            raise UsageError(
                f"{journal}: line {damaged:,} is damaged and whole records follow it, so the study cannot "
                f"be read as it is; restore the journal from a copy, or delete that line if it is "
                f"not a trial's (a torn last line alone is mended by itself)"
            )
        copy = write_bytes(journal.with_name(f"{journal.name}.torn-{time.strftime('%Y%m%d-%H%M%S')}"), data)
        with open(journal, "r+b") as f:
            f.truncate(whole)
        return copy
    finally:
        lock.release()


def is_json(line: bytes) -> bool:
    try:
        json.loads(line)
    except (ValueError, RecursionError):
        return False
    return True


def whole_records(data: bytes) -> int:
    """How many bytes at the start of a journal are whole records: lines of JSON, each ending in a newline."""
    end = 0
    for line in data.splitlines(keepends=True):
        if not line.endswith(b"\n") or not is_json(line):
            break
        end += len(line)
    return end


def names_digest(data: Path | None, spec: SweepSpec | None = None) -> str:
    """The fingerprint of the names every trial trains on, read (and so checked) once before any trial; with
    the spec, a file too small to hold validation names out is refused, since no trial would have a score."""
    from minigpt.common.bundled import BUNDLED_NAMES
    from minigpt.config import held_out_count
    from minigpt.files.names_file import digest, read_names

    names = read_names(data if data is not None else BUNDLED_NAMES)
    train = spec.recipe({}, spec.base_seed).train if spec is not None else None
    if train is not None and held_out_count(len(names), train.val_fraction, train.val_max) == 0:
        raise UsageError(
            f"{data or 'the bundled names'}: {len(names)} names leave none for validation at "
            f"train.val_fraction {train.val_fraction:g}, so no trial would have a score; give more "
            f"names, or a larger val_fraction in [set]"
        )
    return digest(names)


def is_study_folder(out_dir: Path) -> bool:
    """Whether a folder holds a sweep's study: what a sweep writes before its first trial."""
    return any((out_dir / name).exists() for name in (STUDY_RECORD, SPEC_COPY, JOURNAL))


def claim_folder(out_dir: Path, spec: SweepSpec, storage: str | None, data: Path | None, names: str) -> None:
    """DIR/study.json: the study the folder's runs belong to. Another study (another storage or study
    name), or the same study on other names, is refused: it would train over these runs or mix its trials in."""
    record = {
        "study": spec.name,
        "storage": without_password(storage) if storage else JOURNAL,
        "data": str(data) if data is not None else "the bundled names",
        "names_digest": names,
    }
    kept = read_study_record(out_dir)
    if kept is None:
        write_text(out_dir / STUDY_RECORD, json.dumps(record, indent=1) + "\n")
        os.chmod(out_dir / STUDY_RECORD, 0o600)  # where a study lives is its owner's business
        return
    if (kept.get("storage"), kept.get("study")) != (record["storage"], record["study"]):
        raise UsageError(
            f"{out_dir} holds the runs of study {kept.get('study')!r} in {masked(kept.get('storage'))}, "
            f"not of {record['study']!r} in {masked(record['storage'])}: choose another --out"
        )
    if kept.get("names_digest") != names:
        raise UsageError(
            f"{out_dir}'s study trains on {kept.get('data')}, and {record['data']} holds other names: "
            f"a study is one question; give its data, or choose another --out"
        )


def read_study_record(out_dir: Path) -> dict | None:
    path = out_dir / STUDY_RECORD
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, RecursionError):
        record = None
    if not isinstance(record, dict) or not all(isinstance(record.get(k), str) for k in ("study", "storage")):
        raise UsageError(f"{path} is damaged: it should say which study the folder belongs to")
    return record


def question(spec: SweepSpec, seeds: int | None, names: str) -> dict:
    """What makes a study one question, as JSON keeps it: two specs that differ here are two studies."""
    budget = (
        f"steps = {spec.steps}"
        if spec.steps
        else f"time_limit = {spec.time_limit}"
        if spec.time_limit
        else "the recipe's"
    )
    asked = {
        "recipe": spec.config,
        "budget": budget,
        "seeds": seeds if seeds is not None else spec.seeds,
        "trials": spec.trials,
        "space": [dataclasses.asdict(d) for d in spec.space],
        "set": spec.fixed,
        "names": names,
    }
    return json.loads(json.dumps(asked))


def claim_study(study, asked: dict, where: str) -> None:
    """The first sweep of a study records its question in the storage; a later one asking another (a spec of
    the same name with another recipe, space, budget or data) is refused, naming the first difference."""
    kept = study.user_attrs.get("question")
    if kept is None:
        study.set_user_attr("question", asked)
        return
    for key, value in asked.items():
        if kept.get(key) != value:
            shown = {"space": "search space", "set": "fixed keys", "names": "names (another data file)"}.get(key, key)
            raise UsageError(
                f"study {study.study_name!r} in {where} asks another question: its {shown} differ from "
                f"this spec's; give this spec another [sweep] name, or run that study's spec"
            )


def mark_trial_runs(out_dir: Path, runs: list[str], trial: int, state: str) -> None:
    """Say in a trial's runs that it did not finish as a study's result ("pruned at step 200", "failed: why",
    "stopped"): their best losses are no trial's score. A disk too full for the note leaves a run unmarked."""
    for name in runs:
        try:
            if (out_dir / name).is_dir():
                write_text(out_dir / name / TRIAL_MARK, json.dumps({"trial": trial, "state": state}) + "\n")
        except MiniGPTError:
            pass


def trial_state(run_dir: Path) -> str | None:
    """What became of the trial a run belonged to, if it did not finish: its mark's state."""
    try:
        mark = json.loads((Path(run_dir) / TRIAL_MARK).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return str(mark.get("state"))[:200] if isinstance(mark, dict) else None
