"""Small datasets: levels that cannot be estimated fall back to a conservative floor, said so.

On a 2,000-image set an error-level link a hair over its level (0.7255 against
0.7245) once joined two different photos and merged two leaks into one
cluster.  Here sets of 200, 1,000 and 2,000 distinct photos hold planted
copies; no error-level finding may hold two images that are not copies.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from pytest_leakcheck import check
from pytest_leakcheck.detectors.aligned import levels
from pytest_leakcheck.render.text import render as render_text
from pytest_leakcheck.testing import brighter, jpeg_quality, photo, resized, save

COPIES = 8


@pytest.fixture(scope="module")
def photos(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """2,000 distinct photos (train/test by index) and COPIES disguised copies of train photos."""
    root = tmp_path_factory.mktemp("small-data")
    for k in range(2000):
        save(photo(50_000 + k), root / "all" / f"{k:04d}.jpg", quality=90)
    for c in range(COPIES):
        img = photo(50_000 + 5 * c + 1)  # a train photo (index not a multiple of 5) in every subset
        disguise = (resized(img, 0.8), brighter(img, 1.15), jpeg_quality(img, 40))[c % 3]
        save(disguise, root / "copies" / f"copy_of_{5 * c + 1:04d}.jpg", quality=88)
    return root


def _dataset(photos: Path, tmp_path: Path, n: int) -> Path:
    for k in range(n):
        split = "test" if k % 5 == 0 else "train"
        (tmp_path / split).mkdir(exist_ok=True)
        os.link(photos / "all" / f"{k:04d}.jpg", tmp_path / split / f"{k:04d}.jpg")  # no copy: a hard link
    for f in sorted((photos / "copies").iterdir()):
        os.link(f, tmp_path / "test" / f.name)
    (tmp_path / "leakcheck.yaml").write_text("version: 1\nsplits: {train: [train/**], test: [test/**]}\n")
    return tmp_path / "leakcheck.yaml"


def _group(path: str) -> str:
    """Which photo a file shows: a copy shows its original."""
    name = path.rsplit("/", 1)[-1].removesuffix(".jpg")
    return name.removeprefix("copy_of_")


@pytest.mark.parametrize("n", [200, 1000, 2000])
def test_no_error_level_finding_links_two_photos_that_are_not_copies(photos: Path, tmp_path: Path, n: int) -> None:
    report = check(_dataset(photos, tmp_path, n), use_cache=False)
    copies = [f for f in report.findings if f.kind in ("identical-file", "identical-pixels", "near-duplicate",
                                                       "same-scene")]
    errors = [f for f in copies if f.severity == "error"]
    for f in errors:
        assert len({_group(m.path) for m in f.members}) == 1, [m.path for m in f.members]
    found = {_group(m.path) for f in errors for m in f.members}
    assert len(found) >= COPIES - 2  # the planted copies are still errors
    cal = report.stats["aligned"]
    summary = next(line for line in render_text(report, verbose=True).splitlines()
                   if line.startswith("leakcheck: details:"))
    assert cal["small_sample"] and cal["error_threshold"] >= levels.SMALL_ERROR_FLOOR  # all under 5,000
    assert "conservative floor" in summary and "too few" in summary
    assert cal["hair"] == levels.SMALL_HAIR
    if cal["false_alarms_per_10k"] > cal["asked_false_alarms_per_10k"]:
        assert "one impostor is already" in summary


def test_a_link_a_hair_over_the_error_level_is_weak() -> None:
    cal = {"threshold": 0.70, "error_threshold": 0.7245, "hair": levels.SMALL_HAIR}
    from pytest_leakcheck.detectors.aligned.pairs import Pairs

    pairs = Pairs(np.array([0, 2]), np.array([1, 3]), np.array([0.7255, 0.7245 + 2 * levels.SMALL_HAIR]),
                  np.array([False, False]))
    weak = [m.weak for m in levels.matches(pairs, cal)]
    assert weak == [True, False]


@pytest.mark.parametrize(("level", "said"), [(0.85, "error level 0.850, a conservative floor: 300 images"),
                                             (0.926, "error level 0.926, above the conservative floor 0.85: 300")])
def test_the_summary_calls_the_level_a_floor_only_where_it_is_one(level: float, said: str) -> None:
    """A small set's error level is the floor, or this dataset's impostors' level where that is higher
    (a web-scraped logo set: 0.926 was once called "a conservative floor" of 0.85)."""
    from pytest_leakcheck.detectors.aligned import DETECTOR

    stats = {"threshold": 0.8, "false_alarms_per_10k": 5.0, "calibrated_on": 300, "small_sample": True,
             "images": 300, "error_threshold": level, "error_floor": 0.85, "error_false_alarms_per_10k": 2.0}
    assert said in DETECTOR.summary(stats)
