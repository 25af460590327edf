"""The multi-index Hamming search returns exactly what brute force returns, on any data."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_leakcheck.search import kernels, mih
from pytest_leakcheck.search.kernels import brute_hamming_pairs, hamming_pairs

from .test_search import _flip_bits


def _planted(rng: np.random.Generator, na: int, nb: int, k: int, words: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """Random hashes with near copies planted at every distance 0..d+2 (the boundary both ways)."""
    qb = rng.integers(0, 2**64, (nb, words), dtype=np.uint64)
    qa = rng.integers(0, 2**64, (na, k, words), dtype=np.uint64)
    for a in range(0, na, 2):
        qa[a, a % k] = _flip_bits(rng, qb[(a * 7) % nb], a % (d + 3))
    return qa, qb


def _clustered(rng: np.random.Generator, centres: np.ndarray, n: int, k: int) -> np.ndarray:
    """Real pHashes are not uniform: a few centres with many near-identical members, a
    constant low chunk (one huge bucket) and exact duplicates."""
    words = centres.shape[1]
    out = np.stack([_flip_bits(rng, centres[rng.integers(0, 6)], int(rng.integers(0, 5))) for _ in range(n * k)])
    out[: n * k // 2, 0] &= ~np.uint64(0x3FFFFF)  # half the rows share their first 22-bit chunk
    out[::5] = out[0]
    return out.reshape(n, k, words)


def _forced(qa: np.ndarray, qb: np.ndarray, d: int, index_queries: bool) -> mih.Plan:
    """The planner's layout, in the direction asked, whatever the cost model would say."""
    best = None
    for per_word in range(3, 9):
        chunks = mih._layout(qa.shape[2], per_word, d)
        if max(c.width for c in chunks) <= mih._MAX_WIDTH and all(
            mih._neighbours(c.width, c.radius) <= mih._MAX_PROBES for c in chunks
        ):
            best = chunks
            break
    assert best is not None
    return mih.Plan(best, index_queries, 0.0, 1.0)


def _assert_identical(got: tuple[np.ndarray, ...], want: tuple[np.ndarray, ...]) -> None:
    for g, w, name in zip(got, want, ("a", "b", "distance", "orientation")):
        assert g.dtype == w.dtype, name
        np.testing.assert_array_equal(g, w, err_msg=name)


@pytest.mark.slow
@pytest.mark.parametrize("index_queries", [False, True])
@pytest.mark.parametrize("same", [False, True])
@pytest.mark.parametrize(("k", "words", "d"), [(1, 1, 0), (1, 1, 2), (3, 1, 8), (2, 1, 13), (1, 4, 3), (2, 4, 24)])
def test_index_equals_brute_force_on_random_hashes(
    monkeypatch: pytest.MonkeyPatch, k: int, words: int, d: int, same: bool, index_queries: bool
) -> None:
    """Pairs, distances, best orientation and order are brute force's: d = 0, d < m, d >= m,
    K > 1 orientations, 256-bit hashes, the upper triangle, both directions of the index."""
    monkeypatch.setattr(mih, "_CANDIDATE", 0.0)  # never fall back: the index alone answers
    rng = np.random.default_rng(d * 10 + k + words)
    qa, qb = _planted(rng, 300, 400, k, words, d)
    if same:
        for a in range(1, len(qa), 2):
            qa[a, 0] = _flip_bits(rng, qa[a - 1, 0], a % (d + 3))
        qb = qa[:, 0, :]
    want = brute_hamming_pairs(qa, qb, d, same=same)
    got, stats = mih.search(qa, qb, mih.Ask(d, same), brute_hamming_pairs, plan=_forced(qa, qb, d, index_queries))
    assert len(want[0]) >= 40
    assert stats.brute_blocks == 0
    _assert_identical(got, want)


@pytest.mark.slow
@pytest.mark.parametrize("index_queries", [False, True])
@pytest.mark.parametrize("same", [False, True])
@pytest.mark.parametrize("words", [1, 4])
def test_index_equals_brute_force_on_clustered_hashes(
    monkeypatch: pytest.MonkeyPatch, words: int, same: bool, index_queries: bool
) -> None:
    """Skewed buckets and duplicates, in steps small enough that big buckets are cut into slices."""
    monkeypatch.setattr(mih, "_CANDIDATES", 64)
    monkeypatch.setattr(mih, "_LOOKUPS", 512)
    monkeypatch.setattr(mih, "_CANDIDATE", 0.0)  # index every block, however skewed
    rng = np.random.default_rng(words)
    centres = rng.integers(0, 2**64, (6, words), dtype=np.uint64)
    qa = _clustered(rng, centres, 160, 2)
    qb = qa[:, 0, :] if same else _clustered(rng, centres, 180, 1)[:, 0, :]
    d = 6 * words
    want = brute_hamming_pairs(qa, qb, d, same=same)
    got, stats = mih.search(qa, qb, mih.Ask(d, same), brute_hamming_pairs, plan=_forced(qa, qb, d, index_queries))
    assert len(want[0]) > 1000
    assert 0 < stats.largest_step <= 2 * 64
    _assert_identical(got, want)


def test_a_skewed_block_falls_back_to_brute_force() -> None:
    """When every row sits in one bucket, the index would verify more candidates than brute force
    compares pairs: those blocks go to brute force, and the result is unchanged."""
    rng = np.random.default_rng(5)
    qb = np.full((3000, 1), 0xF0F0F0F0F0F0F0F0, dtype=np.uint64)
    qb[::3] = rng.integers(0, 2**64, (1000, 1), dtype=np.uint64)
    qa = _flip_bits(rng, qb[:500], 3)[:, None, :]
    got, stats = mih.search(qa, qb, mih.Ask(8), brute_hamming_pairs, plan=_forced(qa, qb, 8, False))
    assert stats.brute_blocks > 0
    _assert_identical(got, brute_hamming_pairs(qa, qb, 8))


def test_ties_between_orientations_resolve_to_the_first() -> None:
    rng = np.random.default_rng(2)
    qb = rng.integers(0, 2**64, (2000, 1), dtype=np.uint64)
    qa = np.repeat(_flip_bits(rng, qb[:400], 2)[:, None, :], 3, axis=1)  # three equal orientations
    qa[::2, 2] = qb[:400:2]  # the last orientation is an exact copy on even rows
    got, _ = mih.search(qa, qb, mih.Ask(4), brute_hamming_pairs, plan=_forced(qa, qb, 4, True))
    _assert_identical(got, brute_hamming_pairs(qa, qb, 4))
    assert set(got[3].tolist()) == {0, 2}


@pytest.mark.parametrize(("na", "nb"), [(0, 50), (50, 0), (0, 0)])
def test_empty_inputs(na: int, nb: int) -> None:
    qa = np.zeros((na, 2, 1), dtype=np.uint64)
    qb = np.zeros((nb, 1), dtype=np.uint64)
    indexed, _ = mih.search(qa, qb, mih.Ask(8), brute_hamming_pairs, plan=_forced(qa, qb, 8, False))
    for result in (hamming_pairs(qa, qb, 8), indexed):
        assert [len(x) for x in result] == [0, 0, 0, 0]


def test_hamming_pairs_chooses_the_index_for_large_searches_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Small searches stay brute force (cheaper); large ones go through the index, with the same result."""
    assert not mih.choose(40, 3, 50, 1, 8).faster
    assert not mih.choose(1000, 1, 1000, 1, 8).faster
    assert not mih.choose(50_000, 1, 50_000, 1, 32).faster  # the index cannot prune at d = bits / 2
    assert mih.choose(100_000, 1, 1_000_000, 1, 8).faster
    assert mih.choose(1_000_000, 2, 100_000, 4, 24).faster
    calls: list[mih.Stats] = []
    real = mih.search

    def spy(*args, **kwargs):  # calls through: the real index answers
        result = real(*args, **kwargs)
        calls.append(result[1])
        return result

    monkeypatch.setattr(mih, "search", spy)
    rng = np.random.default_rng(9)
    qa, qb = _planted(rng, 8000, 9000, 1, 1, 8)
    got = hamming_pairs(qa, qb, 8)
    assert len(calls) == 1 and calls[0].indexed_blocks > 0
    _assert_identical(got, brute_hamming_pairs(qa, qb, 8))
    hamming_pairs(qa[:40], qb[:50], 8)
    assert len(calls) == 1
    # Asked directly without a plan, a search no layout prunes is brute force, and still right.
    got, stats = real(qa[:300], qb[:400], mih.Ask(30), brute_hamming_pairs)
    assert stats.brute_blocks == 1 and not stats.plan.chunks
    _assert_identical(got, brute_hamming_pairs(qa[:300], qb[:400], 30))


@pytest.mark.parametrize("words", [1, 4])
def test_brute_force_order_does_not_depend_on_the_block_size(monkeypatch: pytest.MonkeyPatch, words: int) -> None:
    """Both engines sort by (a, b), so the automatic choice cannot reorder matches."""
    rng = np.random.default_rng(words)
    qa, qb = _planted(rng, 90, 120, 2, words, 4)
    whole = brute_hamming_pairs(qa, qb, 4)
    monkeypatch.setattr(kernels, "_BLOCK", 16)
    _assert_identical(brute_hamming_pairs(qa, qb, 4), whole)
    assert np.all(np.diff(whole[0] * 120 + whole[1]) > 0)


@pytest.mark.parametrize("d", range(0, 33))
def test_probe_radii_cover_every_split_of_the_distance(d: int) -> None:
    """Pigeonhole: probed chunks' (radius + 1) add up to d + 1, so a pair within d agrees within
    radius on some probed chunk."""
    for words in (1, 4):
        for per_word in (3, 4, 8, 16):
            chunks = mih._layout(words, per_word, d)
            assert sum(c.radius + 1 for c in chunks) == d + 1
            assert all(c.radius >= 0 for c in chunks)


@pytest.mark.parametrize("index_queries", [False, True])
@pytest.mark.parametrize("same", [False, True])
def test_a_reach_past_the_level_keeps_what_the_index_met(same: bool, index_queries: bool) -> None:
    """With ``reach``: every pair within the level exactly as brute force finds it, and beyond
    it only true pairs within the reach, with their true distances (the phash near misses)."""
    rng = np.random.default_rng(11)
    d, reach = 4, 9
    qa, qb = _planted(rng, 300, 400, 2, 1, reach)
    if same:
        for a in range(1, len(qa), 2):
            qa[a, 0] = _flip_bits(rng, qa[a - 1, 0], a % (reach + 3))
        qb = qa[:, 0, :]
    got, _ = mih.search(qa, qb, mih.Ask(d, same, reach), brute_hamming_pairs,
                        plan=_forced(qa, qb, d, index_queries))
    within = got[2] <= d
    _assert_identical(tuple(x[within] for x in got), brute_hamming_pairs(qa, qb, d, same=same))
    wide = {(int(a), int(b)): (int(x), int(k)) for a, b, x, k in zip(*brute_hamming_pairs(qa, qb, reach, same=same))}
    beyond = {(int(a), int(b)): (int(x), int(k)) for a, b, x, k in zip(*(x[~within] for x in got))}
    assert beyond and all(wide[p] == v for p, v in beyond.items())
    # The brute force answers a reach in full.
    _assert_identical(kernels.hamming_pairs(qa[:20], qb[:30], d, reach=reach, same=False),
                      brute_hamming_pairs(qa[:20], qb[:30], reach))
