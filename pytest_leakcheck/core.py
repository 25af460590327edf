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

from . import aligned, baseline, findings, groups, inventory, search, signatures
from .findings import Report
from .policy import Policy, load
from .store import Store, open_store, recovering
from .storefile import locate


def check(
    policy_path: str | Path | None = None,
    *,
    policy: Policy | None = None,
    store: Store | None = None,
    jobs: int | None = None,
    executor: Executor | None = None,
    use_cache: bool = True,
    focus: Iterable[str] | None = None,
) -> Report:
    """Run the whole pipeline and return the report.

    Pass either ``policy_path`` or an already loaded ``policy``.  A ``store``
    passed in stays open; one opened here (the policy's ``cache``, or memory
    with ``use_cache=False``) is closed before returning.

    ``focus`` (paths relative to the policy root) limits the search and the
    findings to those files, compared against the whole dataset: what a
    pre-commit hook or a pull request needs.
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
        store = open_store(locate(policy.cache, (policy.path.parent, policy.root)) if use_cache else None)
    def run() -> Report:
        nonlocal policy
        inv = groups.resolve(inventory.scan(policy))
        policy = inv.policy  # a manifest may have filled in the split names
        # A focus check (hook, pull request) reads the snapshot of the last
        # full check but does not pay for rewriting it.
        sigs = signatures.compute(inv.records, policy, store, jobs=jobs, executor=executor,
                                  update_snapshot=focus is None)
        t_sign = time.perf_counter()
        mask = None
        if focus is not None:
            wanted = {str(p).replace("\\", "/") for p in focus}
            mask = np.array([r.path in wanted for r in inv.records], dtype=bool)
        if mask is None:
            found = search.find_incremental(inv, sigs, policy, store)
        else:
            found = search.find(inv, sigs, policy, focus=mask)
        matches = list(found.matches)
        # Needs the store for its calibrated threshold, so it runs beside search.find.
        near, calibration = aligned.find(inv, sigs, policy, store, focus=mask)
        if calibration:
            # With alignment on, a hash or thumbnail hit must also line up.
            matches = aligned.verify_matches(inv, sigs, policy, matches, calibration["threshold"])
        matches += near
        if policy.detectors.identical_pixels != "off" and found.pixel_candidates:
            rows = sorted({r for pair in found.pixel_candidates for r in pair})
            pixels = signatures.pixel_digests(rows, inv.records, sigs, policy, store, jobs=jobs)
            matches += search.identical_pixels(found.pixel_candidates, pixels, sigs)
        t_search = time.perf_counter()
        stats = dict(sigs.stats)
        stats["seconds_search"] = round(t_search - t_sign, 3)
        if calibration:
            stats["aligned"] = calibration
        stats["seconds"] = round(time.perf_counter() - t0, 3)
        per_split = Counter(r.split for r in inv.records)  # one pass: this ran once per split
        stats["splits"] = {s: per_split[s] for s in inv.splits}
        # A split with no image is almost always a wrong glob or folder, and a
        # check over nothing must not look like a clean one.
        empty = [
            f"split `{s}` has no images; check its globs or manifest rows in {policy.path.name}"
            for s in inv.splits if not per_split[s]
        ]
        report = findings.build(matches, inv, sigs, policy, stats=stats, warnings=[*store.warnings, *empty],
                                focus=None if focus is None else wanted, extra=groups.findings(inv))
        return baseline.apply(report, judged, complete=focus is None)
    try:  # a store found damaged anywhere in run() is rebuilt, and run() runs again
        return recovering(store, run)
    finally:
        if own:
            store.close()
