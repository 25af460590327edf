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
