"""Hamming matrices by faiss's kernel (``search/popcount.py``) are numpy's, integer for integer and dtype
for dtype, so a check finds the same pairs with or without the faiss extra."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pytest

from pytest_leakcheck.detectors.same_scene import features
from pytest_leakcheck.search import kernels, popcount

faiss = pytest.importorskip("faiss")


@pytest.fixture(autouse=True)
def asked(monkeypatch: pytest.MonkeyPatch):
    """faiss's kernel asked for (``LEAKCHECK_FAISS=1``), as the workflow's owner asks for it."""
    monkeypatch.setenv(popcount.ASK, "1")
    popcount._kernel.cache_clear()
    yield
    popcount._kernel.cache_clear()


def test_faiss_is_not_used_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """An optional engine is never imported because it is installed (tests/cli/test_lean.py)."""
    monkeypatch.delenv(popcount.ASK)
    popcount._kernel.cache_clear()
    assert popcount.matrix(np.zeros((2, 8), np.uint8), np.zeros((3, 8), np.uint8)) is None
    assert not popcount.available()


def _bits(rng: np.random.Generator, n: int, width: int) -> np.ndarray:
    """Codes with runs of equal and complementary rows: distances 0 and the full width come up."""
    x = rng.integers(0, 256, (n, width), dtype=np.uint8)
    x[1::7] = x[0]
    x[2::7] = ~x[0]
    return x


def _unpacked(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.unpackbits(a[:, None, :] ^ b[None, :, :], axis=2).sum(axis=2)


@pytest.mark.parametrize("width", [8, 32, 24])
def test_matrix_counts_every_bit(width: int) -> None:
    rng = np.random.default_rng(width)
    a = _bits(rng, 30, width)
    b = np.concatenate([a[:3], ~a[3:6], _bits(rng, 11, width)])
    d = popcount.matrix(a, b)
    assert d is not None and d.dtype == np.int32 and d.shape == (30, 17)
    assert np.array_equal(d, _unpacked(a, b)) and d.max() == 8 * width and d.min() == 0
    # Rows that are views with strides, as a column of a stack of orientations is, are copied first.
    stack = np.stack([a, a[::-1]], axis=1)
    assert np.array_equal(popcount.matrix(stack[:, 1], b), _unpacked(a[::-1], b))
    assert popcount.matrix(a[:0], b).shape == (0, 17)


def test_descriptor_distances_as_without_faiss(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(1)
    pairs = [(_bits(rng, int(rng.integers(1, 400)), 32), _bits(rng, int(rng.integers(1, 400)), 32))
             for _ in range(6)]
    fast = [features.hamming(a, b) for a, b in pairs]
    matched = [features.tentative(a, b) for a, b in pairs]
    monkeypatch.setattr(popcount, "_kernel", lru_cache(maxsize=1)(lambda: None))
    for (a, b), d, m in zip(pairs, fast, matched):
        plain = features.hamming(a, b)
        assert d.dtype == plain.dtype == np.int32 and np.array_equal(d, plain)
        assert all(np.array_equal(x, y) for x, y in zip(features.tentative(a, b), m))


@pytest.mark.parametrize("words", [1, 4])
def test_hash_search_as_without_faiss(words: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(words)
    qb = _bits(rng, 300, 8 * words).view(np.uint64)
    qa = np.stack([qb[::-1] ^ (rng.random((300, words)) < 0.02).astype(np.uint64) for _ in range(8)], axis=1)
    limit = 4 * words
    block = kernels._popcount_block(qa[:, 3], qb)
    fast = kernels.brute_hamming_pairs(qa, qb, limit)
    same = kernels.brute_hamming_pairs(qa, qb, limit, same=True)
    monkeypatch.setattr(popcount, "_kernel", lru_cache(maxsize=1)(lambda: None))
    plain = kernels._popcount_block(qa[:, 3], qb)
    assert block.dtype == plain.dtype == (np.uint8 if words == 1 else np.uint16)
    assert np.array_equal(block, plain)
    for got, want in ((fast, kernels.brute_hamming_pairs(qa, qb, limit)),
                      (same, kernels.brute_hamming_pairs(qa, qb, limit, same=True))):
        assert len(got[0]) > 0
        assert all(x.dtype == y.dtype and np.array_equal(x, y) for x, y in zip(got, want))
