"""FAISS candidates for ``retrieval.py``'s ``faiss`` backend (the ``faiss`` extra).

The index holds each reference's *bound coordinates* (``retrieval.Basis.split``:
its leading PCA coordinates, then the norm of the rest), so the inner product of
a query's and a reference's coordinates is the exact upper bound of their cosine
that the numpy backend prunes with, in a quarter of the dimensions.  An
inverted-file index (about sqrt(N) cells, ``nprobe`` of them scanned per query)
finds the pairs whose bound reaches the threshold among the cells it scans;
``retrieval`` re-ranks them with exact float32 products.  A pair in an unscanned
cell is missed: the recall is measured (``benchmarks/scale.py``), not promised.
Importing this module imports faiss: only that backend does.
"""

from __future__ import annotations

import math

import faiss
import numpy as np

# Query rows per search call: bounds faiss's result buffers.
_ROWS = 1 << 16
# Slack for float32 rounding, as in retrieval.py.
_EPS = 1e-4


def _build(coords: np.ndarray, nprobe: int) -> faiss.Index:
    d = coords.shape[1]
    # About sqrt(N) cells: the classic balance between the coarse search and scanning cells.
    # faiss warns (on stderr) below 39 training points per cell: fewer cells, or none at all.
    nlist = min(1024, round(math.sqrt(len(coords))), len(coords) // 39)
    if nlist < 2:
        index = faiss.IndexFlatIP(d)
        index.add(np.ascontiguousarray(coords, dtype=np.float32))
        return index
    index = faiss.IndexIVFFlat(faiss.IndexFlatIP(d), d, nlist, faiss.METRIC_INNER_PRODUCT)
    index.cp.niter = 10
    rng = np.random.default_rng(0)
    train = len(coords) if len(coords) <= 64 * nlist else 64 * nlist
    sample = coords[np.sort(rng.choice(len(coords), train, replace=False))]
    index.train(np.ascontiguousarray(sample, dtype=np.float32))
    index.add(np.ascontiguousarray(coords, dtype=np.float32))
    index.nprobe = min(nprobe, nlist)
    return index


def range_candidates(
    q_coords: np.ndarray, r_coords: np.ndarray, min_cosine: float, nprobe: int
) -> tuple[np.ndarray, np.ndarray]:
    """(query, reference) pairs whose bound reaches ``min_cosine``, among the scanned cells."""
    index = _build(r_coords, nprobe)
    qa, rb = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    for q0 in range(0, len(q_coords), _ROWS):
        block = np.ascontiguousarray(q_coords[q0 : q0 + _ROWS], dtype=np.float32)
        lims, _, ids = index.range_search(block, float(min_cosine - _EPS))
        qa.append(np.repeat(np.arange(q0, q0 + len(block)), np.diff(lims).astype(np.int64)))
        rb.append(ids.astype(np.int64))
    return np.concatenate(qa), np.concatenate(rb)


def knn_candidates(q_coords: np.ndarray, r_coords: np.ndarray, k: int, nprobe: int) -> np.ndarray:
    """(Nq, k) reference indices with the highest bounds, -1 where a query found fewer."""
    index = _build(r_coords, nprobe)
    out = [np.zeros((0, k), np.int64)]
    for q0 in range(0, len(q_coords), _ROWS):
        _, ids = index.search(np.ascontiguousarray(q_coords[q0 : q0 + _ROWS], dtype=np.float32), k)
        out.append(ids.astype(np.int64))
    return np.concatenate(out)
