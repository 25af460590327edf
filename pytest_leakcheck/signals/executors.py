"""Where signature work runs when one machine is not enough: a Dask cluster.

``--executor tcp://HOST:8786`` on the command line (or ``LEAKCHECK_EXECUTOR``
in the job's environment) sends the per-file work (``decode.sign`` and ``decode.pixel_digest``) to
a running ``dask.distributed`` scheduler.  Workers read, digest and decode
files and return rows; this process alone writes the store, so a worker that
dies loses nothing (Dask reruns its tasks elsewhere) and a rerun resumes from
what the store already holds.  The ``aligned`` search sends its blocks of
queries the same way (``detectors/aligned/cluster.py``), through
:meth:`DaskExecutor.share` (its data, to every worker once) and
:meth:`DaskExecutor.ordered` (one task per block, results in block order).

``dask`` and ``distributed`` are imported here, inside functions, and only
when an executor address is given: the core never imports them.

Only the workflow's owner chooses the executor: a flag or the environment,
never the policy, which a pull request writes.  A scheduler runs the check's
code and returns its results; one the pull request picked could run anything
and report any file clean (docs/security.md).
"""

from __future__ import annotations

import functools
import re
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Executor
from contextlib import contextmanager, suppress
from typing import Any

from ..errors import ClusterLost, UsageError

#: Addresses a Dask client accepts: ``tcp://host:port``, ``tls://…``, ``inproc://…``, ``ws://…``.
ADDRESS = re.compile(r"^(tcp|tls|inproc|ws|wss|ucx)://\S+\Z")
#: Files per Dask task: one task per file costs the scheduler more than a decode.
BATCH = 32
#: How long to wait for the scheduler before giving up, in seconds.
CONNECT_TIMEOUT = 20
INSTALL = "pip install 'pytest-leakcheck[dask]'"
#: The job's environment may name the scheduler instead of ``--executor``.
ENV = "LEAKCHECK_EXECUTOR"
#: Tasks :meth:`DaskExecutor.ordered` keeps in flight per worker: one running and one queued
#: keeps a worker busy while the driver gathers in order, and bounds what the driver holds.
IN_FLIGHT = 2


def _run_batch(fn: Callable, items: Sequence) -> list:
    """Run ``fn`` over one batch on a worker; module level so it pickles by reference."""
    return [fn(item) for item in items]


class DaskExecutor(Executor):
    """A ``concurrent.futures.Executor`` over a Dask client that batches ``map``.

    ``distributed``'s own ``ClientExecutor`` ignores ``chunksize`` and submits one
    task per item; at 10^6 files that is the scheduler's whole budget.  Results
    come back in submission order, so the caller can write them as they arrive.
    """

    def __init__(self, client: Any, batch: int = BATCH) -> None:
        self.client = client
        self.batch = batch

    def submit(self, fn: Callable, /, *args: Any, **kwargs: Any) -> Any:
        return self.client.submit(fn, *args, pure=False, **kwargs)

    def map(self, fn: Callable, *iterables: Iterable, timeout: float | None = None,
            chunksize: int = 1) -> Iterator:
        items = list(zip(*iterables)) if len(iterables) > 1 else list(iterables[0])
        call = fn if len(iterables) == 1 else functools.partial(_star, fn)
        # Up to `batch` files per task, but at least four tasks per worker, so a
        # small job still spreads over the cluster (chunksize is for local pools).
        workers = max(1, len(self.client.scheduler_info().get("workers", ())))
        size = max(1, min(self.batch, -(-len(items) // (4 * workers))))
        batches = [items[k:k + size] for k in range(0, len(items), size)]
        futures = self.client.map(functools.partial(_run_batch, call), batches, pure=False)

        def results() -> Iterator:
            try:
                with _lost_cluster():
                    for future in futures:
                        yield from future.result(timeout=timeout)
            finally:
                with suppress(Exception):  # a client that lost its scheduler may refuse
                    self.client.cancel([f for f in futures if not f.done()])

        return results()

    def share(self, value: Any) -> Any:
        """``value`` sent once to every worker (scattered, broadcast): a future that tasks take as an
        argument, so each task ships only its own inputs.  :meth:`release` it when done."""
        with _lost_cluster():
            return self.client.scatter([value], broadcast=True, hash=False)[0]

    def release(self, shared: Any) -> None:
        with suppress(Exception):  # a lost cluster has let go of it already
            shared.release()

    def ordered(self, fn: Callable, shared: Any, items: Iterable, name: str = "leakcheck") -> Iterator:
        """``fn(shared, item)`` on the workers, one task per item named ``name-…``, results in item order.

        Items are submitted as results are taken, :data:`IN_FLIGHT` per worker:
        the driver never holds every item's inputs at once, and the order of
        the results never depends on which worker was quicker.
        """
        workers = max(1, len(self.client.scheduler_info().get("workers", ())))
        window = max(2, IN_FLIGHT * workers)
        pending: deque = deque()
        try:
            with _lost_cluster():
                for item in items:
                    # The item inside an opaque partial: Dask reads no task or key into its tuples.
                    pending.append(self.client.submit(functools.partial(_given, fn, item), shared,
                                                      key=f"{name}-{uuid.uuid4().hex}", pure=False))
                    if len(pending) >= window:
                        yield pending.popleft().result()
                while pending:
                    yield pending.popleft().result()
        finally:
            with suppress(Exception):
                self.client.cancel([f for f in pending if not f.done()])

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self.client.close()


@contextmanager
def _lost_cluster() -> Iterator[None]:
    """A scheduler that went away (its futures cancelled, its connection closed) or a task
    that killed worker after worker, as a :class:`ClusterLost` rather than a traceback.

    A worker that dies once is not an error: Dask reruns its tasks on another.
    An exception a task raises itself passes through unchanged (a bug is a bug).
    """
    from concurrent.futures import CancelledError

    from distributed import KilledWorker
    from distributed.comm.core import CommClosedError

    fix = f"the store keeps what was done: run again once the cluster is back, or without --executor / {ENV}"
    try:
        yield
    except KilledWorker as exc:
        raise ClusterLost("a task killed one Dask worker after another (out of memory?): "
                          f"{type(exc).__name__}", fix=fix) from None
    except (CancelledError, CommClosedError) as exc:
        raise ClusterLost(f"lost the Dask cluster mid-check ({type(exc).__name__})", fix=fix) from None


def _client(client_class: Any, spec: str) -> Any:
    """A connected client, or a :class:`UsageError` within about ``CONNECT_TIMEOUT`` seconds.

    ``Client(timeout=…)`` bounds the TCP connect but not the handshake after it:
    a silent service at the address held the check forever.  So the client is
    made on a daemon thread and waited for with a deadline of our own.
    """
    fix = ("start one with `dask scheduler` and workers with `dask worker ADDRESS`, "
           f"or drop --executor / {ENV} to use local processes")
    made: dict[str, Any] = {}

    def make() -> None:
        try:
            made["client"] = client_class(spec, timeout=CONNECT_TIMEOUT, set_as_default=False)
        except BaseException as exc:  # handed to the caller's thread below
            made["error"] = exc

    thread = threading.Thread(target=make, name="leakcheck-dask-connect", daemon=True)
    thread.start()
    thread.join(CONNECT_TIMEOUT + 2)
    if thread.is_alive():
        raise UsageError(f"the Dask scheduler at {spec} did not answer within {CONNECT_TIMEOUT} s", fix=fix)
    exc = made.get("error")
    if isinstance(exc, (OSError, TimeoutError)):
        raise UsageError(f"cannot reach the Dask scheduler at {spec}: {type(exc).__name__}", fix=fix) from None
    if exc is not None:  # a service speaking another protocol fails inside distributed's comms
        raise UsageError(f"{spec} did not answer as a Dask scheduler ({type(exc).__name__})", fix=fix) from None
    return made["client"]


def _given(fn: Callable, item: Any, shared: Any) -> Any:
    return fn(shared, item)


def _star(fn: Callable, args: tuple) -> Any:
    return fn(*args)


def check_address(address: str, *, where: str, key: str | None = None) -> str:
    """The address, stripped, or a :class:`UsageError` naming ``where`` it came from."""
    address = address.strip()
    if not ADDRESS.match(address):
        raise UsageError(f"executor {address!r} is not a Dask scheduler address", path=where, key=key,
                         fix="write it as tcp://HOST:8786 (the address `dask scheduler` prints)")
    return address


@contextmanager
def connect(spec: str | Executor | None) -> Iterator[Executor | None]:
    """An executor for ``spec``: ``None`` (the local pool), an executor passed in, or an address.

    An address connects a ``distributed.Client`` for the duration of the block.
    """
    if spec is None or isinstance(spec, Executor):
        yield spec
        return
    try:
        from distributed import Client
    except ImportError:
        raise UsageError(f"executor {spec!r} needs dask.distributed, which is not installed",
                         fix=INSTALL) from None

    class QuietClient(Client):  # type: ignore[misc,valid-type]
        """A client whose failed start does not print a traceback when it is collected."""

        def __del__(self) -> None:
            with suppress(Exception):
                super().__del__()

    client = _client(QuietClient, spec)

    with DaskExecutor(client) as executor:
        yield executor
