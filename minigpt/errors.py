"""How minigpt ends early, and how it says so: one line for the user, never a traceback.

Bad input the user can fix exits 2 (`UsageError`), a failure while running exits 1
(`RunError`), a run stopped by a signal exits 128 + its number (`Interrupted`). The command
line turns them into one line and an exit code; the Python API raises them as they are.
"""

from __future__ import annotations


class MiniGPTError(Exception):
    """A failure to report as one line, without a traceback."""

    exit_code = 1


class UsageError(MiniGPTError):
    """Bad usage or input: a file, an option or a config value the user can fix."""

    exit_code = 2


class RunError(MiniGPTError):
    """Something went wrong while running (a non-finite loss, a failed write)."""

    exit_code = 1


class Interrupted(MiniGPTError):
    """Training stopped by SIGINT or SIGTERM after saving; exits 128 + the signal number."""

    def __init__(self, message: str, signum: int):
        super().__init__(message)
        self.exit_code = 128 + signum
