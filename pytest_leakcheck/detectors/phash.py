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
    from ..signals.families import Family, Signatures

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

    def weak(self, match: Match, sigs: Signatures, policy: PolicyView) -> bool:
        """A hash the thumbnail contradicts is a warning-level link.

        The mirror of the thumbnail's rule (``thumbnail.weak``): a copy the hash finds keeps its 16 px
        thumbnail (re-encoded, resized, brightened), while a picture with little left to hash collides
        by chance.  Omniglot's one-stroke characters, trimmed to the stroke, are a bar: a Korean "-" and
        a Latin "I" turned a quarter were pHash 0 apart at thumbnail cosine 0.23, an error.  Unrelated
        thumbnails (size² contrast-normalised values) have cosines within two deviations, 2 / size, of
        0; past halfway from ``min_cosine`` down to that, the thumbnail sides with unrelated pictures.
        """
        if match.weak:
            return True
        th = policy.detectors.thumbnail
        if not sigs.has("thumb"):
            return False
        from ..search.kernels import normalised_thumbs, orient_thumbs

        thumbs = sigs.arrays["thumb"]
        ti = orient_thumbs(normalised_thumbs(thumbs[match.i : match.i + 1]), match.orientation)[0]
        tj = normalised_thumbs(thumbs[match.j : match.j + 1])[0]
        return float(ti @ tj) < (th.min_cosine + 2 / th.size) / 2

    def pair_signals(self, sigs: Any, i: int, j: int, orientation: str, settings: HashSettings) -> dict[str, float]:
        dist = hash_distance(sigs, "hash", i, j, orientation)
        return {} if dist is None else {"phash_distance": dist}


DETECTOR = PHash()
