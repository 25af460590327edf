"""Float retrieval: the exact backend is brute force's result; the FAISS backend re-ranks exactly."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import pytest_leakcheck
from pytest_leakcheck.search import retrieval
from pytest_leakcheck.search.kernels import normalised_thumbs
from pytest_leakcheck.search.retrieval import RetrievalError, Sides, topk, within


def _descriptors(rng: np.random.Generator, n: int, m: int, dtype: type) -> tuple[np.ndarray, np.ndarray]:
    """Smooth 16x16 "thumbnails" (energy in few directions, like real ones), with near copies of
    references planted in the queries at noise levels around the threshold, and exact duplicates."""
    side = 16
    f = np.sqrt(np.add.outer(np.arange(side) ** 2, np.arange(side) ** 2)) + 1.0
    raw = np.real(np.fft.ifft2(rng.standard_normal((n + m, side, side)) / f**1.5)).reshape(n + m, -1)
    refs, queries = raw[:n], raw[n:]
    for q in range(0, m, 2):
        queries[q] = refs[(q * 5) % n] + rng.normal(0, 0.002 * (q % 9), side * side)
    refs[1::7] = refs[0]  # many equal references: ties
    return normalised_thumbs(queries).astype(dtype), normalised_thumbs(refs).astype(dtype)


def _brute_within(q: np.ndarray, r: np.ndarray, t: float, same: bool) -> dict[tuple[int, int], float]:
    s = q.astype(np.float32) @ r.astype(np.float32).T
    if same:
        s[np.tril_indices(len(q), 0, len(r))] = -np.inf
    a, b = np.nonzero(s >= t)
    return {(int(x), int(y)): float(s[x, y]) for x, y in zip(a, b)}


def _brute_topk(q: np.ndarray, r: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    s = q.astype(np.float32) @ r.astype(np.float32).T
    order = np.lexsort((np.broadcast_to(np.arange(len(r)), s.shape), -s), axis=1)[:, :k]
    return order, np.take_along_axis(s, order, 1)


@pytest.fixture(params=[(1 << 13, 1 << 10), (37, 16)], ids=["one-block", "small-blocks"])
def blocks(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(retrieval, "_REFS", request.param[0])
    monkeypatch.setattr(retrieval, "_QUERIES", request.param[1])


@pytest.mark.slow
@pytest.mark.usefixtures("blocks")
@pytest.mark.parametrize("dtype", [np.float16, np.float32])
@pytest.mark.parametrize("same", [False, True])
def test_exact_within_equals_brute_force(dtype: type, same: bool) -> None:
    rng = np.random.default_rng(1)
    q, r = _descriptors(rng, 300, 120, dtype)
    if same:
        q = r
    a, b, s = within(Sides(q, r), 0.97, same=same)
    want = _brute_within(q, r, 0.97, same)
    assert len(want) >= 30
    assert list(zip(a.tolist(), b.tolist())) == sorted(want)
    np.testing.assert_allclose(s, [want[p] for p in sorted(want)], atol=1e-5)
    assert s.dtype == np.float32 and a.dtype == b.dtype == np.int64


@pytest.mark.slow
@pytest.mark.usefixtures("blocks")
@pytest.mark.parametrize("k", [1, 5, 40])
def test_exact_topk_equals_brute_force_up_to_ties(k: int) -> None:
    rng = np.random.default_rng(k)
    q, r = _descriptors(rng, 300, 90, np.float16)
    idx, score = topk(q, r, k)
    want_idx, want_score = _brute_topk(q, r, k)
    np.testing.assert_allclose(score, want_score, atol=1e-5)
    # Equal references score equal up to float rounding, which a blocked product may order
    # either way: where a score has no equal the index is brute force's; where it has, the index
    # is one of the equals.
    full = q.astype(np.float32) @ r.astype(np.float32).T
    rows = np.arange(len(q))[:, None]
    equals = (np.abs(full[:, None, :] - want_score[:, :, None]) <= 1e-5).sum(2)
    alone = equals == 1
    assert alone.mean() > 0.5  # the check below still decides most positions
    np.testing.assert_array_equal(idx[alone], want_idx[alone])
    assert (np.abs(full[rows, idx] - want_score) <= 1e-5).all()


@pytest.mark.slow
def test_topk_pads_when_there_are_fewer_references_than_k() -> None:
    rng = np.random.default_rng(3)
    q, r = _descriptors(rng, 4, 6, np.float32)
    idx, score = topk(q, r, 7)
    assert (idx[:, 4:] == -1).all() and np.isneginf(score[:, 4:]).all()
    np.testing.assert_array_equal(idx[:, :4], _brute_topk(q, r, 4)[0])


def test_empty_inputs() -> None:
    empty = np.zeros((0, 64), np.float32)
    full = np.eye(64, dtype=np.float32)
    assert all(len(x) == 0 for x in within(Sides(empty, full), 0.9))
    assert all(len(x) == 0 for x in within(Sides(full, empty), 0.9))
    assert topk(empty, full, 3)[0].shape == (0, 3)


@pytest.mark.slow
def test_faiss_within_scanning_every_cell_is_exact() -> None:
    """With nprobe >= the number of cells FAISS scans everything: only float rounding could differ."""
    rng = np.random.default_rng(4)
    q, r = _descriptors(rng, 400, 150, np.float16)
    a, b, s = within(Sides(q, r), 0.97, backend="faiss", nprobe=10_000)
    want = _brute_within(q, r, 0.97, False)
    assert len(want) >= 30
    assert list(zip(a.tolist(), b.tolist())) == sorted(want)
    np.testing.assert_allclose(s, [want[p] for p in sorted(want)], atol=1e-5)


@pytest.mark.slow
def test_faiss_topk_reranks_exactly() -> None:
    """Candidates come from the index; the scores returned are the exact float32 products."""
    rng = np.random.default_rng(5)
    q, r = _descriptors(rng, 2000, 100, np.float32)
    idx, score = topk(q, r, 5, backend="faiss", nprobe=8)
    want_idx, _ = _brute_topk(q, r, 5)
    exact = np.take_along_axis(q @ r.T, np.maximum(idx, 0), 1)
    np.testing.assert_allclose(score[idx >= 0], exact[idx >= 0], atol=1e-5)
    assert (np.diff(score, axis=1) <= 0).all()
    recall = np.mean([len(set(x) & set(y)) / 5 for x, y in zip(idx.tolist(), want_idx.tolist())])
    assert recall > 0.85  # measured 0.91 (approximate: cells not scanned are missed)
    assert (idx[::2, 0] == want_idx[::2, 0]).mean() > 0.85  # planted near copies come first


def test_unknown_backend_and_missing_faiss_name_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    x = np.eye(8, dtype=np.float32)
    with pytest.raises(RetrievalError, match="exact, faiss"):
        within(Sides(x, x), 0.9, backend="annoy")
    monkeypatch.setitem(sys.modules, "faiss", None)  # as if faiss-cpu were not installed
    monkeypatch.delitem(sys.modules, "pytest_leakcheck.search.faissindex", raising=False)
    monkeypatch.delattr(pytest_leakcheck.search, "faissindex", raising=False)
    with pytest.raises(RetrievalError, match=r"pytest-leakcheck\[faiss\]"):
        topk(x, x, 2, backend="faiss")


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["exact", "faiss", "lists"])
@pytest.mark.parametrize("same", [False, True])
def test_oriented_within_returns_cosine_pairs_rows(same: bool, backend: str) -> None:
    """cosine_pairs at scale (exact) and ``thumbnail: {search: faiss}`` go through retrieval; on a
    small split (FAISS scans every cell) both return cosine_pairs' rows: pairs, cosines, best orientation."""
    from pytest_leakcheck.search.kernels import cosine_pairs, orient_thumbs, oriented_within

    rng = np.random.default_rng(8)
    names = ["identity", "hflip", "rot90"]
    f = np.sqrt(np.add.outer(np.arange(16) ** 2, np.arange(16) ** 2)) + 1.0
    smooth = np.real(np.fft.ifft2(rng.standard_normal((500, 16, 16)) / f**1.5)).reshape(500, -1)
    tb = np.clip(128 + 40 * smooth / smooth.std(axis=1, keepdims=True), 0, 255).astype(np.uint8)
    ta = tb[:200][::-1].copy()
    for i in range(0, 198, 3):  # a turned noisy copy of tb[i] (or, within one split, of ta[i])
        src = ta if same else tb
        turned = orient_thumbs(src[i : i + 1], names[i % 3])[0].astype(int)
        ta[i + 1 if same else i] = np.clip(turned + rng.integers(-6, 7, 256), 0, 255)
    if same:
        tb = ta
    want = cosine_pairs(ta, tb, names, 0.95, same=same)
    got = oriented_within(ta, tb, names, 0.95, same=same, backend=backend)
    assert len(want[0]) >= 50
    for g, w in zip(got[:2] + got[3:], want[:2] + want[3:]):
        np.testing.assert_array_equal(g, w)
    np.testing.assert_allclose(got[2], want[2], atol=1e-5)


@pytest.mark.slow
def test_thumbnail_search_faiss_in_a_policy_gives_the_exact_report(leaky_dataset) -> None:  # type: ignore[no-untyped-def]
    """End to end: the policy key switches the engine; on a small dataset the findings are the same."""
    import json

    from pytest_leakcheck import check
    from pytest_leakcheck.errors import PolicyError
    from pytest_leakcheck.report.model import report_dict

    from ..conftest import POLICY, write_policy

    def findings(extra: str) -> str:
        policy = write_policy(leaky_dataset, POLICY + extra)
        data = report_dict(check(policy, use_cache=False, jobs=1))
        return json.dumps(data["findings"], sort_keys=True)

    exact = findings("")
    assert "thumbnail" in exact
    assert findings("detectors:\n  thumbnail: {search: faiss}\n") == exact
    assert findings("detectors:\n  thumbnail: {search: lists}\n") == exact
    with pytest.raises(PolicyError, match=r"thumbnail.search.*exact, faiss"):
        findings("detectors:\n  thumbnail: {search: annoy}\n")


def test_cosine_pairs_at_scale_goes_through_exact_retrieval(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past _RETRIEVAL_PAIRS cosine_pairs answers through retrieval.within, with the same result."""
    from pytest_leakcheck.search import kernels

    rng = np.random.default_rng(3)
    base = rng.integers(0, 256, (400, 256)).astype(np.uint8)
    noisy = np.clip(base[:300].astype(int) + rng.integers(-12, 13, (300, 256)), 0, 255).astype(np.uint8)
    small = kernels.cosine_pairs(noisy, base, ["identity", "hflip"], 0.9)
    calls = []
    real = retrieval.within
    monkeypatch.setattr(retrieval, "within", lambda *a, **k: calls.append(1) or real(*a, **k))
    monkeypatch.setattr(kernels, "_RETRIEVAL_PAIRS", 1)
    large = kernels.cosine_pairs(noisy, base, ["identity", "hflip"], 0.9)
    assert len(calls) == 2 and len(small[0]) == 300
    for x, y in zip(small[:2] + small[3:], large[:2] + large[3:]):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_allclose(small[2], large[2], atol=1e-5)


@pytest.mark.parametrize("same", [False, True])
def test_lists_find_the_planted_copies_and_only_pairs_the_exact_search_reports(
        monkeypatch: pytest.MonkeyPatch, same: bool) -> None:
    """With many lists (8 of 60 probed), the inverted file returns a subset of the exact pairs with
    the exact scores, and every planted noisy copy among them."""
    monkeypatch.setattr(retrieval, "LIST_SIZE", 100)
    rng = np.random.default_rng(3)
    f = np.sqrt(np.add.outer(np.arange(16) ** 2, np.arange(16) ** 2)) + 1.0
    smooth = np.real(np.fft.ifft2(rng.standard_normal((6000, 16, 16)) / f**1.5)).reshape(6000, -1)
    thumbs = np.clip(128 + 40 * smooth / smooth.std(axis=1, keepdims=True), 0, 255).astype(np.uint8)
    copies = rng.choice(3000, 150, replace=False)
    thumbs[3000 + np.arange(150)] = np.clip(thumbs[copies].astype(int) + rng.integers(-8, 9, (150, 256)), 0, 255)
    qa, qb = (thumbs, thumbs) if same else (thumbs[3000:], thumbs[:3000])
    sides = Sides(qa, qb, normalised_thumbs, normalised_thumbs)
    ea, eb, es = within(sides, 0.95, same=same)
    la, lb, ls = within(sides, 0.95, same=same, backend="lists")
    exact = {(a, b): s for a, b, s in zip(ea.tolist(), eb.tolist(), es.tolist())}
    got = {(a, b): s for a, b, s in zip(la.tolist(), lb.tolist(), ls.tolist())}
    assert set(got) <= set(exact) and all(abs(got[k] - exact[k]) < 1e-6 for k in got)
    planted = {(int(c), 3000 + n) if same else (n, int(c)) for n, c in enumerate(copies)} & set(exact)
    assert len(planted) >= 120
    assert len(planted & set(got)) >= 0.97 * len(planted)


@pytest.mark.parametrize("backend", ["lists", "faiss"])
def test_the_thumbnail_index_is_asked_by_the_smaller_side_with_the_same_rows(backend: str) -> None:
    """The detector queries an index with the smaller split (inverse orientations) and gets
    exactly the pairs, cosines and orientations the exact search in the given direction gets."""
    from pytest_leakcheck.detectors.thumbnail import _indexed
    from pytest_leakcheck.search.kernels import cosine_pairs, orient_thumbs

    rng = np.random.default_rng(12)
    names = ["identity", "hflip", "rot90", "rot270", "transpose"]
    f = np.sqrt(np.add.outer(np.arange(16) ** 2, np.arange(16) ** 2)) + 1.0
    smooth = np.real(np.fft.ifft2(rng.standard_normal((700, 16, 16)) / f**1.5)).reshape(700, -1)
    thumbs = np.clip(128 + 40 * smooth / smooth.std(axis=1, keepdims=True), 0, 255).astype(np.uint8)
    ra, rb = np.arange(200, 700), np.arange(0, 200)  # the query side is the larger: it is swapped
    for n, i in enumerate(range(0, 200, 2)):  # row ra[n] is rb[i] turned by one of the names
        turned = orient_thumbs(thumbs[i : i + 1], names[n % len(names)])[0].astype(int)
        thumbs[ra[n]] = np.clip(turned + rng.integers(-6, 7, 256), 0, 255)
    want = cosine_pairs(thumbs[ra], thumbs[rb], names, 0.95)
    got = _indexed(thumbs[ra], thumbs[rb], names, 0.95, False, backend)
    assert len(want[0]) >= 90 and {names[k] for k in want[3]} == set(names)
    for g, w in zip(got[:2] + got[3:], want[:2] + want[3:]):
        np.testing.assert_array_equal(g, w)
    np.testing.assert_allclose(got[2], want[2], atol=1e-5)
