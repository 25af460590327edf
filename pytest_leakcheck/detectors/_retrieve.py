"""Retrieval for the ``aligned`` detector: gradient descriptors reduced by a PCA fitted on
the data, and each query's top-k references by blocked products, in linear memory.

The descriptors themselves, and everything after retrieval (alignment, the
verdict, calibration), are in ``_align.py``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

R = TypeVar("R")

# Retrieval: PCA of the gradient descriptor to PCA_DIMS, fitted on PCA_SAMPLE rows;
# columns grouped by GROUP for the top-k bound; a query block's scores hold
# about QUERY_BLOCK_VALUES floats (64 MB), whatever the dataset size.
PCA_DIMS, PCA_SAMPLE, GROUP = 32, 4000, 64
QUERY_BLOCK_VALUES = 1 << 24
#: Threads for the search's blocks (each holds up to two blocks of QUERY_BLOCK_VALUES floats).
THREADS = min(2, os.cpu_count() or 1)


# --------------------------------------------------------------------------
# Retrieval: gradient descriptors, reduced by a PCA fitted on the data, top-k by blocked products


@dataclass(frozen=True)
class Index:
    """A linear projection of the 128-d gradient descriptor to ``len(basis.T)`` dimensions."""

    mean: np.ndarray  # (128,)
    basis: np.ndarray  # (128, d)

    def project(self, hog_rows: np.ndarray) -> np.ndarray:
        """Unit vectors (N, d) float32: cosine retrieval in the reduced space."""
        x = (np.asarray(hog_rows, np.float32) - self.mean) @ self.basis
        return x / (np.linalg.norm(x, axis=1, keepdims=True) + 1e-6)


def fit_index(hog_rows: np.ndarray) -> Index:
    """PCA of the gradient descriptors of (an evenly spaced sample of) the rows given.

    Measured on the visible CIFAR half, a 32-d projection keeps the listed
    partners' ranks (98 % in the top 16, as the full 128-d descriptor) at a
    quarter of the product's cost.  The sample is spaced by row, not by
    split, so relabelling splits leaves the index unchanged.  Too few rows for
    a stable fit: no reduction, only centring.
    """
    x = np.asarray(hog_rows, np.float32)
    step = max(1, len(x) // PCA_SAMPLE)
    sample = x[::step][:PCA_SAMPLE]
    mean = sample.mean(0) if len(sample) else np.zeros(x.shape[1], np.float32)
    if len(sample) < 8 * PCA_DIMS:
        return Index(mean.astype(np.float32), np.eye(x.shape[1], dtype=np.float32))
    # Eigenvectors of the 128 x 128 covariance: the SVD of the sample itself costs seconds.
    centred = (sample - mean).astype(np.float64)
    _, vec = np.linalg.eigh(centred.T @ centred)
    return Index(mean.astype(np.float32), np.ascontiguousarray(vec[:, ::-1][:, :PCA_DIMS], np.float32))


def _top(s: np.ndarray, k: int) -> np.ndarray:
    """Column indices of each row's k largest entries, in no particular order.

    A full argpartition of every row costs more than the product itself.
    Instead the columns are cut into groups of GROUP: a row's k largest
    entries lie in the k groups with the largest maxima (a group outside
    them is beaten by k group maxima, so by k entries), and only those k
    groups are gathered and partitioned.  One pass over the block (the
    group maxima), no pass sorting it.
    """
    n, m = s.shape
    if m < 4 * GROUP * k:
        return np.argpartition(-s, k - 1, axis=1)[:, :k]
    starts = np.arange(0, m, GROUP)
    gmax = np.maximum.reduceat(s, starts, axis=1)
    groups = np.argpartition(-gmax, k - 1, axis=1)[:, :k]
    c = (starts[groups][:, :, None] + np.arange(GROUP)).reshape(n, k * GROUP)
    v = np.take_along_axis(s, np.minimum(c, m - 1), 1)
    v[c >= m] = -np.inf  # the last group may be short
    return np.take_along_axis(c, np.argpartition(-v, k - 1, axis=1)[:, :k], 1)


def in_blocks(fn: Callable[[int], R], starts: Iterable[int]) -> list[R]:
    """``fn`` of each block start, in order; on THREADS threads when there are several blocks.

    The blocks of the search are independent, and numpy and BLAS release the
    GIL in most of the products, reductions and gathers they are made of:
    on two cores, two threads cut the search on the visible CIFAR half by
    about a tenth, with the same result.
    """
    starts = list(starts)
    if THREADS < 2 or len(starts) < 2:
        return [fn(a) for a in starts]
    with ThreadPoolExecutor(THREADS) as pool:
        return list(pool.map(fn, starts))


def topk(queries: list[np.ndarray], ref: np.ndarray, k: int,
         exclude: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(N, k) indices into ``ref`` of each query's best cosines over its views, -1 padded, and which view won.

    ``queries`` are the views of the same N queries (identity, mirror): a
    reference's similarity is its best over the views, and the winning view
    is the only one verification looks at.  ``exclude`` (N,) is a reference
    index each query must not retrieve (itself, within a split), or -1.
    Blocks of queries keep memory linear in the reference count.
    """
    n, m = len(queries[0]), len(ref)
    k_eff = min(k, m - (0 if exclude is None else int((exclude >= 0).any())))
    out = np.full((n, k), -1, np.int64)
    view = np.zeros((n, k), bool)
    if k_eff <= 0 or not n:
        return out, view
    step = max(1, QUERY_BLOCK_VALUES // max(1, m))

    def block(a: int) -> None:
        b = min(n, a + step)
        s = queries[0][a:b] @ ref.T
        second = queries[1][a:b] @ ref.T if len(queries) > 1 else None
        if second is not None:
            np.maximum(s, second, out=s)
        if exclude is not None:
            e = exclude[a:b]
            hit = np.flatnonzero(e >= 0)
            s[hit, e[hit]] = -np.inf
        idx = _top(s, k_eff)
        out[a:b, :k_eff] = idx
        if second is not None:
            view[a:b, :k_eff] = np.take_along_axis(second, idx, 1) >= np.take_along_axis(s, idx, 1)

    in_blocks(block, range(0, n, step))
    if exclude is not None:
        out[out == exclude[:, None]] = -1
    return out, view & (out >= 0)
