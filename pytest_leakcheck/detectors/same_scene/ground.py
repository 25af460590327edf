"""Objects on a shared ground: a same-scene match whose inliers lie on the backdrop, not on the object.

Photos of objects laid on one floor, bed or stand (garments on a parquet, eggs on one candling
stand) share the ground's corners: wood grain, tile joints, the stand's rim.  Two photos of two
*different* objects on that ground then pass the homography test on the ground alone, above the
warning level (``clothing`` of ``benchmarks/field.py``: 44 same-scene warnings, each of those judged
by eye two garments on one floor).  A re-shot of one object carries inliers on the object itself.

Per photo a coarse mask of what stands out from the ground is kept: the colours of a 48 px
square of the upright photo that lie far from the median colour of its outer ring (the ground
seen around the object).  A match is held when few of its inliers fall on the object in both
photos (:func:`held`).  A photo with no object told from a plain ground (a street, a landscape:
its ring is of many colours, or the mask is nearly empty or nearly full) has no mask, and its
matches are never held.
"""

from __future__ import annotations

import numpy as np

#: Side of the square the mask is made on, and the ring (cells) read as the ground.
SIDE, RING = 48, 5
#: A cell is the object when its colour lies farther than this from the ring's median (RGB
#: distance, 0-441), or than the ring's own 90th percentile where the ground is textured (wood
#: grain, tiles): the ring's own spread is ground, never object.
MIN_TOL = 24.0
#: The ring is a plain ground when 90 % of it lies within this distance of its median colour; else
#: the photo has no mask.  A scene's edges are sky, walls and streets of many colours: no photo of
#: ``benchmarks/reshot.py``'s panoramas, burst or multi-view scenes has a ring this plain (at 100,
#: 5-17 % of the panoramas would, and with no such limit the hold took 80 of its 105 re-shot pairs),
#: while a floor, a bed or a candling stand is.
PLAIN = 80.0
#: An object covers at least and at most this share of the square; outside it the photo has no
#: object told from its ground, and no mask.  The objects of the pairs held on ``clothing`` and
#: ``eggs`` cover 25-41 %; at 0.02 three re-shots of one concrete wall on ``damage`` were held (a
#: crack or a spalled patch is 4-14 % of such a crop, and the wall around it is the scene itself).
MIN_OBJECT, MAX_OBJECT = 0.2, 0.8
#: A match is held when less than this share of its inliers lies on the object in both photos.
#: On the 40 points the report keeps per pair (``benchmarks/field.py``, main's reports), with no
#: PLAIN limit: ``clothing`` 25 of 45 pairs (all different garments, by eye), ``eggs`` 23 of 291 and
#: none of its 112 bursts; at 0.25, 30 and 42, 3 of them bursts.  With PLAIN, in the checks: 7
#: matches held on ``clothing`` (6 warnings fewer, different garments by eye), 1 on ``eggs``.
ON_OBJECT = 0.2
#: Bytes of a mask row (SIDE x SIDE bits); all ones is "no mask".
BYTES = SIDE * SIDE // 8
NO_MASK = b"\xff" * BYTES


def mask(rgb: np.ndarray) -> bytes:
    """The object mask of an upright RGB photo squashed to SIDE x SIDE (uint8, packed bits, row-major)."""
    a = np.asarray(rgb, np.float32).reshape(SIDE, SIDE, 3)
    ring = np.concatenate([a[:RING].reshape(-1, 3), a[-RING:].reshape(-1, 3),
                           a[RING:-RING, :RING].reshape(-1, 3), a[RING:-RING, -RING:].reshape(-1, 3)])
    med = np.median(ring, axis=0)
    spread = float(np.quantile(np.linalg.norm(ring - med, axis=1), 0.9))
    if spread > PLAIN:  # a ring of many colours, as most scenes' is: no mask, whatever stands out
        return NO_MASK
    obj = np.linalg.norm(a - med, axis=2) > max(MIN_TOL, spread)
    if not MIN_OBJECT <= obj.mean() <= MAX_OBJECT:
        return NO_MASK  # no object told from a plain ground: nothing is held
    return np.packbits(obj.ravel()).tobytes()


def share(bits: np.ndarray, xy: np.ndarray) -> float:
    """Share of points (x, y as fractions of the photo, shape (n, 2)) on the object of a mask row."""
    obj = np.unpackbits(np.asarray(bits, np.uint8))[:SIDE * SIDE].reshape(SIDE, SIDE)
    if not obj.any() or not len(xy):  # a row never computed (zeros): no mask, as a scene has none
        return 1.0
    cells = np.clip((np.asarray(xy, np.float64) * SIDE).astype(np.int64), 0, SIDE - 1)
    return float(obj[cells[:, 1], cells[:, 0]].mean())


def held(bits_a: np.ndarray, bits_b: np.ndarray, pts: np.ndarray, wh_a: np.ndarray, wh_b: np.ndarray) -> bool:
    """Whether a match's inliers (``pts``: x_a, y_a, x_b, y_b in working pixels) lie off the object in both."""
    if not len(pts):
        return False
    a = share(bits_a, pts[:, :2] / np.maximum(np.asarray(wh_a, np.float64), 1))
    b = share(bits_b, pts[:, 2:4] / np.maximum(np.asarray(wh_b, np.float64), 1))
    return max(a, b) < ON_OBJECT
