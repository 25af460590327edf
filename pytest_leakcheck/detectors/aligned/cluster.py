"""The ``aligned`` search's blocks on the owner's Dask cluster, when the check has one.

With ``--executor`` / ``LEAKCHECK_EXECUTOR`` (never the policy: only the
owner decides where code runs) the verification blocks of the search and the
impostor blocks of the calibration go to the cluster's workers, one task per
block of queries.  What every block reads (the search's :class:`~.pairs.Data`
and :class:`~.pairs.Plan`: grey squares, descriptors, projected vectors,
index) is scattered to every worker once, when the first block is sent; each
task then carries only its own queries and their candidate lists.  The driver
keeps the retrieval (it holds the lists) and takes the blocks' results in
block order, so the pairs and the levels are the ones a local search gives.

Without a Dask executor (none, or a local pool passed in as an object) there
is no farm and the search runs as it always has, on this process's threads.
``dask`` and ``distributed`` are imported only by the executor that runs it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor
from contextlib import contextmanager
from typing import Any

from ...signals.executors import DaskExecutor
from .pairs import Data, Plan


class Farm:
    """Sends a search's blocks to a Dask cluster (a :data:`~.pairs.Farm`).

    The shared data is scattered on first use, not when the farm is made: an
    incremental check that searches nothing in full sends nothing.
    """

    def __init__(self, executor: DaskExecutor, data: Data, p: Plan) -> None:
        self.executor = executor
        self.data = data
        self.p = p
        self.shared: Any = None

    def __call__(self, fn: Callable[[Data, Plan, Any], Any], jobs: Iterable[Any],
                 tick: Callable[[int], None]) -> list:
        if self.shared is None:
            self.shared = self.executor.share((self.data, self.p))
        out = []
        # Tasks named after the block function (aligned-verify_block-…): the cluster's dashboard
        # and task stream say which part of the check they are.
        for result in self.executor.ordered(functools.partial(_run, fn), self.shared, jobs,
                                            name=f"aligned-{fn.__name__}"):
            out.append(result)
            tick(1)
        return out

    def close(self) -> None:
        if self.shared is not None:
            self.executor.release(self.shared)
            self.shared = None


def _run(fn: Callable[[Data, Plan, Any], Any], shared: tuple[Data, Plan], job: Any) -> Any:
    """One block on a worker: module level, so it pickles by reference, as ``fn`` does."""
    return fn(*shared, job)


@contextmanager
def farm(executor: Executor | None, data: Data, p: Plan) -> Iterator[Farm | None]:
    """A :class:`Farm` on ``executor`` when it is the owner's Dask cluster, else None (the local search);
    what it scattered is released on the way out."""
    if not isinstance(executor, DaskExecutor):
        yield None
        return
    f = Farm(executor, data, p)
    try:
        yield f
    finally:
        f.close()
