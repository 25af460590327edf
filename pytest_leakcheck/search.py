"""Find matching pairs across configured split pairs and inside splits.

Everything is vectorised and chunked: a block of query rows against a block
of reference rows at a time, so memory stays bounded (tens of MB) however
large the dataset.  Output is sorted, so two runs give the same matches.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from . import snapshot
from .inventory import Inventory
from .names import from_bytes, to_bytes
from .policy import ORIENTATIONS, Policy
from .signatures import Signatures, search_orientations
from .store import Store

#: Detector names, strongest first; findings take their kind from the strongest.
DETECTORS = ("identical-file", "identical-pixels", "phash", "thumbnail", "aligned")
# Images whose 16 px thumbnail varies by less than this (grey levels) carry
# too little structure for a perceptual signal to mean anything: plain sky,
# black frames.  Only the exact detectors judge them.
MIN_TEXTURE = 2.0
# A JPEG decoded in draft mode and the same pixels saved as PNG can hash a
# couple of bits apart; pairs this close are candidates for the pixel check.
PIXEL_CANDIDATE_DISTANCE = 4
# Elements per block; bounds the temporaries of one step to ~32 MB.
_BLOCK = 1 << 22


@dataclass(frozen=True)
class Match:
    """Row ``i`` transformed by ``orientation`` matches row ``j`` by ``detector``."""

    i: int
    j: int
    detector: str
    value: float
    orientation: str = "identity"


@dataclass(frozen=True)
class SearchResult:
    matches: tuple[Match, ...]
    #: (i, j) pairs close enough that only a full decode can tell whether
    #: their pixels are identical.
    pixel_candidates: tuple[tuple[int, int], ...]


def comparisons(inv: Inventory, policy: Policy) -> list[tuple[str, str]]:
    """Split pairs to search: the configured cross pairs, then each split with itself."""
    pairs = list(policy.pairs)
    if policy.within_split != "off":
        pairs += [(s, s) for s in inv.splits]
    return pairs


def _orientations(policy: Policy) -> list[int]:
    names = search_orientations(policy)
    return [k for k, name in enumerate(ORIENTATIONS) if name in names]


def _rows_by_split(inv: Inventory, mask: np.ndarray) -> dict[str, np.ndarray]:
    splits = np.array([r.split for r in inv.records], dtype=object)
    return {s: np.flatnonzero((splits == s) & mask) for s in inv.splits}


def _blocks(na: int, nb: int, per_pair: int, same: bool = False) -> Iterator[tuple[int, int, int, int]]:
    """Query and reference blocks; with ``same`` only blocks on or above the
    diagonal, so a split compared with itself costs half a square."""
    cb = max(1, min(nb, _BLOCK // max(1, per_pair) // 64))
    ca = max(1, min(na, _BLOCK // max(1, per_pair) // cb))
    for a0 in range(0, na, ca):
        for b0 in range(a0 if same else 0, nb, cb):
            yield a0, min(na, a0 + ca), b0, min(nb, b0 + cb)


def _mask_diagonal(block: np.ndarray, a0: int, b0: int, value: float) -> None:
    """Overwrite the entries pairing a row with itself (global a == b)."""
    rows = np.arange(block.shape[0])
    cols = rows + a0 - b0
    keep = (cols >= 0) & (cols < block.shape[1])
    block[rows[keep], cols[keep]] = value


def _popcount_block(qa: np.ndarray, qb: np.ndarray) -> np.ndarray:
    """Hamming distances between (Na, W) and (Nb, W) uint64 words, as (Na, Nb)."""
    d = np.bitwise_count(qa[:, None, 0] ^ qb[None, :, 0])
    if qa.shape[1] > 1:
        d = d.astype(np.uint16)
        for w in range(1, qa.shape[1]):
            d += np.bitwise_count(qa[:, None, w] ^ qb[None, :, w])
    return d


def hamming_pairs(
    qa: np.ndarray, qb: np.ndarray, max_distance: int, *, same: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """All (a, b) with min over orientations of Hamming(qa[a, k], qb[b]) <= max_distance.

    ``qa`` is (Na, K, W) uint64, ``qb`` is (Nb, W) uint64.  With ``same`` the
    two are the same rows and only a < b is reported.  Returns a, b, distance
    and the index k of the best orientation.
    """
    _na, k_count, words = qa.shape
    out: list[tuple[np.ndarray, ...]] = []
    for a0, a1, b0, b1 in _blocks(len(qa), len(qb), words, same):
        best = None
        for k in range(k_count):
            d = _popcount_block(qa[a0:a1, k], qb[b0:b1])
            best = d if best is None else np.minimum(best, d, out=best)
        if same:
            _mask_diagonal(best, a0, b0, np.iinfo(best.dtype).max)
        hit = best <= max_distance
        # Hits are rare: test for any before paying for nonzero, and apply the
        # triangle (a < b) to the few hits rather than to the whole block.
        if not hit.any():
            continue
        ia, ib = np.nonzero(hit)
        if same:
            upper = ia + a0 < ib + b0
            ia, ib = ia[upper], ib[upper]
        # Which orientation won is only needed for the few hits.
        per_k = np.stack([
            np.bitwise_count(qa[ia + a0, k] ^ qb[ib + b0]).sum(axis=-1) for k in range(k_count)
        ]) if len(ia) else np.zeros((1, 0), dtype=np.int64)
        out.append((ia + a0, ib + b0, best[ia, ib], per_k.argmin(axis=0)))
    if not out:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty, empty
    return tuple(np.concatenate(parts) for parts in zip(*out))  # type: ignore[return-value]


def normalised_thumbs(thumb: np.ndarray) -> np.ndarray:
    """Zero-mean, unit-norm thumbnails: cosine becomes blind to brightness and contrast."""
    x = thumb.astype(np.float32)
    x -= x.mean(axis=1, keepdims=True)
    norm = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.maximum(norm, 1e-6)


def orient_thumbs(t: np.ndarray, name: str) -> np.ndarray:
    side = round(t.shape[1] ** 0.5)
    sq = t.reshape(-1, side, side)
    out = {
        "identity": sq,
        "hflip": sq[:, :, ::-1],
        "vflip": sq[:, ::-1, :],
        "rot90": np.rot90(sq, 1, axes=(1, 2)),
        "rot180": sq[:, ::-1, ::-1],
        "rot270": np.rot90(sq, 3, axes=(1, 2)),
        "transpose": sq.transpose(0, 2, 1),
        "transverse": sq[:, ::-1, ::-1].transpose(0, 2, 1),
    }[name]
    return np.ascontiguousarray(out).reshape(len(t), t.shape[1])


@lru_cache(maxsize=8)
def _dct_basis(side: int) -> tuple[np.ndarray, int]:
    """Orthonormal 2-D DCT as a (side², side²) matrix, rows ordered low to high
    frequency, and how many rows count as "low"."""
    k = np.arange(side)
    c = np.cos(np.pi * (2 * k[None, :] + 1) * k[:, None] / (2 * side)) * np.sqrt(2 / side)
    c[0] /= np.sqrt(2)
    basis = np.kron(c, c)
    order = np.argsort((k[:, None] + k[None, :]).ravel(), kind="stable")
    return basis[order].astype(np.float32), max(1, side * side // 4)


def _spectra(unit: np.ndarray, side: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    basis, low = _dct_basis(side)
    coef = unit @ basis.T
    high = np.sqrt(np.maximum(0.0, 1.0 - np.einsum("ij,ij->i", coef[:, :low], coef[:, :low])))
    return coef, np.ascontiguousarray(coef[:, :low]), high


def _identity_spectra(unit: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """No transform: the "low" part is everything and the bound is the cosine itself."""
    return unit, unit, np.zeros(len(unit), dtype=unit.dtype)


def cosine_pairs(
    ta: np.ndarray, tb: np.ndarray, orientations: list[str], min_cosine: float, *, same: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Like :func:`hamming_pairs` for raw uint8 thumbnails and cosine >= ``min_cosine``.

    Exact, but cheap: in an orthonormal DCT basis the cosine splits into a
    low-frequency part and a high-frequency part bounded by the product of the
    two high-frequency norms (Cauchy-Schwarz).  A quarter-size matmul over the
    low frequencies plus that bound discards almost every pair; only the rest
    get the full dot product.  Thumbnails are normalised block by block, never
    all at once: a million float32 thumbnails would be a gigabyte.
    """
    side = round(ta.shape[1] ** 0.5)
    out: list[tuple[np.ndarray, ...]] = []
    if not len(ta) or not len(tb):
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty.astype(np.float32), empty
    # Transforming the reference side costs side**4 per row; for a handful of
    # query rows (a commit hook, a small pull request) plain dot products are cheaper.
    direct = len(ta) * len(orientations) * 3 < 4 * side * side
    spectra = _identity_spectra if direct else lambda unit: _spectra(unit, side)
    cb = max(1, min(len(tb), 8192))
    ca = max(1, min(len(ta), _BLOCK // cb))
    for b0 in range(0, len(tb), cb):
        b1 = min(len(tb), b0 + cb)
        coef_b, low_b, high_b = spectra(normalised_thumbs(tb[b0:b1]))
        for a0 in range(0, len(ta), ca):
            a1 = min(len(ta), a0 + ca)
            # Compared with itself, a split needs only the columns from the
            # block's first row on: the upper triangle, plus a sliver.
            lo = max(0, a0 - b0) if same else 0
            if lo >= b1 - b0:
                continue
            unit_a = normalised_thumbs(ta[a0:a1])
            found: list[tuple[np.ndarray, ...]] = []
            for k, o in enumerate(orientations):
                coef_a, low_a, high_a = spectra(orient_thumbs(unit_a, o))
                bound = low_a @ low_b[lo:].T
                bound += high_a[:, None] * high_b[None, lo:]
                if same:
                    _mask_diagonal(bound, a0, b0 + lo, -np.inf)
                hit = bound >= min_cosine
                if not hit.any():
                    continue
                ia, ib = np.nonzero(hit)
                ib += lo
                if same:
                    upper = ia + a0 < ib + b0
                    ia, ib = ia[upper], ib[upper]
                exact = np.einsum("ij,ij->i", coef_a[ia], coef_b[ib])
                keep = exact >= min_cosine
                found.append((ia[keep], ib[keep], exact[keep], np.full(keep.sum(), k)))
            if not found:
                continue
            ia, ib, val, kk = (np.concatenate(parts) for parts in zip(*found))
            # Best orientation per pair: sort by pair, then by cosine descending.
            order = np.lexsort((-val, ib, ia))
            ia, ib, val, kk = ia[order], ib[order], val[order], kk[order]
            first = np.ones(len(ia), dtype=bool)
            first[1:] = (ia[1:] != ia[:-1]) | (ib[1:] != ib[:-1])
            out.append((ia[first] + a0, ib[first] + b0, val[first], kk[first]))
    if not out:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty.astype(np.float32), empty
    return tuple(np.concatenate(parts) for parts in zip(*out))  # type: ignore[return-value]


def _exact_groups(keys: list[bytes], rows: np.ndarray) -> list[list[int]]:
    groups: dict[bytes, list[int]] = {}
    for r in rows:
        if keys[r]:
            groups.setdefault(keys[r], []).append(int(r))
    return [g for g in groups.values() if len(g) > 1]


def _exact_matches(
    keys: list[bytes], detector: str, inv: Inventory, allowed: set[tuple[str, str]]
) -> list[Match]:
    """Pairs with equal keys; a big group is linked as a star to stay linear."""
    out = []
    for group in _exact_groups(keys, np.arange(len(keys))):
        by_split: dict[str, list[int]] = {}
        for r in group:
            by_split.setdefault(inv.records[r].split, []).append(r)
        heads = {s: rows[0] for s, rows in by_split.items()}
        for s, rows in by_split.items():
            if (s, s) in allowed:
                out += [Match(rows[0], r, detector, 0.0) for r in rows[1:]]
        for s in heads:
            for t in heads:
                if s < t and ((s, t) in allowed or (t, s) in allowed):
                    out.append(Match(heads[s], heads[t], detector, 0.0))
    return out


class _Texture:
    """Whether rows carry enough structure for a perceptual match, computed on demand."""

    def __init__(self, sigs: Signatures) -> None:
        self.sigs = sigs
        self.known = np.full(len(sigs.valid), -1, dtype=np.int8)

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        rows = np.asarray(rows, dtype=np.int64)
        todo = rows[self.known[rows] < 0]  # a repeat only costs a second std
        if len(todo):
            std = self.sigs.thumb[todo].astype(np.float32).std(axis=1)
            self.known[todo] = self.sigs.valid[todo] & (std >= MIN_TEXTURE)
        return self.known[rows] == 1


def _sides(
    a: str, b: str, rows: dict[str, np.ndarray], focus: np.ndarray | None
) -> list[tuple[np.ndarray, np.ndarray, bool]]:
    """(query rows, reference rows, same) blocks to search for one split pair.

    With ``focus`` only pairs touching a focus row are searched, from both
    sides: one new image against the whole dataset, not everything again.
    """
    ra, rb = rows[a], rows[b]
    if focus is None:
        return [(ra, rb, a == b)]
    fa, fb = ra[focus[ra]], rb[focus[rb]]
    if a == b:
        return [(fa, ra, False)]
    return [(fa, rb, False), (fb, ra[~focus[ra]], False)]


def dedupe(matches: list[Match]) -> list[Match]:
    """One match per unordered pair and detector; focus searches can meet a pair twice."""
    seen: set[tuple[int, int, str]] = set()
    out = []
    for m in matches:
        key = (min(m.i, m.j), max(m.i, m.j), m.detector)
        if m.i != m.j and key not in seen:
            seen.add(key)
            out.append(m)
    return out


def find(
    inv: Inventory, sigs: Signatures, policy: Policy, *, focus: np.ndarray | None = None
) -> SearchResult:
    """Every match the enabled detectors find, plus candidates for the pixel check.

    ``focus`` (a boolean mask over rows) limits the search to pairs that
    involve at least one focus row, e.g. the files a commit adds.
    """
    det = policy.detectors
    pairs = comparisons(inv, policy)
    allowed = set(pairs)
    matches: list[Match] = []
    if det.identical_file != "off":
        keys = list(sigs.digests)
        if focus is not None:
            # Only copies of a focus file matter; blanking the other keys
            # skips grouping the whole dataset.
            hit = {sigs.digests[i] for i in np.flatnonzero(focus)}
            keys = [d if d in hit else b"" for d in keys]
        matches += _exact_matches(keys, "identical-file", inv, allowed)

    textured = _Texture(sigs)
    valid_rows = _rows_by_split(inv, sigs.valid)
    # A full search drops flat images up front; a focus search (one new image
    # against everything) tests texture only on the few hits.
    rows = valid_rows if focus is not None else _rows_by_split(inv, textured(np.arange(len(sigs.valid))))
    ks = _orientations(policy)
    threshold = max(det.phash.max_distance if det.phash.severity != "off" else 0, PIXEL_CANDIDATE_DISTANCE)
    candidates: list[tuple[int, int]] = []
    names = [ORIENTATIONS[k] for k in ks]
    for a, b in pairs:
        # Pixel candidates ignore texture: two black frames can be identical.
        for ra, rb, same in _sides(a, b, valid_rows, focus):
            ia, ib, dist, kk = hamming_pairs(
                sigs.phash[ra][:, ks, :], sigs.phash[rb][:, 0, :], threshold, same=same
            )
            gi, gj = ra[ia], rb[ib]
            orient = np.array(ks)[kk] if len(kk) else kk
            ident = (orient == 0) & (dist <= PIXEL_CANDIDATE_DISTANCE)
            ident &= (sigs.dims[gi] == sigs.dims[gj]).all(axis=1)
            candidates += [(min(int(x), int(y)), max(int(x), int(y))) for x, y in zip(gi[ident], gj[ident])]
            if det.phash.severity != "off":
                tex = textured(gi) & textured(gj) & (dist <= det.phash.max_distance)
                matches += [
                    Match(int(x), int(y), "phash", float(d), ORIENTATIONS[int(o)])
                    for x, y, d, o in zip(gi[tex], gj[tex], dist[tex], orient[tex])
                ]
        if det.thumbnail.severity != "off":
            for ra, rb, same in _sides(a, b, rows, focus):
                ia, ib, cos, kk = cosine_pairs(
                    sigs.thumb[ra], sigs.thumb[rb], names, det.thumbnail.min_cosine, same=same
                )
                tex = textured(ra[ia]) & textured(rb[ib])
                matches += [
                    Match(int(ra[x]), int(rb[y]), "thumbnail", round(float(c), 4), ORIENTATIONS[ks[int(o)]])
                    for x, y, c, o in zip(ia[tex], ib[tex], cos[tex], kk[tex])
                ]
    matches.sort(key=lambda m: (min(m.i, m.j), max(m.i, m.j), DETECTORS.index(m.detector)))
    candidates = [(i, j) for i, j in candidates if i != j]
    return SearchResult(tuple(dedupe(matches)), tuple(sorted(set(candidates))))


def identical_pixels(
    candidates: tuple[tuple[int, int], ...], pixels: dict[int, bytes], sigs: Signatures
) -> list[Match]:
    """Candidate pairs whose full decodes are equal, and whose files are not already identical."""
    return [
        Match(i, j, "identical-pixels", 0.0)
        for i, j in candidates
        if i in pixels and pixels.get(i) == pixels.get(j) and sigs.digests[i] != sigs.digests[j]
    ]


# --------------------------------------------------------------------------
# Incremental full search


def _matches_key(policy: Policy) -> str:
    """Everything a match between two unchanged files depends on."""
    parts = (policy.detectors, policy.pairs, policy.within_split, search_orientations(policy),
             snapshot.key(policy), MIN_TEXTURE, PIXEL_CANDIDATE_DISTANCE, "matches-v1")
    return "matches:" + hashlib.sha256(repr(parts).encode()).hexdigest()[:24]


def _joined(items: list[str]) -> np.ndarray:
    return np.frombuffer(to_bytes("\0".join(items)), dtype=np.uint8)


def _split_joined(array: np.ndarray) -> list[str]:
    return from_bytes(array.tobytes()).split("\0")


def find_incremental(inv: Inventory, sigs: Signatures, policy: Policy, store: Store) -> SearchResult:
    """:func:`find` over the whole dataset, reusing the last full search where nothing changed.

    Two files whose paths, splits and contents are as they were match (or
    not) exactly as before under the same parameters, so their pairs come from
    the store; only pairs touching a new or changed file are searched, through
    the focus mode.  A warm re-check of an unchanged tree searches nothing.
    """
    key = _matches_key(policy)
    prev = store.load_snapshot(key)
    records = inv.records
    changed = np.ones(len(records), dtype=bool)
    new_of_old = np.zeros(0, dtype=np.int64)
    if prev is not None:
        old_paths, old_splits = _split_joined(prev["paths"]), _split_joined(prev["splits"])
        index = {p: k for k, p in enumerate(old_paths)}
        new_of_old = np.full(len(old_paths), -1, dtype=np.int64)
        old_digests = prev["digest"]
        for i, rec in enumerate(records):
            k = index.get(rec.path, -1)
            if k >= 0 and old_splits[k] == rec.split and sigs.digests[i] == old_digests[k].tobytes():
                changed[i] = False
                new_of_old[k] = i
    if prev is None or changed.all():
        result = find(inv, sigs, policy)
    else:
        found = find(inv, sigs, policy, focus=changed) if changed.any() else SearchResult((), ())
        mi, mj = new_of_old[prev["i"]], new_of_old[prev["j"]]
        keep = (mi >= 0) & (mj >= 0)
        cached = [
            Match(int(a), int(b), DETECTORS[int(d)], float(v), ORIENTATIONS[int(o)])
            for a, b, d, v, o in zip(mi[keep], mj[keep], prev["detector"][keep], prev["value"][keep],
                                     prev["orientation"][keep])
        ]
        ci, cj = new_of_old[prev["ci"]], new_of_old[prev["cj"]]
        ckeep = (ci >= 0) & (cj >= 0)
        candidates = {(min(int(a), int(b)), max(int(a), int(b))) for a, b in zip(ci[ckeep], cj[ckeep])}
        matches = [*cached, *found.matches]
        matches.sort(key=lambda m: (min(m.i, m.j), max(m.i, m.j), DETECTORS.index(m.detector)))
        result = SearchResult(tuple(dedupe(matches)), tuple(sorted(candidates | set(found.pixel_candidates))))
    if prev is None or changed.any() or (new_of_old < 0).any():
        store.save_snapshot(key, _match_arrays(inv, sigs, result), kind="matches")
    return result


def _match_arrays(inv: Inventory, sigs: Signatures, result: SearchResult) -> dict[str, np.ndarray]:
    m = result.matches
    c = result.pixel_candidates
    return {
        "paths": _joined([r.path for r in inv.records]),
        "splits": _joined([r.split for r in inv.records]),
        "digest": np.array([np.frombuffer(d.ljust(32, b"\0"), dtype=np.uint8) for d in sigs.digests],
                           dtype=np.uint8).reshape(-1, 32),
        "i": np.array([x.i for x in m], dtype=np.int64),
        "j": np.array([x.j for x in m], dtype=np.int64),
        "detector": np.array([DETECTORS.index(x.detector) for x in m], dtype=np.int8),
        "value": np.array([x.value for x in m], dtype=np.float64),
        "orientation": np.array([ORIENTATIONS.index(x.orientation) for x in m], dtype=np.int8),
        "ci": np.array([a for a, _ in c], dtype=np.int64),
        "cj": np.array([b for _, b in c], dtype=np.int64),
    }
