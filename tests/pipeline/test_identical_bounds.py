"""N identical images cost memory linear in N (issue 22, class 6): a cluster lists its members
once and a bounded number of pairs.  The search compares only the first exact copy in each
split; identical-file links the others to it.  (Peak memory itself is measured by
benchmarks/identical_memory.py, not here.)"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_leakcheck import check, detectors
from pytest_leakcheck.dataset import groups, inventory
from pytest_leakcheck.pipeline import matches, signatures
from pytest_leakcheck.pipeline.run import RunOptions
from pytest_leakcheck.policy.load import load
from pytest_leakcheck.store.db import open_store
from pytest_leakcheck.testing import jpeg_quality, photo, save

from ..conftest import write_policy

N = 60


def _copies(root: Path, n: int = N) -> Path:
    src = save(photo(1, (64, 48)), root / "train/0000.jpg", quality=90)
    for split in ("train", "test"):
        (root / split).mkdir(parents=True, exist_ok=True)
        for i in range(n):
            if (split, i) != ("train", 0):
                shutil.copyfile(src, root / f"{split}/{i:04d}.jpg")
    for i in range(5):  # a few distinct images, so the search has something else to compare
        save(photo(100 + i, (64, 48)), root / f"train/other{i}.jpg", quality=90)
    write_policy(root, "version: 1\nsplits: {train: [train/**], test: [test/**]}\n")
    return root


def _matches(root: Path) -> list:
    policy = load(root / "leakcheck.yaml")
    store = open_store(None)
    inv = groups.resolve(inventory.scan(policy))
    sigs = signatures.compute(inv.records, policy, store, RunOptions(jobs=1))
    return matches.search(inv, sigs, policy, store, RunOptions(jobs=1))[0]


@pytest.mark.parametrize("n", [N, 2 * N])
def test_matches_of_n_identical_images_grow_linearly(tmp_path: Path, n: int) -> None:
    """2n copies: at most one link per copy (main kept every pair, for every detector: ~2n² each)."""
    matches = _matches(_copies(tmp_path, n))
    exact = [m for m in matches if m.detector == "identical-file"]
    assert len(exact) == 2 * n - 1  # a star in each split, and one link across
    others = [(m.detector, m.i, m.j) for m in matches if m.detector != "identical-file"]
    assert len(others) <= len(detectors.names())  # the two first copies, once per detector, whatever n


def test_cluster_of_identical_images_lists_every_copy_once_with_few_pairs(tmp_path: Path) -> None:
    report = check(_copies(tmp_path) / "leakcheck.yaml", use_cache=False, jobs=1)
    copies = [f for f in report.findings if f.kind == "identical-file"]
    assert len(copies) == 1
    paths = [m.path for m in copies[0].members]
    assert len(paths) == len(set(paths)) == 2 * N
    assert len(copies[0].pairs) <= 20


def test_copies_within_a_split_are_listed_when_within_split_is_off(tmp_path: Path) -> None:
    root = _copies(tmp_path, 4)
    write_policy(root, "version: 1\nsplits: {train: [train/**], test: [test/**]}\npairs: {within_split: 'off'}\n")
    report = check(root / "leakcheck.yaml", use_cache=False, jobs=1)
    assert [len(f.members) for f in report.findings if f.kind == "identical-file"] == [8]


def _near(root: Path) -> None:
    """A re-encoded copy of train/0000.jpg in test: found through the first copy only."""
    save(jpeg_quality(photo(1, (64, 48)), 40), root / "test/reencoded.jpg", quality=90)


def _cluster_of(report, path: str) -> set[str]:
    return next({m.path for m in f.members} for f in report.findings if any(m.path == path for m in f.members))


def test_deleting_the_first_copy_keeps_the_near_duplicate_found_incrementally(tmp_path: Path) -> None:
    """The incremental search reuses old matches; the copy that becomes first is searched anew."""
    root = _copies(tmp_path, 3)
    for i in range(3):
        (root / f"test/{i:04d}.jpg").unlink()
    _near(root)
    first = check(root / "leakcheck.yaml", jobs=1)
    assert _cluster_of(first, "test/reencoded.jpg") == {"train/0000.jpg", "train/0001.jpg", "train/0002.jpg",
                                                         "test/reencoded.jpg"}
    (root / "train/0000.jpg").unlink()
    again = check(root / "leakcheck.yaml", jobs=1)
    assert _cluster_of(again, "test/reencoded.jpg") == {"train/0001.jpg", "train/0002.jpg", "test/reencoded.jpg"}
    fresh = check(root / "leakcheck.yaml", use_cache=False, jobs=1)
    assert sorted(f.id for f in again.findings) == sorted(f.id for f in fresh.findings)


def test_focus_on_a_later_copy_searches_through_its_first_copy(tmp_path: Path) -> None:
    """The hook's focus on train/0002.jpg (not a first copy) still finds the near-duplicate in test."""
    root = _copies(tmp_path, 3)
    for i in range(3):
        (root / f"test/{i:04d}.jpg").unlink()
    _near(root)
    report = check(root / "leakcheck.yaml", use_cache=False, jobs=1, focus=["train/0002.jpg"])
    assert "test/reencoded.jpg" in _cluster_of(report, "train/0002.jpg")
