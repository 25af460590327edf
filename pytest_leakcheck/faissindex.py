"""FAISS candidates for ``retrieval.py``'s ``faiss`` backend (the ``faiss`` extra).

An inverted-file index with 8-bit scalar-quantised codes, inner-product metric:
about a quarter of the float32 memory, and each query scans only ``nprobe`` of
``nlist`` cells.  It gives candidates only; ``retrieval`` re-ranks them with
exact float32 products, so a score it reports is never a quantised one, but a
pair in an unprobed cell is missed (the recall is measured, not promised).
Importing this module imports faiss: only that backend does.
"""

from __future__ import annotations

import math

import faiss
import numpy as np

# Rows added or searched per call: bounds the float32 copy of a block.
_ROWS = 1 << 16
# Slack below the threshold for the 8-bit codes' error; re-ranking removes what it lets in.
_SLACK = 0.02


def _build(refs: np.ndarray, nprobe: int) -> faiss.Index:
    d = refs.shape[1]
    # About sqrt(N) cells: the classic balance between the coarse search and scanning cells.
    nlist = max(1, min(1024, round(math.sqrt(len(refs)))))
    quantizer = faiss.IndexFlatIP(d)
    index = faiss.IndexIVFScalarQuantizer(
        quantizer, d, nlist, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
    )
    index.cp.niter = 10
    rng = np.random.default_rng(0)
    sample = refs if len(refs) <= 64 * nlist else refs[np.sort(rng.choice(len(refs), 64 * nlist, replace=False))]
    index.train(np.ascontiguousarray(sample, dtype=np.float32))
    for r0 in range(0, len(refs), _ROWS):
        index.add(np.ascontiguousarray(refs[r0 : r0 + _ROWS], dtype=np.float32))
    index.nprobe = min(nprobe, nlist)
    return index


def range_candidates(
    queries: np.ndarray, refs: np.ndarray, min_cosine: float, nprobe: int
) -> tuple[np.ndarray, np.ndarray]:
    """(query, reference) pairs whose quantised score is near or above ``min_cosine``."""
    index = _build(refs, nprobe)
    qa, rb = [], []
    for q0 in range(0, len(queries), _ROWS):
        lims, _, ids = index.range_search(np.ascontiguousarray(queries[q0 : q0 + _ROWS], dtype=np.float32),
                                          float(min_cosine - _SLACK))
        qa.append(np.repeat(np.arange(q0, q0 + len(lims) - 1), np.diff(lims).astype(np.int64)))
        rb.append(ids.astype(np.int64))
    return np.concatenate(qa), np.concatenate(rb)


def knn_candidates(queries: np.ndarray, refs: np.ndarray, k: int, nprobe: int) -> np.ndarray:
    """(Nq, k) reference indices by quantised score, -1 where a query found fewer."""
    index = _build(refs, nprobe)
    out = []
    for q0 in range(0, len(queries), _ROWS):
        _, ids = index.search(np.ascontiguousarray(queries[q0 : q0 + _ROWS], dtype=np.float32), k)
        out.append(ids.astype(np.int64))
    return np.concatenate(out)
