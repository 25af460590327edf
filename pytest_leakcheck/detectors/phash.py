"""``phash``: perceptual hashes within a Hamming distance, in every searched orientation.

The hash of each orientation the policy searches is its own cached family,
so adding an augmentation computes only the new orientation.  ``kind`` may
name another imagehash hash (dhash, ahash, whash) computed the same way;
the ``dhash`` detector is the way to run a difference hash beside this one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..config import SEVERITIES, Ctx
from ..context import SearchRun
from ..kernels import Match, hamming_pairs
from ..names import excerpt
from ..signals import Family, hash_family, hash_stack, search_orientations
from .base import Detector, PolicyView, section

HASH_KINDS = ("phash", "dhash", "ahash", "whash")
HASH_BITS = (64, 256)


@dataclass(frozen=True)
class HashSettings:
    severity: str = "error"
    kind: str = "phash"
    bits: int = 64
    max_distance: int = 8


def parse_hash(ctx: Ctx, raw: Any, at: tuple[str, ...], d: HashSettings, kinds: tuple[str, ...]) -> HashSettings:
    """A hash detector's section: severity, kind, bits, max_distance."""
    raw = section(ctx, raw, at, ("severity", "kind", "bits", "max_distance"))
    bits = raw.get("bits", d.bits)
    # `64.0` is 64; a boolean, a list or NaN is refused here rather than deep in numpy.
    if isinstance(bits, bool) or not isinstance(bits, (int, float)) or bits not in HASH_BITS:
        raise ctx.fail((*at, "bits"), f"invalid value {excerpt(bits)}", "use 64 or 256")
    bits = int(bits)
    return HashSettings(
        severity=ctx.choice(raw.get("severity", d.severity), (*at, "severity"), SEVERITIES),
        kind=ctx.choice(raw.get("kind", d.kind), (*at, "kind"), kinds),
        bits=bits,
        max_distance=ctx.number(raw.get("max_distance", d.max_distance), (*at, "max_distance"), int, 0, bits // 2),
    )


def hash_matches(run: SearchRun, name: str, prefix: str, max_distance: int) -> list[Match]:
    """Pairs whose hashes (query side turned, in every searched orientation) are
    within ``max_distance`` of the reference side's identity hash; textured images only."""
    names = search_orientations(run.orientations)
    stack = hash_stack(run.sigs, names, prefix)
    rows = run.rows_by_split()
    out: list[Match] = []
    for a, b in run.comparisons:
        for ra, rb, same in run.sides(a, b, rows):
            ia, ib, dist, kk = hamming_pairs(stack[ra], stack[rb][:, 0, :], max_distance, same=same)
            gi, gj = ra[ia], rb[ib]
            tex = run.texture(gi) & run.texture(gj)
            out += [
                Match(int(x), int(y), name, float(d), names[int(o)])
                for x, y, d, o in zip(gi[tex], gj[tex], dist[tex], kk[tex])
            ]
    return out


def hash_distance(sigs: Any, prefix: str, i: int, j: int, orientation: str) -> int | None:
    """Hamming distance of row ``i`` turned by ``orientation`` to row ``j``, if both are hashed."""
    turned, upright = f"{prefix}:{orientation}", f"{prefix}:identity"
    if not sigs.has(turned, upright):
        return None
    return int(np.bitwise_count(sigs.arrays[turned][i] ^ sigs.arrays[upright][j]).sum())


class PHash(Detector):
    name = "phash"
    section = "phash"
    rank = 20
    evidence_key = "phash_distance"
    lower_is_stronger = True
    default = HashSettings()

    def parse(self, ctx: Ctx, raw: Any, at: tuple[str, ...]) -> HashSettings:
        return parse_hash(ctx, raw, at, self.default, HASH_KINDS)

    def families(self, settings: HashSettings, policy: PolicyView) -> tuple[Family, ...]:
        # Computed even when the detector is off: every pair's evidence shows the distance.
        return tuple(hash_family(settings.kind, settings.bits, o) for o in search_orientations(policy.orientations))

    def find(self, run: SearchRun, settings: HashSettings) -> list[Match]:
        return hash_matches(run, self.name, "hash", settings.max_distance)

    def strength(self, match: Match, settings: HashSettings) -> float:
        return 1.0 - match.value / settings.bits

    def threshold(self, settings: HashSettings) -> float:
        return float(settings.max_distance)

    def pair_signals(self, sigs: Any, i: int, j: int, orientation: str, settings: HashSettings) -> dict[str, float]:
        dist = hash_distance(sigs, "hash", i, j, orientation)
        return {} if dist is None else {"phash_distance": dist}


DETECTOR = PHash()
