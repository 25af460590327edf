"""Local features for ``same-scene``: ORB keypoints, an LSH word index, RANSAC verification.

Pure functions on arrays; OpenCV (``cv2``) and ``scipy.sparse`` are imported only
inside the functions that compute, so loading a policy never imports them.

Why ORB: its descriptors are 256-bit strings (32 bytes a keypoint, a sixth of a
SIFT descriptor in float32), it is the fastest of OpenCV's three on small images,
patent-free, rotation-invariant (a photo turned by 90 degrees still matches), and
binary descriptors index directly by their bits (LSH), with no trained codebook.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
import math
from typing import Any

import numpy as np

from ...search import popcount
from ...signals.decode import DETAIL_FROM
from .index import shared_words

#: Keypoints kept per image (strongest first): the row size in the store.  384, not 192,
#: now that they come from twice the side: on ``benchmarks/reshot.py``'s sets 192 at that
#: side left re-shot pairs short of inliers that 384 verify (see docs/detectors.md).
FEATURES = 384
#: Longest side (pixels) keypoints are sought at: a photo is used at its own size up to
#: this, larger ones are reduced to it (``working_side``).  Not the shared decode's 160 px
#: (``signals.decode.DETAIL``): a 325 x 243 holiday photo halved to 160 keeps too few
#: corners of a scene seen again (docs/detectors.md, "Measured"); 320 verified as many
#: re-shot pairs of the 1,024 px multi-view set as 480 did, at half its cost.
SIDE = 320
#: Images whose long side is below this are not searched: too few keypoints to judge a
#: geometry (CIFAR's 32 px, icons).  The shared decode keeps its small draft for them.
MIN_SIDE = 96
#: Images smaller than this (long side) are enlarged twice over for the keypoint search (at
#: most to SIDE): ORB's 19 px patch and 6-level pyramid find too few corners in a 150 px
#: crop.  On 2,830 coin crops of 150 x 150 (kaa/coins-dataset, a held-out probe; docs/field.md)
#: nothing was searched below 200 px, and the same crops enlarged to 300 px linked the coins
#: of a layout photographed twice across train and test.
ENLARGE_BELOW = DETAIL_FROM
#: ORB's pyramid: 6 levels 1.2 apart (a re-shot a step nearer or farther is found at
#: another level) and a 19 px patch and border at the working side.
LEVELS, SCALE, PATCH = 6, 1.2, 19
#: Fewer keypoints than this (a flat or tiny picture): not searched.
MIN_KEYPOINTS = 24
#: Coordinates are stored in 1/SUB pixel units as uint16.
SUB = 16
#: Lowe's ratio test and the largest Hamming distance a tentative match may have.
RATIO = 0.8
MAX_HAMMING = 64
#: Reprojection threshold of the homography, in pixels of the working image (at most SIDE).
REPROJ = 3.0
#: A homography needs 4 correspondences; fewer than this many tentative matches is no match.
MIN_TENTATIVE = 8
#: RANSAC runs only when the mutual ratio-test matches number this many times the inliers
#: asked for.  Unrelated photos reach about 10 such matches by chance (384 keypoints at
#: 320 px each; 2 pairs in 100 reach 18, 1 in 130 with the 192 at 160 px this searched
#: before), while every re-shot pair of the multi-view benchmark that reached 12 inliers
#: had at least 24: the gate leaves recall alone and spares nearly every RANSAC among
#: unrelated photos.
GATE = 1.5
#: Affine hypotheses scored per pair.
HYPOTHESES = 128
#: Least-squares homography fits of the consensus, each on the last one's inliers (LO-RANSAC's
#: local optimisation); fewer where a fit's inliers are its own input (see :func:`consensus`).
REFITS = 3


#: The part of a row loaded with every signature: keypoint count and working size.
HEAD_LAYOUT = (("scene_n", "<u2", 1), ("scene_wh", "<u2", 2))
HEAD = 6


def empty_row() -> bytes:
    return bytes(HEAD)


def working_side(width: int, height: int) -> int:
    """The long side keypoints are sought at for a photo of this size: its own, at most SIDE;
    twice its own below ENLARGE_BELOW."""
    long = max(width, height)
    return min(2 * long if long < ENLARGE_BELOW else long, SIDE)


def at_side(grey: np.ndarray, side: int) -> np.ndarray:
    """``grey`` enlarged so that its long side is ``side`` (a small image), else as it is."""
    from ...signals.opencv import opencv

    cv2 = opencv()

    h, w = grey.shape
    if max(h, w) >= side:
        return grey
    s = side / max(h, w)
    return cv2.resize(grey, (max(1, round(w * s)), max(1, round(h * s))), interpolation=cv2.INTER_CUBIC)


def extract(grey: np.ndarray, features: int = FEATURES) -> bytes:
    """ORB keypoints of a grey image (already reduced to ``working_side``), packed as one store row.

    The row is the head (count, width, height: uint16), then ``count``
    coordinates (x, y in 1/SUB pixel, uint16) and ``count`` 32-byte
    descriptors, strongest keypoint first: 36 bytes a keypoint, nothing for
    an image without any.
    """
    from ...signals.opencv import opencv

    cv2 = opencv()  # one thread: the workers are processes already
    h, w = grey.shape
    if max(h, w) < MIN_SIDE // 2:  # the caller skips originals under MIN_SIDE; this guards the reduction
        return empty_row()
    if min(h, w) <= 2 * PATCH:  # no corner fits a strip this thin, and ORB's pyramid would shrink it to 0 px
        return np.array([0, w, h], "<u2").tobytes()
    orb = cv2.ORB_create(nfeatures=features, scaleFactor=SCALE, nlevels=LEVELS, edgeThreshold=PATCH,
                         patchSize=PATCH, fastThreshold=10)
    kp, d = orb.detectAndCompute(np.ascontiguousarray(grey), None)
    if d is None or len(kp) < MIN_KEYPOINTS:
        return np.array([0, w, h], "<u2").tobytes()
    # Coordinates in one call, not a tuple per keypoint (a fifth of this function's own time):
    # the same float32 values either way, widened exactly.
    order = np.argsort(-np.array([k.response for k in kp]), kind="stable")[:features]
    pts = cv2.KeyPoint_convert(kp).astype(np.float64)[order]
    xy = np.clip(np.round(pts * SUB), 0, 65535).astype("<u2")
    return np.array([len(order), w, h], "<u2").tobytes() + xy.tobytes() + d[order].tobytes()


@dataclass(frozen=True)
class Features:
    """Keypoints of the usable rows; ``local[row]`` is a row's index here (-1: none)."""

    local: np.ndarray  # (N,) int64
    n: np.ndarray  # (M,) keypoints
    wh: np.ndarray  # (M, 2)
    xy: np.ndarray  # (M, F, 2) float32 pixels of the working image
    desc: np.ndarray  # (M, F, 32) uint8


def parse(blobs: list[bytes], rows: np.ndarray, total: int, features: int = FEATURES) -> Features:
    """Features from stored rows (see :func:`extract`), row-aligned to ``rows``."""
    f = _empty(len(blobs), total, features)
    for k, blob in enumerate(blobs):
        _put(f, k, blob)
    f.local[rows] = np.arange(len(blobs))
    return f


def _empty(m: int, total: int, features: int) -> Features:
    """Room for ``m`` rows' keypoints, none placed yet."""
    return Features(np.full(total, -1, np.int64), np.zeros(m, np.int64), np.zeros((m, 2), np.int64),
                    np.zeros((m, features, 2), np.float32), np.zeros((m, features, 32), np.uint8))


def _put(f: Features, k: int, blob: bytes) -> None:
    """A stored row's keypoints into row ``k`` of ``f``."""
    head = np.frombuffer(blob[:HEAD], "<u2")
    c = min(int(head[0]), f.desc.shape[1], max(0, (len(blob) - HEAD) // 36))
    f.n[k], f.wh[k] = c, head[1:3]
    f.xy[k, :c] = np.frombuffer(blob[HEAD:HEAD + 4 * c], "<u2").reshape(c, 2) / SUB
    f.desc[k, :c] = np.frombuffer(blob[HEAD + 4 * c:HEAD + 36 * c], np.uint8).reshape(c, 32)


def hamming(da: np.ndarray, db: np.ndarray) -> np.ndarray:
    """(len(da), len(db)) int32 Hamming distances between 32-byte descriptors (four uint64 words).

    The popcounts of two words sum to at most 128, so each half adds up in uint8 and
    only the last add widens: fewer and narrower passes over the matrix, the distances
    unchanged.  int32, not int16: numpy's argmin and min have SIMD loops for it.  With the faiss
    extra, faiss's popcount kernel (``search/popcount.py``): the same integers, about a tenth of the time.
    """
    fast = popcount.matrix(da, db)
    if fast is not None:
        return fast
    a, b = da.view(np.uint64), db.view(np.uint64)
    lo = np.bitwise_count(a[:, None, 0] ^ b[None, :, 0])
    lo += np.bitwise_count(a[:, None, 1] ^ b[None, :, 1])
    hi = np.bitwise_count(a[:, None, 2] ^ b[None, :, 2])
    hi += np.bitwise_count(a[:, None, 3] ^ b[None, :, 3])
    return np.add(lo, hi, dtype=np.int32)


def tentative(da: np.ndarray, db: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mutual nearest neighbours by Hamming distance that pass Lowe's ratio test.

    Ties go to the first index (np.argmin's rule), both ways; the second distance is
    the second smallest value of the row, equal to the first when the nearest is tied.
    """
    d = hamming(da, db)
    if d.shape[1] < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    rows = np.arange(len(d))
    nearest = d.argmin(axis=1)
    first = d[rows, nearest]
    # The row's minimum with the nearest's own cell masked is the second smallest value,
    # what np.partition(d, 1)[:, 1] gave, in one SIMD pass instead of a partition per row.
    d[rows, nearest] = np.iinfo(np.int32).max
    second = d.min(axis=1)
    d[rows, nearest] = first
    ia = np.flatnonzero((first <= MAX_HAMMING) & (first < RATIO * second))
    # Only the columns of the rows left (about one in seven) need their own nearest: a
    # column-wise argmin, strided, costs more than the rest of the selection together.
    back = d[:, nearest[ia]].argmin(axis=0)
    ia = ia[back == ia]
    return ia, nearest[ia]


def _affine_hypotheses(pa: np.ndarray, pb: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """(M, 2, 3) affine maps, each through 3 random correspondences (degenerate triples dropped)."""
    n = len(pa)
    idx = rng.integers(0, n, (HYPOTHESES, 3))
    idx = idx[(idx[:, 0] != idx[:, 1]) & (idx[:, 0] != idx[:, 2]) & (idx[:, 1] != idx[:, 2])]
    src = np.concatenate([pa[idx], np.ones((len(idx), 3, 1), np.float64)], axis=2)  # (M, 3, 3)
    det = np.linalg.det(src)
    good = np.abs(det) > 1.0  # three nearly collinear points fix nothing
    sol = np.linalg.solve(src[good], pb[idx][good])  # (M', 3, 2): [x y 1] @ sol = target
    return sol.transpose(0, 2, 1)


def _project(h: np.ndarray, p: np.ndarray) -> np.ndarray:
    q = np.concatenate([p, np.ones((len(p), 1))], axis=1) @ h.T
    return q[:, :2] / np.where(np.abs(q[:, 2:]) < 1e-9, 1e-9, q[:, 2:])


def consensus(pa: np.ndarray, pb: np.ndarray, seed: int) -> np.ndarray:
    """Inlier mask of the best homography between matched points (vectorised RANSAC).

    Hypotheses are affine maps through 3 random matches, all scored at once;
    the best one's inliers seed a homography fitted by least squares and
    refitted up to twice on its own inliers (a local optimisation, as LO-RANSAC
    does), so perspective between two viewpoints is followed.
    """
    from ...signals.opencv import opencv

    cv2 = opencv()

    pa = pa.astype(np.float64)
    pb = pb.astype(np.float64)
    rng = np.random.default_rng(seed)
    maps = _affine_hypotheses(pa, pb, rng)
    if len(maps) == 0:
        return np.zeros(len(pa), bool)
    # (M, 2, N) by one BLAS product per coordinate, squared distances against the squared
    # radius: numpy's einsum here was most of a fixed camera's same-scene time
    # (``chess`` of ``benchmarks/field.py``).
    pred = maps[:, :, :2] @ pa.T + maps[:, :, 2:]
    err2 = (pred[:, 0] - pb[:, 0]) ** 2 + (pred[:, 1] - pb[:, 1]) ** 2
    near = err2 < (2 * REPROJ) ** 2
    mask = near[int(np.argmax(near.sum(axis=1)))]
    for _ in range(REFITS):
        if mask.sum() < 4:
            return np.zeros(len(pa), bool)
        h, _m = cv2.findHomography(pa[mask], pb[mask], 0)
        if h is None or abs(np.linalg.det(h[:2, :2])) < 1e-3:
            return np.zeros(len(pa), bool)
        fitted, mask = mask, np.linalg.norm(_project(h, pa) - pb, axis=1) < REPROJ
        if np.array_equal(fitted, mask):
            # A fit reproduces its own inliers: a refit would fit the same points to the same map
            # (findHomography is deterministic), so the mask is final.  Most pairs end here after
            # one or two fits of three (``tests/detectors/same_scene/test_consensus_refits.py``).
            break
    return mask


def verify(f: Features, i: int, j: int, *, impostor: bool = False,
           at_least: int = MIN_TENTATIVE) -> tuple[int, np.ndarray]:
    """Inliers of a homography between images ``i`` and ``j``, and the inlier point pairs.

    ``impostor``: the same tentative matches with ``i``'s points shuffled.
    ``at_least``: the inliers asked for; a pair with fewer than ``GATE`` times as many
    tentative matches is not tried (0), impostors and real pairs alike, so the
    calibration measures the search as it runs.
    Returns (count, (count, 4) float32 array x_i, y_i, x_j, y_j).
    """
    a, b = int(f.local[i]), int(f.local[j])
    na, nb = int(f.n[a]), int(f.n[b])
    none = (0, np.zeros((0, 4), np.float32))
    if na < MIN_TENTATIVE or nb < MIN_TENTATIVE:
        return none
    ia, ib = tentative(np.ascontiguousarray(f.desc[a, :na]), np.ascontiguousarray(f.desc[b, :nb]))
    if len(ia) < max(MIN_TENTATIVE, math.ceil(GATE * at_least)):
        return none
    pa, pb = f.xy[a, ia], f.xy[b, ib]
    if impostor:
        # The same tentative matches with the geometry taken away: what the
        # consensus finds by chance among this many matches of look-alike texture.
        pa = pa[np.random.default_rng(i * 7919 + j).permutation(len(pa))]
    keep = consensus(pa, pb, seed=i * 104729 + j)
    return int(keep.sum()), np.hstack([pa[keep], pb[keep]]).astype(np.float32)


#: A candidate is verified when its shared-word score stands this many standard deviations
#: above the query's mean: on the re-shot benchmark 2.5 kept 45 of 47 test views' partners
#: and 1.4 unrelated candidates per query, 3.0 kept 42 and 0.34.
Z_GATE = 3.0


#: Rows :func:`load` reads from the store at once: every row's bytes were held beside the
#: arrays parsed from them, 171 MB at 12,887 MRI slices (``tumor`` of benchmarks/field.py).
LOAD_BLOCK = 1024


def load(store: Any, family: Any, digests: Sequence[bytes], rows: np.ndarray, total: int) -> Features | None:
    """The usable rows' keypoints from the store (the signatures hold only each row's head)."""
    f, keep = _empty(len(rows), total, FEATURES), []
    for a in range(0, len(rows), LOAD_BLOCK):
        chunk = rows[a:a + LOAD_BLOCK]
        stored = store.get_signatures([digests[r] for r in chunk], family.name, family.params)
        for r in chunk:
            ok, blob = stored.get(digests[r], (False, b""))
            if ok:
                _put(f, len(keep), blob)
                keep.append(r)
    if not keep:
        return None
    f.local[np.array(keep, np.int64)] = np.arange(len(keep))
    m = len(keep)  # a row the store lacks leaves the arrays' tail unused (never, in a check)
    return Features(f.local, f.n[:m], f.wh[:m], f.xy[:m], f.desc[:m])


@dataclass(frozen=True)
class Indexed:
    """The usable rows' keypoints and their weighted LSH words (``index.rare_words``): what the search reads."""

    feats: Features
    rare: Any


def _pairs_of(ix: Indexed, q: np.ndarray, r: np.ndarray, k: int, gate: float, same: bool) -> list[tuple[int, int]]:
    """Candidate pairs (query row, reference row)."""
    if not len(q) or not len(r):
        return []
    f = ix.feats
    qi, ri, _ = shared_words(ix.rare, f.local[q], f.local[r], k, gate, same)
    return [(int(x), int(y)) for x, y in zip(q[qi], r[ri]) if x != y]


def candidate_pairs(run: Any, ix: Indexed, k: int, gate: float = Z_GATE,
                    within: bool = False) -> list[tuple[int, int]]:
    """Unordered row pairs to verify: each image's top ``k`` per compared split, asked both ways.

    Across splits only: a re-shot inside one split leaks nothing, and photo collections
    are taken that way (bursts, a few steps around one place), so within-split links
    would be noise in every such dataset; leaving them out also halves the search.
    ``within`` (``SceneSettings.within_split``, the pooled check of ``leakcheck split``):
    a split with itself too, where the policy compares it.
    """
    rows = run.rows_by_split(ix.feats.local >= 0)
    found: set[tuple[int, int]] = set()
    for a, b in (run.comparisons if within else cross_comparisons(run)):
        for q, r, same in run.sides(a, b, rows):
            # Both ways: a pair is a candidate when either image retrieves the other.
            back = [] if same else _pairs_of(ix, r, q, k, gate, False)  # a split with itself: one pass
            for x, y in _pairs_of(ix, q, r, k, gate, same) + back:
                found.add((min(x, y), max(x, y)))
    return sorted(found)


def cross_comparisons(run: Any) -> list[tuple[str, str]]:
    """The compared split pairs same-scene searches: two different splits (see ``candidate_pairs``)."""
    return [(a, b) for a, b in run.comparisons if a != b]


def impostors(run: Any, ix: Indexed, rows: np.ndarray, count: int, cands: int,
              verify_all: Callable[[list[tuple[int, int]]], list[int]]) -> np.ndarray:
    """Best inliers of up to ``count`` images (evenly spaced) with their matched points shuffled.

    Each sampled image's top ``cands`` candidates in the splits it is compared
    with, whatever their word score, are verified with the geometry taken away:
    the descriptor matches stay (look-alike texture, repeated windows), only
    chance lines them up.  ``verify_all`` gives each pair's inliers, here or in
    the check's workers: :func:`impostor_inliers`, through the same gate as real
    pairs at the level's floor (an impostor below it could not move a level that
    never goes under the floor).
    """
    by_split = run.rows_by_split(ix.feats.local >= 0)
    sample = rows[np.unique(np.linspace(0, len(rows) - 1, min(count, len(rows))).astype(np.int64))]
    best: dict[int, int] = {}
    split_of = np.array(run.split_of, dtype=object)
    pairs = cross_comparisons(run)
    todo: list[tuple[int, int]] = []
    for s in sorted(set(split_of[sample])):
        parts = [by_split[b if a == s else a] for a, b in pairs if s in (a, b)]
        if not parts:
            continue
        q = sample[split_of[sample] == s]
        for x in q:
            best.setdefault(int(x), 0)
        todo += _pairs_of(ix, q, np.concatenate(parts), cands, -np.inf, False)
    for (x, _), c in zip(todo, verify_all(todo)):
        best[x] = max(best[x], c)
    return np.array(list(best.values()), np.int64)


def impostor_inliers(f: Features, i: int, j: int, floor: int) -> int:
    """Inliers of the pair ``i``, ``j`` with ``i``'s matched points shuffled (see :func:`impostors`)."""
    return verify(f, i, j, impostor=True, at_least=floor)[0]


def normalised(pts: np.ndarray, f: Features, i: int, j: int, limit: int) -> list[list[float]]:
    """Inlier point pairs as fractions of each working image (x_i, y_i, x_j, y_j), at most ``limit``."""
    if not len(pts):
        return []
    pick = np.unique(np.linspace(0, len(pts) - 1, min(limit, len(pts))).astype(np.int64))
    wi, wj = f.wh[f.local[i]], f.wh[f.local[j]]
    scale = np.array([wi[0], wi[1], wj[0], wj[1]], np.float64)
    return np.round(pts[pick] / np.maximum(scale, 1), 4).tolist()
