"""A pHash match the thumbnail contradicts is a warning-level link, never an error.

Omniglot (brendenlake/omniglot, held out): a Korean one-stroke character "-" and a Latin "I" drawn by
other people, a quarter turn apart, were pHash 0 apart at thumbnail cosine 0.23: one error finding.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pytest_leakcheck.detectors.phash import DETECTOR
from pytest_leakcheck.detectors.thumbnail import ThumbnailSettings
from pytest_leakcheck.search.kernels import Match


@dataclass
class _Sigs:
    arrays: dict[str, np.ndarray]

    def has(self, *names: str) -> bool:
        return all(n in self.arrays for n in names)


@dataclass
class _Detectors:
    thumbnail: ThumbnailSettings = field(default_factory=ThumbnailSettings)


@dataclass
class _Policy:
    orientations: tuple[str, ...] = ("identity", "rot90")
    detectors: Any = field(default_factory=_Detectors)


def _bar(row: int | None = None, col: int | None = None) -> np.ndarray:
    """A 16 px thumbnail of a dark bar on white paper, across one row or down one column."""
    t = np.full((16, 16), 255, np.uint8)
    if row is not None:
        t[row, 3:12] = 20
    if col is not None:
        t[3:12, col] = 20
    return t.ravel()


def test_a_hash_match_the_thumbnail_contradicts_is_weak() -> None:
    noisy = np.clip(_bar(row=6).astype(int) + np.random.default_rng(0).integers(-6, 7, 256), 0, 255)
    sigs = _Sigs({"thumb": np.stack([_bar(row=6), _bar(col=8), noisy.astype(np.uint8)])})
    policy = _Policy()
    # Another bar elsewhere: cosine near 0, far from a copy's 0.95.
    assert DETECTOR.weak(Match(0, 1, "phash", 0.0), sigs, policy)  # type: ignore[arg-type]
    # The same bar, re-encoded: the thumbnail backs the hash.
    assert not DETECTOR.weak(Match(0, 2, "phash", 0.0), sigs, policy)  # type: ignore[arg-type]
    # Already weak (an inseparable part of the dataset) stays weak.
    assert DETECTOR.weak(Match(0, 2, "phash", 0.0, weak=True), sigs, policy)  # type: ignore[arg-type]


def test_without_thumbnails_nothing_changes() -> None:
    assert not DETECTOR.weak(Match(0, 1, "phash", 0.0), _Sigs({}), _Policy())  # type: ignore[arg-type]
