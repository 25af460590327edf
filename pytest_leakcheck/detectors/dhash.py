"""``dhash``: difference hashes within a Hamming distance (imagededup's default method).

A dHash compares each pixel of a small grey image with its right neighbour,
so it follows gradients where pHash follows frequencies; the two miss
different copies.  Off unless the policy turns it on:

    detectors:
      dhash: {severity: error, max_distance: 10}
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..validate import Ctx
from .base import Detector, PolicyView
from .hashing import HashSettings, hash_distance, matches_and_near_misses, parse_hash

if TYPE_CHECKING:
    from ..search.run import SearchRun
    from ..search.kernels import Match
    from ..signals.families import Family

PREFIX = "dhash"


class DHash(Detector):
    name = "dhash"
    section = "dhash"
    rank = 50
    evidence_key = "dhash_distance"
    lower_is_stronger = True
    # imagededup flags dHash distances up to 10 of 64 bits.
    default = HashSettings(severity="off", kind="dhash", max_distance=10)
    init_keys = (("severity", "difference hashes: another view of near-duplicates (docs/detectors.md)"),)

    def parse(self, ctx: Ctx, raw: Any, at: tuple[str, ...]) -> HashSettings:
        return parse_hash(ctx, raw, at, self.default, ("dhash",))

    def families(self, settings: HashSettings, policy: PolicyView) -> tuple[Family, ...]:
        if settings.severity == "off":
            return ()
        from ..signals.families import hash_family, search_orientations

        return tuple(hash_family("dhash", settings.bits, o, PREFIX) for o in search_orientations(policy.orientations))

    def find(self, run: SearchRun, settings: HashSettings) -> list[Match]:
        return matches_and_near_misses(run, self.name, PREFIX, settings)

    def summary(self, stats: Any) -> str:
        from .homogeneity import said

        return said(self.name, stats)

    def strength(self, match: Match, settings: HashSettings) -> float:
        return 1.0 - match.value / settings.bits

    def threshold(self, settings: HashSettings) -> float:
        return float(settings.max_distance)

    def pair_signals(self, sigs: Any, i: int, j: int, orientation: str, settings: HashSettings) -> dict[str, float]:
        dist = hash_distance(sigs, PREFIX, i, j, orientation)
        return {} if dist is None else {"dhash_distance": dist}


DETECTOR = DHash()
