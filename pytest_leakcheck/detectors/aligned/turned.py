"""Turned copies among ``aligned``'s impostors: an upside-down row that meets its own copy is no impostor.

Split from ``pairs.py``, whose impostor search calls :func:`drop_copies` on its scores.
"""

from __future__ import annotations

import numpy as np

#: An upside-down row's candidate scoring this or more is tested for being a turned copy by its hash.
_COPY_TEST_FROM = 0.7
#: Hamming distance (of 64) within which a candidate's 32 px pHash matches the turned row's, mirrored
#: or not: a turned copy in the data, not an impostor (see :func:`drop_copies`).
TURNED_HASH_BITS = 6
#: The score a candidate found to be a turned copy by its hash is given: above any alignment's.
COPY = 2.0


def drop_copies(fwd: np.ndarray, turned: np.ndarray, cand: np.ndarray, grey: np.ndarray) -> None:
    """Scores (in place) of candidates that are copies of the upside-down row by its pHash, set to COPY: the
    row then counts as a turned copy (``levels.TURNED_COPY``), not as an impostor.

    An export that augments with flips and turns holds a turned version of most of its pictures, and
    the upside-down row then meets its own copy: re-contrasted or re-encoded, such copies align at
    0.85-0.95, under ``levels.TURNED_COPY``, and as impostors they set the levels at 1.0, where no
    copy is an error (a held-out Roboflow export of 830 brain MRI slices: 131 of its 237 held-out
    images had a copy in another split, every one a warning).  Measured on the 32 px squares the
    search aligns: the visible CIFAR half's impostors scoring 0.7 or more are 14 bits or more from
    their candidate (``benchmarks/quality.py``), that export's at 0.9-0.95 a median of 6.
    """
    qi, kk = np.nonzero(fwd >= _COPY_TEST_FROM)
    qi, kk = qi[cand[qi, kk] >= 0], kk[cand[qi, kk] >= 0]
    if not len(qi):
        return
    rows, inverse = np.unique(qi, return_inverse=True)
    mine = _phash32(np.concatenate([turned[rows], turned[rows][:, :, ::-1]]))
    theirs = _phash32(grey[cand[qi, kk]])
    near = np.minimum(np.count_nonzero(mine[inverse] != theirs, axis=1),
                      np.count_nonzero(mine[len(rows) + inverse] != theirs, axis=1))
    copy = near <= TURNED_HASH_BITS
    fwd[qi[copy], kk[copy]] = COPY


def _phash32(squares: np.ndarray) -> np.ndarray:
    """(n, 64) bool: the pHash bits of 32 x 32 grey squares (8 x 8 lowest DCT terms against their median)."""
    from ...signals.families import dct_matrix

    c = dct_matrix(32)
    low = (c @ squares.astype(np.float64) @ c.T)[:, :8, :8].reshape(len(squares), 64)
    return low > np.median(low, axis=1, keepdims=True)

