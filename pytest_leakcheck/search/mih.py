"""Multi-index hashing: exact Hamming range search without comparing every pair.

Each hash is cut into chunks (3 to 16 per 64-bit word, at most 24 bits each).
If two hashes are within distance ``d``, their chunk distances add up to at
most ``d``; so for any radii with ``sum(r_i + 1) > d`` at least one chunk is
within its ``r_i`` (pigeonhole).  The index sorts one side's rows by each
probed chunk (a direct-address table of bucket starts, one per chunk); every
row of the other side looks up the buckets of all keys within ``r_i`` of its
own chunk, and each candidate found is verified with the exact popcount over
the whole hash.  Nothing is approximate: the pairs, their distances and the
best orientation are those of the brute force (``kernels.hamming_pairs``
compares them in its tests, and dispatches here only when :func:`choose`
estimates the index is cheaper).

Real perceptual hashes are not uniform (many near-identical keys, a few huge
buckets), so the work is done in steps of bounded size: a block of probe rows
whose lookups would produce more candidates than comparing the block with
every indexed row is handed to the brute force instead, and a huge bucket is
expanded in slices.  Neither time nor memory can then exceed the brute
force's by more than the lookups themselves.  numpy only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations

import numpy as np

# (row, neighbouring key) lookups per step, and candidates expanded per step:
# each bounds a handful of int64 temporaries to tens of MB.
_LOOKUPS = 1 << 21
_CANDIDATES = 1 << 22
# Direct-address tables of at most 2**24 bucket starts (64 MB as int32).
_MAX_WIDTH = 24
# No chunk neighbourhood with more keys than this is planned.
_MAX_PROBES = 1 << 14
# Work per unit, relative to one brute-force pair (per word and orientation),
# measured on numpy 2.x with benchmarks/scale.py.  Only the ratios matter.
_LOOKUP = 24.0
_CANDIDATE = 32.0
_BUILD = 48.0  # per indexed row and chunk: the argsort
_TABLE = 8.0  # per table entry: bincount and cumsum
_STEP = 2e5  # Python overhead of one step
_SMALL = 4e6  # below this brute-force cost the index never wins (measured: 2,000 x 2,000 at d = 8)

Hits = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
Brute = Callable[[np.ndarray, np.ndarray, int], Hits]


@dataclass(frozen=True)
class Chunk:
    word: int
    shift: int
    width: int
    radius: int


@dataclass(frozen=True)
class Plan:
    """How to index one search, and what it is expected to cost against brute force."""

    chunks: tuple[Chunk, ...]  # the probed chunks only
    index_queries: bool  # index the query side (Na*K rows) and probe with the references
    cost: float
    brute_cost: float

    @property
    def faster(self) -> bool:
        return self.cost < self.brute_cost


@dataclass(frozen=True)
class Stats:
    """What one indexed search did (the tests read it; nothing else needs to)."""

    plan: Plan
    indexed_blocks: int
    brute_blocks: int
    largest_step: int  # most candidates expanded at once


def _radii(widths: list[int], max_distance: int) -> list[int]:
    """A probe radius per chunk (-1: not probed) with sum(r + 1) == max_distance + 1.

    Widest chunks first: their buckets are the smallest."""
    order = sorted(range(len(widths)), key=lambda i: -widths[i])
    total, m = max_distance + 1, len(widths)
    radii = [-1] * m
    if total <= m:
        for i in order[:total]:
            radii[i] = 0
        return radii
    base, extra = divmod(total, m)
    for rank, i in enumerate(order):
        radii[i] = base - 1 + (rank < extra)
    return radii


def _neighbours(width: int, radius: int) -> int:
    return sum(math.comb(width, j) for j in range(radius + 1))


def _layout(words: int, per_word: int, max_distance: int) -> tuple[Chunk, ...]:
    base, extra = divmod(64, per_word)
    widths = [base + (i < extra) for i in range(per_word)]
    shifts = [sum(widths[:i]) for i in range(per_word)]
    radii = _radii(widths * words, max_distance)
    return tuple(
        Chunk(w, shifts[i], widths[i], radii[w * per_word + i])
        for w in range(words) for i in range(per_word) if radii[w * per_word + i] >= 0
    )


def _cost(chunks: tuple[Chunk, ...], probe_rows: int, indexed_rows: int, words: int) -> float:
    """Estimated work, counting candidates as if keys were uniform (skewed blocks fall back, see search)."""
    cost = _STEP * (1 + len(chunks))
    for c in chunks:
        probes = _neighbours(c.width, c.radius)
        # Verifying a candidate gathers and compares every word of both rows.
        cost += probe_rows * probes * (_LOOKUP + _CANDIDATE * words * indexed_rows / 2**c.width)
        cost += indexed_rows * _BUILD + 2**c.width * _TABLE
    return cost


def choose(na: int, k_count: int, nb: int, words: int, max_distance: int) -> Plan:
    """The cheapest index layout and direction for (Na, K) queries against Nb references."""
    brute = float(na) * k_count * nb * words + _STEP
    best = Plan((), False, math.inf, brute)
    if brute < _SMALL:  # so little brute force that planning would cost as much
        return best
    for per_word in range(3, 17):
        chunks = _layout(words, per_word, max_distance)
        if max(c.width for c in chunks) > _MAX_WIDTH or any(
            _neighbours(c.width, c.radius) > _MAX_PROBES for c in chunks
        ):
            continue
        for index_queries, probe_rows, indexed_rows in ((False, na * k_count, nb), (True, nb, na * k_count)):
            cost = _cost(chunks, probe_rows, indexed_rows, words)
            if cost < best.cost:
                best = Plan(chunks, index_queries, cost, brute)
    return best


@lru_cache(maxsize=64)
def _masks(width: int, radius: int) -> np.ndarray:
    """Every ``width``-bit value with at most ``radius`` bits set: XOR them onto a key for its neighbours."""
    out = [0]
    for r in range(1, radius + 1):
        out += [sum(1 << b for b in bits) for bits in combinations(range(width), r)]
    return np.array(out, dtype=np.int64)


def _chunk_keys(keys: np.ndarray, chunk: Chunk) -> np.ndarray:
    mask = np.uint64((1 << chunk.width) - 1)
    return ((keys[:, chunk.word] >> np.uint64(chunk.shift)) & mask).astype(np.int64)


@dataclass(frozen=True)
class _Table:
    chunk: Chunk
    starts: np.ndarray  # (2**width + 1,) where each key's bucket starts in ``order``
    order: np.ndarray  # indexed rows sorted by key


def _build(keys: np.ndarray, chunk: Chunk) -> _Table:
    k = _chunk_keys(keys, chunk)
    dtype = np.int32 if len(keys) < 2**31 else np.int64
    starts = np.zeros(2**chunk.width + 1, dtype=dtype)
    np.cumsum(np.bincount(k, minlength=2**chunk.width), out=starts[1:])
    # Order within a bucket does not matter (hits are sorted at the end): no stable sort needed.
    return _Table(chunk, starts, np.argsort(k).astype(dtype))


def _lookup(table: _Table, block: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Non-empty buckets near each block row's key: (block row, bucket start, bucket size)."""
    masks = _masks(table.chunk.width, table.chunk.radius)
    near = _chunk_keys(block, table.chunk)[:, None] ^ masks[None, :]
    start = table.starts[near].ravel()
    size = table.starts[1:][near].ravel() - start
    hit = np.flatnonzero(size)
    return hit // len(masks), start[hit].astype(np.int64), size[hit].astype(np.int64)


def _steps(rows: np.ndarray, start: np.ndarray, size: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(probe row, position in ``order``) of every candidate, at most ~2 * _CANDIDATES at a time.

    A bucket larger than a step is cut into slices first, so one skewed key
    cannot make a step unbounded."""
    if size.max() > _CANDIDATES:
        parts = (size + _CANDIDATES - 1) // _CANDIDATES
        owner = np.repeat(np.arange(len(size)), parts)
        nth = np.arange(len(owner)) - np.repeat(np.cumsum(parts) - parts, parts)
        rows, start = rows[owner], start[owner] + nth * _CANDIDATES
        size = np.minimum(size[owner] - nth * _CANDIDATES, _CANDIDATES)
    before = np.cumsum(size) - size
    group = before // _CANDIDATES
    cuts = [0, *(np.flatnonzero(np.diff(group)) + 1).tolist(), len(size)]
    for g0, g1 in zip(cuts[:-1], cuts[1:]):
        sz = size[g0:g1]
        offset = np.repeat(start[g0:g1] - (before[g0:g1] - before[g0]), sz)
        yield np.repeat(rows[g0:g1], sz), offset + np.arange(len(offset))


def _distance(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    d = np.bitwise_count(x[:, 0] ^ y[:, 0])
    if x.shape[1] > 1:
        d = d.astype(np.uint16)
        for w in range(1, x.shape[1]):
            d += np.bitwise_count(x[:, w] ^ y[:, w])
    return d


def _finish(qa: np.ndarray, qb: np.ndarray, a: np.ndarray, b: np.ndarray) -> Hits:
    """Unique (a, b) pairs, sorted, with brute force's distance and first best orientation."""
    key = np.unique(a * len(qb) + b)
    a, b = key // len(qb), key % len(qb)
    per_k = np.stack([_distance(qa[a, k], qb[b]) for k in range(qa.shape[1])])
    return a, b, per_k.min(axis=0), per_k.argmin(axis=0)


@dataclass(frozen=True)
class Ask:
    """What a search asks for: pairs within ``max_distance`` (only a < b when ``same``: both sides are
    the same rows), and with ``reach`` (>= ``max_distance``) the candidates within ``reach`` too."""

    max_distance: int
    same: bool = False
    reach: int | None = None


def search(qa: np.ndarray, qb: np.ndarray, ask: Ask, brute: Brute, *, plan: Plan | None = None) -> tuple[Hits, Stats]:
    """``kernels.hamming_pairs`` through the index, sorted by (a, b); ``brute(qa, qb, d)`` searches skewed blocks.

    ``qa`` is (Na, K, W) uint64, ``qb`` (Nb, W) uint64.  With ``ask.reach``, candidates within it
    are kept too: every pair within ``ask.max_distance`` and, beyond it, only those the index
    happened to meet (free to verify, and enough for the phash detector's near misses on large data)."""
    na, k_count, words = qa.shape
    max_distance, same = ask.max_distance, ask.same
    reach = max_distance if ask.reach is None else max(ask.reach, max_distance)
    wide = Ask(reach, same)
    plan = plan or choose(na, k_count, len(qb), words, max_distance)
    if not plan.chunks:  # no layout prunes (or the search is tiny): all brute force
        return _merge([_brute_block(qa, qb, brute, wide, False, slice(0, na))]), Stats(plan, 0, 1, 0)
    flat = qa.reshape(na * k_count, words)
    indexed, probing = (flat, qb) if plan.index_queries else (qb, flat)
    tables = [_build(indexed, c) for c in plan.chunks]
    # A block holds all orientations of its query rows, so a brute-force block is complete.
    unit = 1 if plan.index_queries else k_count
    widest = max(len(_masks(c.width, c.radius)) for c in plan.chunks)
    step = max(unit, _LOOKUPS // widest // unit * unit)
    found: list[tuple[np.ndarray, np.ndarray]] = []
    done: list[Hits] = []
    indexed_blocks = brute_blocks = largest = 0
    for p0 in range(0, len(probing), step):
        p1 = min(len(probing), p0 + step)
        looked = [_lookup(t, probing[p0:p1]) for t in tables]
        # More candidates than the block has pairs with the index, in cost units: a skewed block.
        if _CANDIDATE * sum(int(s.sum()) for _, _, s in looked) > (p1 - p0) * len(indexed):
            brute_blocks += 1
            done.append(_brute_block(qa, qb, brute, wide, plan.index_queries, slice(p0 // unit, p1 // unit)))
            continue
        indexed_blocks += 1
        for table, (rows, start, size) in zip(tables, looked):
            if not len(rows):
                continue
            for p, pos in _steps(rows + p0, start, size):
                largest = max(largest, len(p))
                q = table.order[pos]
                keep = _distance(probing[p], indexed[q]) <= reach
                a, b = (q[keep] // k_count, p[keep]) if plan.index_queries else (p[keep] // k_count, q[keep])
                found.append((a[a < b], b[a < b]) if same else (a, b))
    if found:
        done.append(_finish(qa, qb, *(np.concatenate(parts).astype(np.int64) for parts in zip(*found))))
    return _merge(done), Stats(plan, indexed_blocks, brute_blocks, largest)


def _brute_block(qa: np.ndarray, qb: np.ndarray, brute: Brute, ask: Ask, index_queries: bool, block: slice) -> Hits:
    """Brute force within ``ask.max_distance`` for one block of probe rows: query rows, or reference rows."""
    if index_queries:
        a, b, d, k = brute(qa, qb[block], ask.max_distance)
        b = b + block.start
    else:
        a, b, d, k = brute(qa[block], qb, ask.max_distance)
        a = a + block.start
    keep = a < b if ask.same else slice(None)
    return a[keep], b[keep], d[keep], k[keep]


def _merge(parts: list[Hits]) -> Hits:
    parts = [p for p in parts if len(p[0])]
    if not parts:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty, empty
    a, b, d, k = (np.concatenate(x) for x in zip(*parts))
    order = np.lexsort((b, a))
    return a[order], b[order], d[order], k[order].astype(np.int64)
