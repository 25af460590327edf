"""Near misses (issue 27): the closest pairs a hash detector did not match, for the review page."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_leakcheck import check
from pytest_leakcheck.testing import photo, save

POLICY = "version: 1\nsplits: {train: [train/**], test: [test/**]}\n"


def _cropped_copies(root: Path, n: int = 24) -> Path:
    """Train pictures, and in test the same pictures cropped by 0 to 20 %: some stay within pHash's
    level, the larger crops drift a few bits past it."""
    for i in range(n):
        img = photo(i)
        w, h = img.size
        save(img, root / f"train/{i}.jpg", quality=90)
        save(img.crop((int(w * 0.04 * (i % 6)), 0, w, h)).resize((w, h)), root / f"test/{i}.jpg", quality=80)
    (root / "leakcheck.yaml").write_text(POLICY)
    return root / "leakcheck.yaml"


def test_phash_records_the_nearest_pairs_past_its_level(tmp_path: Path) -> None:
    policy = _cropped_copies(tmp_path)
    report = check(policy)
    near = report.stats["near_misses"]["phash"]
    assert near["level"] == 8 and near["lower_is_stronger"] is True
    assert near["values"] and all(8 < v <= 12 for v in near["values"])
    assert near["values"] == sorted(near["values"])
    # The wider search changes no match: every phash pair is still within the level.
    assert all(p.value <= 8 for f in report.findings for p in f.pairs if p.detector == "phash")
    # A second check that reuses the last search shows the same near misses, from the store.
    again = check(policy)
    assert again.stats["near_misses"] == report.stats["near_misses"]
    # And a stricter level turns matches into near misses.
    policy.write_text(POLICY + "detectors:\n  phash: {max_distance: 0}\n")
    strict = check(policy).stats["near_misses"]["phash"]
    assert strict["level"] == 0 and min(strict["values"]) > 0 and max(strict["values"]) <= 4


def test_on_large_data_the_search_at_the_level_gives_the_same_near_misses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The multi-index search at the level keeps the wider pairs it meets; when enough of them sit
    at the nearest distance possible, the list is the exhaustive one's and no wider search runs."""
    from pytest_leakcheck.detectors import base, hashing
    from pytest_leakcheck.search import mih

    monkeypatch.setattr(hashing, "NEAR_MISSES", 2)
    monkeypatch.setattr(base, "NEAR_MISSES", 2)
    calls: list[tuple[int | None, int]] = []
    real = hashing.hash_matches

    def counted(run, name, prefix, max_distance, reach=None, left=None):  # type: ignore[no-untyped-def]
        found = real(run, name, prefix, max_distance, reach, left)
        calls.append((reach, sum(m.value > 8 for m in found)))
        return found

    monkeypatch.setattr(hashing, "hash_matches", counted)
    exhaustive = check(_cropped_copies(tmp_path / "brute", 120)).stats["near_misses"]["phash"]["values"]
    assert len(calls) == 1  # small data: brute force, complete at the wider reach already
    brute_beyond = calls[0][1]
    # Large data goes through the index (forced here): only the pairs it met come past the level.
    monkeypatch.setattr(mih, "choose", lambda na, k, nb, words, d: mih.Plan(mih._layout(words, 4, d), False, 0.0, 1.0))
    calls.clear()
    indexed = check(_cropped_copies(tmp_path / "index", 120)).stats["near_misses"]["phash"]["values"]
    assert len(calls) == 1 and calls[0][0] == 10  # pHashes differ in even bits: 10 is the nearest past 8
    assert 2 <= calls[0][1] <= brute_beyond
    assert indexed == exhaustive and len(indexed) == 2
