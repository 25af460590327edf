"""Retrieval for the ``aligned`` detector: gradient descriptors reduced by a PCA fitted on
the data, and each query's top-k references by blocked products, in linear memory.

The descriptors themselves, and everything after retrieval (alignment, the
verdict, calibration), are in ``alignment.py``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from . import lists

R = TypeVar("R")

# Retrieval: PCA of the gradient descriptor to PCA_DIMS, fitted on PCA_SAMPLE rows;
# columns grouped by GROUP for the top-k bound; a query block's scores hold
# about QUERY_BLOCK_VALUES floats (64 MB), whatever the dataset size.
PCA_DIMS, PCA_SAMPLE, GROUP = 32, 4000, 64
QUERY_BLOCK_VALUES = 1 << 24
# Inverted file: from IVF_MIN rows the index would get about one list per LIST_SIZE rows, fitted by
# k-means (search/lists.py) on up to KMEANS_SAMPLE rows, and each query view probes its NPROBE
# nearest lists (a query costs NPROBE x LIST_SIZE products, whatever the dataset's size);
# queries go IVF_QUERY_BLOCK at a time.
# On from IVF_MIN references (docs/scale.md):
# measured on 32-d clustered vectors, 2 views, 2 threads, the exact search and the inverted
# file cost about the same at 50,000 rows (8 s against 7 s), the inverted file 3.5x less at
# 100,000 and 5x less at 200,000, keeping 96 % and 91 % of the exact top 8.  Below 100,000
# (CIFAR-10's 60,000 included) retrieval stays exact, so the quality figures do not move.
IVF_MIN, LIST_SIZE, NPROBE = 100_000, 1024, 12
KMEANS_SAMPLE, IVF_QUERY_BLOCK = 65_536, 8192
#: Column groups of ``_top`` within one list (a list is about LIST_SIZE wide, too narrow for GROUP).
LIST_GROUP = 16
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


def _top(s: np.ndarray, k: int, group: int = GROUP) -> np.ndarray:
    """Column indices of each row's k largest entries, in no particular order.

    A full argpartition of every row costs more than the product itself.
    Instead the columns are cut into groups of GROUP: a row's k largest
    entries lie in the k groups with the largest maxima (a group outside
    them is beaten by k group maxima, so by k entries), and only those k
    groups are gathered and partitioned.  One pass over the block (the
    group maxima), no pass sorting it.
    """
    n, m = s.shape
    if m < 4 * group * k:
        return np.argpartition(-s, k - 1, axis=1)[:, :k]
    starts = np.arange(0, m, group)
    # Group maxima by halving (neighbouring columns, then neighbouring pairs, ...; GROUP is a
    # power of two), not ``maximum.reduceat`` or a max over a short last axis: both walk
    # each short segment on its own, and cost three times the product they follow.
    full = m - m % group
    gmax = s[:, :full]
    while gmax.shape[1] > full // group:
        gmax = np.maximum(gmax[:, 0::2], gmax[:, 1::2])
    if full < m:
        gmax = np.concatenate([gmax, s[:, full:].max(1, keepdims=True)], 1)
    groups = np.argpartition(-gmax, k - 1, axis=1)[:, :k]
    c = (starts[groups][:, :, None] + np.arange(group)).reshape(n, k * group)
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

    Deterministic (``search/lists.py``).  Kept with the index in the store, so a
    query probes the same lists in every run until the index is refitted.
    """
    n_lists = n_rows // LIST_SIZE
    if n_rows < IVF_MIN or n_lists < 2 * NPROBE or len(vec) < n_lists:
        return None
    return lists.fit(vec, n_lists)


def ivf_topk(queries: list[np.ndarray], ref: np.ndarray, ref_list: np.ndarray, cent: np.ndarray, k: int,
             exclude: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`topk` among the references in each query view's NPROBE nearest lists.

    Whether a reference is seen depends on the query, the reference and the
    centroids alone, not on which other files exist.  Queries go in blocks,
    and within a block list by list: one product of every (query, view)
    probing a list with that list's members, so memory is linear and time is
    (queries x views x NPROBE x list size) products, whatever the dataset's size.
    """
    n, m = len(queries[0]), len(ref)
    out = np.full((n, k), -1, np.int64)
    view = np.zeros((n, k), bool)
    if not n or not m:
        return out, view
    order = np.argsort(ref_list, kind="stable")
    bounds = np.searchsorted(ref_list[order], np.arange(len(cent) + 1))
    where = np.empty(m, np.int64)
    where[order] = np.arange(m)
    lists = _Lists(np.ascontiguousarray(ref[order]), order, bounds, ref_list, where - bounds[ref_list])
    for a in range(0, n, IVF_QUERY_BLOCK):
        b = min(n, a + IVF_QUERY_BLOCK)
        out[a:b], view[a:b] = _ivf_block([q[a:b] for q in queries], lists, cent, k,
                                         None if exclude is None else exclude[a:b])
    return out, view


@dataclass(frozen=True)
class _Lists:
    """The references sorted by list: list ``c`` holds ``vec[bounds[c]:bounds[c + 1]]``."""

    vec: np.ndarray  # (m, d) reference vectors in list order
    order: np.ndarray  # (m,) reference index of each position
    bounds: np.ndarray  # (lists + 1,)
    list_of: np.ndarray  # (m,) list of each reference
    pos: np.ndarray  # (m,) each reference's position within its list


def _ivf_block(queries: list[np.ndarray], lists: _Lists, cent: np.ndarray, k: int,
               exclude: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """One block of queries: each (query, view, probe) fills k slots of one buffer, list by list;
    then each query keeps its best k over its slots (a reference met through both views once)."""
    n, views, p = len(queries[0]), len(queries), NPROBE
    allq = np.concatenate(queries)  # row v * n + q
    probes = np.concatenate([np.argpartition(-(q @ cent.T), p - 1, axis=1)[:, :p] for q in queries]).ravel()
    # Slot e = (v * n + q) * p + probe; slots grouped by the list they probe.
    by_list = np.argsort(probes, kind="stable")
    starts = np.searchsorted(probes[by_list], np.arange(len(cent) + 1))
    score = np.full((len(probes), k), -np.inf, np.float32)
    found = np.full((len(probes), k), -1, np.int64)

    def one(c: int) -> None:
        lo, hi = lists.bounds[c], lists.bounds[c + 1]
        slots = by_list[starts[c]:starts[c + 1]]
        if hi == lo or not len(slots):
            return
        kk = min(k, hi - lo)
        # Uneven lists and popular ones: the products stay within QUERY_BLOCK_VALUES floats.
        step = max(1, QUERY_BLOCK_VALUES // (hi - lo))
        for a in range(0, len(slots), step):
            e = slots[a:a + step]
            s = allq[e // p] @ lists.vec[lo:hi].T
            if exclude is not None:  # a query's own row, where it lies in this list
                ex = exclude[(e // p) % n]
                hit = np.flatnonzero((ex >= 0) & (lists.list_of[np.maximum(ex, 0)] == c))
                s[hit, lists.pos[ex[hit]]] = -np.inf
            idx = _top(s, kk, LIST_GROUP)
            score[e, :kk] = np.take_along_axis(s, idx, 1)
            found[e, :kk] = lists.order[lo + idx]

    asked = np.flatnonzero(starts[1:] > starts[:-1])
    # A few queries (a commit, a pull request) touch many lists a little: threads cost more than they save.
    if n >= IVF_THREADS_FROM:
        in_blocks(one, asked)
    else:
        for c in asked:
            one(c)
    return _best_slots(score.reshape(views, n, p * k), found.reshape(views, n, p * k), k)


def _best_slots(score: np.ndarray, found: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(views, n, slots) -> each query's best k distinct references (-1 padded) and whether a mirror won."""
    views, n, width = score.shape
    s = np.concatenate(list(score), 1)  # (n, views * slots)
    r = np.concatenate(list(found), 1)
    v = np.repeat(np.arange(views), width)[None, :].repeat(n, 0)
    # A reference met twice (both views probed its list) counts once, at its better view.
    order = np.lexsort((v, -s, r), axis=1)
    s, r, v = (np.take_along_axis(x, order, 1) for x in (s, r, v))
    dup = np.zeros(s.shape, bool)
    dup[:, 1:] = r[:, 1:] == r[:, :-1]
    s[dup | (r < 0)] = -np.inf
    best = np.lexsort((r, -s), axis=1)[:, :k]
    s, r, v = (np.take_along_axis(x, best, 1) for x in (s, r, v))
    ok = np.isfinite(s)
    out = np.full((n, k), -1, np.int64)
    flip = np.zeros((n, k), bool)
    out[:, :best.shape[1]] = np.where(ok, r, -1)
    flip[:, :best.shape[1]] = ok & (v > 0)
    return out, flip
