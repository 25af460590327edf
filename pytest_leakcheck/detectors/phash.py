"""``phash``: perceptual hashes within a Hamming distance, in every searched orientation.

The hash of each orientation the policy searches is its own cached family,
so adding an augmentation computes only the new orientation.  ``kind`` may
name another imagehash hash (dhash, ahash, whash) computed the same way;
the ``dhash`` detector is the way to run a difference hash beside this one.
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

HASH_KINDS = ("phash", "dhash", "ahash", "whash")


class PHash(Detector):
    name = "phash"
    section = "phash"
    rank = 20
    evidence_key = "phash_distance"
    lower_is_stronger = True
    default = HashSettings()
    signal_text = {"phash_distance": "phash distance {:.0f}"}
    init_keys = (("severity", ""), ("kind", "phash | dhash | ahash | whash"), ("bits", "64 or 256"),
                 ("max_distance", "Hamming distance; higher finds more, and more false alarms"))

    def parse(self, ctx: Ctx, raw: Any, at: tuple[str, ...]) -> HashSettings:
        return parse_hash(ctx, raw, at, self.default, HASH_KINDS)

    def families(self, settings: HashSettings, policy: PolicyView) -> tuple[Family, ...]:
        from ..signals.families import hash_family, search_orientations

        # Computed even when the detector is off: every pair's evidence shows the distance.
        return tuple(hash_family(settings.kind, settings.bits, o) for o in search_orientations(policy.orientations))

    def find(self, run: SearchRun, settings: HashSettings) -> list[Match]:
        return matches_and_near_misses(run, self.name, "hash", settings)

    def summary(self, stats: Any) -> str:
        from .homogeneity import said

        return said(self.name, stats)

    def strength(self, match: Match, settings: HashSettings) -> float:
        return 1.0 - match.value / settings.bits

    def threshold(self, settings: HashSettings) -> float:
        return float(settings.max_distance)

    def pair_signals(self, sigs: Any, i: int, j: int, orientation: str, settings: HashSettings) -> dict[str, float]:
        dist = hash_distance(sigs, "hash", i, j, orientation)
        return {} if dist is None else {"phash_distance": dist}


DETECTOR = PHash()
