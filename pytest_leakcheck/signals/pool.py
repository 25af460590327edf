"""Worker processes that stop with the check.

The decode pool is the only place leakcheck runs code in other processes.  A
check interrupted by Ctrl-C or SIGTERM, or failing, must stop its workers at
once (not let them decode the rest of the queue) and must itself end within a
second or two, whatever the workers were doing; a driver killed outright must
leave no orphans.  Workers hold no state: only the driver writes the store,
so killing them loses nothing.

So the pool is our own, not ``concurrent.futures.ProcessPoolExecutor``: that
one has a manager thread reading the workers' results, and a worker killed
while writing one leaves it blocked on the pipe for ever, with the driver
waiting for it in ``shutdown`` (and again at interpreter exit).  Here the
driver's own thread talks to each worker over a pipe of their own, two chunks
in flight each; stopping is SIGKILL to every worker, closing the pipes and a
bounded join, with signals held so a second SIGTERM cannot cut it short.  Any
other ``concurrent.futures.Executor`` (a Dask cluster, executors.py) can be
passed in instead of the local pool.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Executor
from multiprocessing.connection import Connection, wait
from typing import Any

from . import heap

_HELD = {signal.SIGINT, signal.SIGTERM}
#: How long stopping waits for one killed worker to be gone, in seconds.
STOP_TIMEOUT = 2.0
#: Chunks in flight per worker: the one it works on and one waiting in its pipe.  A chunk
#: of tasks pickles to a few kB, far below the pipe's buffer, so a send never blocks.
DEPTH = 2


class WorkerDied(RuntimeError):
    """A worker ended without a result: killed from outside (the kernel's OOM killer), or crashed."""


def _worker_init() -> None:
    # Ctrl-C reaches the whole process group, but only the driver acts on it
    # (it stops the workers); SIGTERM kills a worker outright, whatever
    # handler it inherited from the driver through fork.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if hasattr(signal, "pthread_sigmask"):  # held by the driver over the fork
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _HELD)
    # A driver killed outright (SIGKILL; SIGTERM where no handler stops the
    # pool, as under pytest) cannot stop its workers, so they watch for it.
    threading.Thread(target=_exit_when_orphaned, args=(os.getppid(),), daemon=True).start()
    heap.keep_freed_memory()  # a worker makes the searches' short-lived arrays by the thousand


def _exit_when_orphaned(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)


def _serve(conn: Connection) -> None:
    """A worker: read ``(fn, chunk)``, answer ``(True, results)`` or ``(False, exception)``; ``None`` ends it."""
    _worker_init()
    while True:
        try:
            task = conn.recv()
        except EOFError:  # the driver is gone
            return
        if task is None:
            return
        fn, chunk = task
        try:
            answer: tuple[bool, Any] = (True, [fn(item) for item in chunk])
        except Exception as exc:  # the driver raises it, as an executor would
            answer = (False, exc)
        try:
            conn.send(answer)
        except Exception as exc:  # a result or an exception that does not pickle
            conn.send((False, RuntimeError(f"{type(exc).__name__}: {exc}")))


def run_map(fn: Callable, items: Sequence, executor: Executor | None, jobs: int | None) -> Iterable:
    """``map(fn, items)`` in order, on ``executor``, a pool of our own, or inline."""
    chunk = max(1, min(64, len(items) // (4 * (jobs or 2)) or 1))
    if executor is not None:
        return executor.map(fn, items, chunksize=chunk)
    jobs = jobs or os.cpu_count() or 1
    if jobs <= 1 or len(items) < 4 * jobs:
        return map(fn, items)  # not worth a pool
    return map_all(fn, items, chunk, jobs)


def map_all(fn: Callable, items: Sequence, chunksize: int, jobs: int) -> Iterator:
    """``fn(x) for x in items``, in order, as results arrive, in ``jobs`` worker processes.

    Results stream so that progress can follow them.  On any exception,
    KeyboardInterrupt and SIGTERM's Terminated included (or the consumer
    stopping early), every worker is killed before it propagates, and the
    driver waits at most :data:`STOP_TIMEOUT` per worker.
    """
    chunks = [items[k:k + chunksize] for k in range(0, len(items), chunksize)]
    workers: list[tuple[Any, Connection]] = []
    try:
        _start(workers, min(jobs, len(chunks)))
        yield from _results(fn, chunks, workers)
    finally:
        _stop(workers)


def _start(workers: list, count: int) -> None:
    from .opencv import before_fork

    before_fork()  # OpenCV's thread limit is set here, never first in a worker (signals/opencv.py)
    ctx = multiprocessing.get_context()
    # Forked workers would take a Ctrl-C like the driver until their
    # initializer runs: hold signals over the fork.
    held = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD) if hasattr(signal, "pthread_sigmask") else None
    try:
        for _ in range(count):
            ours, theirs = ctx.Pipe()
            proc = ctx.Process(target=_serve, args=(theirs,), daemon=True)
            try:
                proc.start()
            finally:
                theirs.close()  # only the worker holds its end: its death is EOF here, never a blocked read
            workers.append((proc, ours))
    finally:
        if held is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _results(fn: Callable, chunks: list, workers: list) -> Iterator:
    """Deal chunks out, up to :data:`DEPTH` in flight per worker, and yield results in order.

    A worker answers its chunks in the order it got them.  The second chunk waits in the
    worker's pipe, so a worker that finishes while the driver is busy with results
    (writing them to the store) starts the next one at once
    instead of idling until the driver comes back to ``wait``.
    """
    queued: dict[Connection, deque[int]] = {conn: deque() for _, conn in workers}
    done: dict[int, list] = {}
    sent = given = 0
    while given < len(chunks):
        sent = _deal(fn, chunks, sent, queued)
        while given in done:
            yield from done.pop(given)
            given += 1
        if given >= len(chunks):
            break
        for conn in wait([c for c, q in queued.items() if q]):
            done[queued[conn].popleft()] = _answer(conn)


def _answer(conn: Connection) -> list:
    """One chunk's results from a worker; its exception raised here, its death as WorkerDied."""
    try:
        ok, payload = conn.recv()
    except (EOFError, OSError):
        raise WorkerDied("a worker ended without a result (killed from outside, "
                         "e.g. by the out-of-memory killer?)") from None
    if not ok:
        raise payload
    return payload


class Running:
    """``fn`` over ``items`` in ``jobs`` worker processes, one chunk each, dealt at once: they
    work while the driver does something else (the next detector's search).

    :meth:`results` waits for them and returns every result in order; leaving the
    context (an exception, a SIGTERM's Terminated) kills whatever still runs, as
    :func:`map_all` does.  Workers are forked, so ``fn`` may read what the driver
    set up before (a module's global), without pickling it.
    """

    def __init__(self, fn: Callable, items: Sequence, jobs: int) -> None:
        size = -(-len(items) // max(1, min(jobs, len(items))))
        chunks = [items[k:k + size] for k in range(0, len(items), size)]
        self.workers: list[tuple[Any, Connection]] = []
        try:
            _start(self.workers, len(chunks))
            for (_, conn), chunk in zip(self.workers, chunks):
                conn.send((fn, chunk))  # read at once by a worker waiting for it: never blocks for long
        except BaseException:
            self.stop()
            raise

    def results(self) -> list:
        try:
            return [r for _, conn in self.workers for r in _answer(conn)]
        finally:
            self.stop()

    def stop(self) -> None:
        workers, self.workers = self.workers, []
        _stop(workers)

    def __enter__(self) -> Running:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


#: The work :func:`shared_map`'s forked workers call (set just before they fork).
_SHARED_WORK: Callable[[Any], Any] | None = None


def _call_shared(item: Any) -> Any:
    assert _SHARED_WORK is not None
    return _SHARED_WORK(item)


def shared_map(work: Callable[[Any], Any], items: Sequence, jobs: int) -> list:
    """``work`` of each of ``items``, in order, in ``jobs`` forked workers (:class:`Running`).

    ``work`` (a bound method of what the driver set up: squares, pairs) is read by the
    workers as they fork, never pickled; only the items and the results are sent.
    """
    global _SHARED_WORK
    _SHARED_WORK = work
    try:
        with Running(_call_shared, items, jobs) as running:
            return running.results()
    finally:
        _SHARED_WORK = None


def _deal(fn: Callable, chunks: list, sent: int, queued: dict[Connection, deque[int]]) -> int:
    """Send chunks from ``sent`` on: first to idle workers, then a second to each busy one.

    A second chunk is queued only while there are more chunks left than workers, so that
    at the end no chunk waits behind a busy worker while another worker has nothing.
    """
    for depth in range(DEPTH):
        for conn, q in queued.items():
            if sent >= len(chunks):
                return sent
            if len(q) == depth and (depth == 0 or len(chunks) - sent > len(queued)):
                conn.send((fn, chunks[sent]))
                q.append(sent)
                sent += 1
    return sent


def _stop(workers: list) -> None:
    """End every worker within a bounded time.

    Signals are held over it, and a signal that still gets through (handled
    on another thread's watch) is raised only after every step ran: a second
    SIGTERM cannot leave a worker behind.
    """
    held = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD) if hasattr(signal, "pthread_sigmask") else None
    late: BaseException | None = None
    steps = [proc.kill for proc, _ in workers] + [step for proc, conn in workers for step in (
        conn.close, lambda proc=proc: proc.join(STOP_TIMEOUT))]
    for step in steps:
        try:
            step()
        except BaseException as exc:
            late = late or exc
    if held is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
    if late is not None:
        raise late
