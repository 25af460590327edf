"""``same-scene``'s search: features from the store, candidates, verification, calibration.

Split from ``same_scene.py`` so that loading a policy imports neither numpy nor the
search: the detector imports this module where it computes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...search import popcount
from ...search.kernels import Match
from ...search.run import SearchRun
from ...signals.decode import DECODE_PATH, Decoded, detail_grey
from ...signals.families import Family
from ...signals.pool import Running
from ...store import keys
from . import budget, features, ground, index
from ..aligned.holds import sparse
from ..base import Done

#: Impostors sampled for the calibration (evenly spaced over the usable rows): the levels
#: rest on the floor unless impostors reach it, so a few hundred tell whether they do
#: (on the re-shot benchmark the largest of 400 reached 8 against a floor of 12).
IMPOSTORS = 256
#: Candidates per impostor that are verified with their geometry shuffled.
IMPOSTOR_CANDIDATES = 2
#: Inlier points kept per match for the report's picture (normalised 0..1 coordinates).
POINTS = 40
#: Candidate pairs from which a full search verifies them in the check's worker processes,
#: while the next detectors search: below this many, forking the workers costs about as much
#: as verifying inline (a pair costs about 2 ms since the consensus is matrix products; at 500
#: every dataset of ``benchmarks/field.py`` was as fast or faster than at 2,000, ``chess`` 12.1
#: s to 9.4 s).
BACKGROUND_FROM = 500
#: Pairs of a stage of the budget (``budget.plan``) from which they go to the check's workers: the
#: search waits for a stage, so its pairs are not verified beside the next detectors' search as the
#: rest are; ``chess``'s first stage (483 pairs) was verified here, one process of two busy.
STAGE_FROM = 64
#: Same-scene matches whose matched points the report carries (the strongest): the HTML page
#: draws them for the pairs it shows; a fixed camera's thousands of matches (``chess`` of
#: ``benchmarks/field.py``: 2 MB of points) made writing the report a tenth of the check.
REPORTED_POINTS = 500


def _row(decoded: Decoded, family: Family) -> bytes:
    w, h = decoded.size
    if max(w, h) < features.MIN_SIDE:
        return features.empty_row()  # too small to carry keypoints (CIFAR's 32 px): not searched
    side = features.working_side(w, h)
    return features.extract(features.at_side(detail_grey(decoded, side), side))


FAMILY = Family(
    "scene", f"orb{features.FEATURES}x{features.LEVELS}@{features.SCALE}p{features.PATCH};side{features.SIDE};"
             f"min{features.MIN_SIDE}x2<{features.ENLARGE_BELOW};{DECODE_PATH};v2",
    features.HEAD_LAYOUT, _row, variable=True,
)


def _glyph(decoded: Decoded, family: Family) -> bytes:
    """1 when the image is thin strokes on a plain ground (``aligned.holds.sparse``), on its 32 px grey square,
    and under ENLARGE_BELOW: a page of print or a drawing that large has corners of its own (unmeasured)."""
    if max(decoded.size) >= features.ENLARGE_BELOW:
        return b"\0"
    grey = np.asarray(decoded.grey, np.float32)
    n = min(grey.shape) // 32
    if not n:
        return b"\0"
    return bytes([sparse.is_glyph(grey[:32 * n, :32 * n].reshape(32, n, 32, n).mean(axis=(1, 3)))])


def _large(width: int, height: int) -> bytes | None:
    """A file of ENLARGE_BELOW px or more is never a glyph here: its row without a decode (a store
    written before this family gains it for photos without reading them again)."""
    return b"\0" if max(width, height) >= features.ENLARGE_BELOW else None


#: Whether each image is a glyph: a pair of two is held to GLYPH_INLIERS (one byte a content).
GLYPH_FAMILY = Family(
    "glyph", f"share{sparse.GLYPH_SHARE}near{sparse.NEAR}range{sparse.MIN_RANGE};under{features.ENLARGE_BELOW};"
             f"grey32-of-{DECODE_PATH};v1",
    (("glyph", "u1", 1),), _glyph, from_dims=_large,
)
#: Inliers two glyphs need to be a same-scene match: stroke corners of a drawing match those of any
#: other character.  On Omniglot's 105 px drawings (``benchmarks/glyphs.py``) 1,249 pairs of
#: different drawings passed the level of 12 with 13 inliers at the median, 25 at the 99th
#: percentile and 34 at most; the 15 planted copies same-scene linked had 51-131.
GLYPH_INLIERS = 40


def _ground(decoded: Decoded, family: Family) -> bytes:
    """The object mask of the upright photo (``ground.mask``), in the keypoints' frame (untrimmed)."""
    from PIL import Image

    img = decoded.upright if decoded.upright is not None else decoded.content
    if img is None:
        return b"\xff" * ground.BYTES
    small = img.convert("RGB").resize((ground.SIDE, ground.SIDE), Image.Resampling.BOX)
    return ground.mask(np.asarray(small))


#: Where each photo's object stands out from its ground: a match off the object in both is held.
GROUND_FAMILY = Family(
    "ground", f"side{ground.SIDE}ring{ground.RING}tol{ground.MIN_TOL}plain{ground.PLAIN}"
              f"obj{ground.MIN_OBJECT}-{ground.MAX_OBJECT};upright-of-{DECODE_PATH};v1",
    (("ground", "u1", ground.BYTES),), _ground,
)


#: The version of same-scene's stored levels and points and of its matches' parameters (v6: a full
#: search on a set of one scene spares the pairs only its note would hold, ``budget``).
STORE_VERSION = "same-scene-v6"


def params(det: Any) -> str:
    """What same-scene's matches depend on, for the store's match key (``keys.matches``)."""
    return (f"{STORE_VERSION};k={det.candidates};warn={det.false_alarms_per_10k};"
            f"err={det.error_false_alarms_per_10k};min={det.min_inliers};{FAMILY.params};"
            f"on{ground.ON_OBJECT};{GROUND_FAMILY.params}")


def store_key(kind: str, det: Any, comparisons: Any) -> str:
    """Key of the stored levels (``calibration``) or matched points (``points``): the settings, the split
    pairs compared (the within-split levels are their own), the keypoint family."""
    return keys.detector_key(f"same-scene-{kind}", STORE_VERSION,
                             (repr(det), sorted(comparisons), FAMILY.name, FAMILY.params))


def _pair_key(run: SearchRun, i: int, j: int) -> str:
    return json.dumps([run.paths[i], run.paths[j]])


def levels(impostors: np.ndarray, det: Any) -> dict[str, Any]:
    """Warning and error inlier levels from impostor maxima, and what they rest on.

    A rate of r per 10,000 can be read off n impostors only when n * r / 10,000
    of them lie above it; with fewer (a small dataset), the level is one above
    the largest impostor and never below the floor, and ``floor`` says so.
    """
    imp = np.sort(np.asarray(impostors, np.int64))
    n = len(imp)
    top = int(imp[-1]) if n else 0
    floor_w, floor_e = det.min_inliers, det.min_inliers + 3

    def at(rate: float) -> tuple[int, bool]:
        if n * rate / 1e4 >= 1:
            return int(np.quantile(imp, 1 - rate / 1e4, method="higher")) + 1, False
        return top + 1, True

    warn, w_small = at(det.false_alarms_per_10k)
    err, e_small = at(det.error_false_alarms_per_10k)
    warn = max(warn, floor_w)
    err = max(err, warn, floor_e)
    measured = round(float((imp >= warn).mean() * 1e4), 1) if n else 0.0
    return {"threshold": warn, "error_threshold": err, "calibrated_on": n, "largest_impostor": top,
            "false_alarms_per_10k": measured, "error_false_alarms_per_10k": det.error_false_alarms_per_10k,
            "floor": bool(warn == floor_w or err == floor_e), "too_few_for_rate": bool(w_small or e_small)}



@dataclass
class _Search:
    """What verification needs, set up in the driver: the features, the levels, the pairs."""

    feats: features.Features
    cal: dict[str, Any]
    #: The pairs still to verify.
    pairs: list[tuple[int, int]]
    #: Pairs verified already (the budget's stages, ``budget.plan``): (inliers, points) of each.
    done: dict[tuple[int, int], Any] = field(default_factory=dict)


@dataclass
class _Begun:
    """A search whose pairs are verified in worker processes (see :func:`begin`)."""

    run: SearchRun
    settings: Any
    name: str
    search: _Search
    work: Running
    running: bool = True

    def result(self) -> list[Match]:
        global _SHARED
        try:
            verified = self.work.results()
        finally:
            _SHARED = None
        return _finish(self.run, self.settings, self.name, self.search, verified)

    def __enter__(self) -> _Begun:
        return self

    def __exit__(self, *exc: object) -> None:
        global _SHARED
        self.work.stop()
        _SHARED = None


#: The search the forked workers verify against (set in the driver just before they fork).
_SHARED: _Search | None = None


def _verify_shared(pair: tuple[int, int]) -> tuple[int, Any]:
    """One pair's verification in a worker, against :data:`_SHARED`."""
    assert _SHARED is not None
    return features.verify(_SHARED.feats, pair[0], pair[1], at_least=_SHARED.cal["threshold"])


#: The features and floor the forked workers verify impostors against (set just before they fork).
_IMPOSTORS: tuple[features.Features, int] | None = None


def _impostor_shared(pair: tuple[int, int]) -> int:
    """One impostor pair's inliers in a worker, against :data:`_IMPOSTORS`."""
    assert _IMPOSTORS is not None
    return features.impostor_inliers(_IMPOSTORS[0], pair[0], pair[1], _IMPOSTORS[1])


def _impostors_verified(run: SearchRun, feats: features.Features, pairs: list[tuple[int, int]],
                        floor: int) -> list[int]:
    """Inliers of each impostor pair: in the check's workers where ``SearchRun.forked_jobs`` allows (the
    calibration of a fixed camera's 289 photos was 2.5 s of CPU in the driver, ``chess`` of
    ``benchmarks/field.py``), else here; the same counts either way (each RANSAC is seeded by its pair)."""
    global _IMPOSTORS
    jobs = run.forked_jobs(len(pairs), BACKGROUND_FROM)
    if not jobs:
        return [features.impostor_inliers(feats, i, j, floor) for i, j in pairs]
    _IMPOSTORS = (feats, floor)
    try:
        with Running(_impostor_shared, pairs, jobs) as work:
            return work.results()
    finally:
        _IMPOSTORS = None


def _verified(search: _Search) -> list[tuple[int, Any]]:
    """(inliers, points) of every pair, here."""
    return [features.verify(search.feats, i, j, at_least=search.cal["threshold"]) for i, j in search.pairs]


def find(run: SearchRun, settings: Any, name: str) -> list[Match]:
    """Matches at or above the warning level (weak below the error level); calibration in ``run.stats``.

    Incremental: with a focus (new or changed files) only pairs touching
    them are verified, at the levels the last full search calibrated.
    """
    search = _prepare(run, settings)
    if search is None:
        return []
    return _finish(run, settings, name, search, _verified(search))


def begin(run: SearchRun, settings: Any, name: str) -> Any:
    """:func:`find`, with a full search's pairs verified in the check's worker processes (``jobs``)
    while the next detectors search; the same result, pair for pair (each RANSAC is seeded by its pair).

    Only where that pays and is safe: a full local search (no focus, no cluster) with many
    pairs, and workers that are forked (they read the features without a copy sent).
    """
    global _SHARED
    search = _prepare(run, settings)
    if search is None:
        return Done([])
    jobs = run.forked_jobs(len(search.pairs), BACKGROUND_FROM)
    if not jobs:
        return Done(_finish(run, settings, name, search, _verified(search)))
    _SHARED = search
    work = None
    try:
        work = Running(_verify_shared, search.pairs, jobs)
        return _Begun(run, settings, name, search, work)
    except BaseException:  # a SIGTERM's Terminated too: no worker outlives the search
        if work is not None:
            work.stop()
        _SHARED = None
        raise


def _prepare(run: SearchRun, settings: Any) -> _Search | None:
    """Features, levels and candidate pairs (``run.stats`` filled); None when nothing is searchable."""
    if not run.sigs.has("scene_n"):
        return None
    heads = run.sigs.arrays["scene_n"][:, 0]
    feats = features.load(run.store, FAMILY, run.sigs.digests,
                   np.flatnonzero(run.sigs.valid & (heads >= features.MIN_KEYPOINTS)), len(heads))
    usable = 0 if feats is None else int((feats.local >= 0).sum())
    counts = {"images": usable, "skipped": int(run.sigs.valid.sum()) - usable}
    if feats is None:
        run.stats["same_scene"] = counts
        return None
    rows = np.flatnonzero(feats.local >= 0)
    ix = features.Indexed(feats, index.rare_words(feats.desc, feats.n))
    popcount.available()  # faiss imported here, before the verification's workers fork, not in each
    cal = _calibration(run, settings, ix, rows)
    run.stats["same_scene"] = {**cal, **counts}
    search = _Search(feats, cal, features.candidate_pairs(run, ix, settings.candidates, within=settings.within_split))
    if not _budgeted(run, settings, search):
        return search
    pairs = search.pairs
    stages = (features.candidate_pairs(run, ix, k) for k in range(1, settings.candidates))  # lazily: see budget.PROBE
    done, left = budget.plan(pairs, stages, int(run.sigs.valid.sum()), lambda best: _stage(run, search, best))
    run.stats["same_scene"]["spared"] = len(pairs) - len(done) - len(left)
    return _Search(feats, cal, left, done)


def _budgeted(run: SearchRun, settings: Any, search: _Search) -> bool:
    """Whether a full search may spare the pairs a shared scene's note alone would hold (``budget``):
    many pairs, links that are warnings, pairs across splits only."""
    return (len(search.pairs) >= budget.BUDGET_FROM and run.focus is None and settings.severity == "warning"
            and not settings.within_split)


def _stage(run: SearchRun, search: _Search, pairs: list[tuple[int, int]]) -> list[tuple[bool, Any]]:
    """(whether a match, (inliers, points)) of each of a stage's ``pairs``: in the check's workers where
    ``SearchRun.forked_jobs`` allows, else here; the same either way (each RANSAC is seeded by its pair)."""
    global _SHARED
    jobs = run.forked_jobs(len(pairs), STAGE_FROM)
    if not jobs:
        found = _verified(_Search(search.feats, search.cal, pairs))
    else:
        _SHARED = search
        try:
            with Running(_verify_shared, pairs, jobs) as work:
                found = work.results()
        finally:
            _SHARED = None
    judge = _Judge(run, search)
    return [(judge(i, j, count, pts) == "match", (count, pts)) for (i, j), (count, pts) in zip(pairs, found)]


class _Judge:
    """What a verified pair is: ``match``, ``held`` (a glyph pair under its own floor), ``ground``
    (inliers around two objects, on neither: ``ground.held``) or ``""`` (under the level)."""

    def __init__(self, run: SearchRun, search: _Search) -> None:
        self.search = search
        self.warn = search.cal["threshold"]
        n = len(run.paths)
        self.glyph = run.sigs.arrays["glyph"][:, 0] if run.sigs.has("glyph") else np.zeros(n, np.uint8)
        self.masks = run.sigs.arrays["ground"] if run.sigs.has("ground") else None

    def floor(self, i: int, j: int) -> int:
        return GLYPH_INLIERS if self.glyph[i] and self.glyph[j] else 0

    def __call__(self, i: int, j: int, count: int, pts: Any) -> str:
        level = max(self.warn, self.floor(i, j))
        if count < level:
            return "held" if count >= self.warn else ""
        if self.masks is not None and _off_object(self.search.feats, self.masks, i, j, pts):
            return "ground"
        return "match"


def _finish(run: SearchRun, settings: Any, name: str, search: _Search,
            verified: list[tuple[int, Any]]) -> list[Match]:
    """Matches from each pair's (inliers, points); the points kept in the store for the report."""
    matches, points = [], {}
    err = search.cal["error_threshold"]
    judge = _Judge(run, search)
    held = on_ground = 0
    every = {**search.done, **dict(zip(search.pairs, verified))}
    for (i, j), (count, pts) in sorted(every.items()):
        verdict = judge(i, j, count, pts)
        held += verdict == "held"
        on_ground += verdict == "ground"
        if verdict != "match":
            continue
        matches.append(Match(i, j, name, float(count), "identity", weak=count < max(err, judge.floor(i, j))))
        points[_pair_key(run, i, j)] = features.normalised(pts, search.feats, i, j, POINTS)
    if isinstance(run.stats.get("same_scene"), dict):
        run.stats["same_scene"]["verified"] = len(every)
        run.stats["same_scene"]["glyph_pairs_held"] = int(held)
        run.stats["same_scene"]["ground_pairs_held"] = int(on_ground)
    known = json.loads(run.store.get_meta(store_key("points", settings, run.comparisons)) or "{}")
    run.store.put_meta({store_key("points", settings, run.comparisons): json.dumps({**known, **points})})
    return matches


def _off_object(feats: features.Features, masks: np.ndarray, i: int, j: int, pts: np.ndarray) -> bool:
    """Whether a match's inliers lie on the ground around two objects, not on either (``ground.held``)."""
    a, b = int(feats.local[i]), int(feats.local[j])
    return ground.held(masks[i], masks[j], np.asarray(pts, np.float64), feats.wh[a], feats.wh[b])


def _calibration(run: SearchRun, det: Any, ix: features.Indexed, rows: np.ndarray) -> dict[str, Any]:
    """The levels: from the last full search when this one is focused, else measured now."""
    if run.focus is not None:
        cached = run.store.get_meta(store_key("calibration", det, run.comparisons))
        if cached:
            return json.loads(cached)
    cal = levels(features.impostors(run, ix, rows, IMPOSTORS, IMPOSTOR_CANDIDATES,
                                    lambda pairs: _impostors_verified(run, ix.feats, pairs, det.min_inliers)), det)
    run.store.put_meta({store_key("calibration", det, run.comparisons): json.dumps(cal)})
    return cal

def refine(run: SearchRun, settings: Any, matches: list[Match], name: str) -> list[Match]:
    """The report's evidence: the matched points of every same-scene match, reused ones too."""
    mine = [m for m in matches if m.detector == name]
    stats = run.stats.get("same_scene")
    if not isinstance(stats, dict):  # nothing changed since the last full search: its levels hold
        cached = run.store.get_meta(store_key("calibration", settings, run.comparisons))
        stats = run.stats["same_scene"] = json.loads(cached) if cached else {}
    known = json.loads(run.store.get_meta(store_key("points", settings, run.comparisons)) or "{}")
    kept = {k: known[k] for m in mine if (k := _pair_key(run, m.i, m.j)) in known}
    # Each match's inlier points, for ``turned-copy`` (its refine runs after this one).
    run.memo["same-scene-points"] = {(m.i, m.j): kept[k] for m in mine if (k := _pair_key(run, m.i, m.j)) in kept}
    if len(kept) != len(known):
        run.store.put_meta({store_key("points", settings, run.comparisons): json.dumps(kept)})
    if kept:
        strongest = sorted(mine, key=lambda m: (-m.value, m.i, m.j))[:REPORTED_POINTS]
        stats["points"] = [{"a": run.paths[m.i], "b": run.paths[m.j], "points": kept[k]}
                           for m in strongest if (k := _pair_key(run, m.i, m.j)) in kept]
    return matches
