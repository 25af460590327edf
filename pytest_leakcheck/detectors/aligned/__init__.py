"""``aligned``: near-duplicates that hashes miss: retrieve a few candidates, then align and verify.

Real leaks are crops, shifts, zooms, colour changes and added frames of the
same photograph.  Per image one family (``desc``) caches three tiny
descriptors of one 32 px colour square; the arithmetic is in ``alignment.py``,
the plan of the search (who asks whom, both directions, the calibration) in
``pairs.py``, what it keeps in the store between checks (its model and
its pairs, and when they are estimated again) in ``state.py``.  Large
images also keep a 96 px square (``fine`` family), on which error-level pairs
are judged again (``hires.py``, ``hires_levels.py``).  This
module is the detector: its policy section, its family, the incremental
search, and the verification it applies to hash and thumbnail matches.

The thresholds are calibrated without labels: each row's upside-down self
cannot be its duplicate, so the scores those impostors reach set the
cut-offs, one per confidence level: ``error`` where a copy is near certain
(a few false alarms per 10,000, extrapolated from the impostors' tail),
``warning`` (a weak link: "probably the same shot, please look") at the
rate the policy asks for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...validate import SEVERITIES, Ctx
from ..base import Detector, PolicyView
from ..settings import Choice, Number, parse_settings

if TYPE_CHECKING:  # the arithmetic is imported where it runs: a policy loads without numpy
    from ...search.kernels import Match
    from ...search.run import SearchRun
    from ...signals.families import Family

#: What alignment covers: the mirror is one of the views every query is verified in.
COVERED = ("identity", "hflip")


@dataclass(frozen=True)
class AlignedSettings:
    """On by default; two confidence levels, both calibrated on the data."""

    severity: str = "error"
    #: Warning level: expected false alarms per 10,000 rows searched.
    false_alarms_per_10k: float = 5.0
    #: Error level (near certain): the same, far out in the impostors' tail.
    error_false_alarms_per_10k: float = 2.0
    candidates: int = 8


#: The policy section's keys, in the order they are checked.
FIELDS = {"severity": Choice(SEVERITIES), "false_alarms_per_10k": Number(float, 0.1, 1000),
          "error_false_alarms_per_10k": Number(float, 0.1, 1000), "candidates": Number(int, 1, 64)}


class Aligned(Detector):
    name = "aligned"
    section = "aligned"
    rank = 40
    # Incremental on its own terms (``find``): its levels are estimated on the whole dataset.
    incremental = False
    evidence_key = "aligned_score"
    default = AlignedSettings()
    evidence_value = "aligned score {:.3f}"
    aligns = True
    init_comment = ("Finds the crops, shifts, zooms and colour changes hashes miss, with thresholds\n"
                    "calibrated on this data (docs/detectors.md): errors where a copy is near\n"
                    'certain, warnings ("probably the same shot, please look") below that.')
    init_keys = (("severity", ""),
                 ("error_false_alarms_per_10k", "error level: expected false alarms per 10,000 images"),
                 ("false_alarms_per_10k", "warning level"))
    init_notice = ("the `aligned` detector (crops, shifts, zooms) is on: errors where a copy is near certain, "
                   "warnings for probable ones; `aligned: {severity: off}` makes a cold check faster")

    def parse(self, ctx: Ctx, raw: Any, at: tuple[str, ...]) -> AlignedSettings:
        return parse_settings(ctx, raw, at, AlignedSettings, FIELDS)

    def families(self, settings: AlignedSettings, policy: PolicyView) -> tuple[Family, ...]:
        from .families import DESC_FAMILY, HIRES_FAMILY

        return () if settings.severity == "off" else (DESC_FAMILY, HIRES_FAMILY)

    def orientations(self, settings: AlignedSettings, policy: PolicyView) -> tuple[str, ...]:
        """Identity, and the mirror when the policy asks for it: no rotations."""
        return tuple(o for o in COVERED if o in (*policy.orientations, "identity"))

    def find(self, run: SearchRun, settings: AlignedSettings) -> list[Match]:
        """Matches above the calibrated warning level (weak below the error level); the levels in ``run.stats``.

        Incremental (``state``): the index and the levels come from the
        store while the data has not changed too much since they were
        estimated; pairs between unchanged rows come from the store; only new
        or changed rows are searched, against everything (``levels.find``).
        """
        from . import levels

        return levels.find(run, settings)

    def refine(self, run: SearchRun, settings: AlignedSettings, matches: list[Match]) -> list[Match]:
        """Hash and thumbnail matches take the pair's aligned verdict (``hashed.refine``)."""
        from . import hashed

        return hashed.refine(run, settings, matches)

    def strength(self, match: Match, settings: AlignedSettings) -> float:
        return match.value


    def summary(self, stats: Any) -> str:
        """The levels and what they rest on; a small dataset's floor and a rate it cannot resolve, said."""
        if not isinstance(stats, dict) or "threshold" not in stats:
            return ""
        if stats.get("inseparable"):
            from ..homogeneity import said

            return said(self.name, stats)
        n = int(stats.get("calibrated_on", 0))
        measured, asked = float(stats["false_alarms_per_10k"]), stats.get("asked_false_alarms_per_10k")
        out = f"aligned threshold {stats['threshold']:.3f} ({measured:g} false alarms per 10k measured on {n} images"
        if asked is not None and measured > float(asked):
            out += (f", {float(asked):g} asked: in a sample of {n} one impostor is already "
                    f"{float(stats.get('resolution_per_10k', 0)):g} per 10k")
        out += f"{_estimated(stats)})"
        if stats.get("small_sample"):
            level, floor = float(stats["error_threshold"]), stats.get("error_floor")
            # The floor binds only where this dataset's impostors sit under it: said as it is.
            what = ("a conservative floor" if not isinstance(floor, (int, float)) or level <= float(floor) + 5e-4
                    else f"above the conservative floor {float(floor):.2f}")
            out += (f"; error level {level:.3f}, {what}: "
                    f"{int(stats.get('images', n))} images are too few "
                    f"to estimate {float(stats['error_false_alarms_per_10k']):g} false alarms per 10k")
        elif "error_threshold" in stats:
            out += f", error level {stats['error_threshold']:.3f}"
        return out + _fine(stats)

    def calibrated(self, stats: Any) -> float | None:
        return float(stats["threshold"]) if isinstance(stats, dict) and "threshold" in stats else None


def _fine(stats: dict) -> str:
    """The fine verdict's level, what it rests on, and what it judged (``hires_levels``)."""
    try:
        if "fine_threshold" not in stats:
            images = int(stats.get("fine_images", 0))
            return f"; {images} large images, none in an error-level pair: no fine level needed" if images else ""
        level, images = float(stats["fine_threshold"]), int(stats.get("fine_images", 0))
        judged, demoted = int(stats.get("fine_judged", 0)), int(stats.get("fine_demoted", 0))
    except (TypeError, ValueError):  # a saved report may say anything
        return ""
    out = f"; fine detail level {level:.3f} at {int(stats.get('fine_side', 0))} px for {images} large images"
    if stats.get("fine_small_sample"):
        out += (f" (a conservative floor: too few to estimate "
                f"{float(stats.get('fine_false_alarms_per_10k', 0)):g} chance agreements per 10k)")
    return out + f", {judged} error-level pairs judged finely, {demoted} below it made warnings"


def _estimated(cal: dict) -> str:
    """When the levels were estimated, on how many images, and how many changed since."""
    at = cal.get("levels_at")
    # A saved report may say anything: print only a time stamp as leakcheck writes them.
    if not isinstance(at, str) or not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", at):
        return ""
    try:
        on, changed = int(cal.get("levels_on", 0)), int(cal.get("changed_since", 0))
    except (TypeError, ValueError):
        return ""
    text = f"; levels estimated {at.replace('T', ' ').rstrip('Z')} UTC on {on} images"
    return text + (f", {changed} changed since" if changed else "")


DETECTOR = Aligned()
