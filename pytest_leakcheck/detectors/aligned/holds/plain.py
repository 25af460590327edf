"""Plain grounds: on a featureless sky only the subject's outline is left to correlate.

The ``aligned`` verdict correlates detail, and a plain ground has none: where a
fifth or more of a 32 px square is flat, the pair's score is the agreement of
the subject's outline alone, and two renders of one aircraft type on a clear
sky share an outline.  On CIFAR's error links across splits (judged by eye,
``benchmarks/quality_audit/band/``), every pair of different photographs over a
plain ground (B-2 renders on other skies, an orange aircraft against an airliner,
a head-on jet against a side view) scores within 0.02 of the error level; the
closest judged copy over a plain ground 0.065 above it, the listed
near-duplicates 0.13 or more.  Such a link, under its error level plus
:data:`HEADROOM` of the level's distance to a perfect score, is at most a
warning: on CIFAR 23 links (``benchmarks/plain_held.py``, judged in
``quality_audit/held/2026-12-07-s60-plain-held.csv``): 14 different, 4 unsure,
5 the same photograph (all within the training split, whose level is higher).
Hash and thumbnail matches keep their own verdict.
"""

from __future__ import annotations

import numpy as np

#: A pixel whose grey gradient (central differences, grey levels per pixel of the 32 px square)
#: is under this is flat: sky, a studio backdrop, a white page.
FLAT_GRADIENT = 2.0
#: Share of flat pixels from which a square's ground counts as plain (either image of the pair).
#: On CIFAR (``benchmarks/plain_held.py``): the judged-different error links over a plain ground 0.22-0.69,
#: the CIFAR car's copies on a white studio floor 0.18; 5 % of CIFAR's images reach 0.21.
PLAIN_SHARE = 0.2
#: How far above its error level a pair over a plain ground must score to stay an error, as a share
#: of the level's distance to a perfect score (1): where a dataset's pictures all look alike (X-rays,
#: level 0.92) its copies score close to the level too.  On CIFAR's judged error links across splits
#: (error level 0.7859, ``quality_audit/band/``): the different photographs over a plain ground at most
#: 0.019 above it (0.09 of 0.214), the same ones 0.065 or more (0.30).  On ``xray-wrist``
#: (``benchmarks/field.py``, level 0.9217) a copy turned a little scored 0.9408 (0.24).
HEADROOM = 0.12


def flat_share(grey32: np.ndarray) -> np.ndarray:
    """Share of each 32 px square's pixels whose grey gradient is under :data:`FLAT_GRADIENT`."""
    g = np.asarray(grey32, np.float32)
    g = g.reshape(len(g), 32, 32) if g.ndim == 2 else g
    gy, gx = np.gradient(g, axis=(1, 2))
    return (np.hypot(gx, gy) < FLAT_GRADIENT).mean((1, 2))


def held(grey32: np.ndarray, i: np.ndarray, j: np.ndarray, score: np.ndarray, level: np.ndarray) -> np.ndarray:
    """Pairs over a plain ground (:data:`PLAIN_SHARE`) scoring under ``level`` plus :data:`HEADROOM` of
    its distance to 1: at most warnings."""
    i, j, level = np.asarray(i, np.int64), np.asarray(j, np.int64), np.asarray(level, np.float64)
    close = np.asarray(score) < level + HEADROOM * (1 - level)
    out = np.zeros(len(i), bool)
    if not close.any():
        return out
    rows = np.unique(np.concatenate([i[close], j[close]]))
    share = np.zeros(len(grey32), np.float32)
    share[rows] = flat_share(np.asarray(grey32)[rows])
    out[close] = np.maximum(share[i[close]], share[j[close]]) >= PLAIN_SHARE
    return out
