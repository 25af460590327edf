"""An inverted file over unit vectors: k-means lists, and the lists a query probes.

Above a size a search cannot compare every pair (10^10 pairs at 100,000 rows per
side, 10^12 at a million): rows are cut into lists of about ``size`` rows around
centroids fitted on the data, and a query is compared only with the members of
its ``nprobe`` nearest lists, so its cost stops growing with the dataset.  Used by
``retrieval.within`` (the thumbnail search) and by ``aligned``'s retrieval.

Approximate: a partner in a list the query does not probe is missed.  Near-
duplicates are close, so their partner lies in one of the nearest lists; the
recall against the exact search is measured where each caller turns lists on.
"""

from __future__ import annotations

import numpy as np

#: Rounds of spherical k-means: deterministic, started from evenly spaced sample rows.
ROUNDS = 8
#: Rows per assignment block: (block x lists) float32 scores stay near 64 MB.
_VALUES = 1 << 24


def fit(vec: np.ndarray, n_lists: int) -> np.ndarray:
    """(n_lists, d) unit centroids of the unit rows ``vec`` (a sample), by spherical k-means."""
    n_lists = max(1, min(n_lists, len(vec)))
    cent = vec[np.linspace(0, len(vec) - 1, n_lists).astype(np.int64)].astype(np.float32).copy()
    for _ in range(ROUNDS):
        near = assign(vec, cent)
        sums = np.zeros_like(cent)
        np.add.at(sums, near, vec)
        norm = np.linalg.norm(sums, axis=1, keepdims=True)
        cent = np.where(norm > 0, sums / np.maximum(norm, 1e-12), cent).astype(np.float32)
    return cent


def assign(vec: np.ndarray, cent: np.ndarray) -> np.ndarray:
    """Nearest centroid (largest dot product) of each row, in blocks."""
    out = np.zeros(len(vec), np.int64)
    step = max(1, _VALUES // max(1, len(cent)))
    for a in range(0, len(vec), step):
        out[a:a + step] = (vec[a:a + step] @ cent.T).argmax(1)
    return out


def probes(vec: np.ndarray, cent: np.ndarray, nprobe: int) -> np.ndarray:
    """(N, min(nprobe, lists)) the lists each row probes: its nearest centroids."""
    k = min(nprobe, len(cent))
    scores = vec @ cent.T
    return np.argpartition(-scores, k - 1, axis=1)[:, :k] if k < len(cent) else np.tile(np.arange(k), (len(vec), 1))


def members(list_of: np.ndarray, n_lists: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows sorted by list, and each list's bounds in that order (list ``c``: ``order[b[c]:b[c + 1]]``)."""
    order = np.argsort(list_of, kind="stable")
    return order, np.searchsorted(list_of[order], np.arange(n_lists + 1))
