"""Hamming matrices by numpy against faiss's popcount kernel (``search/popcount.py``): time and equality.

Run by hand: ``PYTHONPATH=. python benchmarks/popcount_speed.py``.  It times, best of ``--repeat``,
the two Hamming matrices a check computes: the hash search's block (``search/kernels._popcount_block``,
N x N hashes of 64 and 256 bits, 8 orientations) and same-scene's tentative matches
(``features.hamming``, 384 x 384 ORB descriptors of 32 bytes), each by numpy and by faiss, and
fails unless both give the same distances in the same dtype.  ``--min-over``: numpy's least distance
over orientations, one whole matrix per orientation against the search's cache-sized steps.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import numpy as np


def best(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def both(fn: Callable[[], np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``fn`` with numpy's kernel, then with faiss's."""
    from pytest_leakcheck.search import popcount

    kernel = popcount._kernel
    popcount._kernel = lru_cache(maxsize=1)(lambda: None)
    try:
        plain = fn()
    finally:
        popcount._kernel = kernel
    return plain, fn()


def min_over(repeat: int) -> None:
    """The brute hash search's block (1,048 query rows x 4,000 x 8 orientations of 64 bits, the shape
    ``blocks`` gives for 4,000 reference rows): the least distance over orientations, one whole
    matrix per orientation against ``kernels._least_over_orientations``' cache-sized steps; numpy
    only, CPU seconds (steadier than wall time on a loaded machine)."""
    from pytest_leakcheck.search import kernels, popcount

    popcount._kernel = lru_cache(maxsize=1)(lambda: None)  # numpy's kernel, whether faiss is installed or not
    rng = np.random.default_rng(0)
    qa = rng.integers(0, 2**63, (1048, 8, 1), dtype=np.uint64)
    qb = rng.integers(0, 2**63, (4000, 1), dtype=np.uint64)

    def whole() -> np.ndarray:
        out = kernels._popcount_block(qa[:, 0], qb)
        for k in range(1, 8):
            np.minimum(out, kernels._popcount_block(qa[:, k], qb), out=out)
        return out

    assert np.array_equal(whole(), kernels._least_over_orientations(qa, qb))
    for name, fn in (("whole matrices", whole), ("steps", lambda: kernels._least_over_orientations(qa, qb))):
        spent = []
        for _ in range(repeat):
            t = time.process_time()
            fn()
            spent.append(time.process_time() - t)
        print(f"least over 8 orientations, 1048 x 4000, {name}: {1e3 * min(spent):.1f} ms CPU")


def main() -> None:
    import os

    os.environ.setdefault("LEAKCHECK_FAISS", "1")  # the kernel is used only when asked for
    from pytest_leakcheck.detectors.same_scene import features
    from pytest_leakcheck.search import kernels, popcount

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1600, help="hashes on each side of the block")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--min-over", action="store_true", help="time the brute search's least over orientations")
    args = parser.parse_args()
    if args.min_over:
        return min_over(args.repeat)
    if not popcount.available():
        raise SystemExit("faiss is not installed: pip install faiss-cpu")
    rng = np.random.default_rng(0)
    for words in (1, 4):
        qa = rng.integers(0, 2**63, (args.n, 8, words), dtype=np.uint64)
        qb = rng.integers(0, 2**63, (args.n, words), dtype=np.uint64)

        def block() -> np.ndarray:
            return np.stack([kernels._popcount_block(qa[:, k], qb) for k in range(8)])

        plain, fast = both(block)
        assert plain.dtype == fast.dtype and np.array_equal(plain, fast)
        t_plain, t_fast = both(lambda: np.array(best(block, args.repeat)))
        print(f"hash block {args.n} x {args.n} x 8 orientations, {64 * words} bits: "
              f"numpy {1e3 * t_plain:.1f} ms, faiss {1e3 * t_fast:.1f} ms")
    da = rng.integers(0, 256, (384, 32), dtype=np.uint8)
    db = rng.integers(0, 256, (384, 32), dtype=np.uint8)
    plain, fast = both(lambda: features.hamming(da, db))
    assert plain.dtype == fast.dtype and np.array_equal(plain, fast)
    t_plain, t_fast = both(lambda: np.array(best(lambda: [features.hamming(da, db) for _ in range(100)],
                                                 args.repeat) / 100))
    print(f"ORB descriptors 384 x 384: numpy {1e3 * t_plain:.3f} ms, faiss {1e3 * t_fast:.3f} ms a pair")


if __name__ == "__main__":
    main()
