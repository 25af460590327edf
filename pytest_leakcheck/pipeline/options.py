"""How a run goes: the options every stage of one check shares, in one value.

Its own module, below the stages, so that ``signatures`` and ``matches`` can take it
without importing the assembly (run.py) that imports them; run.py re-exports it.
"""

from __future__ import annotations

from concurrent.futures import Executor
from dataclasses import dataclass

from ..progress import SILENT, Progress


@dataclass(frozen=True)
class RunOptions:
    """How a run goes, chosen by its caller (flags, environment), never by the policy.

    ``jobs``: worker processes for the per-file decode (default: one per core).
    ``executor``: a Dask scheduler address or any ``concurrent.futures`` executor
    for that work (default: local processes); see :mod:`executors`.  ``progress``
    hears of each long stage (progress.py).  ``use_cache=False``: a temporary
    store (deleted when the run ends) instead of the policy's ``cache``.
    ``state_slot``: a run that is not the check (`leakcheck split`'s pooled check) keeps its
    search state in a slot of the store of its own, so the check's stays (``Store._slotted``),
    and saves no last report.
    """

    jobs: int | None = None
    executor: str | Executor | None = None
    progress: Progress = SILENT
    use_cache: bool = True
    state_slot: str = ""

    @property
    def pool(self) -> Executor | None:
        """The executor for the stages: an address must have been connected (``run.run`` does)."""
        if isinstance(self.executor, str):
            raise TypeError(f"executor {self.executor!r} is an address: run() connects it")
        return self.executor
