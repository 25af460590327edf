"""``aligned``: near-duplicates that hashes miss: retrieve a few candidates, then align and verify.

Real leaks are crops, shifts, zooms, colour changes and added frames of the
same photograph.  Per image one family (``desc``) caches tiny descriptors
of one 32 px colour square; the arithmetic is in ``_align.py``, the family,
the plan of the search (who asks whom, both directions, the calibration) and
the levels that turn scores into matches in ``_alignsearch.py``.  This module
is the detector: its policy section, its cache, and the verification it
applies to hash and thumbnail matches.  It imports those helpers (and numpy)
where it computes, so loading a policy stays free of them.

The thresholds are calibrated without labels: each row's upside-down self
cannot be its duplicate, so the scores those impostors reach set the
cut-offs, one per confidence level: ``error`` where a copy is near certain
(a few false alarms per 10,000, extrapolated from the impostors' tail),
``warning`` (a weak link: "probably the same shot, please look") at the
rate the policy asks for.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..policy.config import SEVERITIES, Ctx
from ..files.names import to_bytes
from .base import Detector, PolicyView, section

if TYPE_CHECKING:  # the arithmetic is imported where it runs: a policy loads without numpy
    from ..search.run import SearchRun
    from ..search.kernels import Match
    from ..signals.families import Family
    from ._alignsearch import Plan

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


def _params(det: AlignedSettings, mirror: bool) -> str:
    from ._alignsearch import DESC_FAMILY

    return (f"aligned-v4;k={det.candidates};warn={det.false_alarms_per_10k};err={det.error_false_alarms_per_10k};"
            f"mirror={mirror};{DESC_FAMILY.params}")


def _data_key(run: SearchRun, p: Plan) -> str:
    """Everything the matches depend on besides the parameters: who is in which split, with what content."""
    digest = hashlib.sha256(repr(sorted(p.targets.items())).encode())
    for a in sorted(p.targets):
        for r in p.rows[a]:
            digest.update(to_bytes(f"{a}\0{run.paths[r]}\0") + run.sigs.digests[r])
    return digest.hexdigest()[:24]


class Aligned(Detector):
    name = "aligned"
    section = "aligned"
    rank = 40
    # Its matches are cached whole (``find``), keyed by the data its calibration saw.
    incremental = False
    evidence_key = "aligned_score"
    default = AlignedSettings()
    evidence_value = "aligned score {:.3f}"
    init_comment = ("Finds the crops, shifts, zooms and colour changes hashes miss, with thresholds\n"
                    "calibrated on this data (docs/detectors.md): errors where a copy is near\n"
                    'certain, warnings ("probably the same shot, please look") below that.')
    init_keys = (("severity", ""),
                 ("error_false_alarms_per_10k", "error level: expected false alarms per 10,000 images"),
                 ("false_alarms_per_10k", "warning level"))
    init_notice = ("the `aligned` detector (crops, shifts, zooms) is on: errors where a copy is near certain, "
                   "warnings for probable ones; `aligned: {severity: off}` makes a cold check faster")

    def parse(self, ctx: Ctx, raw: Any, at: tuple[str, ...]) -> AlignedSettings:
        raw = section(ctx, raw, at, ("severity", "false_alarms_per_10k", "error_false_alarms_per_10k", "candidates"))
        d = self.default

        def rate(key: str, default: float) -> float:
            return ctx.number(raw.get(key, default), (*at, key), float, 0.1, 1000)

        return AlignedSettings(
            severity=ctx.choice(raw.get("severity", d.severity), (*at, "severity"), SEVERITIES),
            false_alarms_per_10k=rate("false_alarms_per_10k", d.false_alarms_per_10k),
            error_false_alarms_per_10k=rate("error_false_alarms_per_10k", d.error_false_alarms_per_10k),
            candidates=ctx.number(raw.get("candidates", d.candidates), (*at, "candidates"), int, 1, 64),
        )

    def families(self, settings: AlignedSettings, policy: PolicyView) -> tuple[Family, ...]:
        from ._alignsearch import DESC_FAMILY

        return () if settings.severity == "off" else (DESC_FAMILY,)

    def orientations(self, settings: AlignedSettings, policy: PolicyView) -> tuple[str, ...]:
        """Identity, and the mirror when the policy asks for it: no rotations."""
        return tuple(o for o in COVERED if o in (*policy.orientations, "identity"))

    def find(self, run: SearchRun, settings: AlignedSettings) -> list[Match]:
        """Matches above the calibrated warning level (weak below the error level); calibration in ``run.stats``.

        A full search over unchanged data (same paths, splits and contents)
        reuses the last one's matches; a focus search (hook, pull request)
        reuses the last full search's calibration and searches only around
        the focus rows.
        """
        if not run.sigs.has("desc:grey32"):
            return []
        import numpy as np

        from . import _alignsearch as search

        mirror = "hflip" in run.orientations
        p = search.plan(run.rows_by_split(), run.comparisons, run.split_of, settings.candidates, mirror)
        params, key = _params(settings, mirror), _data_key(run, p)
        cached = run.store.get_meta(params)
        last = json.loads(cached) if cached else None
        if last is not None and last["data"] == key:
            matches = self._cached(run, last)
        else:
            data = search.prepare(run.sigs, np.flatnonzero(run.sigs.valid), mirror)
            if run.focus is not None and last is not None:
                run.stats["aligned"] = last["calibration"]
                found = search.focus_search(data, p, run.focus)
                return self._focus(run, search.matches(found, last["calibration"], p.split_of))
            pairs = search.search(data, p)
            cal = search.calibration(data, p, settings)
            matches = search.matches(pairs, cal, p.split_of)
            last = {"data": key, "calibration": cal,
                    "matches": [[run.paths[m.i], run.paths[m.j], m.value, m.orientation, m.weak] for m in matches]}
            run.store.put_meta({params: json.dumps(last)})
        run.stats["aligned"] = last["calibration"]
        return self._focus(run, matches)

    @staticmethod
    def _cached(run: SearchRun, last: dict[str, Any]) -> list[Match]:
        from ..search.kernels import Match

        row = {path: n for n, path in enumerate(run.paths)}
        return [Match(row[a], row[b], "aligned", value, orientation, weak=weak)
                for a, b, value, orientation, weak in last["matches"]]

    @staticmethod
    def _focus(run: SearchRun, matches: list[Match]) -> list[Match]:
        focus = run.focus
        return matches if focus is None else [m for m in matches if focus[m.i] or focus[m.j]]

    def refine(self, run: SearchRun, settings: AlignedSettings, matches: list[Match]) -> list[Match]:
        """Hash and thumbnail matches take the pair's aligned verdict, in whatever orientation they were found.

        A hash hit is a candidate that alignment can check: the first image
        turned as the hash found it (mirrored, rotated), the pair is aligned
        and judged by detail (every such pair, whatever its 16 px
        correlation) and held to the same calibrated levels as aligned's
        own matches.  Below the warning level it is dropped (a low-texture
        picture whose hash or thumbnail is near many unrelated ones, in any
        orientation); below the error level it is a weak link.  Measured on
        the visible CIFAR half: every listed near-duplicate pHash finds
        scores 0.84 or more, pairs of different classes 0.6 or less.
        """
        cal = run.stats.get("aligned")
        if not cal:
            return matches
        check = [n for n, m in enumerate(matches) if m.detector in ("phash", "thumbnail")]
        if not check:
            return matches
        import numpy as np

        from . import _alignsearch as search

        data = search.prepare(run.sigs, np.flatnonzero(run.sigs.valid), "hflip" in run.orientations)
        ij = np.array([(matches[n].i, matches[n].j) for n in check], np.int64)
        flip = np.array([matches[n].orientation == "hflip" for n in check])
        turned = [o if o not in COVERED else "identity" for o in (matches[n].orientation for n in check)]
        scores = search.pair_scores(data, ij[:, 0], ij[:, 1], flip, always=1, turned=turned)
        split_of = np.array(run.split_of, dtype=object)
        within = split_of[ij[:, 0]] == split_of[ij[:, 1]]
        warn, err = search.levels_of(cal, within)
        out = list(matches)
        for n, s, w, e in zip(check, scores, warn, err):
            if not np.isfinite(s):
                continue  # no candidate to score (an invalid row): left as the hash found it
            out[n] = None if s < w else dataclasses.replace(matches[n], weak=True) if s < e else matches[n]
        return [m for m in out if m is not None]

    def strength(self, match: Match, settings: AlignedSettings) -> float:
        return match.value

    def summary(self, stats: Any) -> str:
        if not isinstance(stats, dict) or "threshold" not in stats:
            return ""
        return (f"aligned threshold {stats['threshold']:.3f} ({stats['false_alarms_per_10k']:g} false alarms "
                f"per 10k measured on {stats['calibrated_on']} images)")

    def calibrated(self, stats: Any) -> float | None:
        return float(stats["threshold"]) if isinstance(stats, dict) and "threshold" in stats else None


DETECTOR = Aligned()
