"""Hash and thumbnail matches held to the look-alike level (``aligned.hashed.held_levels``)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from pytest_leakcheck import check
from pytest_leakcheck.detectors import aligned
from pytest_leakcheck.detectors.aligned import pairs
from pytest_leakcheck.search.kernels import Match
from pytest_leakcheck.store.db import open_store
from pytest_leakcheck.testing import receipt, resized, save

from ...conftest import POLICY, write_policy

#: A small set (floored levels) whose look-alike neighbours raised aligned's error level far above
#: the impostors' level, as the SROIE receipts did (0.85 against 0.985).
LEVELS = {"threshold": 0.80, "error_threshold": 0.985, "within_threshold": 0.83, "within_error_threshold": 0.985,
          "hash_error_threshold": 0.85, "within_hash_error_threshold": 0.86, "neighbour_level": 0.985,
          "small_sample": True, "hair": 0.01}


def _refined(monkeypatch: pytest.MonkeyPatch, hits: list[Match], scores: list[float],
             groups: tuple[str | None, ...] | None) -> list[tuple[int, int, str, bool]]:
    """``refine`` of ``hits`` whose 32 px scores are ``scores``: (i, j, detector, weak) of what is kept."""
    monkeypatch.setattr(pairs, "prepare", lambda *args, **kwargs: None)
    monkeypatch.setattr(pairs, "pair_scores", lambda data, i, j, *a, **k: np.array(scores[:len(i)]))
    n = 1 + max(max(m.i, m.j) for m in hits)
    run = SimpleNamespace(
        stats={"aligned": dict(LEVELS)},
        sigs=SimpleNamespace(valid=np.ones(n, bool), digests=tuple(bytes([k]) * 32 for k in range(n))),
        orientations=("identity", "hflip"), split_of=("train", "test") * (n // 2) + ("train",) * (n % 2),
        focus=None, memo={}, groups=groups)
    with open_store(None) as run.store:  # refine remembers its scores there
        got = aligned.DETECTOR.refine(run, aligned.AlignedSettings(), hits)  # type: ignore[arg-type]
    return [(m.i, m.j, m.detector, m.weak) for m in got]


def test_a_hash_match_below_the_lookalike_level_is_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two receipts of one template at pHash 2 (32 px 0.953, under the look-alikes' 0.985) stay a
    warning, even within SURE_BITS on a small set; a copy (0.9999) stays an error; a thumbnail hit
    at 0.93 is weak too."""
    hits = [Match(0, 1, "phash", 2.0), Match(2, 3, "phash", 0.0), Match(4, 5, "thumbnail", 0.98)]
    got = _refined(monkeypatch, hits, [0.953, 0.9999, 0.93], None)
    assert got == [(0, 1, "phash", True), (2, 3, "phash", False), (4, 5, "thumbnail", True)]


def test_one_group_keeps_the_impostors_level(monkeypatch: pytest.MonkeyPatch) -> None:
    """Within one group of the policy (a burst of one egg) a re-shot is expected: the hash match is
    held to the impostors' level (0.85 + hair) and is an error at 0.953; the same pair across two
    groups, or with one file ungrouped, is held to the look-alike level and is a warning."""
    hits = [Match(0, 1, "phash", 4.0), Match(2, 3, "phash", 4.0), Match(4, 5, "phash", 4.0)]
    got = _refined(monkeypatch, hits, [0.953, 0.953, 0.953], ("b1", "b1", "b2", "b3", "b4", None))
    assert got == [(0, 1, "phash", False), (2, 3, "phash", True), (4, 5, "phash", True)]


def _receipts(root: Path, groups: str) -> Any:
    """The check of 36 receipts of three templates split 27/9, a re-saved copy and a resized one in test."""
    for t in range(3):
        for k in range(12):
            save(receipt(t, 100 * t + k), root / f"{'train' if k < 9 else 'test'}/r{t}_{k:02d}.jpg", quality=90)
    save(receipt(0, 3), root / "test/copy.jpg", quality=80)
    save(resized(receipt(1, 105), 0.7), root / "test/smaller.png")
    write_policy(root, POLICY + groups + "detectors:\n  aligned: {severity: error}\n")
    return check(root / "leakcheck.yaml", use_cache=False)


@pytest.mark.slow
def test_template_documents_are_not_copies_a_resaved_one_is(tmp_path: Path) -> None:
    """Receipts printed from three shop templates (same header and rules, other items and totals),
    split at random: none of them is an error-level leak, though pHash and the thumbnail link many.
    A train receipt re-saved as a JPEG in test is an error; one resized to 70 % as a PNG keeps a
    warning (at 32 px its thin print aliases: 0.93, under this set's look-alike level)."""
    report = _receipts(tmp_path, "")
    errors = [{m.path for m in f.members} for f in report.findings if f.severity == "error"]
    assert errors == [{"test/copy.jpg", "train/r0_03.jpg"}]
    linked = [{m.path for m in f.members} for f in report.findings if f.kind == "near-duplicate"]
    assert any({"test/smaller.png", "train/r1_05.jpg"} <= group for group in linked)
    # Many template pairs were hash matches: it is the level, not the search, that changed.
    assert sum(p.detector in ("phash", "thumbnail") for f in report.findings for p in f.pairs) >= 5


def test_a_lookalike_level_that_leaves_no_room_for_a_copy_binds_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where each image's third-nearest neighbour is a near-identical copy (augmentations, video
    frames: ``cones``), the look-alike level is 1.0: no copy could pass it, so the impostors' level
    stands and a pHash 0 link at 0.96 stays an error."""
    monkeypatch.setitem(LEVELS, "neighbour_level", 1.0)
    monkeypatch.setitem(LEVELS, "error_threshold", 1.0)
    got = _refined(monkeypatch, [Match(0, 1, "phash", 0.0), Match(2, 3, "phash", 6.0)], [0.96, 0.8], None)
    assert got == [(0, 1, "phash", False), (2, 3, "phash", True)]


@pytest.mark.slow
def test_a_policy_group_reaches_the_verdict(tmp_path: Path) -> None:
    """With a group rule that puts each template's receipts in one group (as if each were one
    subject's re-shots), the hash matches between them are judged within one group again: errors,
    beside the group-split findings, where without the rule there were none."""
    report = _receipts(tmp_path, "groups:\n  - regex: '(?P<group>r[0-9])_'\n")
    linked = [f for f in report.findings if f.kind == "near-duplicate" and f.severity == "error"]
    assert any(len({m.path.split("/")[1][:2] for m in f.members} - {"co", "sm"}) == 1 and len(f.members) > 2
               for f in linked)


def test_a_tied_pair_within_sure_bits_is_held_to_the_warning_level(monkeypatch: pytest.MonkeyPatch) -> None:
    """A large set whose upside-down impostors put the hash error level at 0.99 (MRI slices, ``tumor``
    of ``benchmarks/field.py``; its look-alike level is 1.0 and binds nothing): a pHash 2 hit at 0.985
    between two files of one group (one slice exported under another exposure) is an error; the same
    hit between two groups, a tied hit at pHash 4, a tied hit the hash's part test made weak, and a
    tied hit under the warning level stay warnings."""
    for key, value in {"threshold": 1.0, "error_threshold": 1.0, "within_threshold": 1.0,
                       "within_error_threshold": 1.0, "hash_threshold": 0.9827, "within_hash_threshold": 0.9728,
                       "hash_error_threshold": 0.9896, "within_hash_error_threshold": 0.9821,
                       "neighbour_level": 1.0, "small_sample": False, "hair": 0.002}.items():
        monkeypatch.setitem(LEVELS, key, value)
    hits = [Match(0, 1, "phash", 2.0), Match(2, 3, "phash", 2.0), Match(4, 5, "phash", 4.0),
            Match(6, 7, "phash", 2.0, weak=True), Match(8, 9, "phash", 0.0)]
    groups = ("s1", "s1", "s2", "s3", "s4", "s4", "s5", "s5", "s6", "s6")
    got = _refined(monkeypatch, hits, [0.985, 0.985, 0.985, 0.985, 0.95], groups)
    assert got == [(0, 1, "phash", False), (2, 3, "phash", True), (4, 5, "phash", True), (6, 7, "phash", True),
                   (8, 9, "phash", True)]
