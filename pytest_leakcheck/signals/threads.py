"""One BLAS thread per process while a check computes.

A check's parallelism is its worker processes (``--jobs``, one per core by
default), and the driver searches while they verify (``same_scene``'s
background workers).  OpenBLAS would add a thread per core to every matrix
product on top, and the small products the searches make (96 x 96 squares,
32 px templates) then spend their time waiting on each other: measured on a
busy 2-core machine, the fine verdict's products ran 10 to 45 times slower
with OpenBLAS's default threads than with one (``benchmarks/photos2mp.py``
prints the check against a bare decode of the same files).  Without
threadpoolctl installed nothing is limited.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """BLAS limited to one thread in this process (and the workers it forks) for the block, as it was after.

    Call it once numpy is imported: the limit applies to the libraries loaded then.
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # an optional speed-up: the check is the same without it
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield
