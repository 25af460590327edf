"""``same-scene``: other shots of the same scene (a re-shot, a step aside, a burst), by local features.

A re-shot is not a copy: the pixels differ everywhere, the hashes and the
aligned detail disagree, yet the scene's corners and edges are the same
points seen again.  Per image the family ``scene`` keeps up to 192 ORB
keypoints (their position and 32-byte binary descriptor) of a 160 px grey
version; pairs sharing LSH words of those descriptors are candidates, and a
candidate is a match when a homography carries enough of its matched
keypoints onto each other (inliers of a vectorised RANSAC).  The arithmetic is
in ``_scene.py``; OpenCV is imported only there, only when computing.

Whether a re-shot is a leak depends on the task: in a classification
benchmark it is (ciFAIR replaced "very similar" test images too), in instance
retrieval new photos of known places are the test.  So ``leakcheck init``
writes it at ``warning``; raise it to ``error`` for classification, turn it
``off`` for retrieval.  A policy that does not mention it leaves it off.

The inlier levels are calibrated without labels, as ``aligned`` does: each
sampled image's best candidates are verified again with its matched points
shuffled, which keeps every look-alike descriptor match and removes the
geometry; the inliers those impostors reach are what unrelated photos score.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..policy.config import SEVERITIES, Ctx
from ..search.run import SearchRun
from ..signals.decode import DECODE_PATH, Decoded, detail_grey
from ..search.kernels import Match
from ..signals.families import Family
from . import _scene as S
from .base import Detector, PolicyView, section

#: Impostors sampled for the calibration (evenly spaced over the usable rows): the levels
#: rest on the floor unless impostors reach it, so a few hundred tell whether they do.
IMPOSTORS = 400
#: Candidates per impostor that are verified with their geometry shuffled.
IMPOSTOR_CANDIDATES = 2
#: Inlier points kept per match for the report's picture (normalised 0..1 coordinates).
POINTS = 40


@dataclass(frozen=True)
class SceneSettings:
    """Two inlier levels, calibrated on the data, never below ``min_inliers``.

    Off when a policy does not mention it: on 2,000 synthetic 640 x 480 photos its
    search made a cold check several times slower (docs/detectors.md).  ``leakcheck
    init`` writes it at ``warning``, with when to raise it or turn it off.
    """

    severity: str = "off"
    false_alarms_per_10k: float = 5.0
    error_false_alarms_per_10k: float = 2.0
    candidates: int = 6
    #: The warning level's floor (the error level's is 3 more): below it a
    #: homography is too easily found among look-alike texture (windows, leaves).
    min_inliers: int = 12


def _row(decoded: Decoded, family: Family) -> bytes:
    w, h = decoded.size
    if max(w, h) < S.MIN_SIDE:
        return S.empty_row()  # too small to carry keypoints (CIFAR's 32 px): not searched
    return S.extract(detail_grey(decoded, S.SIDE))


FAMILY = Family(
    "scene", f"orb{S.FEATURES};side{S.SIDE};min{S.MIN_SIDE};{DECODE_PATH};v1",
    S.HEAD_LAYOUT, _row, variable=True,
)


def _params(det: SceneSettings) -> str:
    return (f"same-scene-v1;k={det.candidates};warn={det.false_alarms_per_10k};"
            f"err={det.error_false_alarms_per_10k};min={det.min_inliers};{FAMILY.params}")


def _calibration_key(det: SceneSettings) -> str:
    return "same-scene-calibration:" + hashlib.sha256(_params(det).encode()).hexdigest()[:16]


def _points_key(det: SceneSettings) -> str:
    return "same-scene-points:" + hashlib.sha256(_params(det).encode()).hexdigest()[:16]


def _pair_key(run: SearchRun, i: int, j: int) -> str:
    return json.dumps([run.paths[i], run.paths[j]])


def levels(impostors: np.ndarray, det: SceneSettings) -> dict[str, Any]:
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


class SameScene(Detector):
    name = "same-scene"
    section = "same_scene"
    kind = "same-scene"
    rank = 60
    evidence_key = "scene_inliers"
    default = SceneSettings()

    def parse(self, ctx: Ctx, raw: Any, at: tuple[str, ...]) -> SceneSettings:
        keys = ("severity", "false_alarms_per_10k", "error_false_alarms_per_10k", "candidates", "min_inliers")
        if isinstance(raw, str):  # `same_scene: warning`, as the simple detectors are written
            raw = {"severity": raw}
        raw = section(ctx, raw, at, keys)
        d = self.default

        def rate(key: str, default: float) -> float:
            return ctx.number(raw.get(key, default), (*at, key), float, 0.1, 1000)

        return SceneSettings(
            severity=ctx.choice(raw.get("severity", d.severity), (*at, "severity"), SEVERITIES),
            false_alarms_per_10k=rate("false_alarms_per_10k", d.false_alarms_per_10k),
            error_false_alarms_per_10k=rate("error_false_alarms_per_10k", d.error_false_alarms_per_10k),
            candidates=ctx.number(raw.get("candidates", d.candidates), (*at, "candidates"), int, 1, 64),
            min_inliers=ctx.number(raw.get("min_inliers", d.min_inliers), (*at, "min_inliers"), int, 6, 192),
        )

    def families(self, settings: SceneSettings, policy: PolicyView) -> tuple[Family, ...]:
        return () if settings.severity == "off" else (FAMILY,)

    def orientations(self, settings: SceneSettings, policy: PolicyView) -> tuple[str, ...]:
        # Nothing to search by orientation: keypoint descriptors are rotation-invariant
        # and a homography takes any turn of the camera.
        return ()

    def find(self, run: SearchRun, settings: SceneSettings) -> list[Match]:
        """Matches at or above the warning level (weak below the error level); calibration in ``run.stats``.

        Incremental: with a focus (new or changed files) only pairs touching
        them are verified, at the levels the last full search calibrated.
        """
        if not run.sigs.has("scene_n"):
            return []
        heads = run.sigs.arrays["scene_n"][:, 0]
        feats = S.load(run.store, FAMILY, run.sigs.digests,
                       np.flatnonzero(run.sigs.valid & (heads >= S.MIN_KEYPOINTS)), len(heads))
        usable = 0 if feats is None else int((feats.local >= 0).sum())
        counts = {"images": usable, "skipped": int(run.sigs.valid.sum()) - usable}
        if feats is None:
            run.stats["same_scene"] = counts
            return []
        rows = np.flatnonzero(feats.local >= 0)
        plain = S.words(feats.desc, feats.n)
        words = (plain, S.weighted(plain))
        cal = self._calibration(run, settings, feats, words, rows)
        matches, points = [], {}
        for i, j in S.candidate_pairs(run, feats, words, settings.candidates):
            within = run.split_of[i] == run.split_of[j]
            warn = cal["within_threshold" if within else "threshold"]
            err = cal["within_error_threshold" if within else "error_threshold"]
            count, pts = S.verify(feats, i, j, at_least=warn)
            if count >= warn:
                matches.append(Match(i, j, self.name, float(count), "identity", weak=count < err))
                points[_pair_key(run, i, j)] = S.normalised(pts, feats, i, j, POINTS)
        known = json.loads(run.store.get_meta(_points_key(settings)) or "{}")
        run.store.put_meta({_points_key(settings): json.dumps({**known, **points})})
        run.stats["same_scene"] = {**cal, **counts}
        return matches

    def _calibration(self, run: SearchRun, det: SceneSettings, feats: S.Features, words: Any,
                     rows: np.ndarray) -> dict[str, Any]:
        """The levels: from the last full search when this one is focused, else measured now."""
        if run.focus is not None:
            cached = run.store.get_meta(_calibration_key(det))
            if cached:
                return json.loads(cached)
        cross, within = S.impostors(run, feats, words, rows, IMPOSTORS, IMPOSTOR_CANDIDATES)
        lc = levels(cross if len(cross) else within, det)
        lw = levels(within, det) if len(within) else lc
        cal = {**lc, "within_threshold": lw["threshold"], "within_error_threshold": lw["error_threshold"]}
        run.store.put_meta({_calibration_key(det): json.dumps(cal)})
        return cal

    def refine(self, run: SearchRun, settings: SceneSettings, matches: list[Match]) -> list[Match]:
        """The report's evidence: the matched points of every same-scene match, reused ones too."""
        mine = [m for m in matches if m.detector == self.name]
        stats = run.stats.get("same_scene")
        if not isinstance(stats, dict):  # nothing changed since the last full search: its levels hold
            cached = run.store.get_meta(_calibration_key(settings))
            stats = run.stats["same_scene"] = json.loads(cached) if cached else {}
        known = json.loads(run.store.get_meta(_points_key(settings)) or "{}")
        kept = {k: known[k] for m in mine if (k := _pair_key(run, m.i, m.j)) in known}
        if len(kept) != len(known):
            run.store.put_meta({_points_key(settings): json.dumps(kept)})
        if kept:
            stats["points"] = [{"a": run.paths[m.i], "b": run.paths[m.j], "points": kept[k]}
                               for m in mine if (k := _pair_key(run, m.i, m.j)) in kept]
        return matches

    def strength(self, match: Match, settings: SceneSettings) -> float:
        # Inliers on a 0..1 scale: the floor maps to about 0.5, twice the floor to about 0.75.
        return round(1.0 - math.exp(-match.value * math.log(2) / max(1, settings.min_inliers)), 4)

    def params(self, settings: SceneSettings) -> str:
        return _params(settings)


DETECTOR = SameScene()
