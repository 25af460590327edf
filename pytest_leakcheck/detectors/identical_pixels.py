"""``identical-pixels``: the same decoded pixels saved as different files.

A PNG re-saved as a lossless WebP, or a JPEG with its metadata stripped:
the bytes differ, the picture does not.  Pairs whose identity hashes are
within ``PIXEL_CANDIDATE_DISTANCE`` and whose sizes agree are candidates;
only they pay for a full decode, whose digest the store keeps by content.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import Detector, PolicyView

if TYPE_CHECKING:
    from ..search.run import SearchRun
    from ..search.kernels import Match
    from ..signals.families import Family

# A JPEG decoded in draft mode and the same pixels saved as PNG can hash a
# couple of bits apart; pairs this close are candidates for the pixel check.
PIXEL_CANDIDATE_DISTANCE = 4


class IdenticalPixels(Detector):
    name = "identical-pixels"
    section = "identical_pixels"
    kind = "identical-pixels"
    rank = 10
    link_value = None  # always 0
    init_keys = (("severity", "same decoded pixels (re-saved, metadata stripped)"),)

    def orientations(self, settings: Any, policy: PolicyView) -> tuple[str, ...]:
        return ()  # equal bytes or pixels, upright only: nothing to turn

    def families(self, settings: Any, policy: PolicyView) -> tuple[Family, ...]:
        from ..signals.families import drafted_family, hash_family, values_family

        if settings.severity == "off":  # its own rows are read by its search alone
            return ()
        ph = policy.detectors.phash  # the hash the phash detector computes anyway
        return (hash_family(ph.kind, ph.bits, "identity"), values_family(), drafted_family())

    def find(self, run: SearchRun, settings: Any) -> list[Match]:
        from ..search.kernels import Match

        candidates = self._candidates(run)
        if not candidates:
            return []
        pixels = _pixel_digests(run, sorted({r for pair in candidates for r in pair}))
        digests = run.sigs.digests
        return [
            Match(i, j, self.name, 0.0)
            for i, j in candidates
            if i in pixels and pixels.get(i) == pixels.get(j) and digests[i] != digests[j]
        ]

    def _candidates(self, run: SearchRun) -> list[tuple[int, int]]:
        from ..search.kernels import hamming_pairs

        # Pixel candidates ignore texture: two black frames can be identical.
        rows = run.rows_by_split()
        hashes, dims = run.sigs.arrays["hash:identity"], run.sigs.dims
        drafted = run.sigs.arrays.get("drafted")
        out: set[tuple[int, int]] = set()
        for a, b in run.comparisons:
            for ra, rb, same in run.sides(a, b, rows):
                ia, ib, _, _ = hamming_pairs(hashes[ra][:, None, :], hashes[rb], PIXEL_CANDIDATE_DISTANCE, same=same)
                gi, gj = ra[ia], rb[ib]
                ok = (dims[gi] == dims[gj]).all(axis=1) & (gi != gj) & _may_match(drafted, gi, gj)
                out.update((min(int(x), int(y)), max(int(x), int(y))) for x, y in zip(gi[ok], gj[ok]))
                out.update(_same_values(run.sigs.arrays.get("values"), ra, rb))
        return sorted(out)


def _may_match(drafted: Any, gi: Any, gj: Any) -> Any:
    """Which pairs may hold identical pixels by their reduced decodes: all but two JPEGs whose
    reduced decodes differ (``signals.families.drafted_family``)."""
    if drafted is None:
        return True
    a, b = drafted[gi], drafted[gj]
    both_jpeg = (a[:, 0] == 1) & (b[:, 0] == 1)
    return ~both_jpeg | (a == b).all(axis=1)


def _same_values(values: Any, ra: Any, rb: Any) -> set[tuple[int, int]]:
    """Pairs of DICOM frames with the same raw values, whatever window their headers apply."""
    if values is None:
        return set()
    by: dict[bytes, list[int]] = {}
    for i in ra.tolist():
        if values[i].any():
            by.setdefault(values[i].tobytes(), []).append(i)
    if not by:
        return set()
    return {(min(i, j), max(i, j)) for j in rb.tolist() if values[j].any()
            for i in by.get(values[j].tobytes(), ()) if i != j}


def _pixel_digests(run: SearchRun, rows: list[int]) -> dict[int, bytes]:
    """Full-decode pixel digests for candidate rows only (cached by content digest)."""
    from ..signals.decode import PIXELS_PARAMS, pixel_digest
    from ..signals.pool import run_map

    digests = run.sigs.digests
    cached = run.store.get_signatures([digests[i] for i in rows], "pixels", PIXELS_PARAMS)
    todo: dict[bytes, int] = {}
    for i in rows:
        if digests[i] not in cached:
            todo.setdefault(digests[i], i)
    tasks = [(str(run.root / run.paths[i]), run.max_pixels, digest) for digest, i in todo.items()]
    new = []
    for digest, result in zip(todo, run_map(pixel_digest, tasks, run.executor, run.jobs)):
        if result is None:  # the file changed or vanished since it was hashed: say and cache nothing
            continue
        ok, data = result
        cached[digest] = (ok, data)
        new.append((digest, "pixels", PIXELS_PARAMS, ok, data))
    if new:
        run.store.put_signatures(new)
    return {i: cached[digests[i]][1] for i in rows if digests[i] in cached and cached[digests[i]][0]}


DETECTOR = IdenticalPixels()
