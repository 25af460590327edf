"""What the hash detectors share: their settings, their search and near misses, and a pair's distance.

``phash`` and ``dhash`` are both Hamming searches over per-orientation hash
families; ``thumbnail`` (and other detectors' evidence) asks how far apart
two files' hashes are.  Living here, none of them imports another detector.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..orientation import ORIENTATIONS
from ..validate import SEVERITIES, Ctx
from ..files.names import excerpt
from .base import NEAR_MISSES, record_near_misses, section

if TYPE_CHECKING:
    from ..search.run import SearchRun
    from ..search.kernels import Match

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


def hash_matches(run: SearchRun, name: str, prefix: str, max_distance: int, reach: int | None = None,
                 left: Left | None = None) -> list[Match]:
    """Pairs within ``max_distance`` in some searched orientation; textured images only.

    A pair's distance is min over orientations o of min(H(o(a), b), H(a, o(b))):
    a flip's hash is not a permutation of the upright hash's bits, so turning
    one side only would make the verdict depend on which split each file is in.
    Each pair is reported once, as ``Match(i, j)`` with ``i < j`` and the
    orientation that turns file ``i`` into file ``j``.  With ``reach``, some
    pairs up to ``reach`` come too (``kernels.hamming_pairs``).  With ``left``, pairs whose nearest
    orientation is one of its views are counted there and not kept (see :class:`Left`).
    """
    import numpy as np

    from ..search.kernels import Match, Tally, hamming_pairs
    from ..signals.families import hash_stack, search_orientations

    names = search_orientations(run.orientations)
    stack = hash_stack(run.sigs, names, prefix)
    upright = stack[:, 0, :]
    # Left views counted in the kernel, never made into pairs (kernels.Tally): over textured rows
    # only, as the pairs counted below; a focus search tests texture on its hits instead.
    tallied = left is not None and run.focus is None and _leading(names, left.views, 0) > 0
    lead = [_leading(names, left.views, first) if tallied else -1 for first in (0, 1)]  # type: ignore[union-attr]
    rows = run.textured_rows() if tallied else run.rows_by_split()
    best: dict[tuple[int, int], tuple[float, int, str]] = {}
    for a, b in run.comparisons:
        for ra, rb, same in run.sides(a, b, rows):
            # The second search turns the reference side, in every orientation
            # but identity (H(a, b) is symmetric already).  Compared with itself
            # a split is searched a < b only, so the reverse direction (b
            # turned against a) reads the rows backwards.
            qa, qb = (ra[::-1], rb[::-1]) if same else (rb, ra)
            for query, ref, first in ((ra, rb, 0), (qa, qb, 1)):
                if first >= len(names):
                    continue
                tally = Tally(lead[first]) if lead[first] >= 0 else None
                ia, ib, dist, kk = hamming_pairs(
                    stack[query, first:], upright[ref], max_distance, same=same, reach=reach, tally=tally)
                gi, gj = query[ia], ref[ib]
                tex = run.texture(gi) & run.texture(gj)
                if tally is not None:
                    left.count += tally.count  # type: ignore[union-attr]
                elif left is not None:
                    gone = tex & np.isin(kk + first, [names.index(v) for v in left.views if v in names])
                    left.count += int(gone.sum())
                    tex &= ~gone
                for x, y, d, o in zip(gi[tex].tolist(), gj[tex].tolist(), dist[tex].tolist(), kk[tex].tolist()):
                    _keep_best(best, x, y, float(d), names[first + o])
    return [Match(i, j, name, d, o) for (i, j), (d, _, o) in sorted(best.items())]


def _leading(names: tuple[str, ...], views: tuple[str, ...], first: int) -> int:
    """How many of ``names[first:]`` lead with ``views``, -1 if some come later (identity and mirror
    come first in every order: ``orientation.ORIENTATIONS``)."""
    n = 0
    while first + n < len(names) and names[first + n] in views:
        n += 1
    return n if n == len([v for v in names[first:] if v in views]) else -1


#: How far past ``max_distance`` (in bits of a 64-bit hash) the search looks for near misses.
NEAR_REACH = 4


def matches_and_near_misses(run: SearchRun, name: str, prefix: str, settings: HashSettings) -> list[Match]:
    """:func:`hash_matches` within ``max_distance``; pairs a few bits further are recorded as near misses.

    A pair's distance is the same whatever the radius, so filtering a wider
    search finds exactly the matches.  But an exact search at the wider radius
    costs far more than at the level (pairs within 12 of 64 bits grow with the
    square of the data: 10x the time at 200,000 images), while the review page
    keeps only the ``NEAR_MISSES`` nearest.  So the search at the level also
    keeps the wider pairs its index meets anyway.  Distances are whole bits:
    once ``NEAR_MISSES`` of those sit at the nearest distance possible past the
    level (:func:`_nearest_possible`), they are exactly the nearest an
    exhaustive search would keep.  Only when they do not (small or sparse data,
    where it is cheap) is the wider radius searched in full.
    """
    level = settings.max_distance
    reach = min(settings.bits // 2, level + NEAR_REACH * settings.bits // 64)
    nearest = min(reach, _nearest_possible(run, prefix, level))
    # Only pairs at the nearest distance can settle it: keeping the farther ones the index
    # meets held 360,000 pairs (a quarter of a gigabyte) at 200,000 images.
    said = whole_verdict(run, prefix, level)
    left = Left.of(run, said)
    found = hash_matches(run, name, prefix, level, reach=nearest, left=left)
    if sum(level < m.value <= nearest for m in found) < NEAR_MISSES and reach > level:
        left = Left.of(run, said)
        found = hash_matches(run, name, prefix, reach, left=left)
    record_near_misses(run, name, [m.value for m in found if m.value > level], level, lower=True)
    if left is not None and left.count:
        said = {**said, "left_to_aligned": left.count}
    return separable(run, name, prefix, level, [m for m in found if m.value <= level], said)


@dataclass
class Left:
    """Matches of a detector that cannot tell copies from the rest of this dataset (``homogeneity``), in
    the views ``aligned``'s own search covers: counted, never made.  Each could only be a warning, and
    ``aligned`` looks at every image in these views itself; on a fixed meeting-room camera (a held-out
    probe: 2,004 frames) pHash and the thumbnail matched 2.3 million such pairs, 2.3 GB of peak memory
    held only to be counted (``aligned.hashed``, which leaves them out where they are made)."""

    views: tuple[str, ...]
    count: int = 0

    @staticmethod
    def of(run: SearchRun, said: dict[str, Any]) -> Left | None:
        if not (said.get("inseparable") and run.memo.get("aligned_on")):
            return None
        return Left(("identity", "hflip") if "hflip" in run.orientations else ("identity",))


def whole_verdict(run: SearchRun, prefix: str, level: int) -> dict[str, Any]:
    """Whether random pairs of the whole dataset pass ``level`` (``homogeneity.verdict``): known before
    the search, so that a hash that cannot tell copies apart here makes no pairs it would only count."""
    from . import homogeneity

    dist = _distance(run, prefix)
    s = homogeneity.sample(run.textured_rows(), run.comparisons, run.split_of, run.sigs.digests)
    d = dist(s.i, s.j)
    return homogeneity.verdict(s, lambda idx: d[idx] <= level, -d)


def _distance(run: SearchRun, prefix: str) -> Any:
    """Hamming distance of rows ``i`` to rows ``j``, the nearest over the searched orientations."""
    import numpy as np

    from ..signals.families import hash_stack, search_orientations

    stack = hash_stack(run.sigs, search_orientations(run.orientations), prefix)

    def dist(i: np.ndarray, j: np.ndarray) -> np.ndarray:
        if not len(i):
            return np.zeros(0, np.int64)
        return np.bitwise_count(stack[i] ^ stack[j, :1]).sum(axis=-1, dtype=np.int64).min(axis=1)

    return dist


def separable(run: SearchRun, name: str, prefix: str, level: int, found: list[Match],
              said: dict[str, Any]) -> list[Match]:
    """``found``, made warnings when random pairs of this dataset pass ``level`` too (``homogeneity``):
    a fixed camera's different shots are within a few bits of each other, and a hash
    that links a quarter of all pairs is no evidence of a copy there.  The same within each
    part of the dataset (a folder, a file-name prefix): there, only matches touching it.  ``said``:
    the whole dataset's verdict (:func:`whole_verdict`)."""
    import numpy as np

    from . import homogeneity

    dist = _distance(run, prefix)

    def judge(i: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        d = dist(i, j)
        return d <= level, -d

    rows = run.textured_rows()
    mask = None
    if not said["inseparable"]:
        parts, mask = homogeneity.within_parts(rows, run.comparisons, run.split_of, run.sigs.digests, run.paths,
                                               homogeneity.PartJudge(judge, -float(level // 4)))
        said = {**said, **parts}
    run.stats[name] = {**(run.stats.get(name) or {}), **said}
    return homogeneity.weaken(found, said["inseparable"], mask,
                              lambda m: homogeneity.turned_version(m, m.value <= level // 4),
                              lambda m: m.value <= level // 4)


def _nearest_possible(run: SearchRun, prefix: str, level: int) -> int:
    """The smallest distance past ``level`` that two of the run's hashes can have.

    Two hashes differ in an odd number of bits only if their counts of set bits
    differ in parity.  A pHash sets exactly half its bits (each coefficient is
    compared with their median), so pHashes differ in an even number of bits
    and nothing lies at ``level + 1`` when ``level`` is even."""
    import numpy as np

    from ..signals.families import hash_stack, search_orientations

    stack = hash_stack(run.sigs, search_orientations(run.orientations), prefix)
    parity = np.bitwise_count(stack).sum(axis=-1, dtype=np.int64) & 1
    if len(parity) and parity.min() == parity.max():
        return level + 2 - level % 2
    return level + 1


def _keep_best(best: dict[tuple[int, int], tuple[float, int, str]], x: int, y: int, dist: float,
               orientation: str) -> None:
    """Keep the nearer of two directions; on a tie, the first orientation in ORIENTATIONS,
    so the choice does not depend on which file was queried."""
    from ..orientation import inverse

    if x > y:  # "x after o is y" is "y after inverse(o) is x"
        x, y, orientation = y, x, inverse(orientation)
    key = (dist, ORIENTATIONS.index(orientation), orientation)
    if (x, y) not in best or key < best[(x, y)]:
        best[(x, y)] = key


def far(distance: float, settings: HashSettings) -> bool:
    """Whether a pair's hashes are too far apart to back up another detector's match.

    Unrelated images differ in about half the bits: Binomial(bits, 1/2), mean
    bits/2 and standard deviation sqrt(bits)/2, so below bits/2 - sqrt(bits)
    (two deviations; 24 of 64 bits) the hash says "related".  A copy that a
    thumbnail or alignment finds while the hash misses it (re-encoded,
    recoloured, cropped a little) drifts a few bits past ``max_distance``; past
    halfway from ``max_distance`` to that floor (16 of 64 bits by default,
    twice the threshold) the hash sides with unrelated images.
    """
    floor = settings.bits / 2 - settings.bits**0.5
    return distance > (settings.max_distance + floor) / 2


def hash_distance(sigs: Any, prefix: str, i: int, j: int, orientation: str) -> int | None:
    """Hamming distance of row ``i`` turned by ``orientation`` to row ``j``, if both are hashed:
    the nearer of turning ``i`` by it and turning ``j`` back (as the search measures)."""
    import numpy as np

    from ..orientation import inverse

    back = inverse(orientation)
    turned, undone, upright = f"{prefix}:{orientation}", f"{prefix}:{back}", f"{prefix}:identity"
    if not sigs.has(turned, undone, upright):
        return None
    arrays = sigs.arrays
    forward = np.bitwise_count(arrays[turned][i] ^ arrays[upright][j]).sum()
    reverse = np.bitwise_count(arrays[undone][j] ^ arrays[upright][i]).sum()
    return int(min(forward, reverse))
