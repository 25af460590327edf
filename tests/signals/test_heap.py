"""A check's workers keep freed memory for reuse instead of faulting it in again (signals/heap.py)."""

from __future__ import annotations

import platform
import resource
import sys

import numpy as np
import pytest

from pytest_leakcheck.signals import pool

glibc = pytest.mark.skipif(not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc",
                           reason="mallopt's thresholds are glibc's")


def _churn(_: int) -> int:
    """Minor page faults over five rounds of three 12 MB arrays made, touched and freed (after one round
    that may fault): the pattern of the searches' temporaries, a few MB each, by the thousand."""
    def once() -> float:
        arrays = [np.ones(12 << 17) for _ in range(3)]
        return sum(float(a[-1]) for a in arrays)

    once()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(5):
        once()
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


@glibc
def test_workers_reuse_freed_memory_instead_of_faulting_it_in_again() -> None:
    """glibc's defaults give the 36 MB back at each free (about 5,000 faults a worker here, 740,000 in a
    check of ``webcam`` of benchmarks/field.py); a worker of the pool keeps it (a few faults)."""
    faults = list(pool.map_all(_churn, [0, 1], 1, 2))
    assert max(faults) < 500, faults
