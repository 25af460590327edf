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
# Inverted file: from IVF_MIN rows the index would get about one list per LIST_SIZE rows, fitted by
# KMEANS_ROUNDS of k-means on up to KMEANS_SAMPLE rows, and each query view probes its NPROBE
# nearest lists (a query costs NPROBE x LIST_SIZE products, whatever the dataset's size);
# queries go IVF_QUERY_BLOCK at a time.
# OFF for now (IVF_MIN out of reach): measured at 50,000 images, the list-by-list products
# are 3x slower than the exact blocked search (many small products, each a BLAS call), so
# retrieval stays exact until they are batched.  Tests force it on (IVF_MIN = 0).
IVF_MIN, LIST_SIZE, NPROBE = 1 << 62, 1024, 12
KMEANS_ROUNDS, KMEANS_SAMPLE, IVF_QUERY_BLOCK = 8, 65_536, 32_768
#: Queries from which a block's lists are searched on threads.
IVF_THREADS_FROM = 4096
#: Threads for the search's blocks (each holds up to two blocks of QUERY_BLOCK_VALUES floats).
THREADS = min(2, os.cpu_count() or 1)


# --------------------------------------------------------------------------
# Retrieval: gradient descriptors, reduced by a PCA fitted on the data, top-k by blocked products


@dataclass(frozen=True)
class Index:
    """A linear projection of the 128-d gradient descriptor to ``len(basis.T)`` dimensions."""

    mean: np.ndarray  # (128,)
    basis: np.ndarray  # (128, d)
    #: (lists, d) unit centroids of the inverted file, None below IVF_MIN rows (exact search).
    centroids: np.ndarray | None = None

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


# --------------------------------------------------------------------------
# Beyond IVF_MIN references: an inverted file, so a query costs the same at any dataset size


def fit_lists(vec: np.ndarray, n_rows: int) -> np.ndarray | None:
    """Spherical k-means centroids (about one per LIST_SIZE rows) of the projected sample ``vec``, or None.

    Deterministic: started from the first rows of the (content-keyed)
    sample, a fixed number of rounds.  Kept with the index in the store, so
    a query probes the same lists in every run until the index is refitted.
    """
    n_lists = n_rows // LIST_SIZE
    if n_rows < IVF_MIN or n_lists < 2 * NPROBE or len(vec) < n_lists:
        return None
    cent = vec[np.linspace(0, len(vec) - 1, n_lists).astype(np.int64)].copy()
    for _ in range(KMEANS_ROUNDS):
        near = _assign(vec, cent)
        sums = np.zeros_like(cent)
        np.add.at(sums, near, vec)
        norm = np.linalg.norm(sums, axis=1, keepdims=True)
        cent = np.where(norm > 0, sums / np.maximum(norm, 1e-12), cent).astype(np.float32)
    return cent


def _assign(vec: np.ndarray, cent: np.ndarray) -> np.ndarray:
    """Nearest centroid of each row, in blocks."""
    out = np.zeros(len(vec), np.int64)
    step = max(1, QUERY_BLOCK_VALUES // max(1, len(cent)))
    for a in range(0, len(vec), step):
        out[a:a + step] = (vec[a:a + step] @ cent.T).argmax(1)
    return out


def ivf_topk(queries: list[np.ndarray], ref: np.ndarray, ref_list: np.ndarray, cent: np.ndarray, k: int,
             exclude: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`topk` among the references in each query view's NPROBE nearest lists.

    Whether a reference is seen depends on the query, the reference and the
    centroids alone, not on which other files exist.  Queries go in blocks,
    and within a block list by list: one product of the queries probing a
    list with that list's members, so memory is linear and time is
    (queries x NPROBE x list size).
    """
    n, m = len(queries[0]), len(ref)
    out = np.full((n, k), -1, np.int64)
    view = np.zeros((n, k), bool)
    if not n or not m:
        return out, view
    order = np.argsort(ref_list, kind="stable")
    bounds = np.searchsorted(ref_list[order], np.arange(len(cent) + 1))
    for a in range(0, n, IVF_QUERY_BLOCK):
        b = min(n, a + IVF_QUERY_BLOCK)
        got = _ivf_block([q[a:b] for q in queries], ref, order, bounds, cent, k,
                         None if exclude is None else exclude[a:b])
        out[a:b], view[a:b] = got
    return out, view


def _ivf_block(queries: list[np.ndarray], ref: np.ndarray, order: np.ndarray, bounds: np.ndarray,
               cent: np.ndarray, k: int, exclude: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    n = len(queries[0])
    # (query, view) pairs probing each list.
    probes = [np.argpartition(-(q @ cent.T), NPROBE - 1, axis=1)[:, :NPROBE] for q in queries]
    qv = np.concatenate([np.repeat(np.arange(n) + v * n, NPROBE) for v in range(len(queries))])
    lists = np.concatenate([p.ravel() for p in probes])
    by_list = np.argsort(lists, kind="stable")
    qv, lists = qv[by_list], lists[by_list]
    starts = np.searchsorted(lists, np.arange(len(cent) + 1))
    allq = np.concatenate(queries)

    def one(c: int) -> list[tuple[np.ndarray, ...]]:
        members = order[bounds[c]:bounds[c + 1]]
        every = qv[starts[c]:starts[c + 1]]
        if not len(members) or not len(every):
            return []
        kk = min(k, len(members))
        out = []
        # k-means lists are uneven, and a popular list is asked by many: the products stay
        # within QUERY_BLOCK_VALUES floats whatever the list.
        step = max(1, QUERY_BLOCK_VALUES // len(members))
        for a in range(0, len(every), step):
            asking = every[a:a + step]
            # Members by queries, then turned: OpenBLAS takes 20x longer for a few rows by many.
            s = np.ascontiguousarray((ref[members] @ allq[asking].T).T)
            if exclude is not None:
                s[exclude[asking % n][:, None] == members[None, :]] = -np.inf
            idx = _top(s, kk)
            score = np.take_along_axis(s, idx, 1)
            out.append((np.repeat(asking % n, kk), members[idx].ravel(), score.ravel(), np.repeat(asking >= n, kk)))
        return out

    asked = np.flatnonzero(starts[1:] > starts[:-1])
    # A few queries (a commit, a pull request) touch many lists a little: threads cost more than they save.
    done = in_blocks(one, asked) if n >= IVF_THREADS_FROM else [one(c) for c in asked]
    parts = [x for part in done for x in part]
    q, r, s, v = (np.concatenate(x) for x in zip(*parts)) if parts else (np.zeros(0, np.int64),) * 4
    keep = np.isfinite(s)
    q, r, s, v = q[keep], r[keep], s[keep], v[keep].astype(bool)
    # A reference met by both views (or through two lists) counts once, at its best view.
    first = np.lexsort((v, -s, r, q))
    q, r, s, v = q[first], r[first], s[first], v[first]
    one_each = np.ones(len(q), bool)
    one_each[1:] = (q[1:] != q[:-1]) | (r[1:] != r[:-1])
    q, r, s, v = q[one_each], r[one_each], s[one_each], v[one_each]
    best = np.lexsort((r, -s, q))
    q, r, v = q[best], r[best], v[best]
    rank = np.arange(len(q)) - np.searchsorted(q, q)
    keep = rank < k
    out = np.full((n, k), -1, np.int64)
    view = np.zeros((n, k), bool)
    out[q[keep], rank[keep]] = r[keep]
    view[q[keep], rank[keep]] = v[keep]
    return out, view
