"""The one call every way in makes: policy in, report out.

Nothing here prints, reads argv or exits; the CLI, the pytest plugin, the
pre-commit hook and the GitHub Action decide what to do with the report.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import Executor
from pathlib import Path

import numpy as np

from ..report import baseline
from . import preflight as blind, findings, search, signatures
from ..signals import executors
from ..dataset import groups, inventory
from ..report.model import Report
from ..policy.load import Policy, load
from ..progress import SILENT, Progress
from ..errors import StoreError
from ..store.db import Store, discard_if_new, open_store, recovering
from ..store.storefile import locate


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
    pre-commit hook or a pull request needs.

    ``progress`` hears of each long stage (progress.py); by default nothing does.
    ``executor`` (a Dask scheduler address, or any ``concurrent.futures``
    executor; default: local processes) runs the per-file decode work; see
    :mod:`executors`.  Only the caller chooses it (a flag or the job's
    environment), never the policy: the policy is the pull request's.
    """
    t0 = time.perf_counter()
    if policy is None:
        if policy_path is None:
            raise TypeError("check() needs policy_path or policy")
        policy = load(policy_path)
    # Read before the slow part, so that a broken baseline fails at once.
    judged = baseline.load(policy.baseline)
    own = store is None
    if store is None:
        store = open_store(locate(policy.cache, policy.store_folders) if use_cache else None)
    try:
        with executors.connect(executor) as ex:
            # Any damage the store shows during the check: set aside, rebuilt, run again.
            report = recovering(store, lambda: _pipeline(policy, store, jobs, focus, t0, progress, ex))
        return baseline.apply(report, judged, complete=focus is None)
    except StoreError:
        if own:  # a store this run made and could not write (a full disk) does not stay to fill it
            discard_if_new(store)
        raise
    finally:
        if own:
            store.close()


def _pipeline(policy: Policy, store: Store, jobs: int | None, focus: Iterable[str] | None, t0: float,
              progress: Progress = SILENT, executor: Executor | None = None) -> Report:
    inv = groups.resolve(inventory.scan(policy, progress))
    policy = inv.policy  # a manifest may have filled in the split names
    blind.require_sight(inv)  # before any image is read: a check over nothing is a policy error
    # A focus check (hook, pull request) reads the snapshot of the last
    # full check but does not pay for rewriting it.
    sigs = signatures.compute(inv.records, policy, store, jobs=jobs, update_snapshot=focus is None,
                              progress=progress, executor=executor)
    t_sign = time.perf_counter()
    wanted = None if focus is None else {str(p).replace("\\", "/") for p in focus}
    mask = None if wanted is None else np.array([r.path in wanted for r in inv.records], dtype=bool)
    matches, found = search.search(inv, sigs, policy, store, focus=mask, jobs=jobs, progress=progress,
                                   executor=executor)
    stats = dict(sigs.stats)
    stats["seconds_search"] = round(time.perf_counter() - t_sign, 3)
    stats.update(found)
    stats["seconds"] = round(time.perf_counter() - t0, 3)
    per_split = Counter(r.split for r in inv.records)  # one pass: this ran once per split
    stats["splits"] = {s: per_split[s] for s in inv.splits}
    return findings.build(matches, inv, sigs, policy, stats=stats, warnings=list(store.warnings),
                          focus=wanted, extra=groups.findings(inv))
