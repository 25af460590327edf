"""Impostors that are copies by evidence of their own: a half turn the keypoints give and ``turned-copy`` confirms.

``aligned`` calibrates on upside-down rows against their best candidates.  An export that augments
with flips and turns and crops or zooms as well (``tracks`` of ``benchmarks/field.py``: 25 of its 32
best impostors are such copies by eye, 12-30 pHash bits apart, so ``turned.drop_copies`` misses them)
holds a turned copy of many of its pictures, and its impostors then score where copies do: the
error level that hash matches are held to rose to 0.959 and true copies across splits stayed warnings.

A high aligned score says nothing of its own here: a fixed camera's other shots score as high, and
they are the impostors the levels must hold off (``chess``, ``deeppcb``, ``eggs``, ``screws``).  So
a row is left out only on other evidence that its candidate is its copy *at that orientation*: the
two pictures' keypoints (ORB on ``turned-copy``'s stored grey images, the row mirrored when
``aligned`` lined it up mirrored) agree on a half turn, the similarity explains most of them, and
the candidate turned back onto the row agrees in fine detail as ``turned-copy`` requires of a copy
(``turned_copy.quarter_detail`` at its ``LEVEL``).  No fixed camera turns its scene a half turn.
Such rows are given ``turned.COPY`` and leave the calibration as hash-found turned copies do.
Without ``turned-copy``'s grey images (same-scene or turned-copy off) nothing is left out.

``benchmarks/field.py``: on ``tracks`` the levels fell from 0.941 / 0.959 to 0.869 / 0.897 and the
fine level from 0.874 to its floor, 39 more error links, all one picture by eye; ``chess``, ``eggs``,
``screws`` and ``webcam`` kept their levels and links; ``deeppcb`` left out 12 rows (crops of its boards
scanned a half turn apart) and kept its links.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from . import alignment, pairs, turned

#: Rows whose best candidate scores this or more are tested: under it a row hardly moves the tail fit the
#: levels extrapolate from (``alignment.calibrate``).  ``tracks``' copies among its impostors score 0.78-0.95,
#: 35 of its 39 at 0.8 or more (``benchmarks/impostor_copies.py``).
TEST_FROM = 0.8
#: Degrees a copy's keypoint similarity may lie off a half turn: ``aligned`` turns nothing, so an
#: upside-down row it lines up with its candidate is a half turn of it within a degree or two.
HALF_TURN_OFF = 2.0
#: Share of the matched keypoints the half turn must explain, and how far it may zoom (either way): on the
#: impostor sheet of ``tracks`` (``benchmarks/impostor_audit/tracks.csv``) the copies' similarities explain
#: 0.62-0.93 of them and zoom 1.08-1.29x; its impostors judged different explain at most 0.30.
EXPLAINED, ZOOM = 0.6, 1.5
#: Side the grey images are enlarged to for ORB: at ``turned_copy.SIDE`` (128 px) its 19 px patch finds
#: too few corners.
ORB_SIDE = 256
ORB_FEATURES = 500

Judge = Callable[[str, np.ndarray, np.ndarray], np.ndarray]


def judge(run: Any, data: pairs.Data, p: pairs.Plan) -> Judge | None:
    """What ``pairs.impostors`` calls on each split's impostor maxima, or None without the grey images."""
    if not run.sigs.has("scene_grey"):
        return None
    return functools.partial(_judged, run, data, p)


def _judged(run: Any, data: pairs.Data, p: pairs.Plan, a: str, rows: np.ndarray, best: np.ndarray) -> np.ndarray:
    """``best`` (n, G) with each confirmed copy's score set to ``turned.COPY`` (see the module).

    Only in the other splits: within a split links are only ever warnings (``pairs.impostors``),
    and an augmented train split, its every picture met by its own turned versions, would cost a
    verdict per sampled row (689 on ``tracks``, 0.02-0.2 s each)."""
    other = np.array([b != a for b in p.targets[a]])
    test = np.flatnonzero(((best >= TEST_FROM) & (best < turned.COPY) & other).any(1))
    if not len(test):
        return best
    fwd, cand, flip = pairs._impostor_maxima(data, p, a, rows[test], full=True)  # the scores again, in full
    n, groups = len(test), len(p.targets[a])
    fwd, cand, flip = (x.reshape(n * groups, p.k) for x in (fwd, cand, flip))
    top = fwd.argmax(1)
    score, cand, flip = (x[np.arange(n * groups), top] for x in (fwd, cand, flip))
    todo = np.flatnonzero((score >= TEST_FROM) & (score < turned.COPY) & (cand >= 0) & np.tile(other, n))
    out = best.copy()
    hit = todo[copies(run, rows[test][todo // groups], cand[todo], flip[todo])]
    out[test[hit // groups], hit % groups] = turned.COPY
    return out


def left_out(run: Any, scores: np.ndarray, rows: np.ndarray, cand: np.ndarray, mirrored: np.ndarray) -> np.ndarray:
    """The fine level's impostor ``scores`` with those of confirmed copies NaN (``hires_levels.calibration``).

    Only its tail is judged, the share the fit reads (``alignment.TAIL``), again while copies leave it:
    at 0.02-0.2 s a verdict, every pair of the 250 would cost seconds."""
    out = scores.astype(np.float64, copy=True)
    if not run.sigs.has("scene_grey"):
        return out
    tested = np.zeros(len(out), bool)
    while (ok := np.isfinite(out)).any():
        tail = np.flatnonzero(ok & ~tested & (out >= np.quantile(out[ok], 1 - alignment.TAIL)))
        if not len(tail):
            break
        tested[tail] = True
        hit = tail[copies(run, rows[tail], cand[tail], mirrored[tail])]
        out[hit] = np.nan
        if not len(hit):
            break
    return out


def copies(run: Any, rows: np.ndarray, cand: np.ndarray, mirrored: np.ndarray) -> np.ndarray:
    """Whether each upside-down row (mirrored, where ``aligned`` lined it up so) is a copy of its candidate,
    a half turn of it by keypoints and detail (:func:`half_turned`); False where a grey image is missing."""
    greys = _greys(run, {int(r) for r in rows} | {int(c) for c in cand})
    out = np.zeros(len(rows), bool)
    for n, (r, c, m) in enumerate(zip(rows.tolist(), cand.tolist(), np.asarray(mirrored, bool).tolist())):
        if r in greys and c in greys:
            out[n] = half_turned(greys[r][:, ::-1] if m else greys[r], greys[c])
    return out


def half_turned(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether grey image ``b`` is ``a`` turned a half turn (and zoomed or cropped), by keypoints and detail."""
    from .. import turned_copy

    pts = _points(a, b)
    found = None if pts is None else turned_copy.turn(pts, (a.shape[1], a.shape[0]), (b.shape[1], b.shape[0]))
    if found is None:
        return False
    t, m = found
    if t.explained < EXPLAINED or 180.0 - abs(t.angle) > HALF_TURN_OFF or not 1 / ZOOM <= t.scale <= ZOOM:
        return False
    value = turned_copy.quarter_detail(a, b, m)
    return value is not None and value >= turned_copy.LEVEL


def _points(a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    """Mutual ratio-test ORB matches of ``a`` and ``b`` as (x_a, y_a, x_b, y_b), fractions of each image."""
    from ...signals.opencv import opencv

    cv2 = opencv()

    from ..same_scene import features

    found = []
    for g in (a, b):
        big = features.at_side(np.ascontiguousarray(g), ORB_SIDE)
        orb = cv2.ORB_create(nfeatures=ORB_FEATURES, edgeThreshold=features.PATCH, patchSize=features.PATCH,
                             fastThreshold=10)
        kp, d = orb.detectAndCompute(big, None)
        if d is None or len(kp) < features.MIN_TENTATIVE:
            return None
        found.append((cv2.KeyPoint_convert(kp) / np.array([big.shape[1], big.shape[0]], np.float32), d))
    ia, ib = features.tentative(found[0][1], found[1][1])
    if len(ia) < features.MIN_TENTATIVE:
        return None
    return np.hstack([found[0][0][ia], found[1][0][ib]]).astype(np.float32)


def _greys(run: Any, rows: set[int]) -> dict[int, np.ndarray]:
    """``turned-copy``'s stored grey image of each of ``rows`` that has one."""
    from .. import turned_copy

    family, digests = turned_copy.grey_family(), run.sigs.digests
    stored = run.store.get_signatures([digests[r] for r in rows], family.name, family.params)
    out = {}
    for r in rows:
        ok, blob = stored.get(digests[r], (False, b""))
        img = turned_copy.image(blob) if ok else None
        if img is not None:
            out[r] = img
    return out
