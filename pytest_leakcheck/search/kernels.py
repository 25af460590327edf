"""The numeric kernels every detector searches with, and the match they return.

Everything is vectorised and chunked: a block of query rows against a block
of reference rows at a time, so memory stays bounded (tens of MB) however
large the dataset.  Nothing here knows about policies, splits or files.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..orientation import turn_flat
from . import mih, popcount, retrieval

# Elements per block; bounds the temporaries of one step to ~32 MB.
_BLOCK = 1 << 22
# Query rows x reference rows x orientations from which cosine_pairs goes through
# retrieval.within (exact too; 1.7-7x faster at 2,048 x 1,000,000 in benchmarks/scale.py).
_RETRIEVAL_PAIRS = 2e9


@dataclass(frozen=True)
class Match:
    """Row ``i`` transformed by ``orientation`` matches row ``j`` by ``detector``.

    ``value`` is in the detector's own unit (a Hamming distance for hashes, a
    similarity for the others, 0 for exact copies), because that is what the
    report shows; ``Detector.strength`` turns it into one comparable 0..1 scale.
    """

    i: int
    j: int
    detector: str
    value: float
    orientation: str = "identity"
    #: Below the detector's near-certain level ("probably the same shot, please
    #: look"): the finding it makes is at most a warning, and a weak link never
    #: merges two clusters (findings.py).
    weak: bool = False


def blocks(na: int, nb: int, per_pair: int, same: bool = False) -> Iterator[tuple[int, int, int, int]]:
    """Query and reference blocks; with ``same`` only blocks on or above the
    diagonal, so a split compared with itself costs half a square."""
    cb = max(1, min(nb, _BLOCK // max(1, per_pair) // 64))
    ca = max(1, min(na, _BLOCK // max(1, per_pair) // cb))
    for a0 in range(0, na, ca):
        for b0 in range(a0 if same else 0, nb, cb):
            yield a0, min(na, a0 + ca), b0, min(nb, b0 + cb)


def mask_diagonal(block: np.ndarray, a0: int, b0: int, value: float) -> None:
    """Overwrite the entries pairing a row with itself (global a == b)."""
    rows = np.arange(block.shape[0])
    cols = rows + a0 - b0
    keep = (cols >= 0) & (cols < block.shape[1])
    block[rows[keep], cols[keep]] = value


def _popcount_block(qa: np.ndarray, qb: np.ndarray) -> np.ndarray:
    """Hamming distances between (Na, W) and (Nb, W) uint64 words, as (Na, Nb) uint8 (one word) or uint16.

    With the faiss extra, faiss's kernel (``popcount.py``): the same distances in the same dtype, 2-5
    times faster on a block of 1,600 x 1,600 64-bit hashes, 9-22 times on 256-bit ones
    (``benchmarks/popcount_speed.py``, a loaded 2-core machine).
    """
    fast = popcount.matrix(qa.view(np.uint8), qb.view(np.uint8))
    if fast is not None:
        return fast.astype(np.uint8 if qa.shape[1] == 1 else np.uint16)
    d = np.bitwise_count(qa[:, None, 0] ^ qb[None, :, 0])
    if qa.shape[1] > 1:
        d = d.astype(np.uint16)
        for w in range(1, qa.shape[1]):
            d += np.bitwise_count(qa[:, None, w] ^ qb[None, :, w])
    return d


#: Query rows per step of :func:`_least_over_orientations`'s one-word path: its XOR buffer
#: (rows x reference rows x 8 bytes) stays about this many elements, within the CPU's cache.
_TILE = 1 << 18


def _least_over_orientations(qa: np.ndarray, qb: np.ndarray) -> np.ndarray:
    """The least over orientations k of the Hamming distances between (Na, K, W) ``qa[:, k]`` and (Nb, W) ``qb``.

    One-word hashes (64-bit pHash, without faiss) go a few query rows at a time through buffers made
    once: each orientation's XOR and count then stay in cache, where a whole block's passes wrote a
    fresh 32 MB matrix each, 8 times over (27-29 ms CPU against 47-50 ms at 1,048 x 4,000 x 8
    orientations, ``benchmarks/popcount_speed.py --min-over``).  The same integers either way.
    """
    if qa.shape[2] != 1 or popcount.available():
        best = _popcount_block(qa[:, 0], qb)
        for k in range(1, qa.shape[1]):
            np.minimum(best, _popcount_block(qa[:, k], qb), out=best)
        return best
    b = qb[None, :, 0]
    rows = max(1, min(len(qa), _TILE // max(1, len(qb))))
    best = np.empty((len(qa), len(qb)), np.uint8)
    xor = np.empty((rows, len(qb)), np.uint64)
    count = np.empty((rows, len(qb)), np.uint8)
    for r0 in range(0, len(qa), rows):
        n = min(rows, len(qa) - r0)
        out = best[r0:r0 + n]
        for k in range(qa.shape[1]):
            np.bitwise_xor(qa[r0:r0 + n, k], b, out=xor[:n])
            np.bitwise_count(xor[:n], out=out if k == 0 else count[:n])
            if k:
                np.minimum(out, count[:n], out=out)
    return best


@dataclass
class Tally:
    """Hits whose best orientation is one of the first ``views`` searched: counted here, never returned.

    A detector that cannot tell copies apart in a dataset leaves its identity and mirror
    matches to ``aligned`` (``detectors.hashing.Left``).  On a fixed camera nearly every
    pair is such a hit: made into arrays only to be counted, they held memory with the square of
    the set (3,000 shots of one split: 530 MB and 6.5 s of CPU, against 21 MB and 0.1 s counted
    here: ``benchmarks/tally_memory.py``).
    """

    views: int
    count: int = 0


def hamming_pairs(
    qa: np.ndarray, qb: np.ndarray, max_distance: int, *, same: bool = False, reach: int | None = None,
    tally: Tally | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """All (a, b) with min over orientations of Hamming(qa[a, k], qb[b]) <= max_distance.

    ``qa`` is (Na, K, W) uint64, ``qb`` is (Nb, W) uint64.  With ``same`` the
    two are the same rows and only a < b is reported.  Returns a, b, distance
    and the index k of the best orientation (the first of equals), sorted by
    (a, b).  Large searches go through the multi-index (``mih.py``) when its
    cost model says it is cheaper; the result is the same either way.

    With ``reach`` (> ``max_distance``) some pairs within ``reach`` come too, at no extra
    search cost: all of them from the brute force, those the index met from the index
    (``mih.search``).  Only the pairs within ``max_distance`` are certain to be complete.
    With ``tally``, hits whose best orientation (the first of equals) is one of its
    leading views are counted in it instead of returned.
    """
    if len(qa) and len(qb) and mih.choose(len(qa), qa.shape[1], len(qb), qa.shape[2], max_distance).faster:
        found = mih.search(qa, qb, mih.Ask(max_distance, same, reach), brute_hamming_pairs)[0]
        if tally is None:
            return found
        gone = found[3] < tally.views
        tally.count += int(gone.sum())
        return tuple(x[~gone] for x in found)  # type: ignore[return-value]
    radius = max_distance if reach is None else max(reach, max_distance)
    return brute_hamming_pairs(qa, qb, radius, same=same, tally=tally)


def brute_hamming_pairs(
    qa: np.ndarray, qb: np.ndarray, max_distance: int, *, same: bool = False, tally: Tally | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`hamming_pairs` comparing every pair, block by block."""
    _na, k_count, words = qa.shape
    first = 0 if tally is None else min(tally.views, k_count)
    out: list[tuple[np.ndarray, ...]] = []
    for a0, a1, b0, b1 in blocks(len(qa), len(qb), words, same):
        best = _least_over_orientations(qa[a0:a1, first:], qb[b0:b1]) if first < k_count else None
        if first:
            # The tally's views, first in order, win ties: their hits are counted in the block,
            # and the block's hits are those of the other views that come strictly nearer.
            led = _least_over_orientations(qa[a0:a1, :first], qb[b0:b1])
            if same:
                mask_diagonal(led, a0, b0, np.iinfo(led.dtype).max)
            counted = led <= max_distance
            if best is not None:
                counted &= led <= best
                best[best >= led] = np.iinfo(best.dtype).max
            if same:  # a < b only, as the hits below
                counted = np.triu(counted, a0 - b0 + 1)
            tally.count += int(np.count_nonzero(counted))  # type: ignore[union-attr]
            if best is None:
                continue
        if same:
            mask_diagonal(best, a0, b0, np.iinfo(best.dtype).max)
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
            np.bitwise_count(qa[ia + a0, k] ^ qb[ib + b0]).sum(axis=-1) for k in range(first, k_count)
        ]) if len(ia) else np.zeros((1, 0), dtype=np.int64)
        out.append((ia + a0, ib + b0, best[ia, ib], per_k.argmin(axis=0) + first))
    if not out:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty, empty
    a, b, d, k = (np.concatenate(parts) for parts in zip(*out))
    # One order whatever the block size (and the same as the index's).
    order = np.lexsort((b, a))
    return a[order], b[order], d[order], k[order]


def normalised_thumbs(thumb: np.ndarray) -> np.ndarray:
    """Zero-mean, unit-norm thumbnails: cosine becomes blind to brightness and contrast."""
    x = thumb.astype(np.float32)
    x -= x.mean(axis=1, keepdims=True)
    norm = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.maximum(norm, 1e-6)


def orient_thumbs(t: np.ndarray, name: str) -> np.ndarray:
    """(N, side*side) flattened thumbnails, each turned by ``name`` (orientation.py)."""
    return turn_flat(t, name)


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
    if float(len(ta)) * len(tb) * len(orientations) >= _RETRIEVAL_PAIRS:
        return oriented_within(ta, tb, orientations, min_cosine, same=same)
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
                    mask_diagonal(bound, a0, b0 + lo, -np.inf)
                hit = bound >= min_cosine
                if not hit.any():
                    continue
                ia, ib = np.nonzero(hit)
                ib += lo
                if same:
                    upper = ia + a0 < ib + b0
                    ia, ib = ia[upper], ib[upper]
                exact = _rowwise_dots(coef_a, coef_b, ia, ib)
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


#: Pairs whose exact cosine is taken at once: the two gathered blocks of coefficients are
#: ``_DOTS`` x side² floats each.  On a fixed camera nearly every pair passes the low-frequency
#: bound, and gathering them all at once held 1.8 GB for 2,004 frames (a held-out probe).
_DOTS = 1 << 15


def _rowwise_dots(a: np.ndarray, b: np.ndarray, ia: np.ndarray, ib: np.ndarray) -> np.ndarray:
    """``(a[ia] * b[ib]).sum(1)``, a bounded number of rows at a time."""
    out = np.empty(len(ia), dtype=np.result_type(a.dtype, b.dtype))
    for k in range(0, len(ia), _DOTS):
        out[k:k + _DOTS] = np.einsum("ij,ij->i", a[ia[k:k + _DOTS]], b[ib[k:k + _DOTS]])
    return out


def oriented_within(
    ta: np.ndarray, tb: np.ndarray, orientations: list[str], min_cosine: float, *, same: bool = False,
    backend: str = "exact",
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`cosine_pairs` through ``retrieval.within``, one orientation at a time; thumbnails
    are normalised (and turned) a block at a time.  Exact with the default backend; with
    ``backend="faiss"`` the same rows minus the pairs FAISS does not return."""
    parts = []
    try:
        for k, o in enumerate(orientations):
            sides = retrieval.Sides(ta, tb, lambda x, o=o: orient_thumbs(normalised_thumbs(x), o), normalised_thumbs)
            a, b, cos = retrieval.within(sides, min_cosine, same=same, backend=backend)
            parts.append((a, b, cos, np.full(len(a), k, dtype=np.int64)))
    finally:
        retrieval.forget()  # the orientations shared one index of ``tb``; nothing after needs it
    a, b, cos, kk = (np.concatenate(x) for x in zip(*parts))
    # Best orientation per pair: highest cosine, then the first orientation (as cosine_pairs).
    order = np.lexsort((kk, -cos, b, a))
    a, b, cos, kk = a[order], b[order], cos[order], kk[order]
    first = np.ones(len(a), dtype=bool)
    first[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
    return a[first], b[first], cos[first], kk[first]


def _exact_groups(keys: Sequence[bytes], rows: np.ndarray) -> list[list[int]]:
    groups: dict[bytes, list[int]] = {}
    for r in rows:
        if keys[r]:
            groups.setdefault(keys[r], []).append(int(r))
    return [g for g in groups.values() if len(g) > 1]


def exact_matches(
    keys: Sequence[bytes], detector: str, split_of: Sequence[str], allowed: set[tuple[str, str]]
) -> list[Match]:
    """Pairs with equal (non-empty) keys; a big group is linked as a star to stay linear.

    Copies within one split are linked to their split's first copy when the
    split is compared with itself, and also when the content is in another
    split it is compared with: the finding then lists every copy (the other
    searches compare only first copies), while its severity comes from the
    links across splits.
    """
    out = []
    for group in _exact_groups(keys, np.arange(len(keys))):
        by_split: dict[str, list[int]] = {}
        for r in group:
            by_split.setdefault(split_of[r], []).append(r)
        heads = {s: rows[0] for s, rows in by_split.items()}
        for s, rows in by_split.items():
            across = any((s, t) in allowed or (t, s) in allowed for t in heads if t != s)
            if (s, s) in allowed or across:
                out += [Match(rows[0], r, detector, 0.0) for r in rows[1:]]
        for s in heads:
            for t in heads:
                if s < t and ((s, t) in allowed or (t, s) in allowed):
                    out.append(Match(heads[s], heads[t], detector, 0.0))
    return out


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
