"""Where per-file work runs: inline, on a local process pool, or on an executor passed in.

Only picklable module-level functions and small task values cross this
boundary, so the same work can run on any ``concurrent.futures.Executor``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor


def default_executor(jobs: int | None, tasks: int) -> Executor | None:
    """A process pool when the work is worth one; ``None`` means run inline."""
    jobs = jobs or os.cpu_count() or 1
    if jobs <= 1 or tasks < 4 * jobs:
        return None
    return ProcessPoolExecutor(max_workers=jobs)


def run_map(fn: Callable, items: Sequence, executor: Executor | None, jobs: int | None) -> Iterable:
    """``map(fn, items)`` in order, on ``executor``, a pool of our own, or inline."""
    chunk = max(1, min(64, len(items) // (4 * (jobs or 2)) or 1))
    if executor is not None:
        return executor.map(fn, items, chunksize=chunk)
    own = default_executor(jobs, len(items))
    if own is None:
        return map(fn, items)
    return _streamed(own, fn, items, chunk)


def _streamed(own: Executor, fn: Callable, items: Sequence, chunk: int) -> Iterator:
    # Results as they come, not all at the end, so that progress can follow them;
    # the pool shuts down when the last one has been taken.
    with own:
        yield from own.map(fn, items, chunksize=chunk)
