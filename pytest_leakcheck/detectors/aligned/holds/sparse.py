"""Glyphs and sparse line drawings: thin strokes on a plain background (handwriting, digits).

Any two such images share most of their pixels, the blank background, so their
detail correlates highly whatever the character: on Omniglot's 2,720 drawings
(``benchmarks/glyphs.py``) two drawings of one Korean character by different
people aligned at 0.9966 against an error level of 0.9827, and their stroke
corners matched as ORB keypoints across characters (1,249 same-scene warnings
between different drawings).  A glyph is told from its 32 px grey square: most
of it lies near its darkest or its lightest value (background and stroke),
where a photograph's grey levels spread between them.

Such a pair is an error-level ``aligned`` link only when the plain (uncentred)
cosine of the two squares says it is the same drawing (:data:`GLYPH_COSINE`);
otherwise it is at most a warning.  ``same_scene`` holds a pair of two glyphs under
200 px to more inliers than different drawings reach (``same_scene/find.py``
``GLYPH_INLIERS``).
"""

from __future__ import annotations

import numpy as np

from ....orientation import turn_flat

#: Share of the square near its darkest or lightest value from which an image is a glyph.
#: Omniglot's drawings: 0.72 at least (1st percentile 0.80); CIFAR-10 photos: 0.09 at the median,
#: 0.58 at the 99th percentile, so about 1 in 140 CIFAR images passes (11 of 1,500), and both of a pair must.
GLYPH_SHARE = 0.6
#: "Near": within this fraction of the square's range of its darkest or lightest value.
NEAR = 0.1
#: Fewest grey levels between the darkest and lightest value: strokes are drawn in contrast; a
#: near-flat image (fog, a blank page with noise) is not a glyph.
MIN_RANGE = 64
#: Plain cosine of two glyphs' 32 px squares from which their aligned link may be an error.  Their
#: shared background makes it high for any two: on Omniglot the false error scored 0.913 and
#: different drawings of one character up to 0.998, while copies trimmed to the same box score
#: 0.995-1.0 (``benchmarks/glyphs.py``).
GLYPH_COSINE = 0.995
#: Pairs whose squares are compared at once by :func:`held_turned` (about 4 kB each, several copies).
BLOCK = 16384


def glyphs(grey: np.ndarray) -> np.ndarray:
    """Whether each grey square (rows of any shape after the first axis) is a glyph."""
    g = np.asarray(grey, np.float32).reshape(len(grey), -1)
    lo, hi = g.min(axis=1, keepdims=True), g.max(axis=1, keepdims=True)
    reach = NEAR * (hi - lo)
    near = (g <= lo + reach) | (g >= hi - reach)
    return (near.mean(axis=1) >= GLYPH_SHARE) & ((hi - lo)[:, 0] >= MIN_RANGE)


def is_glyph(grey: np.ndarray) -> bool:
    """Whether one grey square is a glyph (:func:`glyphs`)."""
    return bool(glyphs(np.asarray(grey)[None])[0])


def raw_cosine(a: np.ndarray, b: np.ndarray, flipped: np.ndarray) -> np.ndarray:
    """Plain cosine of 32 px squares ``a`` and ``b`` (n, 1024), ``a`` mirrored where ``flipped``."""
    a = np.asarray(a, np.float32).reshape(len(a), 32, 32)
    a = np.where(np.asarray(flipped, bool)[:, None, None], a[:, :, ::-1], a).reshape(len(a), -1)
    b = np.asarray(b, np.float32).reshape(len(b), -1)
    dot = np.einsum("ij,ij->i", a, b)
    return dot / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-6)


def _glyph_rows(grey32: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Which rows are glyphs (:func:`glyphs`), judged only for the rows ``i`` and ``j`` name."""
    rows = np.unique(np.concatenate([i, j]))
    glyph = np.zeros(len(grey32), bool)
    glyph[rows] = glyphs(grey32[rows])
    return glyph


def held(grey32: np.ndarray, i: np.ndarray, j: np.ndarray, flipped: np.ndarray) -> np.ndarray:
    """Pairs of two glyphs whose squares are not the same drawing: at most warnings."""
    i, j = np.asarray(i, np.int64), np.asarray(j, np.int64)
    out = np.zeros(len(i), bool)
    if not len(i):
        return out
    glyph = _glyph_rows(grey32, i, j)
    both = np.flatnonzero(glyph[i] & glyph[j])
    if len(both):
        out[both] = raw_cosine(grey32[i[both]], grey32[j[both]], np.asarray(flipped, bool)[both]) < GLYPH_COSINE
    return out


def held_turned(grey32: np.ndarray, i: np.ndarray, j: np.ndarray, orientations: list[str]) -> np.ndarray:
    """:func:`held` for hash matches, whose row ``i`` after its orientation (any of the eight) is row ``j``.

    A pHash of a glyph reads its blank background as much as its strokes: on Chinese MNIST's 64 px
    characters (``cmnist`` of ``benchmarks/field.py``) two writings of one stroke were within pHash 2,
    a copy on its own evidence in a small set, and a random pair passes pHash 8 one time in 140."""
    i, j = np.asarray(i, np.int64), np.asarray(j, np.int64)
    out = np.zeros(len(i), bool)
    if not len(i):
        return out
    glyph = _glyph_rows(grey32, i, j)
    both = glyph[i] & glyph[j]
    names = np.array(orientations, object)
    for name in sorted(set(names[both].tolist())):
        every = np.flatnonzero(both & (names == name))
        for a in range(0, len(every), BLOCK):  # in blocks: 4 kB a pair, and millions of pairs on cmnist
            k = every[a:a + BLOCK]
            turned = turn_flat(np.asarray(grey32[i[k]], np.float32).reshape(len(k), -1), name)
            out[k] = raw_cosine(turned, grey32[j[k]], np.zeros(len(k), bool)) < GLYPH_COSINE
    return out
