"""``same-scene``'s LSH word index: which rare words of ORB descriptors each image holds, and the search by them.

Split from ``features.py`` (keypoints and their verification): the index is the part
of the search whose memory grows with the dataset's keypoints, so it is built and
searched with only one matrix of a few bytes a keypoint held at a time.
``scipy.sparse`` is imported only inside the functions that compute.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

#: LSH words: TABLES random subsets of BITS descriptor bits each.
TABLES = 8
BITS = 20
#: Stop words: in more than this share of the photos (and more than STOP_MIN of them).
STOP, STOP_MIN = 0.1, 50
#: Reference sets smaller than this have every top candidate verified (see shared_words).
ALL_BELOW = 40
#: Images whose words are sorted at once (:func:`words`): every keypoint is TABLES keys of 8 bytes
#: while it is sorted, and sorting a whole dataset's at once held 1.8 GB at 12,887 MRI slices.
WORDS_BLOCK = 1024
#: Query rows of :func:`shared_words` scored at once (a dense row of scores per reference each).
QUERY_BLOCK = 512


@lru_cache(maxsize=2)
def _bit_tables(tables: int, bits: int) -> np.ndarray:
    """Which descriptor bits each LSH table reads: fixed (seeded), so words are stable across runs."""
    rng = np.random.default_rng(20260226)
    return np.stack([rng.choice(256, bits, replace=False) for _ in range(tables)])


@lru_cache(maxsize=2)
def _byte_luts(tables: int, bits: int) -> tuple[tuple[tuple[int, np.ndarray], ...], ...]:
    """Per table, (descriptor byte, 256-entry table of that byte's share of the word).

    A word is its table's bits in order, the first one most significant; looking
    each byte up once is ten times cheaper than unpacking every descriptor to bits.
    """
    values = np.arange(256, dtype=np.uint32)
    out = []
    for pick in _bit_tables(tables, bits):
        luts: dict[int, np.ndarray] = {}
        for k, bit in enumerate(pick):
            share = ((values >> int(7 - (bit & 7))) & 1) << np.uint32(bits - 1 - k)  # MSB first, as unpackbits
            luts[int(bit >> 3)] = luts.get(int(bit >> 3), np.zeros(256, np.uint32)) | share
        out.append(tuple((b, lut.astype(np.uint32)) for b, lut in luts.items()))
    return tuple(out)


def words(desc: np.ndarray, n: np.ndarray, tables: int = TABLES, bits: int = BITS):
    """(N, W) sparse 0/1 matrix: which LSH words each image's descriptors fall in.

    Two views of one scene share many keypoints whose descriptors differ in a
    few bits, so they share words in some table; unrelated descriptors differ
    in about half their bits and meet in a 20-bit word about once in a million.
    Columns are the words present in this data only (``np.unique``).
    """
    from scipy import sparse

    col, indptr, width = _columns(desc, n, tables, bits)
    return sparse.csr_matrix((np.ones(len(col), np.float32), col, indptr), shape=(len(n), width))


def rare_words(desc: np.ndarray, n: np.ndarray, tables: int = TABLES, bits: int = BITS):
    """:func:`words` with each word weighted by its rarity in this data, log(N / images holding it): an idf.

    ORB's bits are not independent, so some 20-bit words turn up in almost
    every photo (plain corners, edges); they weigh nearly nothing.  Words in more
    than STOP of the photos weigh almost nothing and make every product dense
    (each such word pairs all its photos): they are left out of the index, as
    are words every photo holds (weight 0).  Made from the word columns without
    the 0/1 matrix beside it (their two copies were 520 MB of the peak at 12,887
    MRI slices, ``tumor`` of benchmarks/field.py).
    """
    from scipy import sparse

    col, indptr, width = _columns(desc, n, tables, bits)
    df = np.bincount(col, minlength=width)
    idf = np.log(len(n) / np.maximum(df, 1)).astype(np.float32)
    idf[df > max(STOP_MIN, STOP * len(n))] = 0
    kept = int(df[idf != 0].sum())
    data, indices, counts = np.empty(kept, np.float32), np.empty(kept, np.int32), np.zeros(len(n), np.int64)
    at = 0
    for a in range(0, len(n), WORDS_BLOCK):  # a block's entries at a time: no mask of the whole index
        b = min(len(n), a + WORDS_BLOCK)
        c = col[indptr[a]:indptr[b]]
        w = idf[c]
        keep = w != 0
        counts[a:b] = np.bincount(np.repeat(np.arange(b - a), np.diff(indptr[a:b + 1]))[keep], minlength=b - a)
        m = int(keep.sum())
        data[at:at + m], indices[at:at + m] = w[keep], c[keep]
        at += m
    del col
    return sparse.csr_matrix((data, indices, np.concatenate([[0], np.cumsum(counts)])), shape=(len(n), width))


def _columns(desc: np.ndarray, n: np.ndarray, tables: int, bits: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Every image's distinct words as column numbers (int32, the images in order), the CSR row
    pointers, and the number of columns (the words present, numbered in order of their id)."""
    # Blocks of images in order give the CSR rows in order; they are written into one buffer
    # as large as the most words the images can hold, so the words are never held twice.
    word = np.empty(tables * int(np.sum(n)), np.uint32)
    counts = np.zeros(len(n), np.int64)
    at = 0
    for a in range(0, len(n), WORDS_BLOCK):
        w, counts[a:a + WORDS_BLOCK] = _block_words(desc[a:a + WORDS_BLOCK], n[a:a + WORDS_BLOCK], tables, bits)
        word[at:at + len(w)] = w
        at += len(w)
    word = word[:at]
    # A dense table of the 2**23 possible words numbers the ones present, with no second sort.
    column = np.zeros(tables << bits, np.int32)
    column[word] = 1
    width = int(column.sum())
    np.cumsum(column, out=column)
    column -= 1
    col = word.view(np.int32)  # each word replaced by its column, in place, a block at a time
    for a in range(0, len(word), 1 << 22):
        col[a:a + (1 << 22)] = column[word[a:a + (1 << 22)]]
    return col, np.concatenate([[0], np.cumsum(counts)]), width


def _block_words(desc: np.ndarray, n: np.ndarray, tables: int, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """Each image's distinct words in order (uint32, the images one after another), and how many each has."""
    live = np.arange(desc.shape[1])[None, :] < n[:, None]  # (N, F)
    img = np.broadcast_to(np.arange(len(n))[:, None], live.shape)[live]  # (K,)
    # Byte-major (32, K) and table-major (T, K): every lookup reads and ORs contiguous
    # rows instead of columns 32 bytes apart, half the time of the (K, 32) layout.
    d = np.ascontiguousarray(desc[live].T)
    key = np.empty((tables, d.shape[1]), np.uint32)
    share = np.empty(d.shape[1], np.uint32)
    for t, luts in enumerate(_byte_luts(tables, bits)):
        key[t] = t << bits  # one id space per table
        for byte, lut in luts:
            key[t] |= np.take(lut, d[byte], out=share)
    # One sort gives each image's distinct words in order (a word twice in one image, as
    # repeated windows make, counts once), already in CSR order.
    # (np.unique is ten times slower here than a sort of rows that are nearly in order.)
    pairs = np.sort(((img.astype(np.int64) << 32) | key).ravel())  # (T, K) sorts as (K, T) did
    pairs = pairs[np.r_[True, pairs[1:] != pairs[:-1]]] if len(pairs) else pairs
    return (pairs & 0xFFFFFFFF).astype(np.uint32), np.bincount(pairs >> 32, minlength=len(n))


def shared_words(rare: Any, q: np.ndarray, r: np.ndarray, k: int, z: float,
                 same: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each query row's top ``k`` reference rows by shared rare words, kept where they stand out.

    ``q`` and ``r`` are rows of ``rare`` (:func:`rare_words`): the queries' words count
    with their weight, the references' as present or not.  A candidate is
    kept when its score lies ``z`` standard deviations above the query's mean
    over the references: a re-shot shares far more rare words with its scene
    than with anything else, while a query whose best neighbours are merely
    the least unlike (every photo of a clean dataset) keeps none.  ``same``:
    queries and references are the same rows; the diagonal is dropped.
    Returns (query, reference, z-score), as positions in ``q`` and ``r``.
    """
    out_q, out_r, out_s = [], [], []
    wrt = _presence_t(rare, r)
    for start in range(0, len(q), QUERY_BLOCK):
        # The queries' rows are taken a block at a time, not all at once beside the references'.
        block = (rare[q[start:start + QUERY_BLOCK]] @ wrt).toarray()
        if same:
            idx = np.arange(block.shape[0])
            block[idx, idx + start] = np.nan
        kk = min(k, block.shape[1] - (1 if same else 0))
        if kk <= 0 or block.shape[1] < 3:
            break
        mean = np.nanmean(block, axis=1, keepdims=True)
        std = np.nanstd(block, axis=1, keepdims=True) + 1e-6
        score = np.nan_to_num((block - mean) / std, nan=-np.inf)
        top = np.argpartition(-score, kk - 1, axis=1)[:, :kk]
        vals = np.take_along_axis(score, top, axis=1)
        # Against a few references no score can stand z deviations out (one outlier among
        # n reaches (n - 1) / sqrt(n)): small sets verify every top candidate, cheaply.
        q_, which = np.nonzero(vals >= (z if block.shape[1] >= ALL_BELOW else -np.inf))
        out_q.append(q_ + start)
        out_r.append(top[q_, which])
        out_s.append(vals[q_, which])
    if not out_q:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    return np.concatenate(out_q), np.concatenate(out_r), np.concatenate(out_s)


def _presence_t(rare: Any, r: np.ndarray):
    """(W, len(r)) CSR: which of the rows ``r`` of ``rare`` hold each word (1.0), made once per search.

    The product's right operand, transposed once here and not per query block; from
    the rows' word columns alone, without their weights and a 0/1 copy beside them.
    """
    from scipy import sparse

    ptr = rare.indptr
    lengths = (ptr[r + 1] - ptr[r]).astype(np.int64)
    cols = np.concatenate([rare.indices[ptr[x]:ptr[x + 1]] for x in r]) if len(r) else np.zeros(0, np.int32)
    rows = sparse.csr_matrix((np.ones(len(cols), np.float32), cols, np.concatenate([[0], np.cumsum(lengths)])),
                             shape=(len(r), rare.shape[1]))
    return rows.T.tocsr()
