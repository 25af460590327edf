"""The one call every way in makes: policy in, report out.

Nothing here prints, reads argv or exits; the CLI, the pytest plugin, the
pre-commit hook and the GitHub Action decide what to do with the report.
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import Executor
from pathlib import Path

from ..policy.load import Policy, load
from ..progress import SILENT, Progress
from ..report.model import Report
from ..store.db import Store
from .run import run


def check(
    policy_path: str | Path | None = None,
    *,
    policy: Policy | None = None,
    store: Store | None = None,
    jobs: int | None = None,
    use_cache: bool = True,
    focus: Iterable[str] | None = None,
    progress: Progress = SILENT,
    executor: str | Executor | None = None,
) -> Report:
    """Run the whole pipeline and return the report.

    Pass either ``policy_path`` or an already loaded ``policy``.  A ``store``
    passed in stays open; one opened here (the policy's ``cache``, or memory
    with ``use_cache=False``) is closed before returning.

    ``focus`` (paths relative to the policy root) limits the search and the
    findings to those files, compared against the whole dataset: what a
    pre-commit hook or a pull request needs.  A folder, or a link to one,
    stands for every file below it (``run.focused``).

    ``progress`` hears of each long stage (progress.py); by default nothing does.
    ``executor`` (a Dask scheduler address, or any ``concurrent.futures``
    executor; default: local processes) runs the per-file decode work; see
    :mod:`executors`.  Only the caller chooses it (a flag or the job's
    environment), never the policy: the policy is the pull request's.
    """
    if policy is None:
        if policy_path is None:
            raise TypeError("check() needs policy_path or policy")
        policy = load(policy_path)
    # The one assembly every way in shares (run.py): store location, inventory, focus, search.
    return run(policy, store=store, jobs=jobs, use_cache=use_cache, focus=focus, progress=progress,
               executor=executor).report
