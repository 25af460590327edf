"""``same-scene``: other shots of the same scene (a re-shot, a step aside, a burst), by local features.

A re-shot is not a copy: the pixels differ everywhere, the hashes and the
aligned detail disagree, yet the scene's corners and edges are the same
points seen again.  Per image the family ``scene`` keeps up to 384 ORB
keypoints (their position and 32-byte binary descriptor) of a grey version of
the photo at its own size, reduced to 320 px when larger; pairs in different splits sharing
rare LSH words of those descriptors are candidates (a re-shot inside one split
leaks nothing), and a
candidate is a match when a homography carries enough of its matched
keypoints onto each other (inliers of a vectorised RANSAC).  The arithmetic is
in ``features.py``; OpenCV is imported only there, only when computing.

Whether a re-shot is a leak depends on the task: in a classification
benchmark it is (ciFAIR replaced "very similar" test images too), in instance
retrieval new photos of known places are the test.  So ``leakcheck init``
writes it at ``warning`` (its default, so a policy that does not mention it
gets it too); raise it to ``error`` for classification, turn it ``off`` for
retrieval.  Images under 200 px (CIFAR's 32 px) are skipped before any keypoint
is sought, so small-image datasets pay nothing for it.

The inlier levels are calibrated without labels, as ``aligned`` does: each
sampled image's best candidates are verified again with its matched points
shuffled, which keeps every look-alike descriptor match and removes the
geometry; the inliers those impostors reach are what unrelated photos score.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...validate import SEVERITIES, Ctx
from ..base import Detector, Pending, PolicyView
from ..settings import Choice, Number, parse_settings

if TYPE_CHECKING:  # the search is imported where it runs: a policy loads without numpy or OpenCV
    from ...search.kernels import Match
    from ...search.run import SearchRun
    from ...signals.families import Family


@dataclass(frozen=True)
class SceneSettings:
    """Two inlier levels, calibrated on the data, never below ``min_inliers``.

    On at ``warning`` by default: a re-shot is a leak in a classification benchmark
    and not in instance retrieval, so it warns until the policy says which (``leakcheck
    init`` writes it out with when to raise it or turn it off).  Its cost on 640 x 480
    photos is in docs/detectors.md ("Measured").
    """

    severity: str = "warning"
    false_alarms_per_10k: float = 5.0
    error_false_alarms_per_10k: float = 2.0
    #: Neighbours verified per image and compared split.  4, not 6: on the re-shot
    #: benchmark every verifiable pair ranked in its query's top 4 (both ways asked),
    #: and on synthetic textures, where most top scores pass the gate, it spares a third.
    candidates: int = 4
    #: The warning level's floor (the error level's is 3 more): below it a
    #: homography is too easily found among look-alike texture (windows, leaves).
    min_inliers: int = 12
    #: Also pairs inside one split.  Not a policy key: ``leakcheck split``'s pooled check (every
    #: file in one split) sets it, since a copy turned by a few degrees is found only through
    #: same-scene's matches (``turned-copy``), and a split that leaves such a copy across the
    #: splits would fail the check it plans for (held-out probe of issue 37: BUSI ultrasound).
    within_split: bool = False


#: The policy section's keys, in the order they are checked.
FIELDS = {"severity": Choice(SEVERITIES), "false_alarms_per_10k": Number(float, 0.1, 1000),
          "error_false_alarms_per_10k": Number(float, 0.1, 1000), "candidates": Number(int, 1, 64),
          "min_inliers": Number(int, 6, 192)}


class SameScene(Detector):
    name = "same-scene"
    section = "same_scene"
    kind = "same-scene"
    rank = 60
    evidence_key = "scene_inliers"
    begins_first = True  # its verification runs in worker processes while the others search
    default = SceneSettings()
    # Screens and forms share a scene without sharing a subject: on game screenshots one menu
    # screen linked different characters at 12-25 inliers, above its error level of 15
    # (``apex-hud`` of ``benchmarks/field.py``, docs/field.md section 9).
    init_comment = ("Other shots of the same scene (a re-shot, a step aside, a burst), by local\n"
                    "features checked for one geometry (docs/detectors.md). A leak in a\n"
                    "classification benchmark: once its warnings are leaks, raise it to error\n"
                    "(screenshots, forms and fixed cameras share a scene, not a subject). In\n"
                    "instance retrieval, new photos of known places are the test itself: turn it off.")
    init_notice = ("the `same_scene` detector (other shots of a scene) warns; raise it to error for a "
                   "classification benchmark once its warnings are leaks, turn it off for instance retrieval")

    def parse(self, ctx: Ctx, raw: Any, at: tuple[str, ...]) -> SceneSettings:
        if isinstance(raw, str):  # `same_scene: warning`, as the simple detectors are written
            raw = {"severity": raw}
        return parse_settings(ctx, raw, at, SceneSettings, FIELDS)

    def families(self, settings: SceneSettings, policy: PolicyView) -> tuple[Family, ...]:
        from .find import FAMILY, GLYPH_FAMILY, GROUND_FAMILY

        return () if settings.severity == "off" else (FAMILY, GLYPH_FAMILY, GROUND_FAMILY)

    def orientations(self, settings: SceneSettings, policy: PolicyView) -> tuple[str, ...]:
        # Nothing to search by orientation: keypoint descriptors are rotation-invariant
        # and a homography takes any turn of the camera.
        return ()

    def find(self, run: SearchRun, settings: SceneSettings) -> list[Match]:
        """Matches at or above the warning level (weak below the error level); calibration in ``run.stats``.

        Incremental: with a focus (new or changed files) only pairs touching
        them are verified, at the levels the last full search calibrated (``find.find``).
        """
        from . import find

        return find.find(run, settings, self.name)

    def begin(self, run: SearchRun, settings: SceneSettings) -> Pending:
        """:meth:`find`, its verification going on in worker processes while the next detectors search."""
        from . import find

        return find.begin(run, settings, self.name)

    def refine(self, run: SearchRun, settings: SceneSettings, matches: list[Match]) -> list[Match]:
        """The report's evidence: the matched points of every same-scene match, reused ones too."""
        from . import find

        return find.refine(run, settings, matches, self.name)

    def strength(self, match: Match, settings: SceneSettings) -> float:
        # Inliers on a 0..1 scale: the floor maps to about 0.5, twice the floor to about 0.75.
        return round(1.0 - math.exp(-match.value * math.log(2) / max(1, settings.min_inliers)), 4)

    def summary(self, stats: Any) -> str:
        if not isinstance(stats, dict) or "threshold" not in stats:
            return ""
        out = f"same-scene {stats['threshold']}/{stats['error_threshold']} inliers (warning/error"
        if stats.get("too_few_for_rate"):
            out += f", above the largest of {stats.get('calibrated_on', 0)} impostors"
        if stats.get("floor"):
            out += ", at least the floor"
        return out + ")"

    def params(self, settings: SceneSettings) -> str:
        from . import find

        return find.params(settings)


DETECTOR = SameScene()
