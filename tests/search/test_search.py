"""Chunked, vectorised search agrees with brute force; clusters and output are deterministic."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pytest_leakcheck import check
from pytest_leakcheck.search import kernels
from pytest_leakcheck.pipeline import matches
from pytest_leakcheck.search.kernels import cosine_pairs, hamming_pairs, normalised_thumbs, orient_thumbs
from pytest_leakcheck.report.model import report_dict
from pytest_leakcheck.testing import brighter, jpeg_quality, photo, save

from ..conftest import write_policy

SMALL = (64, 48)


def _random_hashes(rng: np.random.Generator, n: int, k: int, words: int) -> np.ndarray:
    return rng.integers(0, 2**63, (n, k, words), dtype=np.int64).view(np.uint64) ^ np.uint64(
        rng.integers(0, 2**63)
    )


def _flip_bits(rng: np.random.Generator, h: np.ndarray, bits: int) -> np.ndarray:
    out = h.copy()
    for _ in range(bits):
        w = rng.integers(0, h.shape[-1])
        out[..., w] ^= np.uint64(1) << np.uint64(rng.integers(0, 64))
    return out


def _brute_hamming(qa: np.ndarray, qb: np.ndarray, max_distance: int, same: bool) -> set:
    out = set()
    for a in range(len(qa)):
        for b in range(len(qb)):
            if same and a >= b:
                continue
            d = [int(np.bitwise_count(qa[a, k] ^ qb[b]).sum()) for k in range(qa.shape[1])]
            if min(d) <= max_distance:
                out.add((a, b, min(d), int(np.argmin(d))))
    return out


@pytest.mark.parametrize("words", [1, 4])
@pytest.mark.parametrize("block", [16, 1 << 22])
def test_hamming_pairs_equals_brute_force(
    monkeypatch: pytest.MonkeyPatch, words: int, block: int
) -> None:
    """Cross-split Hamming search gives exactly the brute-force pairs, however small the blocks."""
    monkeypatch.setattr(kernels, "_BLOCK", block)
    rng = np.random.default_rng(words)
    qa = _random_hashes(rng, 37, 3, words)
    qb = _random_hashes(rng, 53, 1, words)[:, 0, :]
    for b in range(0, 53, 4):  # plant near copies in several orientations
        qb[b] = _flip_bits(rng, qa[b % 37, b % 3], int(rng.integers(0, 6)))
    limit = 6 * words
    got = {(int(a), int(b), int(d), int(k)) for a, b, d, k in zip(*hamming_pairs(qa, qb, limit))}
    want = _brute_hamming(qa, qb, limit, same=False)
    assert len(want) >= 13
    assert got == want


@pytest.mark.parametrize("tile", [1, 100, 1 << 18])
def test_least_over_orientations_in_steps_is_the_least_of_whole_matrices(
    monkeypatch: pytest.MonkeyPatch, tile: int
) -> None:
    """The brute search's least distance over orientations, a few rows at a time, is the least of
    each orientation's whole matrix: same integers, same dtype, however the rows are stepped."""
    monkeypatch.setattr(kernels, "_TILE", tile)
    rng = np.random.default_rng(7)
    qa = _random_hashes(rng, 37, 8, 1)
    qb = _random_hashes(rng, 53, 1, 1)[:, 0, :]
    qb[::5] = qa[:11, 3]  # some distances of 0
    want = np.min(np.stack([np.bitwise_count(qa[:, k] ^ qb[None, :, 0]) for k in range(8)]), axis=0)
    got = kernels._least_over_orientations(qa, qb)
    assert got.dtype == np.uint8 and np.array_equal(got, want)
    assert np.array_equal(kernels._least_over_orientations(qa[:0], qb), want[:0])


@pytest.mark.parametrize("block", [16, 1 << 22])
def test_hamming_within_split_reports_each_pair_once(
    monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    """With `same=True` every unordered pair appears once, as (a, b) with a < b, never (a, a)."""
    monkeypatch.setattr(kernels, "_BLOCK", block)
    rng = np.random.default_rng(7)
    q = _random_hashes(rng, 41, 2, 1)
    for a in range(0, 40, 3):
        q[a + 1, 0] = _flip_bits(rng, q[a, 0], 2)
        q[a + 1, 1] = _flip_bits(rng, q[a, 1], 2)
    ia, ib, dist, kk = hamming_pairs(q, q[:, 0, :], 6, same=True)
    got = list(zip(ia.tolist(), ib.tolist(), dist.tolist(), kk.tolist()))
    assert len(got) == len(set(got))
    assert set(got) == _brute_hamming(q, q[:, 0, :], 6, same=True)
    assert all(a < b for a, b, _, _ in got)
    assert len(got) >= 14


def _brute_cosine(ta, tb, names, min_cosine, same) -> dict:
    na, nb = normalised_thumbs(ta), normalised_thumbs(tb)
    oriented = np.stack([orient_thumbs(na, o) for o in names], axis=1)
    out = {}
    for a in range(len(ta)):
        for b in range(len(tb)):
            if same and a >= b:
                continue
            c = oriented[a] @ nb[b]
            if c.max() >= min_cosine:
                out[(a, b, int(c.argmax()))] = float(c.max())
    return out


@pytest.mark.parametrize("same", [False, True])
@pytest.mark.parametrize("block", [16, 1 << 22])
def test_cosine_pairs_equals_brute_force(
    monkeypatch: pytest.MonkeyPatch, same: bool, block: int
) -> None:
    """Chunked thumbnail search matches a brute-force reference in every orientation."""
    monkeypatch.setattr(kernels, "_BLOCK", block)
    rng = np.random.default_rng(3)
    names = ["identity", "hflip", "rot90"]
    ta = rng.integers(0, 256, (29, 64)).astype(np.uint8)
    tb = ta.copy() if same else rng.integers(0, 256, (31, 64)).astype(np.uint8)
    for b in range(0, len(tb), 3):
        src = orient_thumbs(ta[(b * 7) % len(ta) : (b * 7) % len(ta) + 1], names[b % 3])[0]
        noisy = src.astype(int) + rng.integers(-12, 13, src.shape)
        tb[b] = np.clip(noisy, 0, 255)
    ia, ib, cos, kk = cosine_pairs(ta, tb, names, 0.9, same=same)
    got = {(int(a), int(b), int(k)): float(c) for a, b, c, k in zip(ia, ib, cos, kk)}
    want = _brute_cosine(ta, tb, names, 0.9, same)
    assert len(want) >= 5
    assert sorted(got) == sorted(want)
    for key, value in want.items():
        assert got[key] == pytest.approx(value, abs=1e-4)


def test_chain_across_three_splits_is_one_finding(tmp_path: Path) -> None:
    """test(A) ~ train(B) ~ val(C) is one cluster listing all three files, in split order."""
    img = photo(1, SMALL)
    save(img, tmp_path / "train/b.jpg", quality=92)
    save(jpeg_quality(img, 40), tmp_path / "test/a.jpg", quality=90)
    save(brighter(img, 1.2), tmp_path / "val/c.jpg", quality=90)
    for i in range(3):
        save(photo(10 + i, SMALL), tmp_path / f"train/other_{i}.jpg", quality=90)
    write_policy(
        tmp_path, "version: 1\nsplits: {train: [train/**], val: [val/**], test: [test/**]}\n"
    )
    report = check(tmp_path / "leakcheck.yaml", use_cache=False)
    assert len(report.findings) == 1
    f = report.findings[0]
    assert [(m.path, m.split) for m in f.members] == [
        ("train/b.jpg", "train"),
        ("val/c.jpg", "val"),
        ("test/a.jpg", "test"),
    ]
    assert f.kind == "near-duplicate"
    assert f.severity == "error"
    assert f.split_pair == "train~val~test"


def test_within_split_duplicate_is_one_warning(tmp_path: Path) -> None:
    """Two near-copies inside one split give one warning with one pair, not one per direction."""
    img = photo(2, SMALL)
    save(img, tmp_path / "train/x.jpg", quality=92)
    save(jpeg_quality(img, 50), tmp_path / "train/y.jpg", quality=92)
    save(photo(3, SMALL), tmp_path / "test/z.jpg", quality=92)
    write_policy(
        tmp_path,
        "version: 1\nsplits: {train: [train/**], test: [test/**]}\naugmentations: [rot90, hflip]\n",
    )
    report = check(tmp_path / "leakcheck.yaml", use_cache=False)
    assert [(f.kind, f.severity, f.split_pair) for f in report.findings] == [
        ("near-duplicate", "warning", "train")
    ]
    pairs = report.findings[0].pairs
    assert len({frozenset((p.a, p.b)) for p in pairs}) == 1
    assert report.exit_code == 0


@pytest.mark.slow
def test_output_is_deterministic(leaky_dataset: Path) -> None:
    """Two runs over the same tree give byte-identical JSON findings."""

    def run() -> str:
        data = report_dict(check(leaky_dataset / "leakcheck.yaml", use_cache=False, jobs=1))
        data.pop("stats")
        return json.dumps(data, sort_keys=True)

    first, second = run(), run()
    assert first == second
    assert json.loads(first)["summary"]["errors"] > 0


def test_cosine_direct_and_dct_paths_agree() -> None:
    """A small query set (direct dot products) and a large one (DCT bound) find the same pairs."""
    import numpy as np

    from pytest_leakcheck.search.kernels import cosine_pairs

    rng = np.random.default_rng(3)
    base = rng.integers(0, 256, (400, 256)).astype(np.uint8)
    noisy = np.clip(base[:300].astype(int) + rng.integers(-12, 13, (300, 256)), 0, 255).astype(np.uint8)
    small = cosine_pairs(noisy[:3], base, ["identity", "hflip"], 0.9)
    large = cosine_pairs(noisy, base, ["identity", "hflip"], 0.9)
    small_pairs = set(zip(small[0].tolist(), small[1].tolist()))
    large_pairs = {(a, b) for a, b in zip(large[0].tolist(), large[1].tolist()) if a < 3}
    assert small_pairs == large_pairs == {(0, 0), (1, 1), (2, 2)}
    assert np.allclose(np.sort(small[2]), np.sort(large[2][large[0] < 3]), atol=1e-5)


@pytest.mark.slow
def test_incremental_search_equals_a_full_search(leaky_dataset: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After edits (a new copy, a changed file, a deleted file, a file moved across splits),
    a warm check that reuses stored matches reports exactly what a fresh full search does."""
    import shutil

    policy = leaky_dataset / "leakcheck.yaml"
    check(policy, jobs=1)
    shutil.copyfile(leaky_dataset / "train/img_020.jpg", leaky_dataset / "test/new_copy.jpg")
    save(photo(777), leaky_dataset / "train/img_010.jpg", quality=90)  # content changed
    (leaky_dataset / "test/crop5.jpg").unlink()
    shutil.move(leaky_dataset / "train/img_030.jpg", leaky_dataset / "test/img_030.jpg")
    searched = []
    real = matches.find

    def spy(run, chosen, *alongside):
        # aligned caches its result whole (tests/detectors/aligned/test_detector.py): count the incremental detectors' searches.
        if any(det.incremental for det, _ in chosen):
            searched.append(None if run.focus is None else run.focus.copy())
        return real(run, chosen, *alongside)

    monkeypatch.setattr(matches, "find", spy)
    warm = check(policy, jobs=1)
    assert len(searched) == 1 and searched[0] is not None and 0 < searched[0].sum() <= 3
    fresh = check(policy, jobs=1, use_cache=False)
    def strip(report) -> dict:
        data = report_dict(report)
        del data["stats"]
        return data

    assert strip(warm) == strip(fresh)
    paths = {m.path for f in warm.findings for m in f.members}
    assert "test/new_copy.jpg" in paths
    assert "test/crop5.jpg" not in paths
    searched.clear()
    again = check(policy, jobs=1)
    assert searched == []  # nothing changed: nothing searched
    assert strip(again) == strip(fresh)


@pytest.mark.parametrize("same", [False, True])
def test_a_tally_counts_the_hits_of_its_views_and_returns_the_rest_exactly(same: bool) -> None:
    """``kernels.Tally``: the hits whose best orientation (first of equals) is one of its leading views
    are counted, not returned; every other hit is returned as without it (the dense hits of a fixed
    camera, where all of them are within reach)."""
    rng = np.random.default_rng(3)
    base = rng.integers(0, 2**63, 1, dtype=np.uint64)
    for _ in range(12):
        k, views, radius = int(rng.integers(1, 9)), int(rng.integers(0, 4)), int(rng.integers(0, 12))
        qa = np.broadcast_to(base, (int(rng.integers(1, 200)), k, 1)).copy()
        for _ in range(6):  # a few random bits flipped per hash: most pairs within reach
            qa ^= (np.uint64(1) << rng.integers(0, 64, qa.shape).astype(np.uint64)) * (rng.random(qa.shape) < 0.5)
        qb = qa[:, 0].copy() if same else qa[::-1, 0].copy()
        plain = kernels.brute_hamming_pairs(qa, qb, radius, same=same)
        gone = plain[3] < views
        tally = kernels.Tally(views)
        kept = kernels.brute_hamming_pairs(qa, qb, radius, same=same, tally=tally)
        assert tally.count == int(gone.sum())
        for want, got in zip(plain, kept):
            assert np.array_equal(want[~gone], got)
        through = kernels.Tally(views)
        hamming_pairs(qa, qb, radius, same=same, tally=through)
        assert through.count == tally.count
