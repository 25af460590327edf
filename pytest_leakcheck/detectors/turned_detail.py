"""The detail correlation ``turned_copy`` judges a pair by, once lined up by the map its points give.

Each picture's fine detail (the grey less its blur) is compared where both show it, and a copy
agrees everywhere; a quarter turn zoomed is compared with its larger view shrunk onto the smaller.
Pure numpy and OpenCV, imported when a pair is judged.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

#: High pass: the grey minus its Gaussian blur of this many px at SIDE (4 px at 320).
SIGMA = 1.6
#: How far (px at SIDE) the high pass's blur reaches past the turned picture's edge, into the black
#: around it (three of its SIGMA): a false edge ``a`` lacks, inside the frame once a crop is shrunk
#: onto its original.  Left out where a quarter turn zoomed is judged (``_quarter_detail``).
EDGE = math.ceil(3 * SIGMA)
#: A copy agrees everywhere: the least correlation of a tile (of BLOCKS x BLOCKS) holding
#: detail.  One template with other content (an invoice with other figures, a form filled in
#: otherwise) agrees on average where its tiles of other content do not: on the field sets,
#: copies' least tile 0.57-0.93, such templates' 0.09-0.32.
BLOCKS, BLOCK_LEVEL = 4, 0.5
#: A tile's detail energy (the two high passes' mean squares, summed, grey levels squared at SIDE) under
#: which it is flat, whatever the other tiles: JPEG noise on open sea is 0.2-0.3 there, a whale's
#: back 40-230 (``whales`` of ``benchmarks/field.py``: a photo cropped to two heights, 12 of its 16
#: tiles sea, agreed at 0.976 overall, yet a sea tile's noise at 0.14 made it no copy).
FLAT_ENERGY = 1.0
#: A copy shows most of one picture: at least MIN_OVERLAP of the smaller one lies inside the other
#: (Roboflow's crops keep 0.64 and more); two shots of a panorama on a tripod share a strip of identical
#: detail, 0.3-0.5 (``benchmarks/reshot.py``'s ``pano-rio``: a shot turned 90 degrees and one more, 0.25
#: kept it a copy).
MIN_OVERLAP = 0.6


def _correlation(x: np.ndarray, y: np.ndarray) -> float | None:
    x, y = x - x.mean(), y - y.mean()
    norm = float((x * x).sum() * (y * y).sum()) ** 0.5
    return None if norm == 0 else float((x * y).sum()) / norm


def detail(a: np.ndarray, b: np.ndarray, m: np.ndarray, edge: int = 1, flat: float = FLAT_ENERGY) -> float | None:
    """Correlation of the fine detail of ``a`` and of ``b`` turned onto it by ``m``, where both are:
    over the whole overlap (less ``edge`` px along its border), or its least in a BLOCKS x BLOCKS tile
    holding detail if that is lower than BLOCK_LEVEL (then the pair is no copy: see BLOCK_LEVEL)."""
    import numpy as np

    from ..signals.opencv import opencv

    cv2 = opencv()

    h, w = a.shape
    fa = a.astype(np.float32)
    fb = cv2.warpAffine(b.astype(np.float32), m, (w, h), flags=cv2.INTER_LINEAR)
    inside = cv2.warpAffine(np.ones(b.shape, np.uint8), m, (w, h), flags=cv2.INTER_NEAREST)
    inside = cv2.erode(inside, np.ones((3, 3), np.uint8)) > 0
    # The share of the smaller picture the other one shows: a crop lies wholly inside its original,
    # two shots of a panorama share a strip.
    zoom = float(abs(np.linalg.det(m[:, :2]))) or 1.0
    if max(inside.mean(), inside.sum() / zoom / b.size) < MIN_OVERLAP:
        return None
    if edge > 1:
        inside = cv2.erode(inside.astype(np.uint8), np.ones((2 * edge + 1, 2 * edge + 1), np.uint8)) > 0
    da = fa - cv2.GaussianBlur(fa, (0, 0), SIGMA)
    db = fb - cv2.GaussianBlur(fb, (0, 0), SIGMA)
    whole = _correlation(da[inside], db[inside])
    if whole is None:
        return None
    tiles = []  # (detail energy, correlation) of each tile mostly inside the overlap
    for r in range(BLOCKS):
        for c in range(BLOCKS):
            tile = (slice(r * h // BLOCKS, (r + 1) * h // BLOCKS), slice(c * w // BLOCKS, (c + 1) * w // BLOCKS))
            keep = inside[tile]
            if keep.mean() >= 0.5 and (v := _correlation(da[tile][keep], db[tile][keep])) is not None:
                tiles.append((float((da[tile][keep] ** 2).mean() + (db[tile][keep] ** 2).mean()), v))
    if tiles:
        # Flat tiles (sky, blank paper, open sea) say nothing: under a quarter of the median tile's
        # energy, or under FLAT_ENERGY where most tiles are flat and the median is itself noise.
        floor = max(0.25 * float(np.median([e for e, _ in tiles])), flat)
        least = min(v for e, v in tiles if e >= floor)
        if least < BLOCK_LEVEL:
            return min(whole, least)
    return whole


def _quarter_detail(a: np.ndarray, b: np.ndarray, m: np.ndarray, flat: float = FLAT_ENERGY) -> float | None:
    """:func:`detail` of a quarter turn zoomed: the larger view shrunk onto the smaller, the edge left out
    (EDGE), at the keypoints' similarity or at its refinement (:func:`_refined`), whichever agrees more.

    Each stage is needed (``benchmarks/quarter_stages.py`` on ``tracks`` of ``benchmarks/field.py``, 90
    quarter-turned, zoomed same-scene pairs, most of them copies): at the keypoints' map, as the other
    geometries are judged, a median of 0.79 and 18 pairs in the BAND under LEVEL; shrunk, 0.475 (the
    false edge); the edge left out, 0.88 and 13 in the band; refined, 0.955 and 1."""
    a, b, m = _shrunk(a, b, m)
    found = [v for g in (m, _refined(a, b, m)) if g is not None and (v := detail(a, b, g, EDGE, flat)) is not None]
    return max(found, default=None)


def quarter_detail(a: np.ndarray, b: np.ndarray, m: np.ndarray) -> float | None:
    """For ``aligned/confirmed.py``, which judges an impostor that is a half turn zoomed of its candidate so:
    without FLAT_ENERGY, as its levels were measured (with it, ``eyes``' fundus photos on black shifted
    aligned's calibration and one copy's link fell to a warning, ``benchmarks/field.py``)."""
    return _quarter_detail(a, b, m, flat=0.0)


def _refined(a: np.ndarray, b: np.ndarray, m: np.ndarray) -> np.ndarray | None:
    """``m`` (b onto a) refined to the affine map that best lines up the two blurred greys (OpenCV's ECC),
    or None where it does not converge.  Keypoints place a quarter turn to a few tenths of a pixel at
    SIDE (a pixel's centre is half a pixel off its corner, and a quarter turn moves that offset), and
    a copy's detail is finer than that."""
    import numpy as np

    from ..signals.opencv import opencv

    cv2 = opencv()

    fa, fb = (cv2.GaussianBlur(x.astype(np.float32), (0, 0), 1.0) for x in (a, b))
    back = _inverse(m).astype(np.float32)  # ECC maps a's pixels into b
    criteria = (cv2.TERM_CRITERIA_EPS | cv2.TERM_CRITERIA_COUNT, 50, 1e-5)
    try:
        _, back = cv2.findTransformECC(fa, fb, back, cv2.MOTION_AFFINE, criteria, None, 1)
    except cv2.error:
        return None
    return _inverse(back)


def _inverse(m: np.ndarray) -> np.ndarray:
    """The 2 x 3 affine map that undoes ``m``."""
    import numpy as np

    return np.linalg.inv(np.vstack([m, (0.0, 0.0, 1.0)]))[:2]


def _shrunk(a: np.ndarray, b: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pair and map to compare with the larger view shrunk onto the smaller: ``m`` (b onto a) when it
    does not enlarge b, else a onto b.  Enlarged, a picture is blurred, and a copy zoomed 1.2x seemed
    to lack the fine detail of its original; the verdict is then one whichever the pair names first."""
    import numpy as np

    if abs(float(np.linalg.det(m[:, :2]))) <= 1.0:
        return a, b, m
    return b, a, _inverse(m)
