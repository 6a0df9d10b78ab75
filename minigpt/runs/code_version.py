"""Which code trained a run: the minigpt version, the git commit and whether the tree was changed when it
ran from a clone, beside the digest of the core's files (which the Trainer records itself, training.py's
`core_digest`, copied out or not). A run keeps it in its checkpoints, metrics.jsonl and config.toml; `minigpt compare`
keeps runs of other code apart."""

from __future__ import annotations

import subprocess
from importlib import metadata
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent
GIT_WAIT = 5  # seconds: git answers in milliseconds; a hung one costs a run no more than this


def git(*args: str) -> str | None:
    """What git prints in the package's clone, or None (no clone, no git, or an error)."""
    try:
        # no optional locks: a status then takes no lock on the index, so a run stopped while git reads (its child
        # killed) never leaves the user's clone with a stale index.lock
        done = subprocess.run(
            ["git", "--no-optional-locks", "-C", str(PACKAGE.parent), *args],
            capture_output=True,
            text=True,
            timeout=GIT_WAIT,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def code_record() -> dict:
    """{"minigpt": version} and, in a clone, "commit" and "changed" (whether the package's files differ from that
    commit): what a run adds to the Trainer's own record of the core's digest."""
    record: dict = {"minigpt": installed_version()}
    top = git("rev-parse", "--show-toplevel")
    if top is not None and Path(top).resolve() == PACKAGE.parent:  # the package's own clone, not one around it
        commit, changes = git("rev-parse", "HEAD"), git("status", "--porcelain", "--", "minigpt")
        if commit:
            record.update(commit=commit, changed=bool(changes) if changes is not None else None)
    return record


def installed_version() -> str | None:
    try:
        return metadata.version("minigpt-names")
    except metadata.PackageNotFoundError:  # run from a folder, not installed
        return None


def code_text(code: dict) -> str:
    """`minigpt 0.1.0, commit 1a2b3c4d (changed), core 9f8e7d6c`: a code record in words."""
    if not code:
        return "unknown (imported)"
    parts = [f"minigpt {code['minigpt']}"] if code.get("minigpt") else []
    if code.get("commit"):
        parts.append(f"commit {code['commit'][:8]}{' (changed)' if code.get('changed') else ''}")
    return ", ".join(parts + [f"core {str(code.get('core', 'unknown'))[:8]}"])
