"""same-scene's descriptor matching (``features.tentative``) against a plain reference, ties included."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_leakcheck.detectors.same_scene import features


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
        for t, pick in enumerate(features._bit_tables(features.TABLES, features.BITS)):
            for row in bits[:, pick]:
                out.add((img, (t << features.BITS) | int("".join(map(str, row)), 2)))
    return out


def test_words_are_made_in_bounded_blocks_as_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The LSH word index is built WORDS_BLOCK images at a time (sorting a whole dataset's keys at
    once held 1.8 GB at 12,887 MRI slices): the same matrix, whatever the block, as the words by hand."""
    rng = np.random.default_rng(3)
    desc = rng.integers(0, 256, (11, 40, 32), dtype=np.uint8)
    desc[6] = desc[2]  # another image with the same descriptors: the same words
    desc[4, 1:] = desc[4, 0]  # a descriptor repeated: one word each table
    n = np.array([40, 0, 30, 40, 12, 40, 30, 1, 0, 40, 25])
    whole = features.words(desc, n)
    seen: list[int] = []
    real = getattr(features, "_block_words", None)

    def counted(d, *args):  # type: ignore[no-untyped-def]
        seen.append(len(d))
        return real(d, *args)

    monkeypatch.setattr(features, "_block_words", counted, raising=False)
    monkeypatch.setattr(features, "WORDS_BLOCK", 3, raising=False)
    blocked = features.words(desc, n)
    assert seen and max(seen) <= 3 and sum(seen) == len(n)
    assert blocked.shape == whole.shape and (blocked != whole).nnz == 0
    assert np.array_equal(blocked.indptr, whole.indptr) and np.array_equal(blocked.indices, whole.indices)
    # Columns number the words present in order of their id: rebuild each image's ids from them.
    ids = np.array(sorted({w for _, w in _brute_words(desc, n)}))
    got = {(int(r), int(ids[c])) for r in range(len(n)) for c in blocked.indices[blocked.indptr[r]:blocked.indptr[r + 1]]}
    assert got == _brute_words(desc, n) and blocked.shape[1] == len(ids)
