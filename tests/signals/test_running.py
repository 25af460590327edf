"""``pool.Running``: work dealt to forked workers at once, taken later in order, stopped on the way out."""

from __future__ import annotations

import os
import time

import pytest

from pytest_leakcheck.signals import pool

#: Set before the workers fork: what they read without it being sent (as same-scene's features are).
_OFFSET = 0


def _shifted(x: int) -> tuple[int, int]:
    return x + _OFFSET, os.getpid()


def _slow(x: int) -> int:
    time.sleep(30)
    return x


def _fails(x: int) -> int:
    if x == 7:
        raise ValueError("item 7 is bad")
    return x


def test_results_come_in_order_from_forked_workers() -> None:
    global _OFFSET
    _OFFSET = 1000
    try:
        with pool.Running(_shifted, list(range(101)), jobs=2) as work:
            out = work.results()
    finally:
        _OFFSET = 0
    assert [v for v, _ in out] == [x + 1000 for x in range(101)]
    pids = {pid for _, pid in out}
    assert len(pids) == 2 and os.getpid() not in pids  # two workers, neither the driver


def test_leaving_early_kills_the_workers() -> None:
    with pool.Running(_slow, [1, 2, 3, 4], jobs=2) as work:
        procs = [proc for proc, _ in work.workers]
        assert all(proc.is_alive() for proc in procs)
    assert not any(proc.is_alive() for proc in procs)


def test_an_exception_in_a_worker_is_raised_by_results_and_ends_the_workers() -> None:
    work = pool.Running(_fails, list(range(10)), jobs=2)
    procs = [proc for proc, _ in work.workers]
    with pytest.raises(ValueError, match="item 7"):
        work.results()
    assert not any(proc.is_alive() for proc in procs)
