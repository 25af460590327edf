"""``aligned``: near-duplicates that hashes miss: retrieve a few candidates, then align and verify.

Real leaks are crops, shifts, zooms, colour changes and added frames of the
same photograph.  Per image one family (``desc``) caches three tiny
descriptors of one 32 px colour square; the arithmetic is in ``_align.py``,
the plan of the search (who asks whom, both directions, the calibration) in
``_alignsearch.py``.  This module is the detector: its policy section, its
family, its cache, and the verification it applies to hash and thumbnail
matches.

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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..policy.config import SEVERITIES, Ctx
from ..search.run import SearchRun
from ..signals.decode import COLOUR, DECODE_PATH, Decoded
from ..search.kernels import Match
from ..files.names import to_bytes
from ..signals.families import Family
from . import _alignsearch as search
from ._align import calibrate, describe
from .base import Detector, PolicyView, section

#: The descriptors, in the order they are packed into the family's bytes: dtype and values per image.
DESCRIPTORS = {"grey32": ("u1", 1024), "hog": ("<f2", 128)}
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


def _desc(decoded: Decoded, family: Family) -> bytes:
    out = describe(np.asarray(decoded.colour))
    return b"".join(out[d].tobytes() for d in DESCRIPTORS)


DESC_FAMILY = Family(
    # v2: the unused 8x8 colour layout is no longer computed or stored.
    "desc", f"{'+'.join(DESCRIPTORS)};rgb{COLOUR}-box;{DECODE_PATH};v2",
    tuple((f"desc:{name}", dtype, width) for name, (dtype, width) in DESCRIPTORS.items()),
    _desc, colour=True,
)



def _params(det: AlignedSettings, mirror: bool) -> str:
    return (f"aligned-v4;k={det.candidates};warn={det.false_alarms_per_10k};err={det.error_false_alarms_per_10k};"
            f"mirror={mirror};{DESC_FAMILY.params}")


def _data_key(run: SearchRun, p: search.Plan) -> str:
    """Everything the matches depend on besides the parameters: who is in which split, with what content."""
    digest = hashlib.sha256(repr(sorted(p.targets.items())).encode())
    for a in sorted(p.targets):
        for r in p.rows[a]:
            digest.update(to_bytes(f"{a}\0{run.paths[r]}\0") + run.sigs.digests[r])
    return digest.hexdigest()[:24]


def _levels(imp: np.ndarray, det: AlignedSettings) -> tuple[float, float, float]:
    """Warning and error thresholds from impostor maxima, and the rate measured at the warning one."""
    warn = round(calibrate(imp, det.false_alarms_per_10k), 4)
    err = round(max(warn, calibrate(imp, det.error_false_alarms_per_10k)), 4)
    return warn, err, round(float((imp >= warn).mean() * 1e4), 1) if len(imp) else 0.0


def _calibration(data: search.Data, p: search.Plan, det: AlignedSettings,
                 tick: Callable[[int], None] | None = None) -> dict[str, float]:
    """Cross-split levels (``threshold``, ``error_threshold``) and within-split ones.

    An upside-down image whose detail lines up with another image at
    TURNED_COPY or more is not an impostor: the data holds a turned copy of
    it (an upside-down or flipped duplicate, as audits of aerial and medical
    sets find).  Such scores are left out of the calibration, or one of them
    in a small set would raise the levels to 1 and hide every copy.
    """
    raw = search.impostors(data, p, *([tick] if tick is not None else []))
    imp = {kind: v[~(v >= TURNED_COPY)] for kind, v in raw.items()}
    cross = imp["cross"] if len(imp["cross"]) else imp["within"]
    warn, err, measured = _levels(cross, det)
    within = _levels(imp["within"], det) if len(imp["within"]) else (warn, err, measured)
    return {"threshold": warn, "error_threshold": err,
            "false_alarms_per_10k": measured, "error_false_alarms_per_10k": det.error_false_alarms_per_10k,
            "within_threshold": within[0], "within_error_threshold": within[1],
            "calibrated_on": int(max(len(imp["cross"]), len(imp["within"]))),
            "turned_copies": int(sum((v >= TURNED_COPY).sum() for v in raw.values()))}


def _levels_of(cal: dict[str, float], within: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Warning and error level of each pair, by whether it lies within a split."""
    warn = np.where(within, cal.get("within_threshold", cal["threshold"]), cal["threshold"])
    err = np.where(within, cal.get("within_error_threshold", cal["error_threshold"]), cal["error_threshold"])
    return warn, err


def _matches(pairs: search.Pairs, cal: dict[str, float], split_of: np.ndarray | None = None) -> list[Match]:
    """Matches at or above the warning level of their kind (cross or within split); weak below the error level."""
    within = np.zeros(len(pairs.i), bool) if split_of is None else split_of[pairs.i] == split_of[pairs.j]
    warn, err = _levels_of(cal, within)
    keep = np.flatnonzero(pairs.score >= warn)
    return [Match(int(pairs.i[n]), int(pairs.j[n]), "aligned", round(float(pairs.score[n]), 4),
                  "hflip" if pairs.flipped[n] else "identity", weak=bool(pairs.score[n] < err[n]))
            for n in keep]


#: Detail correlation no impostor reaches (the largest of 2,000 on the visible CIFAR
#: half: 0.85) and copies do (median 0.92): an upside-down image scoring this is a
#: turned copy in the data, and is left out of the calibration.
TURNED_COPY = 0.95


class Aligned(Detector):
    name = "aligned"
    section = "aligned"
    rank = 40
    # Its matches are cached whole (``find``), keyed by the data its calibration saw.
    incremental = False
    evidence_key = "aligned_score"
    default = AlignedSettings()

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
                return self._focus(run, _matches(found, last["calibration"], p.split_of))
            tick = run.ticks(search.blocks(p), "block")  # the bar moves block by block
            pairs = search.search(data, p, tick)
            cal = _calibration(data, p, settings, tick)
            matches = _matches(pairs, cal, p.split_of)
            last = {"data": key, "calibration": cal,
                    "matches": [[run.paths[m.i], run.paths[m.j], m.value, m.orientation, m.weak] for m in matches]}
            run.store.put_meta({params: json.dumps(last)})
        run.stats["aligned"] = last["calibration"]
        return self._focus(run, matches)

    @staticmethod
    def _cached(run: SearchRun, last: dict[str, Any]) -> list[Match]:
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
        data = search.prepare(run.sigs, np.flatnonzero(run.sigs.valid), "hflip" in run.orientations)
        ij = np.array([(matches[n].i, matches[n].j) for n in check], np.int64)
        flip = np.array([matches[n].orientation == "hflip" for n in check])
        turned = [o if o not in COVERED else "identity" for o in (matches[n].orientation for n in check)]
        scores = search.pair_scores(data, ij[:, 0], ij[:, 1], flip, always=1, turned=turned)
        split_of = np.array(run.split_of, dtype=object)
        within = split_of[ij[:, 0]] == split_of[ij[:, 1]]
        warn, err = _levels_of(cal, within)
        out = list(matches)
        for n, s, w, e in zip(check, scores, warn, err):
            if not np.isfinite(s):
                continue  # no candidate to score (an invalid row): left as the hash found it
            out[n] = None if s < w else dataclasses.replace(matches[n], weak=True) if s < e else matches[n]
        return [m for m in out if m is not None]

    def strength(self, match: Match, settings: AlignedSettings) -> float:
        return match.value


DETECTOR = Aligned()
