"""Worker processes that stop with the check.

The decode pool is the only place leakcheck runs code in other processes.  A
check interrupted by Ctrl-C or SIGTERM, or failing, must not leave workers
decoding the rest of the queue (what leaving ``with ProcessPoolExecutor()``
would wait for), nor orphans when the driver itself is killed outright.
Workers hold no state: only the driver writes the store, so killing them
loses nothing.  Any other ``concurrent.futures.Executor`` (a Dask cluster,
executors.py) can be passed in instead of the local pool.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor

_HELD = {signal.SIGINT, signal.SIGTERM}


def start_pool(jobs: int) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(max_workers=jobs, initializer=_worker_init)


def _worker_init() -> None:
    # Ctrl-C reaches the whole process group, but only the driver acts on it
    # (it stops the workers); SIGTERM kills a worker outright, whatever
    # handler it inherited from the driver through fork.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if hasattr(signal, "pthread_sigmask"):  # held by map_all over the fork
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _HELD)
    # A driver killed outright (SIGKILL; SIGTERM where no handler stops the
    # pool, as under pytest) cannot stop its workers, so they watch for it.
    threading.Thread(target=_exit_when_orphaned, args=(os.getppid(),), daemon=True).start()


def _exit_when_orphaned(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)


def _apply(fn: Callable, chunk: Sequence) -> list:
    return [fn(item) for item in chunk]


def default_executor(jobs: int | None, tasks: int) -> ProcessPoolExecutor | None:
    """A process pool when the work is worth one; ``None`` means run inline."""
    jobs = jobs or os.cpu_count() or 1
    if jobs <= 1 or tasks < 4 * jobs:
        return None
    return start_pool(jobs)


def run_map(fn: Callable, items: Sequence, executor: Executor | None, jobs: int | None) -> Iterable:
    """``map(fn, items)`` in order, on ``executor``, a pool of our own, or inline."""
    chunk = max(1, min(64, len(items) // (4 * (jobs or 2)) or 1))
    if executor is not None:
        return executor.map(fn, items, chunksize=chunk)
    own = default_executor(jobs, len(items))
    if own is None:
        return map(fn, items)
    return map_all(own, fn, items, chunk)


def map_all(pool: ProcessPoolExecutor, fn: Callable, items: Sequence, chunksize: int) -> Iterator:
    """``fn(x) for x in items``, in order, as results arrive, in ``pool``, which is shut down after.

    Results stream so that progress can follow them.  On any exception,
    KeyboardInterrupt and SIGTERM's Terminated included (or the consumer
    stopping early), the workers are killed before it propagates.  Futures
    are never cancelled here (Executor.map would): a pool broken by the kill
    fails them itself, and both at once race inside concurrent.futures
    before Python 3.12.
    """
    try:
        # The first submit forks the workers, which would take a Ctrl-C like
        # the driver until their initializer runs: hold signals over it.
        held = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD) if hasattr(signal, "pthread_sigmask") else None
        try:
            futures = [pool.submit(_apply, fn, items[k:k + chunksize]) for k in range(0, len(items), chunksize)]
        finally:
            if held is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, held)
        for future in futures:
            yield from future.result()
    except BaseException:
        workers = list((getattr(pool, "_processes", None) or {}).values())  # no public API before 3.14
        for proc in workers:
            proc.kill()
        for proc in workers:
            proc.join()
        raise
    finally:
        pool.shutdown(wait=True)
