"""Nearest-neighbour retrieval over float descriptors, exact by default, at any size.

Two calls, for any detector whose signal is a vector compared by cosine
(inner product of unit-norm rows):

- ``topk(queries, refs, k) -> (idx (Nq, k) int64, score (Nq, k) float32)``: each
  query's ``k`` best references, best first (ties: lower index first);
- ``within(Sides(queries, refs), min_cosine, same=False) -> (a, b, score)``: every pair
  with ``queries[a] @ refs[b] >= min_cosine``, sorted by (a, b); with ``same``
  the two are the same rows and only a < b is reported.

Rows may be float16 (half the memory of float32) or any float type; they
should be unit-norm (the caller normalises, as ``kernels.normalised_thumbs``
does).  Scores are always float32 dot products of the rows as given.

``backend="exact"`` (the default, numpy only) works block by block, so memory
does not grow with Nq * Nb.  It prunes with a bound instead of computing every
full product: in an orthonormal basis fitted to a sample of the references
(PCA), a dot product is the product of the leading ``low`` coordinates plus a
rest bounded by the product of the two rest norms (Cauchy-Schwarz).  A matmul
over the leading quarter of the coordinates plus that bound discards almost
every pair of real descriptors (their energy is in a few directions); only the
survivors get the full float32 product.  Nothing is approximate: the result is
the brute force's.  (numpy has no fast float16 or int8 matrix product, so
blocks are cast to float32 for BLAS; the storage may stay float16.)

``backend="faiss"`` (``pip install 'pytest-leakcheck[faiss]'``) puts the same
bound coordinates in a FAISS inverted-file index and asks it for the pairs
whose bound reaches the threshold (or the ``8 * k`` highest bounds), then
re-ranks them exactly in float32 (``faissindex.py``).  It is approximate: a pair
in a cell the query does not scan is missed; ``nprobe`` trades time for recall
(``benchmarks/scale.py`` reports the recall against brute force).  faiss is
imported only by this backend.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from ..errors import LeakcheckError
from . import BACKENDS

# Reference rows per block and query rows per block: a (query, reference)
# block of float32 bounds is 4 * _REFS * _QUERIES bytes (32 MB).
_REFS = 8192
_QUERIES = 1024
# Rows of the references the basis is fitted on; any basis is exact, a fitted one prunes best.
_SAMPLE = 8192
# The inverted file (backend "lists"): about LIST_SIZE references a list, LIST_PROBES probed a query.
LIST_SIZE, LIST_PROBES = 512, 8
# Slack for float32 rounding in the bound (products of unit vectors, D <= a few thousand).
_EPS = 1e-4


class RetrievalError(LeakcheckError):
    """A retrieval backend that is not installed or not known."""


def as_float32(rows: np.ndarray) -> np.ndarray:
    return rows.astype(np.float32)


Rows = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Sides:
    """The rows searched, queries against references, as stored; and how each side's stored rows
    map to the float32 vectors compared (e.g. uint8 thumbnails, normalised and turned), applied a
    block at a time: the references need never exist as a float32 copy (a million 256-value rows
    would be a gigabyte)."""

    queries: np.ndarray
    refs: np.ndarray
    query_rows: Rows = as_float32
    ref_rows: Rows = as_float32


@dataclass(frozen=True)
class Basis:
    """An orthonormal basis, leading directions first, how many count as "low", and the map
    from stored rows to the float32 vectors compared (applied block by block)."""

    vectors: np.ndarray  # (D, D) float32, columns orthonormal
    low: int
    rows: Rows = field(default=as_float32)

    @classmethod
    def fit(cls, refs: np.ndarray, rows: Rows = as_float32) -> Basis:
        rng = np.random.default_rng(0)
        pick = refs if len(refs) <= _SAMPLE else refs[np.sort(rng.choice(len(refs), _SAMPLE, replace=False))]
        x = rows(pick).astype(np.float64)
        _, vectors = np.linalg.eigh(x.T @ x)
        d = x.shape[1]
        return cls(np.ascontiguousarray(vectors[:, ::-1], dtype=np.float32), max(1, d // 4), rows)

    def split(self, raw: np.ndarray, rows: Rows | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Rows as compared (float32), and their bound coordinates: the leading ones, then the
        norm of the rest.  The product of two rows' bound coordinates is the bound itself, so
        one matmul computes it (no elementwise pass over the block)."""
        x = (rows or self.rows)(raw)
        coef = x @ self.vectors
        out = np.empty((len(x), self.low + 1), dtype=np.float32)
        out[:, : self.low] = coef[:, : self.low]
        out[:, self.low] = np.sqrt(np.maximum(0.0, np.einsum("ij,ij->i", coef[:, self.low :], coef[:, self.low :])))
        return x, out


def _survivors(
    bound: np.ndarray, floor: np.ndarray | float, limit: float = np.inf
) -> tuple[np.ndarray, np.ndarray] | None:
    """(row, column) where ``bound >= floor - _EPS``, or None past ``limit`` of them.

    Rows are screened by their maximum first: survivors are rare, and a full
    comparison plus nonzero would cost two more passes over the block."""
    floor = np.asarray(floor, dtype=np.float32) - _EPS
    rows = np.flatnonzero(bound.max(axis=1) >= floor)
    if not len(rows):
        return rows, rows
    mask = bound[rows] >= (floor[rows, None] if floor.ndim else floor)
    if mask.sum() > limit:
        return None
    ia, ib = np.nonzero(mask)
    return rows[ia], ib


def _blocks(n: int, size: int) -> Iterator[tuple[int, int]]:
    for start in range(0, n, size):
        yield start, min(n, start + size)


def _faiss():  # type: ignore[no-untyped-def]
    """The FAISS backend module; only this backend imports faiss."""
    try:
        from . import faissindex
    except ImportError as exc:
        raise RetrievalError(
            "the faiss retrieval backend needs faiss", fix="pip install 'pytest-leakcheck[faiss]'"
        ) from exc
    return faissindex


def _coordinates(sides: Sides) -> tuple[np.ndarray, np.ndarray]:
    """Both sides' bound coordinates, computed block by block (never a float32 copy of all rows)."""
    basis = Basis.fit(sides.refs, sides.ref_rows)

    def coords(x: np.ndarray, rows: Rows) -> np.ndarray:
        out = np.empty((len(x), basis.low + 1), dtype=np.float32)
        for r0, r1 in _blocks(len(x), _REFS):
            out[r0:r1] = basis.split(x[r0:r1], rows)[1]
        return out

    return coords(sides.queries, sides.query_rows), coords(sides.refs, sides.ref_rows)


def _check(queries: np.ndarray, refs: np.ndarray, backend: str) -> None:
    if backend not in BACKENDS:
        raise RetrievalError(f"retrieval backend {backend!r} is not known", fix=f"use one of {', '.join(BACKENDS)}")
    if queries.ndim != 2 or refs.ndim != 2 or queries.shape[1] != refs.shape[1]:
        raise RetrievalError(
            f"descriptors must be (N, D) arrays of one D, got {queries.shape} and {refs.shape}",
            fix="pass one row per image",
        )


def within(
    sides: Sides, min_cosine: float, *, same: bool = False, backend: str = "exact", nprobe: int = 16,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every (a, b) with ``queries[a] @ refs[b] >= min_cosine``, sorted, and its float32 score
    (both sides' rows as compared: :class:`Sides`)."""
    queries, refs, query_rows, ref_rows = sides.queries, sides.refs, sides.query_rows, sides.ref_rows
    _check(queries, refs, backend)
    if not len(queries) or not len(refs):
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32)
    if backend == "faiss":
        faissindex = _faiss()

        q_coords, r_coords = _coordinates(sides)
        a, b = faissindex.range_candidates(q_coords, r_coords, min_cosine, nprobe)
        return _exact_filter(sides, a, b, min_cosine, same)
    if backend == "lists":
        return _within_lists(sides, min_cosine, same)
    basis = Basis.fit(refs, ref_rows)
    q32, q_bound = basis.split(queries, query_rows)
    found: list[tuple[np.ndarray, ...]] = []
    for b0, b1 in _blocks(len(refs), _REFS):
        r32, r_bound = basis.split(refs[b0:b1])
        for a0, a1 in _blocks(len(queries), _QUERIES):
            if same and a0 >= b1:
                break
            ia, ib = _survivors(q_bound[a0:a1] @ r_bound.T, min_cosine)  # type: ignore[misc]
            if same:
                keep = ia + a0 < ib + b0
                ia, ib = ia[keep], ib[keep]
            score = np.einsum("ij,ij->i", q32[a0:a1][ia], r32[ib])
            keep = score >= min_cosine
            found.append((ia[keep] + a0, ib[keep] + b0, score[keep]))
    return _sorted(found)


@dataclass(frozen=True)
class _ListIndex:
    """The references' basis, bound coordinates and lists (``lists.py``)."""

    basis: Basis
    bound: np.ndarray  # (N, low + 1)
    cent: np.ndarray
    order: np.ndarray
    bounds: np.ndarray


#: The last references indexed, and their index: the orientations of one search
#: (``kernels.oriented_within``) ask about the same references eight times.
_LAST: list[tuple[np.ndarray, Rows, _ListIndex]] = []


def forget() -> None:
    """Drop the last references' index (``_LAST``): 100 MB at 200,000 thumbnails."""
    _LAST.clear()


def _lead(basis: Basis, bound: np.ndarray) -> np.ndarray:
    x = bound[:, :basis.low]
    return x / (np.linalg.norm(x, axis=1, keepdims=True) + 1e-6)


def _list_index(refs: np.ndarray, ref_rows: Rows) -> _ListIndex:
    from . import lists

    if _LAST and _LAST[0][0] is refs and _LAST[0][1] is ref_rows:
        return _LAST[0][2]
    basis = Basis.fit(refs, ref_rows)
    bound = np.empty((len(refs), basis.low + 1), np.float32)
    for r0, r1 in _blocks(len(refs), _REFS):
        bound[r0:r1] = basis.split(refs[r0:r1], ref_rows)[1]
    step = max(1, len(refs) // (8 * _SAMPLE))  # k-means on up to 65,536 rows
    cent = lists.fit(_lead(basis, bound[::step]), max(1, len(refs) // LIST_SIZE))
    order, bounds = lists.members(lists.assign(_lead(basis, bound), cent), len(cent))
    index = _ListIndex(basis, bound, cent, order, bounds)
    _LAST[:] = [(refs, ref_rows, index)]
    return index


def _within_lists(sides: Sides, min_cosine: float, same: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``within`` through an inverted file (``lists.py``) over the leading coordinates: each query
    compared, with the same bound and exact product, only with the members of its LIST_PROBES
    nearest lists.  Every pair reported is one the exact search reports, with its score."""
    from . import lists

    queries, refs, query_rows, ref_rows = sides.queries, sides.refs, sides.query_rows, sides.ref_rows
    index = _list_index(refs, ref_rows)
    basis, ref_bound, cent, order, bounds = index.basis, index.bound, index.cent, index.order, index.bounds
    found: list[tuple[np.ndarray, ...]] = []
    for a0, a1 in _blocks(len(queries), _REFS):
        q32, q_bound = basis.split(queries[a0:a1], query_rows)
        probed = lists.probes(_lead(basis, q_bound), cent, LIST_PROBES)
        qv = np.repeat(np.arange(a1 - a0), probed.shape[1])
        by_list = np.argsort(probed.ravel(), kind="stable")
        starts = np.searchsorted(probed.ravel()[by_list], np.arange(len(cent) + 1))
        for c in np.flatnonzero(starts[1:] > starts[:-1]):
            rows = order[bounds[c]:bounds[c + 1]]
            asking = qv[by_list[starts[c]:starts[c + 1]]]
            if not len(rows):
                continue
            ia, ib = _survivors(q_bound[asking] @ ref_bound[rows].T, min_cosine)  # type: ignore[misc]
            a, b = asking[ia] + a0, rows[ib]
            if same:  # as the exact search: the query is the lower row (a turned query meets b)
                keep = a < b
                a, b, ia = a[keep], b[keep], ia[keep]
            score = np.einsum("ij,ij->i", q32[asking[ia]], ref_rows(refs[b]))
            keep = score >= min_cosine
            found.append((a[keep], b[keep], score[keep]))
    return _sorted(found)  # a reference lies in one list: no pair is met twice


def _exact_filter(
    sides: Sides, a: np.ndarray, b: np.ndarray, min_cosine: float, same: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Re-rank candidates with the float32 product of the rows as compared."""
    queries, refs, query_rows, ref_rows = sides.queries, sides.refs, sides.query_rows, sides.ref_rows
    if same:
        a, b = a[a < b], b[a < b]
    found = []
    for s0, s1 in _blocks(len(a), 1 << 20):
        score = np.einsum("ij,ij->i", query_rows(queries[a[s0:s1]]), ref_rows(refs[b[s0:s1]]))
        keep = score >= min_cosine
        found.append((a[s0:s1][keep], b[s0:s1][keep], score[keep]))
    return _sorted(found)


def _sorted(found: list[tuple[np.ndarray, ...]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if not found:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32)
    a, b, s = (np.concatenate(x) for x in zip(*found))
    order = np.lexsort((b, a))
    return a[order].astype(np.int64), b[order].astype(np.int64), s[order].astype(np.float32)


def topk(
    queries: np.ndarray, refs: np.ndarray, k: int, *, backend: str = "exact", nprobe: int = 16
) -> tuple[np.ndarray, np.ndarray]:
    """Each query's ``k`` best references (index, float32 score), best first; -1 pads when Nb < k."""
    _check(queries, refs, backend)
    k_eff = min(k, len(refs))
    idx = np.full((len(queries), k), -1, dtype=np.int64)
    score = np.full((len(queries), k), -np.inf, dtype=np.float32)
    if not len(queries) or not k_eff:
        return idx, score
    if backend == "faiss":
        faissindex = _faiss()

        q_coords, r_coords = _coordinates(Sides(queries, refs))
        # Ranked by the leading coordinates alone (the rest's norm left out of the query):
        # the PCA estimate of the cosine orders candidates better than its upper bound.
        q_coords[:, -1] = 0.0
        cand = faissindex.knn_candidates(q_coords, r_coords, min(len(refs), 8 * k_eff), nprobe)
        best_i, best_s = _rerank(queries, refs, cand, k_eff)
    else:
        best_i, best_s = _exact_topk(queries, refs, k_eff)
    idx[:, :k_eff], score[:, :k_eff] = best_i, best_s
    return idx, score


def _rerank(queries: np.ndarray, refs: np.ndarray, cand: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact float32 scores of each query's candidates (-1: none), the best ``k`` kept."""
    out_i = np.full((len(queries), k), -1, dtype=np.int64)
    out_s = np.full((len(queries), k), -np.inf, dtype=np.float32)
    for a0, a1 in _blocks(len(queries), _QUERIES):
        c = cand[a0:a1]
        q = queries[a0:a1].astype(np.float32)
        s = np.einsum("id,ijd->ij", q, refs[np.maximum(c, 0)].astype(np.float32))
        s[c < 0] = -np.inf
        out_i[a0:a1], out_s[a0:a1] = _best(c, s, k)
    return out_i, out_s


def _best(idx: np.ndarray, score: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the ``k`` highest scores, best first, ties to the lower index."""
    order = np.lexsort((idx, -score), axis=-1)[:, :k] if idx.shape[1] else idx[:, :0]
    return np.take_along_axis(idx, order, 1), np.take_along_axis(score, order, 1)


def _exact_topk(queries: np.ndarray, refs: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Blocked top-k: a reference block's bound prunes it against each query's current k-th score."""
    basis = Basis.fit(refs)
    q32, q_bound = basis.split(queries)
    best_i = np.full((len(queries), k), -1, dtype=np.int64)
    best_s = np.full((len(queries), k), -np.inf, dtype=np.float32)
    for b0, b1 in _blocks(len(refs), _REFS):
        r32, r_bound = basis.split(refs[b0:b1])
        for a0, a1 in _blocks(len(queries), _QUERIES):
            kth = best_s[a0:a1, -1]
            live = _survivors(q_bound[a0:a1] @ r_bound.T, kth, 0.05 * (a1 - a0) * (b1 - b0))
            if live is None:
                # Many survivors (the first blocks, before the k-th scores rise): one full product.
                ia, ib, s = _block_best(q32[a0:a1] @ r32.T, kth, k)
            else:
                ia, ib = live
                s = np.einsum("ij,ij->i", q32[a0:a1][ia], r32[ib])
                # Later blocks hold higher indices: an equal score loses the tie, so strictly greater.
                better = s > kth[ia]
                ia, ib, s = ia[better], ib[better], s[better]
            if len(ia):
                _merge(best_i, best_s, ia + a0, ib + b0, s)
    return best_i, best_s


def _block_best(s: np.ndarray, kth: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Entries of a full score block that can enter the running top-k: the block's own k best
    per row (every tie at the k-th kept) that beat the row's current k-th score."""
    floor = -np.partition(-s, k - 1, axis=1)[:, k - 1] if s.shape[1] >= k else np.full(len(s), -np.inf)
    ia, ib = np.nonzero((s >= floor[:, None]) & (s > kth[:, None]))
    return ia, ib, s[ia, ib]


def _merge(best_i: np.ndarray, best_s: np.ndarray, rows: np.ndarray, idx: np.ndarray, score: np.ndarray) -> None:
    """Fold new (row, index, score) candidates into the running top-k, in place."""
    k = best_i.shape[1]
    changed = np.unique(rows)
    r = np.concatenate([np.repeat(changed, k), rows])
    i = np.concatenate([best_i[changed].ravel(), idx])
    s = np.concatenate([best_s[changed].ravel(), score])
    order = np.lexsort((i, -s, r))
    r, i, s = r[order], i[order], s[order]
    first = np.searchsorted(r, changed)
    rank = np.arange(len(r)) - np.repeat(first, np.diff(np.append(first, len(r))))
    keep = rank < k
    best_i[r[keep], rank[keep]] = i[keep]
    best_s[r[keep], rank[keep]] = s[keep]
