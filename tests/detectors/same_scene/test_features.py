"""same-scene's descriptor matching (``features.tentative``) against a plain reference, ties included."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_leakcheck.detectors.same_scene import features, index


def _reference(da: np.ndarray, db: np.ndarray) -> tuple[list[int], list[int]]:
    """Mutual nearest neighbours with the ratio test, spelt out: first index wins every tie."""
    bits_a, bits_b = np.unpackbits(da, axis=1).astype(int), np.unpackbits(db, axis=1).astype(int)
    d = [[int(np.sum(x != y)) for y in bits_b] for x in bits_a]
    if len(db) < 2:
        return [], []
    out_a, out_b = [], []
    for i, row in enumerate(d):
        nearest = row.index(min(row))
        first, second = sorted(row)[:2]
        column = [d[k][nearest] for k in range(len(d))]
        back = column.index(min(column))
        if first <= features.MAX_HAMMING and first < features.RATIO * second and back == i:
            out_a.append(i)
            out_b.append(nearest)
    return out_a, out_b


def _descriptors(rng: np.random.Generator, pool: np.ndarray, count: int) -> np.ndarray:
    """Rows drawn from a few base descriptors with a few bits flipped: equal distances galore."""
    rows = pool[rng.integers(0, len(pool), count)]
    flips = np.packbits(rng.random((count, 256)) < rng.choice([0.0, 0.01, 0.05, 0.3]), axis=1)
    return np.ascontiguousarray(rows ^ flips)


@pytest.mark.parametrize("seed", range(4))
def test_tentative_matches_the_reference_with_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    tied = 0
    for _ in range(60):
        pool = rng.integers(0, 256, (int(rng.integers(1, 6)), 32), dtype=np.uint8)
        pool = np.concatenate([pool, ~pool])  # complements: distance 256, every bit apart
        da = _descriptors(rng, pool, int(rng.integers(1, 40)))
        db = _descriptors(rng, pool, int(rng.integers(1, 40)))
        ia, ib = features.tentative(da, db)
        want_a, want_b = _reference(da, db)
        assert (ia.tolist(), ib.tolist()) == (want_a, want_b)
        assert ia.dtype == ib.dtype == np.int64
        d = features.hamming(da, db)
        # Column ties decide which row is the mutual match (a tie for a row's nearest fails the
        # ratio test whichever column wins it): the draws must put many before the tie-breaking.
        tied += int(np.any(np.sum(d == d.min(axis=0, keepdims=True), axis=0) > 1))
    assert tied > 10


def test_hamming_counts_every_bit_up_to_256() -> None:
    rng = np.random.default_rng(7)
    da = rng.integers(0, 256, (5, 32), dtype=np.uint8)
    db = np.concatenate([da, ~da])
    want = np.unpackbits(da[:, None, :] ^ db[None, :, :], axis=2).sum(axis=2)
    d = features.hamming(da, db)
    assert d.dtype == np.int32 and np.array_equal(d, want) and d.max() == 256


def _brute_words(desc: np.ndarray, n: np.ndarray) -> set[tuple[int, int]]:
    """(image, word) of every live descriptor, bit by bit from ``_bit_tables``: what the index must hold."""
    out = set()
    for img in range(len(n)):
        bits = np.unpackbits(desc[img, :n[img]], axis=1)  # (k, 256), most significant bit first
        for t, pick in enumerate(index._bit_tables(index.TABLES, index.BITS)):
            for row in bits[:, pick]:
                out.add((img, (t << index.BITS) | int("".join(map(str, row)), 2)))
    return out


def test_words_are_made_in_bounded_blocks_as_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The LSH word index is built WORDS_BLOCK images at a time (sorting a whole dataset's keys at
    once held 1.8 GB at 12,887 MRI slices): the same matrix, whatever the block, as the words by hand."""
    rng = np.random.default_rng(3)
    desc = rng.integers(0, 256, (11, 40, 32), dtype=np.uint8)
    desc[6] = desc[2]  # another image with the same descriptors: the same words
    desc[4, 1:] = desc[4, 0]  # a descriptor repeated: one word each table
    n = np.array([40, 0, 30, 40, 12, 40, 30, 1, 0, 40, 25])
    whole = index.words(desc, n)
    seen: list[int] = []
    real = getattr(index, "_block_words", None)

    def counted(d, *args):  # type: ignore[no-untyped-def]
        seen.append(len(d))
        return real(d, *args)

    monkeypatch.setattr(index, "_block_words", counted, raising=False)
    monkeypatch.setattr(index, "WORDS_BLOCK", 3, raising=False)
    blocked = index.words(desc, n)
    assert seen and max(seen) <= 3 and sum(seen) == len(n)
    assert blocked.shape == whole.shape and (blocked != whole).nnz == 0
    assert np.array_equal(blocked.indptr, whole.indptr) and np.array_equal(blocked.indices, whole.indices)
    # Columns number the words present in order of their id: rebuild each image's ids from them.
    ids = np.array(sorted({w for _, w in _brute_words(desc, n)}))
    got = {(int(r), int(ids[c])) for r in range(len(n)) for c in blocked.indices[blocked.indptr[r]:blocked.indptr[r + 1]]}
    assert got == _brute_words(desc, n) and blocked.shape[1] == len(ids)


def _alike(rng: np.random.Generator, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Descriptors of ``count`` images drawn from a few shared ones with a few bits flipped, one
    descriptor in every image and one in most: rare words, stop words and a word all hold."""
    pool = rng.integers(0, 256, (30, 32), dtype=np.uint8)
    desc = _descriptors(rng, pool, count * 24).reshape(count, 24, 32)
    desc[:, 0] = pool[0]  # in every image: weight 0
    desc[: count * 9 // 10, 1] = pool[1]  # in nine in ten: a stop word
    n = rng.integers(0, 25, count)
    n[:count * 9 // 10] = np.maximum(n[:count * 9 // 10], 2)
    return desc, n


def test_rare_words_are_the_weighted_words_made_in_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The weighted index is made without the 0/1 matrix beside it (520 MB of a check's peak at
    12,887 MRI slices), whatever the block: each word weighs log(N / images holding it), stop
    words and words every image holds are left out."""
    desc, n = _alike(np.random.default_rng(4), 70)
    plain = index.words(desc, n)
    df = np.bincount(plain.indices, minlength=plain.shape[1])
    idf = np.log(len(n) / np.maximum(df, 1)).astype(np.float32)
    idf[df > max(index.STOP_MIN, index.STOP * len(n))] = 0
    want = plain.copy()
    want.data = idf[plain.indices]
    want.eliminate_zeros()
    assert (df == len(n)).any() and (df > index.STOP_MIN).sum() > (df == len(n)).sum()  # both kinds left out
    monkeypatch.setattr(index, "WORDS_BLOCK", 4)
    got = index.rare_words(desc, n)
    assert got.shape == want.shape and 0 < got.nnz < plain.nnz
    for a in ("indptr", "indices", "data"):
        np.testing.assert_array_equal(getattr(got, a), getattr(want, a))
    assert got.data.dtype == np.float32


def _shared_words_at_once(wq, wr, k: int, z: float, same: bool = False):  # type: ignore[no-untyped-def]
    """The search as it was: every query row gathered, a 0/1 copy of the references, then scored
    512 queries at a time (the reference the blocked search must equal)."""
    out_q, out_r, out_s = [], [], []
    wrt = wr.T.tocsr()
    for start in range(0, wq.shape[0], 512):
        block = (wq[start:start + 512] @ wrt).toarray()
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
        q, which = np.nonzero(vals >= (z if block.shape[1] >= index.ALL_BELOW else -np.inf))
        out_q.append(q + start)
        out_r.append(top[q, which])
        out_s.append(vals[q, which])
    if not out_q:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    return np.concatenate(out_q), np.concatenate(out_r), np.concatenate(out_s)


@pytest.mark.parametrize("same", [False, True])
def test_shared_words_in_query_blocks_equal_the_search_at_once(monkeypatch: pytest.MonkeyPatch,
                                                              same: bool) -> None:
    """Query rows taken a block at a time and the references' presence made from their columns alone
    give the candidates and scores of the whole gathered queries and their 0/1 copy, across blocks."""
    desc, n = _alike(np.random.default_rng(8), 140)
    rare = index.rare_words(desc, n)
    rng = np.random.default_rng(9)
    rows = rng.permutation(len(n))
    q, r = (rows, rows) if same else (rows[:55], rows[55:])
    want = _shared_words_at_once(rare[q], (rare[r] > 0).astype(np.float32), 3, 1.5, same)
    presence = index._presence_t(rare, r)
    old = (rare[r] > 0).astype(np.float32).T.tocsr()
    for a in ("indptr", "indices", "data"):
        np.testing.assert_array_equal(getattr(presence, a), getattr(old, a))
    monkeypatch.setattr(index, "QUERY_BLOCK", 7)
    got = index.shared_words(rare, q, r, 3, 1.5, same)
    assert len(want[0]) > 10
    for x, y in zip(got, want):
        np.testing.assert_array_equal(x, y)


def _row(rng: np.random.Generator, count: int) -> bytes:
    """A stored keypoint row (features.extract's layout) of ``count`` random keypoints."""
    xy = rng.integers(0, 320 * features.SUB, (count, 2)).astype("<u2")
    desc = rng.integers(0, 256, (count, 32), dtype=np.uint8)
    return np.array([count, 320, 240], "<u2").tobytes() + xy.tobytes() + desc.tobytes()


def test_load_reads_the_store_in_blocks_as_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The keypoint rows come from the store LOAD_BLOCK at a time (all their bytes beside the parsed
    arrays were 171 MB at 12,887 MRI slices): the same features as parsing every row at once, a row
    the store lacks left out, copies of one content each in their place."""
    rng = np.random.default_rng(6)
    digests = [b"a", b"b", b"c", b"d", b"a", b"e", b"f"]
    stored = {d: (True, _row(rng, int(rng.integers(30, 60)))) for d in (b"a", b"b", b"d", b"e", b"f")}
    stored[b"e"] = (False, b"")
    asked: list[int] = []

    class Store:
        def get_signatures(self, wanted: list[bytes], family: str, params: str) -> dict:
            asked.append(len(wanted))
            return {d: stored[d] for d in wanted if d in stored}

    class Family:
        name, params = "scene", "p"

    rows = np.array([0, 1, 2, 3, 4, 5, 6])
    keep = [0, 1, 3, 4, 6]
    want = features.parse([stored[digests[r]][1] for r in keep], np.array(keep), 9)
    monkeypatch.setattr(features, "LOAD_BLOCK", 2, raising=False)
    got = features.load(Store(), Family(), digests, rows, 9)
    assert got is not None and max(asked) <= 2 and sum(asked) == len(rows)
    for a in ("local", "n", "wh", "xy", "desc"):
        np.testing.assert_array_equal(getattr(got, a), getattr(want, a))
    assert got.local.tolist() == [0, 1, -1, 2, 3, -1, 4, -1, -1] and got.n.min() >= 30
