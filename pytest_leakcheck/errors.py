"""One error hierarchy and the exit codes every way in shares."""

from __future__ import annotations

from .files.names import log_line

#: No error-level finding outside the baseline.
EXIT_CLEAN = 0
#: At least one error-level finding.
EXIT_LEAKS = 1
#: Usage, policy, baseline or store error.
EXIT_USAGE = 2
#: An unexpected exception: a bug in leakcheck, never a verdict on the data.
EXIT_INTERNAL = 3
#: Interrupted by Ctrl-C (SIGINT) or by SIGTERM (a cancelled CI job): 128 + the signal.
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143


class LeakcheckError(Exception):
    """An error the user can fix; its message names the file, the key and the fix.

    Every way in (CLI, pytest, pre-commit, Action) turns it into exit code 2 and
    prints ``str(error)``, never a traceback.  The message quotes file names and
    policy text, which a pull request controls, so it is built as one
    :func:`~pytest_leakcheck.files.names.log_line`: no control character, no workflow command.
    """

    def __init__(
        self,
        problem: str,
        *,
        path: str | None = None,
        line: int | None = None,
        key: str | None = None,
        fix: str | None = None,
    ) -> None:
        self.problem = problem
        self.path = path
        self.line = line
        self.key = key
        self.fix = fix
        super().__init__(self.render())

    def render(self) -> str:
        where = ""
        if self.path:
            where = self.path + (f":{self.line}" if self.line else "") + ": "
        key = f"`{self.key}`: " if self.key else ""
        fix = f" ({self.fix})" if self.fix else ""
        return log_line(f"{where}{key}{self.problem}{fix}")


class PolicyError(LeakcheckError):
    """The policy file is missing, malformed or inconsistent."""


class StoreError(LeakcheckError):
    """The signature store cannot be opened or written."""


class StoreDamaged(StoreError):
    """The store's contents are damaged; the check sets it aside, rebuilds it and runs again."""


class Terminated(BaseException):
    """SIGTERM arrived.  A BaseException, like KeyboardInterrupt, so that it
    unwinds through every ``except Exception`` to the way in, stopping worker
    pools and rolling back open store transactions on the way."""


class BaselineError(LeakcheckError):
    """The baseline file is invalid or written by a newer leakcheck."""


class UsageError(LeakcheckError):
    """A command-line option or argument is wrong."""


class MissingExtra(LeakcheckError):
    """The dataset needs an optional extra that is not installed (DICOM files without pydicom)."""


class ClusterLost(LeakcheckError):
    """The Dask cluster the owner named went away, or kept killing its workers, mid-check.

    Not a bug and not a verdict: what the store holds stays, and the check can
    be run again (on the cluster once it is back, or locally without ``--executor``).
    """
