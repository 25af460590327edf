"""``turned-copy``: a same-scene match that is one picture turned a few degrees, judged by its pixels.

Roboflow's rotation augmentation (up to 15 degrees, often with a crop) and a
scanner's skew turn a copy by an angle no orientation covers, so neither the
hashes nor ``aligned`` (shifts and zooms) line it up; ``same_scene`` finds it,
with 60-180 inliers, but only warns, since it cannot tell a copy from another
shot of the scene.  Here the inlier points same-scene kept give the turn: a
similarity (angle, scale, shift).  Where it is one ``aligned`` never searched
(at least TURN_FROM degrees off every quarter turn, or a zoom beyond its
range), the second image is turned back onto the first at SIDE px and their
fine detail compared.  A copy keeps it; another shot does not (parallax,
light, moved things).  A pair at LEVEL or more is a near-duplicate at this
detector's severity (error by default), instead of a same-scene link.

A pair only shifted, by more than ``aligned`` reaches (tiles cut from one scene
with an overlap), is judged as a shear is, from SHEARED_LEVEL.  A turn near a
quarter turn is left to the detectors that search orientations, unless zoomed
(QUARTER_ZOOM_FROM: judged, see ``_quarter_detail``),
and near-identity geometry to ``aligned``: a fixed camera's shots line up
with no turn at all, and their detail agrees as a copy's does
(``docs/field.md``, ``chess`` and ``deeppcb``), so this verdict never looks
at them.

On ``benchmarks/field.py``'s datasets (same-scene links turned at least 1
degree, 128 px, band of 1.6 px): copies judged by eye 0.90-0.96 (X-rays,
invoices); other shots and other objects at most 0.76 (a lime re-shot) and
0.71 (one invoice template, other figures), and 0.856 for one chessboard shot again
with the camera turned 2.3 degrees and other pieces; re-shots of
``benchmarks/reshot_data.py``'s sets (panoramas turned on a tripod
included) at most 0.65 at 320 px.  Set ``turned_copy: off`` to keep such
pairs as same-scene warnings.
"""

from __future__ import annotations

import hashlib
import math
import zlib
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from .base import Detector, PolicyView, Severity
# The detail correlation and its constants, public here as before (tests, benchmarks, aligned/confirmed.py).
from .turned_detail import (BLOCK_LEVEL, BLOCKS, EDGE, FLAT_ENERGY, MIN_OVERLAP, SIGMA, _quarter_detail,  # noqa: F401
                            detail, quarter_detail)

if TYPE_CHECKING:
    import numpy as np

    from ..search.kernels import Match
    from ..search.run import SearchRun
    from ..signals.decode import Decoded
    from ..signals.families import Family

#: Long side of the grey image the verdict compares (the keypoints' working image, reduced).
SIDE = 128
#: Detail correlation a copy reaches (see the module's figures): above what one fixed scene
#: shot again with the camera turned 2.3 degrees reached (``chess``: 0.850 and 0.856, one
#: board with other pieces) and two frames of one menu with the character's skin changed
#: (``apex-hud``: 0.852 and 0.857; the verdict reads grey).
LEVEL = 0.86
#: Degrees off every quarter turn from which ``aligned`` cannot have lined the pair up.
TURN_FROM = 1.0
#: How much wider or taller one picture's frame must be than the other's (its width over height, over
#: the other's, less one) for ``aligned`` to have been unable to line them up.  It squashes each to a
#: 32 px square, so a crop to another height is a zoom of one axis there; 0.05 moves the square's edge
#: 0.8 px from its centre, under the pixel its search reaches.  Aerial photos cropped to another
#: height (``whales`` of ``benchmarks/field.py``: 72 against 86 px tall at 128 px, 0.84, 112 inliers,
#: pHash 4) were same-scene warnings only.
ASPECT_FROM = 0.05
#: Zooms ``aligned`` searches (its largest is 1.25): beyond them, as unsearched as a turn.
ZOOM_RANGE = (0.8, 1.25)
#: A quarter turn zoomed this much or more (either way) is searched by no detector: the hashes turn
#: by quarters at one scale, ``aligned`` zooms but never turns.  Roboflow's augmentations turn a
#: picture a quarter and crop or zoom it 1.1-1.3x: in a held-out export renamed ``IMG_0001.jpg``...
#: (``tracks`` of ``benchmarks/field.py``) 10 held-out pictures whose train copies were all such
#: were same-scene warnings only.  Another shot of a fixed scene does not turn it a quarter.
QUARTER_ZOOM_FROM = 1.08
#: Share of same-scene's kept inlier points the similarity must explain: a copy is one.
EXPLAINED = 0.8
#: Fewest points a similarity is estimated from (the overlap a copy shows: ``turned_detail.MIN_OVERLAP``).
MIN_POINTS = 8
#: Where same-scene leaves its matches' kept inlier points for this detector (``run.memo``).
POINTS_MEMO = "same-scene-points"
#: The band under LEVEL where this dataset's own impostors are counted (:func:`impostor_level`), and
#: how many must lie in it before they say anything; the error level is then LEVEL + BAND.
BAND, CROWD = 0.04, 20


#: How far (a share of the first image's width or height) the second image's centre must land from the
#: first's for a shift ``aligned`` never searched (its reach is 4 px of 32, an eighth): tiles cut from one
#: scene with an overlap, crops a step apart.  A fixed camera's shots land within a few hundredths.
SHIFT_FROM = 0.15
#: The detail a pair only shifted must reach: a copy's overlapping pixels agree (tiles of one scene
#: 0.95 and more), while a scene shot again from a step aside agrees less (parallax, light) and may
#: come close to LEVEL (a chessboard shot again turned 2.3 degrees: 0.856).
SHIFTED_LEVEL = 0.92


@dataclass(frozen=True)
class Turn:
    """The similarity taking the second image onto the first, in normalised coordinates."""

    angle: float  # degrees
    scale: float
    explained: float  # share of the points it explains
    #: How far the second image's centre lands from the first's (share of the first's width or height).
    shift: float = 0.0
    #: The second image's width over height, over the first's (``squashed``).
    aspect: float = 1.0

    @property
    def unsearched(self) -> bool:
        off = abs(self.angle) % 90.0
        return (min(off, 90.0 - off) >= TURN_FROM or not ZOOM_RANGE[0] <= self.scale <= ZOOM_RANGE[1]
                or self.quarter or self.squashed)

    @property
    def squashed(self) -> bool:
        """A crop to another aspect (ASPECT_FROM): a zoom of one axis in ``aligned``'s squares."""
        return max(self.aspect, 1 / self.aspect) - 1 >= ASPECT_FROM

    @property
    def quarter(self) -> bool:
        """A quarter turn zoomed (QUARTER_ZOOM_FROM) within ``aligned``'s zooms: the turn the hashes search,
        at a scale they do not."""
        off = abs(self.angle) % 90.0
        return (min(off, 90.0 - off) < TURN_FROM and abs(self.angle) > 45.0
                and ZOOM_RANGE[0] <= self.scale <= ZOOM_RANGE[1] and max(self.scale, 1 / self.scale) >= QUARTER_ZOOM_FROM)

    @property
    def shifted(self) -> bool:
        """Only shifted, beyond aligned's reach: overlapping tiles of one scene."""
        return not self.unsearched and self.shift >= SHIFT_FROM


def row(decoded: Decoded, family: Family) -> bytes:
    """``\\x01``, width and height (uint16), then the grey image deflated by rows of differences;
    ``\\x00`` for an image same-scene does not search."""
    import numpy as np

    from ..signals.decode import detail_grey
    from .same_scene.features import MIN_SIDE

    if max(decoded.size) < MIN_SIDE:
        return b"\0"
    grey = np.ascontiguousarray(detail_grey(decoded, SIDE), np.uint8)
    h, w = grey.shape
    return (b"\1" + np.array([w, h], "<u2").tobytes()
            + zlib.compress(np.diff(grey, axis=1, prepend=np.uint8(0)).tobytes(), 1))


def image(data: bytes) -> np.ndarray | None:
    """The grey image a row holds, or None (no image, or a damaged row: the store is not trusted)."""
    import numpy as np

    if data[:1] != b"\1" or len(data) < 5:
        return None
    w, h = (int(v) for v in np.frombuffer(data[1:5], "<u2"))
    try:
        diffs = np.frombuffer(zlib.decompress(data[5:]), np.uint8)
    except zlib.error:
        return None
    if w < 1 or h < 1 or max(w, h) > SIDE or diffs.size != w * h:
        return None
    return np.cumsum(diffs.reshape(h, w), axis=1, dtype=np.uint8)


def small(width: int, height: int) -> bytes | None:
    from .same_scene.features import MIN_SIDE

    return b"\0" if max(width, height) < MIN_SIDE else None


def turn(points: np.ndarray, size_a: tuple[int, int], size_b: tuple[int, int]) -> tuple[Turn, np.ndarray] | None:
    """The similarity (2 x 3, pixels of b to pixels of a) explaining ``points`` (x_a, y_a, x_b, y_b, 0..1)."""
    from ..signals.opencv import opencv

    cv2 = opencv()

    if len(points) < MIN_POINTS:
        return None
    pa, pb = _in_pixels(points, size_a, size_b)
    # 1.5 px at SIDE: same-scene's 3 px reprojection threshold at its 320 px, a little tighter.
    m, inliers = cv2.estimateAffinePartial2D(pb, pa, method=cv2.RANSAC, ransacReprojThreshold=1.5)
    if m is None or inliers is None:
        return None
    scale = math.hypot(m[0, 0], m[1, 0])
    angle = math.degrees(math.atan2(m[1, 0], m[0, 0]))
    (wa, ha), (wb, hb) = size_a, size_b
    cx, cy = m[:, :2] @ (wb / 2, hb / 2) + m[:, 2]
    shift = max(abs(cx - wa / 2) / wa, abs(cy - ha / 2) / ha)
    return Turn(angle, scale, float(inliers.mean()), float(shift), (wb / hb) / (wa / ha)), m


#: The detail a pair mapped by a shear must reach to be judged at all: a shear is fitted where no
#: similarity explains the points, which repeated texture also allows (``benchmarks/field.py``: two
#: crops of one circuit design in ``deeppcb`` 0.869, two bearing shells of ``brush`` 7 minutes apart
#: 0.906), while sheared copies score 0.93-0.98 (a held-out ultrasound export, 11 of 12 sampled; one
#: 0.926).
SHEARED_LEVEL = 0.92
#: How far from a similarity an affine map must be (its two singular values' ratio, less one) to be a
#: geometry ``aligned`` never searched: Roboflow's shear augmentation (up to 15 degrees) is 0.1-0.3.
SHEAR_FROM = 0.03


def sheared(points: np.ndarray, size_a: tuple[int, int], size_b: tuple[int, int]) -> np.ndarray | None:
    """The affine map (2 x 3, pixels of b to pixels of a) explaining EXPLAINED of ``points`` where no
    similarity does, when it is no similarity itself (SHEAR_FROM): a copy sheared as well as turned
    (a held-out ultrasound export augmented by rotation and shear: 12 of 12 sampled same-scene
    warnings were such copies).  Else None."""
    import numpy as np

    from ..signals.opencv import opencv

    cv2 = opencv()

    if len(points) < MIN_POINTS:
        return None
    pa, pb = _in_pixels(points, size_a, size_b)
    m, inliers = cv2.estimateAffine2D(pb, pa, method=cv2.RANSAC, ransacReprojThreshold=1.5)
    if m is None or inliers is None or float(inliers.mean()) < EXPLAINED:
        return None
    s = np.linalg.svd(m[:, :2], compute_uv=False)
    return m if s[1] > 0 and s[0] / s[1] - 1 >= SHEAR_FROM else None


def _in_pixels(points: np.ndarray, size_a: tuple[int, int], size_b: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Points of a and of b (x_a, y_a, x_b, y_b, 0..1) in pixels, as OpenCV's estimators take them; RANSAC
    seeded by their count, so the same pair gets the same verdict every run."""
    import numpy as np

    from ..signals.opencv import opencv

    cv2 = opencv()

    pa = (points[:, 0:2] * np.array(size_a, np.float32)).astype(np.float32).reshape(-1, 1, 2)
    pb = (points[:, 2:4] * np.array(size_b, np.float32)).astype(np.float32).reshape(-1, 1, 2)
    cv2.setRNGSeed(len(points))
    return pa, pb


class TurnedCopy(Detector):
    name = "turned-copy"
    section = "turned_copy"
    # After same-scene (60): its refine leaves the points this one reads.
    rank = 70
    evidence_key = "turned_copy_detail"
    link_value = "{:.3f}"
    evidence_value = "copy turned, sheared or shifted, detail {:.3f}"
    default = Severity("error")
    init_keys = (("severity", "a same-scene match that is one picture turned a few degrees (docs/detectors.md)"),)
    # A fixed camera's shots are never judged here (no turn, no zoom, no shift: aligned's), and the
    # error level is raised over this dataset's own impostors (``impostor_level``), so an error-level
    # turned copy inside a dataset-wide web is a copy: ``brush`` of ``benchmarks/field.py`` (bearing
    # shells on black, one web of 3,069 images) had 5,032 across splits, 16 of 16 sampled the same
    # shell (``benchmarks/burst_stages.py``), all folded into the note because they touch most of it.
    stands_out_of_scene = True

    def families(self, settings: Severity, policy: PolicyView) -> tuple[Family, ...]:
        if settings.severity == "off" or policy.detectors.same_scene.severity == "off":
            return ()
        return (grey_family(),)

    def orientations(self, settings: Severity, policy: PolicyView) -> tuple[str, ...]:
        return ()  # it turns by the angle the keypoints give, no fixed orientation

    def find(self, run: SearchRun, settings: Severity) -> list[Match]:
        return []  # its matches are same-scene's, judged again in refine

    def refine(self, run: SearchRun, settings: Severity, matches: list[Match]) -> list[Match]:
        """Same-scene matches that are one picture turned, as near-duplicates (see the module)."""
        points = run.memo.get(POINTS_MEMO)
        if not isinstance(points, dict) or not run.sigs.has("scene_grey"):
            return matches
        todo = [m for m in matches if m.detector == "same-scene" and (m.i, m.j) in points]
        greys = _greys(run, {r for m in todo for r in (m.i, m.j)})
        judged = {id(m): v for m in todo if (v := _verdict(m, greys, points)) is not None}
        verdicts = {k: v[0] for k, v in judged.items()}
        stats: dict[str, Any] = {"judged": len(verdicts), "level": LEVEL, "error_level": LEVEL}
        stats.update(impostor_level(list(verdicts.values())))
        copies = {k for k, v in verdicts.items() if v >= LEVEL}
        # A shift shows shared pixels, but not whose: overlapping tiles of one scan, or two crops of one
        # circuit design (``deeppcb``: 0.92-0.98 for crops a user called no copies). Said, never failed.
        shifted = {k for k in copies if judged[k][1]}
        weak = {k for k in copies if verdicts[k] < stats["error_level"]} | shifted
        from . import turned_template  # documents decoded again: numpy, PIL, only when asked

        template = turned_template.held(run, [m for m in todo if id(m) in copies - weak], judged)
        weak |= template
        run.stats["turned_copy"] = {**stats, "copies": len(copies) - len(weak), "weak": len(weak),
                                    "shifted": len(shifted), "template_held": len(template)}
        return [_as_copy(m, verdicts[id(m)], id(m) in weak) if id(m) in copies else m for m in matches]

    def strength(self, match: Match, settings: Severity) -> float:
        return round(float(match.value), 4)

    def summary(self, stats: Any) -> str:
        if not isinstance(stats, dict) or not stats.get("judged"):
            return ""
        text = f"turned copies {stats['copies']} of {stats['judged']} turned same-scene pairs"
        shifted = stats.get("shifted")
        if isinstance(shifted, int) and shifted > 0:
            text += (f"; {shifted} shifted copies (overlapping crops) are warnings: a shift cannot say "
                     "whether the shared pixels are one picture's or one design's")
        try:
            raised, weak = float(stats.get("error_level", LEVEL)), int(stats.get("weak", 0))
            near = int(stats.get("impostors_near", 0))
        except (TypeError, ValueError):  # a saved report may say anything
            return text
        if raised <= LEVEL:
            return text
        return (f"{text}; {near} other turned pairs of this dataset agree in detail just under {LEVEL}, "
                f"so turned-copy cannot tell copies under {raised:.2f} from them: those {weak} are warnings")


def _greys(run: SearchRun, rows: set[int]) -> dict[int, np.ndarray]:
    digests = run.sigs.digests
    family = grey_family()
    stored = run.store.get_signatures([digests[r] for r in rows], family.name, family.params)
    out = {}
    for r in rows:
        ok, data = stored.get(digests[r], (False, b""))
        img = image(data) if ok else None
        if img is not None:
            out[r] = img
    return out


def _verdict(m: Match, greys: dict[int, np.ndarray], points: dict) -> tuple[float, bool, np.ndarray, tuple] | None:
    """The pair's detail correlation when a turn, shear or shift no other detector searched explains its
    points, whether it was only a shift, the map (b onto a) and the two greys' sizes; else None."""
    import numpy as np

    a, b = greys.get(m.i), greys.get(m.j)
    if a is None or b is None:
        return None
    pts, size_a, size_b = np.asarray(points[m.i, m.j], np.float32), (a.shape[1], a.shape[0]), (b.shape[1], b.shape[0])
    found = turn(pts, size_a, size_b)
    if found is None:
        return None
    shear = found[0].explained < EXPLAINED
    only_shifted = not shear and found[0].shifted
    geometry = sheared(pts, size_a, size_b) if shear else found[1] if found[0].unsearched or only_shifted else None
    if geometry is None:
        return None
    # A quarter turn zoomed is judged with the larger view shrunk onto the smaller (``_shrunk``) and without
    # the blur's reach past its edge (EDGE), a copy's detail then whole.  Not the other geometries: LEVEL
    # was set on this measure with that edge in, and without it a fixed camera's shot turned 2.3 degrees
    # (``chess`` of ``benchmarks/field.py``) agrees at 0.87-0.91 with its neighbours; no fixed camera
    # turns its scene a quarter.
    value = _quarter_detail(a, b, geometry) if not shear and found[0].quarter else detail(a, b, geometry)
    if value is None or ((shear or only_shifted) and value < SHEARED_LEVEL):
        return None
    return round(value, 4), only_shifted, geometry, (size_a, size_b)


def _as_copy(m: Match, score: float, weak: bool = False) -> Match:
    from ..search.kernels import Match

    return Match(m.i, m.j, TurnedCopy.name, score, "identity", weak=weak)


def impostor_level(scores: list[float]) -> dict[str, Any]:
    """LEVEL held against this dataset's own impostors: its turned same-scene pairs scoring under it.

    Each was lined up by its keypoints and turned, as a copy is, yet agrees less than a copy: another
    shot, or another object of one design.  A level in the tail of their scores sees fewer of them
    the closer it gets.  Where at least as many lie in the BAND just under it as in the band under
    that (and at least CROWD), the level sits in their bulk and they reach over it as far as under
    it: the error level (``error_level``) is raised by BAND, and turned copies under it are warnings.

    LEVEL comes from other datasets.  Where every image is one low-texture part in one setup (the
    probe's ``brush``: bearing-shell crops on black, rotated copies among them), different parts lined
    up agree in detail as copies do: 13 pairs at 0.86-0.90 were errors, at least 5 of them different
    parts, the turned copies there score 0.93-0.99; under LEVEL lay 1,513 of its 13,604 judged pairs
    in the band, 851 in the band under it.  On ``benchmarks/field.py``'s ``chess`` 6 and 2."""
    import numpy as np

    x = np.asarray(scores, np.float64)
    near = int(((x >= LEVEL - BAND) & (x < LEVEL)).sum())
    further = int(((x >= LEVEL - 2 * BAND) & (x < LEVEL - BAND)).sum())
    out: dict[str, Any] = {"impostors_near": near, "impostors_further": further}
    if near >= CROWD and near >= further:
        out.update(error_level=round(LEVEL + BAND, 4), raised=True)
    return out


def _params() -> str:
    from ..signals.decode import DECODE_PATH
    from .same_scene.features import MIN_SIDE

    # The images that carry a row (MIN_SIDE) are part of it: a store's "\0" for a 150 px image,
    # written when same-scene skipped it, must not stand once it is searched.
    return "scene-grey-" + hashlib.blake2b(f"side{SIDE};min{MIN_SIDE};dzip;{DECODE_PATH};v1".encode(),
                                           digest_size=8).hexdigest()


@lru_cache(maxsize=1)
def grey_family() -> Family:
    """The stored grey images (made here, not at import: loading a policy imports no numpy)."""
    from ..signals.families import Family

    return Family("scene_grey", _params(), (("scene_grey", "u1", 1),), row, variable=True, from_dims=small)


DETECTOR = TurnedCopy()
