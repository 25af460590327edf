"""The one call every way in makes, assembled once: policy in, report out.

:func:`check` is the public entry point (``pytest_leakcheck.check``); :func:`run`
is the same assembly returning the inventory and signatures beside the report.
``check``, ``--changed-since``, the pre-commit hook, ``export``, the Great
Expectations integration and ``pytest --leakcheck`` all come here, so each of
these is decided in one place only:

- where the store lives (:func:`store_location`: ``LEAKCHECK_CACHE``, else the
  policy's ``cache`` contained in the policy's folders or the user's cache);
- what the dataset is (:func:`take_inventory`: the walk with its treatment of
  links, hidden files and what it could not examine, the groups, and the
  refusal of a check over nothing);
- what a focus on some paths means (:func:`focused`: a path names a file, or
  every file below it when it is a folder or a link to one, so a pull request
  adding ``test/more -> ../train`` focuses on the files the link brings in);
- the signatures and the search, once, with the store's damage recovered.

Nothing here prints, reads argv or exits; the CLI, the pytest plugin, the
pre-commit hook and the GitHub Action decide what to do with the report.
"""

from __future__ import annotations

import gc
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from concurrent.futures import Executor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..dataset import groups, inventory, labels, metagroups
from ..files import members
from ..policy.load import Policy, load
from ..progress import SILENT, Progress
from ..report import baseline
from ..report.model import Report
from ..signals import executors
from ..errors import StoreError
from ..store import pseudonyms
from ..store.db import Store, discard_if_new, open_store, recovering
from ..store.storefile import locate
from . import conflicts, findings, matches, preflight, saved
from .options import RunOptions

__all__ = ["Focus", "Run", "RunOptions", "check", "focused", "last_or_check", "open_policy_store", "run",
           "store_location", "take_inventory"]

if TYPE_CHECKING:
    from ..dataset.inventory import Inventory
    from ..signals.families import Signatures


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
    passed in stays open; one opened here (the policy's ``cache``, or a temporary
    one with ``use_cache=False``) is closed before returning.

    ``focus`` (paths relative to the policy root) limits the search and the
    findings to those files, compared against the whole dataset: what a
    pre-commit hook or a pull request needs.  A folder, or a link to one,
    stands for every file below it (:func:`focused`).

    ``jobs``, ``use_cache``, ``progress`` and ``executor`` are those of
    :class:`RunOptions`.  Only the caller chooses the executor (a flag or the
    job's environment), never the policy: the policy is the pull request's.
    """
    if policy is None:
        if policy_path is None:
            raise TypeError("check() needs policy_path or policy")
        policy = load(policy_path)
    opts = RunOptions(jobs=jobs, executor=executor, progress=progress, use_cache=use_cache)
    return run(policy, store=store, focus=focus, opts=opts).report


@dataclass(frozen=True)
class Run:
    """What one assembled run produced: the report, and the inventory and signatures it was built from."""

    report: Report
    inventory: Inventory
    signatures: Signatures


def store_location(policy: Policy, use_cache: bool = True) -> Path | None:
    """Where the store of ``policy`` lives (``None``: a temporary store), by the one containment rule."""
    return locate(policy.cache, policy.store_folders) if use_cache else None


def open_policy_store(policy: Policy, use_cache: bool = True) -> Store:
    """The store at :func:`store_location`; the caller closes it."""
    return open_store(store_location(policy, use_cache))


def take_inventory(policy: Policy, progress: Progress = SILENT) -> Inventory:
    """The dataset as every way in sees it; a check over nothing is a policy error (preflight.py)."""
    inv = groups.resolve(inventory.scan(policy, progress))
    preflight.require_sight(inv)  # before any image is read
    preflight.require_readers(inv)
    return inv


@dataclass(frozen=True)
class Focus:
    """Paths a hook or a pull request changed, and what they touch.

    A path names a file, or every file below it when it is a folder or a link
    to one (a pull request adding ``test/more -> ../train`` changes every file
    the link brings in); a folder the check could not examine is touched by
    a changed path below it.
    """

    paths: frozenset[str]
    ancestors: frozenset[str]

    @classmethod
    def of(cls, paths: Iterable[str]) -> Focus:
        wanted = frozenset(p for p in (str(q).replace("\\", "/").rstrip("/") for q in paths) if p)
        ancestors = {p[:k] for p in wanted for k in range(len(p)) if p[k] == "/"}
        return cls(wanted, frozenset(ancestors))

    def touches(self, path: str) -> bool:
        """Whether ``path`` is a focus path, lies below one, or is a folder holding one."""
        if path in self.paths or path in self.ancestors:
            return True
        if members.SEP in path and (shard := members.shard_of(path)) != path:  # a member: its shard's focus
            return self.touches(shard)
        cut = path.rfind("/")
        while cut > 0:
            if path[:cut] in self.paths:
                return True
            cut = path.rfind("/", 0, cut)
        return False


def focused(inv: Inventory, focus: Iterable[str]) -> set[str]:
    """The paths a focus names: each given path, and every file or issue it touches."""
    wanted = Focus.of(focus)
    touched = {r.path for r in inv.records if wanted.touches(r.path)}
    touched |= {i.path for i in inv.issues if wanted.touches(i.path)}
    return set(wanted.paths) | touched


def run(
    policy: Policy,
    *,
    store: Store | None = None,
    focus: Iterable[str] | None = None,
    opts: RunOptions = RunOptions(),
) -> Run:
    """The whole pipeline on ``policy``; ``store`` passed in stays open, one opened here is closed."""
    t0 = time.perf_counter()
    judged = baseline.load(policy.baseline)  # before the slow part: a broken baseline fails at once
    own = store is None
    if store is None:
        store = open_policy_store(policy, opts.use_cache)
    slot, store.slot = store.slot, opts.state_slot
    try:
        with executors.connect(opts.executor) as ex, _without_cycle_collection():
            connected = replace(opts, executor=ex)
            # Any damage the store shows during the check: set aside, rebuilt, run again.
            done = recovering(store, lambda: _pipeline(policy, store, focus, t0, connected))
        return Run(baseline.apply(done.report, judged, complete=focus is None), done.inventory, done.signatures)
    except StoreError:
        if own:  # a store this run made and could not write (a full disk) does not stay to fill it
            discard_if_new(store)
        raise
    finally:
        store.slot = slot
        if own:
            store.close()


def last_or_check(policy: Policy, opts: RunOptions = RunOptions()) -> tuple[Report, bool]:
    """The last full check's report when the files and the policy are as it saw them
    (``saved.py``), with the baseline of now; else a full check.  True when reused."""
    judged = baseline.load(policy.baseline)
    store = open_policy_store(policy, opts.use_cache)
    try:
        if opts.use_cache:
            found = saved.load(store, saved.state_key(take_inventory(policy, opts.progress)))
            if found is not None:
                return baseline.apply(found, judged, complete=True), True
        return run(policy, store=store, opts=opts).report, False
    finally:
        store.close()


@contextmanager
def _without_cycle_collection() -> Iterator[None]:
    """The cyclic garbage collector paused for the check, as it was after.

    A check makes a few container objects per file (records, paths, rows) and no
    cycles worth collecting before it ends; the collector's passes over them are
    a measurable share of a commit hook's CPU at 50,000 images (the hook's time is
    measured by ``benchmarks/hook_speed.py``).  Reference counting still frees
    everything as usual.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _pipeline(policy: Policy, store: Store, focus: Iterable[str] | None, t0: float, opts: RunOptions) -> Run:
    import numpy  # noqa: F401  (loaded before the BLAS limit, which applies to the libraries loaded)

    from ..signals.threads import one_blas_thread

    with one_blas_thread():  # the check's parallelism is its processes (signals/threads.py)
        return _computed(policy, store, focus, t0, opts)


def _computed(policy: Policy, store: Store, focus: Iterable[str] | None, t0: float, opts: RunOptions) -> Run:
    import numpy as np

    from . import signatures

    inv = take_inventory(policy, opts.progress)
    policy = inv.policy  # a manifest may have filled in the split names
    # A focus check (hook, pull request) reads the snapshot of the last
    # full check but does not pay for rewriting it.
    sigs = signatures.compute(inv.records, policy, store, opts, update_snapshot=focus is None)
    if metagroups.rules(policy):  # groups read from inside the files, as pseudonyms
        inv = groups.resolve(inv, metagroups.values(inv.records, sigs, pseudonyms.key(store.path)))
    t_sign = time.perf_counter()
    wanted = None if focus is None else focused(inv, focus)
    mask = None if wanted is None else np.array([r.path in wanted for r in inv.records], dtype=bool)
    found, figures = matches.search(inv, sigs, policy, store, opts, focus=mask)
    stats = dict(sigs.stats)
    stats["seconds_search"] = round(time.perf_counter() - t_sign, 3)
    stats.update(figures)
    stats["seconds"] = round(time.perf_counter() - t0, 3)
    per_split = Counter(r.split for r in inv.records)  # one pass: this ran once per split
    stats["splits"] = {s: per_split[s] for s in inv.splits}
    stats["unassigned"] = sum(1 for i in inv.issues if i.kind == "unassigned")  # compared with nothing
    if (animated := _animated(inv, sigs)):
        stats["animated"] = animated
    report = replace(findings.build(found, inv, sigs, policy, focus=wanted, extra=groups.findings(inv)),
                     stats=stats, warnings=tuple(store.warnings))
    report = conflicts.apply(report, labels.of(inv), policy.label_conflict)
    if focus is None and not store.slot:  # what `leakcheck report --html` reuses while nothing changes
        saved.save(store, saved.state_key(inv), report)
    return Run(report, inv, sigs)


def _animated(inv: Inventory, sigs: Signatures) -> dict[str, Any]:
    """How many images hold several frames (animated GIF, PNG, WebP), of which only the first was checked,
    and the first of them by path; {} when none.  Said in the report: a copy in a later frame is missed."""
    import numpy as np

    frames = sigs.arrays.get("frames")
    if frames is None:
        return {}
    rows = np.flatnonzero(sigs.valid & (frames[:, 0] > 1))
    if not len(rows):
        return {}
    paths = sorted(inv.records[int(r)].path for r in rows)
    return {"images": len(rows), "frames": int(frames[rows, 0].sum()), "first": paths[0]}
