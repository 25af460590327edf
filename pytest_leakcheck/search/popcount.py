"""Hamming distance matrices between packed binary codes by faiss's popcount kernel (the ``faiss`` extra).

numpy has no popcount of a whole row: its Hamming matrices are one XOR and one
``bitwise_count`` pass per 64-bit word, each writing the full matrix. They were a large part
of same-scene's verification (384 x 384 ORB descriptors of 32 bytes: 0.7-1.4 ms a pair, against
0.07-0.08 ms here, ``benchmarks/popcount_speed.py``) and of the hash searches. faiss counts a
pair's words in registers, on the calling thread. The distances are integers, so the same
either way: callers fall back to numpy where faiss is missing.

Only when asked: ``LEAKCHECK_FAISS=1`` in the environment (the workflow owner's, like the other
engines' switches). An optional engine is never imported because it happens to be installed
(``tests/cli/test_lean.py``): a default check, and the pre-commit hook, stay as lean with the extra
installed as without it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import lru_cache

import numpy as np


#: The environment variable that asks for faiss's kernel.
ASK = "LEAKCHECK_FAISS"


@lru_cache(maxsize=1)
def _kernel() -> Callable[[np.ndarray, np.ndarray, np.ndarray], None] | None:
    """faiss's ``hammings`` (a, b, out), or None unless asked for (:data:`ASK`) and installed."""
    if os.environ.get(ASK) != "1":
        return None
    try:
        import faiss
    except ImportError:  # an optional speed-up: the distances are the same without it
        return None

    def run(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
        faiss.hammings(faiss.swig_ptr(a), faiss.swig_ptr(b), len(a), len(b), a.shape[1], faiss.swig_ptr(out))

    return run


def available() -> bool:
    """Whether :func:`matrix` computes (asked for, and faiss is installed)."""
    return _kernel() is not None


def matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    """(len(a), len(b)) int32 Hamming distances between the rows of two (N, bytes) uint8 arrays, or None
    without faiss (rows copied C-contiguous first where they are not)."""
    run = _kernel()
    if run is None:
        return None
    out = np.empty((len(a), len(b)), np.int32)
    if len(a) and len(b):
        run(np.ascontiguousarray(a, np.uint8), np.ascontiguousarray(b, np.uint8), out)
    return out
