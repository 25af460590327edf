"""Tones: two photographs of one kind of subject share an outline, a copy shares its grey levels too.

The ``aligned`` verdict correlates detail (a high pass), blind by design to
brightness and contrast.  On CIFAR every error link judged to be two
different photographs by eye (18 of them, ``benchmarks/quality_audit/``)
scores 0.79-0.89: two B-2 bombers, two airliners over the sea, two horses
standing alike, whose outlines agree while the sky, the sea or the coat do
not.  At the pair's own 32 px alignment, the mean absolute difference of the
two grey squares, each less its mean (a brightness shift is forgiven, the
tones are not), tells most of them apart: over :data:`TONE_GAP` grey levels in
both directions for 11 of the 18 different pairs, 6 of 132 judged the same,
none of the 113 listed near-duplicates at error level (the five audits it was
chosen on; with stop 56's: 11 of 19, 6 of 158, none; ``benchmarks/audit_signals.py``,
``tone_gap``).  Such a link is at most a
warning.  Hash and thumbnail matches keep their own verdict: a copy whose
tones were changed (contrast, a tint) still hashes alike.
"""

from __future__ import annotations

import numpy as np

from .. import alignment
from ..hires import align32

#: Grey levels (0-255) of mean absolute difference at the alignment from which an aligned error
#: link is held to a warning.  On CIFAR's judged error links (``benchmarks/audit_signals.py``): the
#: listed near-duplicates' 95th percentile 12.8, the different photographs' median 19.1.
TONE_GAP = 18.0
#: Pairs aligned at once: a few (S, S) float32 squares each.
_BLOCK = 1024


def gap(qgrey: np.ndarray, rgrey: np.ndarray, flipped: np.ndarray) -> np.ndarray:
    """Mean absolute difference (grey levels) of each query, zoomed, mirrored and moved onto its
    reference as the verdict aligns them, and the reference's central crop, both less their mean."""
    q, r = np.asarray(qgrey, np.float32), np.asarray(rgrey, np.float32)
    fl = np.asarray(flipped, bool)
    zoom, shift = align32(q, r, fl)
    side, t, off = alignment.S - alignment.T + 1, alignment.T, (alignment.S - alignment.T) // 2
    m = alignment._FINE[zoom]
    g = np.where(fl[:, None, None], q[:, :, ::-1], q)
    z = m @ g @ m.swapaxes(-1, -2)
    sy, sx = shift // side, shift % side
    w = z[np.arange(len(q))[:, None, None], (sy[:, None] + np.arange(t))[:, :, None],
          (sx[:, None] + np.arange(t))[:, None, :]]
    ref = (alignment._BLUR @ r @ alignment._BLUR.T)[:, off:off + t, off:off + t]
    d = (w - w.mean((1, 2), keepdims=True)) - (ref - ref.mean((1, 2), keepdims=True))
    return np.abs(d).mean((1, 2))


def gaps(grey32: np.ndarray, i: np.ndarray, j: np.ndarray, flipped: np.ndarray) -> np.ndarray:
    """:func:`gap` of each pair, the smaller of both directions (each aligned on the other)."""
    i, j, fl = np.asarray(i, np.int64), np.asarray(j, np.int64), np.asarray(flipped, bool)
    grey32 = np.asarray(grey32).reshape(len(grey32), alignment.S, alignment.S)
    out = np.zeros(len(i), np.float32)
    for a in range(0, len(i), _BLOCK):
        s = slice(a, a + _BLOCK)
        gi, gj = grey32[i[s]], grey32[j[s]]
        out[s] = np.minimum(gap(gi, gj, fl[s]), gap(gj, gi, fl[s]))
    return out


def held(grey32: np.ndarray, i: np.ndarray, j: np.ndarray, flipped: np.ndarray) -> np.ndarray:
    """Pairs whose tones disagree at their alignment (:data:`TONE_GAP`): at most warnings."""
    return gaps(grey32, i, j, flipped) > TONE_GAP
