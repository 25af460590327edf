"""``aligned``: near-duplicates that hashes miss: retrieve a few candidates, then align and verify.

Real leaks are crops, shifts, zooms, colour changes and added frames of the
same photograph.  Per image one family (``desc``) caches three tiny
descriptors of one 32 px colour square; the retrieval, alignment and
calibration arithmetic is in ``_align.py``.  This module is the detector:
its policy section, its family, its search over a ``SearchRun`` and the
verification it applies to hash and thumbnail matches when it is on.

The threshold is calibrated without labels: each query's upside-down self
cannot be its duplicate, so the scores those impostors reach set the cut-off
for the false-alarm rate the policy asks for.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..config import SEVERITIES, Ctx
from ..context import SearchRun
from ..decode import COLOUR, DECODE_PATH, Decoded
from ..kernels import Match, dedupe
from ..signals import Family, Signatures
from ._align import CALIBRATION_QUERIES, calibrate, describe, oriented, retrieve, templates, vectors, verify, views
from .base import Detector, PolicyView, section

#: The descriptors, in the order they are packed into the family's bytes: dtype and values per image.
DESCRIPTORS = {"grey32": ("u1", 1024), "colour8": ("u1", 192), "hog": ("<f2", 128)}


@dataclass(frozen=True)
class AlignedSettings:
    """Slower than the hashes, so off unless asked."""

    severity: str = "off"
    false_alarms_per_10k: float = 50.0
    candidates: int = 8


def _desc(decoded: Decoded, family: Family) -> bytes:
    out = describe(np.asarray(decoded.colour))
    return b"".join(out[d].tobytes() for d in DESCRIPTORS)


DESC_FAMILY = Family(
    "desc", f"{'+'.join(DESCRIPTORS)};rgb{COLOUR}-box;{DECODE_PATH};v1",
    tuple((f"desc:{name}", dtype, width) for name, (dtype, width) in DESCRIPTORS.items()),
    _desc, colour=True,
)


@dataclass(frozen=True)
class Side:
    """Query rows searched against reference rows; ``same`` when they are one split."""

    queries: np.ndarray
    refs: np.ndarray
    same: bool


def _sides(run: SearchRun, focus: np.ndarray | None) -> Iterator[Side]:
    rows = run.rows_by_split()
    for a, b in run.comparisons:
        ra, rb = rows[a], rows[b]
        if a == b:
            yield Side(ra if focus is None else ra[focus[ra]], ra, True)
        elif focus is None:
            # Retrieval is one-sided: the smaller split asks the larger.
            yield Side(*((ra, rb) if len(ra) <= len(rb) else (rb, ra)), False)
        else:
            yield Side(ra[focus[ra]], rb, False)
            yield Side(rb[focus[rb]], ra[~focus[ra]], False)


def _score(sigs: Signatures, side: Side, queries: np.ndarray, k: int, mirror: bool,
           transform: str = "identity") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Candidates (global rows, -1 padded), scores and mirror flags for ``queries``."""
    ref = views(sigs, side.refs)
    q = views(sigs, queries)
    q = q if transform == "identity" else oriented(q, transform)
    qs = [q, oriented(q, "hflip")] if mirror else [q]
    exclude = None
    if side.same:
        pos = {int(r): n for n, r in enumerate(side.refs)}
        exclude = np.array([pos.get(int(r), -1) for r in queries], np.int64)
    cand = retrieve(qs, vectors(ref), k, exclude)
    score, flipped = verify(q, cand, ref.grey, templates(ref.grey, coarse=True), mirror)
    return np.where(cand >= 0, side.refs[np.maximum(cand, 0)], -1), score, flipped


def _calibration(sigs: Signatures, sides: list[Side], det: AlignedSettings, mirror: bool) -> dict[str, float]:
    """Threshold from a seeded subsample of queries turned upside down."""
    total = sum(len(s.queries) for s in sides)
    rng = np.random.default_rng(0)
    maxima = []
    for side in sides:
        share = max(1, round(CALIBRATION_QUERIES * len(side.queries) / max(1, total)))
        pick = np.sort(rng.choice(side.queries, min(share, len(side.queries)), replace=False))
        if len(pick) and len(side.refs) > side.same:
            _, score, _ = _score(sigs, side, pick, det.candidates, mirror, "rot180")
            maxima.append(np.nanmax(np.where(np.isnan(score), -np.inf, score), 1))
    imp = np.concatenate(maxima) if maxima else np.zeros(0)
    thr = calibrate(imp, det.false_alarms_per_10k)
    measured = float((imp >= thr).mean() * 1e4) if len(imp) else 0.0
    return {"threshold": round(thr, 4), "false_alarms_per_10k": round(measured, 1), "calibrated_on": len(imp)}


def _params(det: AlignedSettings, mirror: bool) -> str:
    return f"aligned-v1;k={det.candidates};per10k={det.false_alarms_per_10k};mirror={mirror}"


def threshold(run: SearchRun, sides: list[Side], det: AlignedSettings, mirror: bool) -> dict[str, float]:
    """The calibrated threshold, from the store when the same data was calibrated before.

    ``sides`` are those of a full check, whatever the focus.  A focus check
    (hook, pull request) reuses the last full check's threshold rather than
    paying for a calibration on a handful of new images.
    """
    sigs, store, focus = run.sigs, run.store, run.focus is not None
    params = _params(det, mirror)
    digest = hashlib.sha256(params.encode())
    for side in sides:
        for rows in (side.queries, side.refs):
            digest.update(b"".join(sorted(sigs.digests[r] for r in rows)))
    exact, last = f"{params};data={digest.hexdigest()[:16]}", f"{params};last"
    for key in ((last,) if focus else (exact,)):
        cached = store.get_meta(key)
        if cached:
            return json.loads(cached)
    result = _calibration(sigs, sides, det, mirror)
    store.put_meta({last: json.dumps(result)} if focus else {exact: json.dumps(result), last: json.dumps(result)})
    return result


# Hash and thumbnail matches must score at least this far below the
# calibrated threshold to be dropped when the aligned detector is on.
VERIFY_MARGIN = 0.03


def pair_scores(run: SearchRun, det: AlignedSettings, pairs: list[tuple[int, int]]) -> np.ndarray:
    """Aligned score of each (query row, reference row) pair, NaN where it cannot be scored.

    Each pair is verified like a retrieved candidate, and judged against the
    query's own crowd of retrieved candidates, so a low-texture query that
    correlates with everything scores low here too.
    """
    sigs = run.sigs
    mirror = "hflip" in run.orientations
    out = np.full(len(pairs), np.nan)
    splits = np.array(run.split_of, dtype=object)
    by_split: dict[str, list[int]] = {}
    for n, (_, j) in enumerate(pairs):
        by_split.setdefault(splits[j], []).append(n)
    for split, idx in by_split.items():
        refs = np.flatnonzero((splits == split) & sigs.valid)
        pos = {int(r): k for k, r in enumerate(refs)}
        rows = np.array([pairs[n][0] for n in idx], np.int64)
        ok = sigs.valid[rows]
        if not ok.any() or len(refs) < 2:
            continue
        idx = [n for n, good in zip(idx, ok) if good]
        rows = rows[ok]
        partner = np.array([pos.get(pairs[n][1], -1) for n in idx], np.int64)
        exclude = np.array([pos.get(int(r), -1) for r in rows], np.int64)
        ref, q = views(sigs, refs), views(sigs, rows)
        qs = [q, oriented(q, "hflip")] if mirror else [q]
        cand = retrieve(qs, vectors(ref), det.candidates, exclude)
        cand = np.concatenate([cand, partner[:, None]], 1)
        score, _ = verify(q, cand, ref.grey, templates(ref.grey, coarse=True), mirror)
        out[idx] = score[:, -1]
    return out


class Aligned(Detector):
    name = "aligned"
    section = "aligned"
    rank = 40
    # Not reused between checks: its calibrated threshold depends on the whole dataset.
    incremental = False
    evidence_key = "aligned_score"
    default = AlignedSettings()

    def parse(self, ctx: Ctx, raw: Any, at: tuple[str, ...]) -> AlignedSettings:
        raw = section(ctx, raw, at, ("severity", "false_alarms_per_10k", "candidates"))
        d = self.default
        return AlignedSettings(
            severity=ctx.choice(raw.get("severity", d.severity), (*at, "severity"), SEVERITIES),
            false_alarms_per_10k=ctx.number(raw.get("false_alarms_per_10k", d.false_alarms_per_10k),
                                            (*at, "false_alarms_per_10k"), float, 0.1, 1000),
            candidates=ctx.number(raw.get("candidates", d.candidates), (*at, "candidates"), int, 1, 64),
        )

    def families(self, settings: AlignedSettings, policy: PolicyView) -> tuple[Family, ...]:
        return () if settings.severity == "off" else (DESC_FAMILY,)

    def find(self, run: SearchRun, settings: AlignedSettings) -> list[Match]:
        """Matches above the calibrated threshold; the calibration goes to ``run.stats``."""
        if not run.sigs.has("desc:grey32"):
            return []
        mirror = "hflip" in run.orientations
        full = [s for s in _sides(run, None) if len(s.refs) > s.same]
        if not full:
            return []
        sides = full if run.focus is None else [s for s in _sides(run, run.focus) if len(s.refs) > s.same]
        cal = run.stats["aligned"] = threshold(run, full, settings, mirror)
        matches = []
        for side in sides:
            if not len(side.queries):
                continue
            cand, score, flipped = _score(run.sigs, side, side.queries, settings.candidates, mirror)
            qi, kk = np.nonzero(np.nan_to_num(score, nan=-np.inf) >= cal["threshold"])
            matches += [
                Match(int(side.queries[i]), int(cand[i, k]), self.name, round(float(score[i, k]), 4),
                      "hflip" if flipped[i, k] else "identity")
                for i, k in zip(qi, kk)
            ]
        return dedupe(matches)

    def refine(self, run: SearchRun, settings: AlignedSettings, matches: list[Match]) -> list[Match]:
        """Hash and thumbnail matches in the orientations alignment covers, kept only if
        the aligned score agrees (within VERIFY_MARGIN of the calibrated threshold)."""
        cal = run.stats.get("aligned")
        if not cal:
            return matches
        covered = ("identity", "hflip")
        check = [n for n, m in enumerate(matches)
                 if m.detector in ("phash", "thumbnail") and m.orientation in covered]
        if not check:
            return matches
        scores = pair_scores(run, settings, [(matches[n].i, matches[n].j) for n in check])
        limit = cal["threshold"] - VERIFY_MARGIN  # type: ignore[index]
        drop = {n for n, s in zip(check, scores) if np.isfinite(s) and s < limit}
        return [m for n, m in enumerate(matches) if n not in drop]

    def strength(self, match: Match, settings: AlignedSettings) -> float:
        return match.value


DETECTOR = Aligned()
